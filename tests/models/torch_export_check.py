#!/usr/bin/env python3
"""Exports real PyTorch models to ONNX (torch.onnx.export, seeded random
weights, no download), runs them with `graft run`, and compares graft's
outputs with PyTorch's. Exit code 0 only when every model matches.

Usage: torch_export_check.py --graft build/bin/graft --workdir DIR [--models a,b] [--list]
"""
import argparse
import os
import subprocess
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torchvision


class TinyTransformerEncoder(nn.Module):
    """A BERT-style encoder block stack (nn.TransformerEncoder)."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(1000, 64)
        layer = nn.TransformerEncoderLayer(d_model=64, nhead=4, dim_feedforward=128, dropout=0.0,
                                           activation="gelu", batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers=2)
        self.head = nn.Linear(64, 10)

    def forward(self, ids):
        return self.head(self.encoder(self.embed(ids)))


class TinyGptDecoder(nn.Module):
    """A GPT-style decoder: causal self-attention written out by hand."""

    def __init__(self, d=64, heads=4, layers=2, vocab=500, seq=16):
        super().__init__()
        self.heads = heads
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Parameter(torch.randn(1, seq, d) * 0.02)
        self.blocks = nn.ModuleList()
        for _ in range(layers):
            self.blocks.append(nn.ModuleDict({
                "ln1": nn.LayerNorm(d), "qkv": nn.Linear(d, 3 * d), "proj": nn.Linear(d, d),
                "ln2": nn.LayerNorm(d), "fc1": nn.Linear(d, 4 * d), "fc2": nn.Linear(4 * d, d)}))
        self.ln = nn.LayerNorm(d)
        self.out = nn.Linear(d, vocab)
        self.register_buffer("mask", torch.tril(torch.ones(seq, seq)).view(1, 1, seq, seq))

    def forward(self, ids):
        b, t = ids.shape
        x = self.tok(ids) + self.pos[:, :t]
        for blk in self.blocks:
            h = blk["ln1"](x)
            q, k, v = blk["qkv"](h).split(h.shape[-1], dim=2)
            d = q.shape[-1] // self.heads
            q = q.view(b, t, self.heads, d).transpose(1, 2)
            k = k.view(b, t, self.heads, d).transpose(1, 2)
            v = v.view(b, t, self.heads, d).transpose(1, 2)
            att = (q @ k.transpose(-2, -1)) / (d ** 0.5)
            att = att.masked_fill(self.mask[:, :, :t, :t] == 0, float("-inf")).softmax(dim=-1)
            y = (att @ v).transpose(1, 2).reshape(b, t, -1)
            x = x + blk["proj"](y)
            x = x + blk["fc2"](torch.nn.functional.gelu(blk["fc1"](blk["ln2"](x))))
        return self.out(self.ln(x))


class Recurrent(nn.Module):
    def __init__(self, kind):
        super().__init__()
        cls = {"gru": nn.GRU, "lstm": nn.LSTM, "rnn": nn.RNN}[kind]
        self.rnn = cls(input_size=32, hidden_size=48, num_layers=2, batch_first=True, bidirectional=True)
        self.fc = nn.Linear(96, 5)

    def forward(self, x):
        y, _ = self.rnn(x)
        return self.fc(y)


def vision(name, size=224):
    def make():
        return getattr(torchvision.models, name)(weights=None), torch.randn(1, 3, size, size)
    return make


MODELS = {
    "resnet18": vision("resnet18"),
    "resnet50": vision("resnet50"),
    "mobilenet_v2": vision("mobilenet_v2"),
    "mobilenet_v3_small": vision("mobilenet_v3_small"),
    "squeezenet1_1": vision("squeezenet1_1"),
    "shufflenet_v2_x0_5": vision("shufflenet_v2_x0_5"),
    "efficientnet_b0": vision("efficientnet_b0"),
    "mnasnet0_5": vision("mnasnet0_5"),
    "regnet_y_400mf": vision("regnet_y_400mf"),
    "densenet121": vision("densenet121"),
    "googlenet": vision("googlenet"),
    "inception_v3": vision("inception_v3", 299),
    "convnext_tiny": vision("convnext_tiny"),
    "vgg11": vision("vgg11"),
    "vit_b_16": vision("vit_b_16"),
    "transformer_encoder": lambda: (TinyTransformerEncoder(), torch.randint(0, 1000, (1, 32))),
    "gpt_decoder": lambda: (TinyGptDecoder(), torch.randint(0, 500, (1, 16))),
    "gru": lambda: (Recurrent("gru"), torch.randn(2, 7, 32)),
    "lstm": lambda: (Recurrent("lstm"), torch.randn(2, 7, 32)),
    "rnn": lambda: (Recurrent("rnn"), torch.randn(2, 7, 32)),
}

# Run by CTest: small enough for CI on 2 cores; the rest run by hand.
CI_MODELS = ["resnet18", "mobilenet_v3_small", "squeezenet1_1", "shufflenet_v2_x0_5", "efficientnet_b0",
             "mnasnet0_5", "regnet_y_400mf", "transformer_encoder", "gpt_decoder", "gru", "lstm", "rnn"]


def save_npy(path, array):
    np.save(path, np.ascontiguousarray(array))


def check(name, graft, workdir, opset, threads, rtol, atol):
    torch.manual_seed(0)
    model, example = MODELS[name]()
    model.eval()
    with torch.no_grad():
        want = model(example)
        if isinstance(want, (tuple, list)):
            want = want[0]
        want = want.detach().numpy()
    folder = os.path.join(workdir, name)
    os.makedirs(folder, exist_ok=True)
    onnx_path = os.path.join(folder, "model.onnx")
    # Exported with autograd on: PyTorch's fused inference fast paths (e.g. the
    # transformer encoder's) only run under no_grad and have no ONNX form.
    torch.onnx.export(model, (example,), onnx_path, opset_version=opset, input_names=["input"],
                      output_names=["output"], do_constant_folding=True)
    save_npy(os.path.join(folder, "input.npy"), example.numpy())
    out_dir = os.path.join(folder, "out")
    os.makedirs(out_dir, exist_ok=True)
    start = time.time()
    proc = subprocess.run([graft, "run", onnx_path, "--input", "input=" + os.path.join(folder, "input.npy"),
                           "--output-dir", out_dir, "--threads", str(threads)], capture_output=True, text=True)
    elapsed = time.time() - start
    if proc.returncode != 0:
        return False, "graft failed: " + (proc.stderr.strip() or proc.stdout.strip())[-400:]
    got = np.load(os.path.join(out_dir, "output.npy"))
    if got.shape != want.shape:
        return False, "shape %s, expected %s" % (got.shape, want.shape)
    err = np.abs(got.astype(np.float64) - want.astype(np.float64))
    bound = atol + rtol * np.abs(want.astype(np.float64))
    worst = float(np.max(err / np.maximum(bound, 1e-30)))
    max_rel = float(np.max(err) / max(float(np.max(np.abs(want))), 1e-30))
    ok = bool(np.all(err <= bound))
    return ok, "max |err|/bound %.3f, max err relative to max|output| %.2e, graft run %.1fs" % (worst, max_rel, elapsed)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--graft", required=True)
    parser.add_argument("--workdir", required=True)
    parser.add_argument("--models", default=",".join(CI_MODELS))
    parser.add_argument("--opset", type=int, default=17)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rtol", type=float, default=1e-3)
    parser.add_argument("--atol", type=float, default=1e-4)
    parser.add_argument("--list", action="store_true")
    args = parser.parse_args()
    if args.list:
        print("\n".join(MODELS))
        return 0
    torch.set_num_threads(args.threads)
    names = list(MODELS) if args.models == "all" else args.models.split(",")
    passed = failed = 0
    for name in names:
        if name not in MODELS:
            print("unknown model %s (known: %s)" % (name, ", ".join(MODELS)))
            return 2
        try:
            ok, detail = check(name, args.graft, args.workdir, args.opset, args.threads, args.rtol, args.atol)
        except Exception as e:  # an export failure is a failure of this check, reported, not hidden
            ok, detail = False, "export failed: %s" % e
        print("%-4s %-22s %s" % ("PASS" if ok else "FAIL", name, detail), flush=True)
        passed += ok
        failed += not ok
    print("%d passed, %d failed" % (passed, failed))
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
