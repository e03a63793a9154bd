#!/usr/bin/env python3
"""Gradients of graft against PyTorch autograd.

Each small model is exported by PyTorch together with its loss (the ONNX graph
takes the data and the labels and returns the scalar `loss`); `graft grad`
writes the forward+backward graph, `graft run` evaluates it, and every
parameter's gradient must match `param.grad` from torch autograd within
--rtol relative to that gradient's largest magnitude:
max |graft - torch| <= rtol * max |torch|. Models are exported in training
mode (BatchNormalization on batch statistics) without constant folding, so
that the initializers are the parameters under their PyTorch names.

Usage: torch_grad_check.py --graft build/bin/graft --workdir /tmp/grad [--models mlp,cnn,transformer]
"""
import argparse
import math
import os
import subprocess
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class Mlp(nn.Module):
    """Gemm + Relu + Gemm, softmax cross-entropy."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(10, 32)
        self.fc2 = nn.Linear(32, 5)

    def forward(self, x, target):
        return F.cross_entropy(self.fc2(torch.relu(self.fc1(x))), target)


class Cnn(nn.Module):
    """Conv + BatchNorm (batch statistics) + Relu + MaxPool + Conv + AveragePool + Gemm, cross-entropy."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 4, 3, padding=1, bias=False)  # BatchNorm follows: a bias would have no gradient
        self.bn1 = nn.BatchNorm2d(4)
        self.conv2 = nn.Conv2d(4, 6, 3, stride=2, padding=1, groups=2)
        self.fc = nn.Linear(6 * 2 * 2, 10)

    def forward(self, x, target):
        h = F.max_pool2d(torch.relu(self.bn1(self.conv1(x))), 2)
        h = F.avg_pool2d(torch.tanh(self.conv2(h)), 1)
        return F.cross_entropy(self.fc(torch.flatten(h, 1)), target)


