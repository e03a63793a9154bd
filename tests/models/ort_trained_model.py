#!/usr/bin/env python3
"""What graft writes for training runs in ONNX Runtime.

1. The digits CNN of train_digits.py (PyTorch export with its loss and
   logits) is trained a few steps by `graft train` (AdamW; once keeping
   activations, once with --recompute); trained.onnx is run on the held-out
   digits by `graft run` and by ONNX Runtime, whose logits must agree within
   --rtol (1e-5) of their largest magnitude. The two trainings must write the
   same model (the same logits within --rtol).
2. An MLP whose gradient graph is standard ONNX only (Linear, GELU, Tanh,
   Softmax, an MSE loss) is differentiated by `graft grad` (with and without
   --recompute); its train.onnx is run by `graft run` and by ONNX Runtime on
   the same inputs, and the loss and every gradient must agree within --rtol
   of the output's largest magnitude.

ONNX Runtime is the npm package onnxruntime-node (bench/compare's, see
bench/compare/ort_runner.js, which this script runs with node); exits 77
(CTest's skip code) when node, onnxruntime-node or PyTorch is missing.

Usage: ort_trained_model.py --graft build/bin/graft --workdir /tmp/ort_trained
                            [--node-modules bench/compare/node_modules]
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
ORT_RUNNER = os.path.join(ROOT, "bench", "compare", "ort_runner.js")
SKIP = 77


def run(cmd):
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{result.stdout}{result.stderr}")
    return result.stdout


def write_inputs(folder, arrays):
    """Writes each array as raw bytes and returns ort_runner's manifest path."""
    manifest = []
    for name, a in arrays.items():
        a = np.ascontiguousarray(a)
        file = f"input_{name}.bin"
        a.tofile(os.path.join(folder, file))
        manifest.append({"name": name, "dtype": str(a.dtype), "shape": list(a.shape), "file": file})
    path = os.path.join(folder, "inputs.json")
    with open(path, "w") as f:
        json.dump(manifest, f)
    return path


def run_ort(model, arrays, folder, node_modules):
    """ONNX Runtime's outputs of `model` on `arrays`, by output name."""
    os.makedirs(folder, exist_ok=True)
    manifest = write_inputs(folder, arrays)
    env = dict(os.environ, NODE_PATH=node_modules)
    proc = subprocess.run(["node", ORT_RUNNER, model, manifest, folder, "--threads", "1"], input="quit\n",
                          capture_output=True, text=True, env=env)
    lines = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    if proc.returncode != 0 or not lines or not lines[0].get("ready"):
        sys.exit(f"ONNX Runtime could not run {model}: {lines[-1] if lines else ''}{proc.stderr[-2000:]}")
    return {o["name"]: np.fromfile(o["file"], dtype=o["dtype"]).reshape(o["shape"]) for o in lines[0]["outputs"]}


def run_graft(graft, model, arrays, folder):
    """graft run's outputs of `model` on `arrays`, by output name."""
    os.makedirs(folder, exist_ok=True)
    flags = []
    for name, a in arrays.items():
        path = os.path.join(folder, f"input_{name}.npy")
        np.save(path, a)
        flags += ["--input", f"{name}={path}"]
    out = os.path.join(folder, "out")
    if os.path.isdir(out):
        shutil.rmtree(out)
    run([graft, "run", model, "--threads", "1", "--output-dir", out] + flags)
    return {f[:-4]: np.load(os.path.join(out, f)) for f in os.listdir(out) if f.endswith(".npy")}


def difference(got, want):
    """Largest |got - want| relative to the largest |want|."""
    scale = max(float(np.abs(want).max()), 1e-12)
    return float(np.abs(got.astype(np.float64) - want.astype(np.float64)).max()) / scale