class TransformerBlock(nn.Module):
    """Embedding (Gather), pre-LayerNorm attention with a causal mask (Where),
    GELU MLP, residuals, logits over the vocabulary, cross-entropy."""

    def __init__(self, vocab=11, dim=8, heads=2, seq=5, batch=2):
        super().__init__()
        self.vocab, self.dim, self.heads, self.seq, self.batch = vocab, dim, heads, seq, batch
        self.embed = nn.Embedding(vocab, dim)
        self.ln1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.ln2 = nn.LayerNorm(dim)
        self.up = nn.Linear(dim, 4 * dim)
        self.down = nn.Linear(4 * dim, dim)
        self.head = nn.Linear(dim, vocab)
        self.register_buffer("mask", torch.tril(torch.ones(seq, seq, dtype=torch.bool)))

    def forward(self, tokens, target):
        b, t, d, h = self.batch, self.seq, self.dim, self.heads
        x = self.embed(tokens)
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=-1)
        q = q.reshape(b, t, h, d // h).transpose(1, 2)
        k = k.reshape(b, t, h, d // h).transpose(1, 2)
        v = v.reshape(b, t, h, d // h).transpose(1, 2)
        scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(d // h)
        scores = torch.where(self.mask, scores, torch.tensor(-1e4))
        attention = torch.matmul(torch.softmax(scores, dim=-1), v).transpose(1, 2).reshape(b, t, d)
        x = x + self.proj(attention)
        x = x + self.down(F.gelu(self.up(self.ln2(x))))
        logits = self.head(x).reshape(b * t, self.vocab)
        return F.cross_entropy(logits, target.reshape(b * t))


class BertEncoder(nn.Module):
    """A BERT-style encoder: token and position embeddings, one
    nn.TransformerEncoderLayer (multi-head attention, GELU feed-forward,
    post-LayerNorm; exported with run-time Shape computations), a classifier
    on the first token."""

    def __init__(self, vocab=20, dim=16, seq=6):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.position = nn.Parameter(torch.randn(1, seq, dim) * 0.1)
        self.layer = nn.TransformerEncoderLayer(dim, 2, 32, dropout=0.0, activation="gelu", batch_first=True)
        self.classifier = nn.Linear(dim, 3)

    def forward(self, tokens, target):
        h = self.layer(self.embed(tokens) + self.position)
        return F.cross_entropy(self.classifier(h[:, 0]), target)


class Recurrent(nn.Module):
    """A two-layer recurrent net (GRU or LSTM; the second layer
    bidirectional) classifying each sequence by its last step."""

    def __init__(self, cell):
        super().__init__()
        self.first = cell(5, 8)
        self.second = cell(8, 6, bidirectional=True)
        self.classifier = nn.Linear(12, 4)

    def forward(self, x, target):
        h, _ = self.second(self.first(x)[0])
        return F.cross_entropy(self.classifier(h[-1]), target)


class Segmenter(nn.Module):
    """A segmentation head's upsampling (Resize): a stride-2 convolution brought back to the input's size by
    nearest (scale 2, with a skip) and bilinear interpolation (sizes; align_corners off and on, one of them to
    an odd size), then a 1x1 convolution per pixel; MSE against a target map."""

    def __init__(self):
        super().__init__()
        self.down = nn.Conv2d(2, 4, 3, stride=2, padding=1)
        self.mid = nn.Conv2d(4, 4, 3, padding=1)
        self.skip = nn.Conv2d(2, 4, 1)
        self.head = nn.Conv2d(4, 3, 1)

    def forward(self, x, target):
        h = torch.relu(self.down(x))
        u = F.interpolate(torch.tanh(self.mid(h)), scale_factor=2, mode="nearest")
        v = F.interpolate(h, size=(8, 8), mode="bilinear", align_corners=False)
        w = F.interpolate(h, size=(7, 9), mode="bilinear", align_corners=True)
        y = self.head(u + v + self.skip(x))
        return (y - target).square().mean() + w.square().mean()


def make_mlp():
    return Mlp(), torch.randn(8, 10), torch.randint(0, 5, (8,))


def make_cnn():
    return Cnn(), torch.randn(4, 1, 8, 8), torch.randint(0, 10, (4,))


def make_transformer():
    return TransformerBlock(), torch.randint(0, 11, (2, 5)), torch.randint(0, 11, (2, 5))


def make_bert():
    return BertEncoder(), torch.randint(0, 20, (3, 6)), torch.randint(0, 3, (3,))


def make_gru():
    return Recurrent(nn.GRU), torch.randn(7, 3, 5), torch.randint(0, 4, (3,))


def make_lstm():
    return Recurrent(nn.LSTM), torch.randn(7, 3, 5), torch.randint(0, 4, (3,))


def make_segmenter():
    return Segmenter(), torch.randn(2, 2, 8, 8), torch.randn(2, 3, 8, 8)


def make_resnet18():
    import torchvision
    return torchvision.models.resnet18(num_classes=10), torch.randn(4, 3, 64, 64), torch.randint(0, 10, (4,))


def make_mobilenet_v2():
    import torchvision
    model = torchvision.models.mobilenet_v2(num_classes=10)
    model.classifier[0].p = 0.0  # dropout's draws are PyTorch's own: keep every activation
    return model, torch.randn(4, 3, 64, 64), torch.randint(0, 10, (4,))


class WithLoss(nn.Module):
    """A classifier followed by its cross-entropy loss."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x, target):
        return F.cross_entropy(self.model(x), target)


def with_loss(make):
    def wrapped():
        model, data, target = make()
        return WithLoss(model), data, target
    return wrapped


MODELS = {"mlp": make_mlp, "cnn": make_cnn, "transformer": make_transformer, "bert": make_bert,
          "gru": make_gru, "lstm": make_lstm, "segmenter": make_segmenter,
          "resnet18": with_loss(make_resnet18), "mobilenet_v2": with_loss(make_mobilenet_v2)}


# Models compared in float64: MobileNetV2's ReLU6 at this small batch and
# resolution puts a few activations within float32 round-off of the clip
# point, where PyTorch and graft may each take either side (one such flip
# moves a bias gradient by 6% of its max); in float64 both agree.
FLOAT64_MODELS = {"mobilenet_v2"}


def check(name, graft, workdir, rtol, threads, float64):
    torch.manual_seed(0)
    model, data, target = MODELS[name]()
    model.train()
    if float64 or name in FLOAT64_MODELS:
        model = model.double()
        if data.is_floating_point():
            data = data.double()
    folder = os.path.join(workdir, name)
    os.makedirs(folder, exist_ok=True)
    onnx_path = os.path.join(folder, "model.onnx")
    torch.onnx.export(model, (data, target), onnx_path, opset_version=17, input_names=["data", "target"],
                      output_names=["loss"], training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False)
    # Autograd after the export (which ran the model once more).
    model.zero_grad()
    loss = model(data, target)
    loss.backward()
    want = {n: p.grad.detach().numpy() for n, p in model.named_parameters()}
    np.save(os.path.join(folder, "data.npy"), data.numpy())
    np.save(os.path.join(folder, "target.npy"), target.numpy())
    train_path = os.path.join(folder, "train.onnx")
    proc = subprocess.run([graft, "grad", onnx_path, "--loss", "loss", "--wrt", "initializers", "-o", train_path],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        return False, "graft grad failed: " + (proc.stderr.strip() or proc.stdout.strip())[-600:]
    out_dir = os.path.join(folder, "out")
    os.makedirs(out_dir, exist_ok=True)
    proc = subprocess.run([graft, "run", train_path, "--input", "data=" + os.path.join(folder, "data.npy"),
                           "--input", "target=" + os.path.join(folder, "target.npy"), "--output-dir", out_dir,
                           "--threads", str(threads)], capture_output=True, text=True)
    if proc.returncode != 0:
        return False, "graft run failed: " + (proc.stderr.strip() or proc.stdout.strip())[-600:]
    got_loss = float(np.load(os.path.join(out_dir, "loss.npy")))
    problems, worst = [], 0.0
    if abs(got_loss - loss.item()) > rtol * max(1.0, abs(loss.item())):
        problems.append("loss %g, torch %g" % (got_loss, loss.item()))
    # A gradient that is zero in exact arithmetic (the bias of a layer that
    # BatchNormalization follows) is round-off on both sides: it is compared
    # against 1e-6 of the model's largest gradient instead of its own max.
    floor = 1e-6 * max(float(np.max(np.abs(g))) for g in want.values())
    for param, grad in want.items():
        path = os.path.join(out_dir, param + "_grad.npy")
        if not os.path.exists(path):
            problems.append("no gradient output for %s" % param)
            continue
        got = np.load(path)
        if got.shape != grad.shape:
            problems.append("%s_grad has shape %s, torch %s" % (param, got.shape, grad.shape))
            continue
        scale = max(float(np.max(np.abs(grad))), floor / rtol, 1e-30)
        rel = float(np.max(np.abs(got.astype(np.float64) - grad.astype(np.float64)))) / scale
        worst = max(worst, rel)
        if rel > rtol:
            problems.append("%s_grad: max error %.2e of its max" % (param, rel))
    summary = "%s, %d parameters, loss %.6f, worst max error relative to the gradient's max %.2e" % (
        "float64" if data.dtype == torch.float64 or float64 or name in FLOAT64_MODELS else "float32", len(want),
        got_loss, worst)
    if len(problems) > 4:
        problems = problems[:4] + ["%d more" % (len(problems) - 4)]
    return not problems, summary + ("; " + "; ".join(problems) if problems else "")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--graft", required=True)
    parser.add_argument("--workdir", required=True)
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--rtol", type=float, default=1e-4)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--float64", action="store_true", help="compare every model in float64")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    failed = 0
    for name in args.models.split(","):
        if name not in MODELS:
            print("unknown model %s (known: %s)" % (name, ", ".join(MODELS)))
            failed += 1
            continue
        try:
            ok, message = check(name, args.graft, args.workdir, args.rtol, args.threads, args.float64)
        except Exception as e:  # an export or comparison failure is this model's failure
            ok, message = False, "%s: %s" % (type(e).__name__, e)
        print("%-12s %s  %s" % (name, "ok  " if ok else "FAIL", message))
        failed += not ok
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