def check_trained_digits(args, failures):
    import torch
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split
    sys.path.insert(0, HERE)
    from train_digits import DigitsCnn

    digits = load_digits()
    x = (digits.images / 16.0).astype(np.float32)[:, None, :, :]
    y = digits.target.astype(np.int64)
    x_train, x_test, y_train, _ = train_test_split(x, y, test_size=0.2, random_state=0, stratify=y)
    batch = 32
    samples = batch * args.steps
    np.savez(os.path.join(args.workdir, "train.npz"), data=x_train[:samples], target=y_train[:samples])
    torch.manual_seed(0)
    model = DigitsCnn()
    model_path = os.path.join(args.workdir, "digits.onnx")
    torch.onnx.export(model, (torch.from_numpy(x_train[:batch]), torch.from_numpy(y_train[:batch])), model_path,
                      opset_version=17, input_names=["data", "target"], output_names=["loss", "logits"],
                      dynamic_axes={"data": {0: "batch"}, "target": {0: "batch"}, "logits": {0: "batch"}},
                      training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False)
    logits = {}
    for variant, flags in (("kept", []), ("recomputed", ["--recompute"])):
        trained = os.path.join(args.workdir, f"trained_{variant}.onnx")
        out = run([args.graft, "train", model_path, "--data", os.path.join(args.workdir, "train.npz"), "--loss", "loss",
                   "--optimizer", "adamw", "--lr", "0.005", "--batch-size", str(batch), "--threads", "1", "-o",
                   trained] + flags)
        print(f"digits ({variant}): {out.strip().splitlines()[-1]}")
        held_out = {"data": x_test}
        graft_out = run_graft(args.graft, trained, held_out, os.path.join(args.workdir, f"graft_{variant}"))
        ort_out = run_ort(trained, held_out, os.path.join(args.workdir, f"ort_{variant}"), args.node_modules)
        d = difference(graft_out["logits"], ort_out["logits"])
        agree = float((graft_out["logits"].argmax(1) == ort_out["logits"].argmax(1)).mean())
        print(f"digits ({variant}): trained.onnx on {len(x_test)} held-out digits, graft against ONNX Runtime: "
              f"logits within {d:.2e} of the largest, argmax agrees on {agree:.2%}")
        if d > args.rtol:
            failures.append(f"digits ({variant}): graft's and ONNX Runtime's logits differ by {d:.2e}")
        logits[variant] = graft_out["logits"]
    d = difference(logits["recomputed"], logits["kept"])
    print(f"digits: trained with --recompute against without: logits within {d:.2e}")
    if d > args.rtol:
        failures.append(f"digits: training with --recompute wrote another model ({d:.2e})")


def check_gradient_graph(args, failures):
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    class Mlp(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1, self.fc2, self.fc3 = nn.Linear(12, 32), nn.Linear(32, 32), nn.Linear(32, 6)

        def forward(self, data, target):
            h = torch.tanh(self.fc2(F.gelu(self.fc1(data))))
            return ((torch.softmax(self.fc3(h), dim=-1) - target) ** 2).mean()  # MSE as a graph

    torch.manual_seed(1)
    model = Mlp()
    data = torch.randn(16, 12)
    target = torch.softmax(torch.randn(16, 6), dim=-1)
    model_path = os.path.join(args.workdir, "mlp.onnx")
    torch.onnx.export(model, (data, target), model_path, opset_version=17, input_names=["data", "target"],
                      output_names=["loss"], training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False)
    arrays = {"data": data.numpy(), "target": target.numpy()}
    for variant, flags in (("kept", []), ("recomputed", ["--recompute"])):
        train = os.path.join(args.workdir, f"mlp_train_{variant}.onnx")
        out = run([args.graft, "grad", model_path, "--loss", "loss", "-o", train] + flags)
        print(f"mlp ({variant}): {out.strip()}")
        graft_out = run_graft(args.graft, train, arrays, os.path.join(args.workdir, f"mlp_graft_{variant}"))
        ort_out = run_ort(train, arrays, os.path.join(args.workdir, f"mlp_ort_{variant}"), args.node_modules)
        if sorted(graft_out) != sorted(ort_out):
            failures.append(f"mlp ({variant}): outputs {sorted(graft_out)} against ONNX Runtime's {sorted(ort_out)}")
            continue
        worst = max((difference(graft_out[name], ort_out[name]), name) for name in ort_out)
        print(f"mlp ({variant}): train.onnx, graft against ONNX Runtime: the loss and {len(ort_out) - 1} gradients "
              f"within {worst[0]:.2e} of their largest magnitude (worst: {worst[1]})")
        if worst[0] > args.rtol:
            failures.append(f"mlp ({variant}): {worst[1]} differs by {worst[0]:.2e} from ONNX Runtime's")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--graft", required=True)
    parser.add_argument("--workdir", required=True)
    parser.add_argument("--node-modules", default=os.path.join(ROOT, "bench", "compare", "node_modules"))
    parser.add_argument("--steps", type=int, default=8, help="training steps of batch 32 (default 8)")
    parser.add_argument("--rtol", type=float, default=1e-5)
    args = parser.parse_args()
    args.node_modules = os.path.abspath(args.node_modules)
    if shutil.which("node") is None or not os.path.isdir(os.path.join(args.node_modules, "onnxruntime-node")):
        print(f"node or onnxruntime-node (in {args.node_modules}) is missing: skipped")
        return SKIP
    try:
        import torch  # noqa: F401
        import sklearn  # noqa: F401
    except ImportError:
        print("PyTorch or scikit-learn is missing: skipped")
        return SKIP
    os.makedirs(args.workdir, exist_ok=True)
    failures = []
    check_trained_digits(args, failures)
    check_gradient_graph(args, failures)
    if failures:
        print("FAILED:\n  " + "\n  ".join(failures))
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
