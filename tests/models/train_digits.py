#!/usr/bin/env python3
"""A real training run: a small CNN trained by `graft train` on the handwritten
digits that Debian's python3-sklearn ships (sklearn.datasets.load_digits:
1,797 8x8 images, 20% held out), against PyTorch.

For each optimizer (AdamW, SGD with momentum and weight decay), the same
model, initial weights and batch order are trained by `graft train` and by
torch.optim, with the learning rate decayed linearly to 0 (graft train
--lr-final 0, the same factor set on PyTorch's param group each step); the
check asserts
  - the accuracy of the trained model (trained.onnx, run by `graft run` on the
    hold-out) is at least --min-accuracy (0.97);
  - over the first 50 steps, graft's loss is within --loss-rtol (1%, relative)
    of PyTorch's at every step.
The model is exported by PyTorch with its loss in training mode (as
torch_grad_check.py does), with outputs `loss` and `logits`; train.npz holds
the training samples of every epoch, each epoch in its own shuffled order,
one after the other (graft train runs its batches in file order, one pass).

Usage: train_digits.py --graft build/bin/graft --workdir /tmp/digits [--optimizers adamw,sgd]
"""
import argparse
import csv
import os
import subprocess
import sys
import time

import numpy as np
import onnx
import torch
import torch.nn as nn
import torch.nn.functional as F
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split


class DigitsCnn(nn.Module):
    """conv-relu-pool-conv-relu-pool-gemm, softmax cross-entropy."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 3, padding=1)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.fc = nn.Linear(32 * 2 * 2, 10)

    def logits(self, x):
        h = F.max_pool2d(torch.relu(self.conv1(x)), 2)
        h = F.max_pool2d(torch.relu(self.conv2(h)), 2)
        return self.fc(torch.flatten(h, 1))

    def forward(self, x, target):
        logits = self.logits(x)
        return F.cross_entropy(logits, target), logits


OPTIMIZERS = {
    # name: (graft train flags, learning rate, torch optimizer factory)
    "adamw": (["--optimizer", "adamw", "--weight-decay", "0.01"], 0.005,
              lambda params, lr: torch.optim.AdamW(params, lr=lr, weight_decay=0.01)),
    "sgd": (["--optimizer", "sgd", "--momentum", "0.9", "--weight-decay", "0.0001"], 0.05,
            lambda params, lr: torch.optim.SGD(params, lr=lr, momentum=0.9, weight_decay=0.0001)),
}


def run(cmd):
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{result.stdout}{result.stderr}")
    return result.stdout


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--graft", required=True)
    parser.add_argument("--workdir", required=True)
    parser.add_argument("--optimizers", default="adamw,sgd")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--threads", default="1")
    parser.add_argument("--min-accuracy", type=float, default=0.97)
    parser.add_argument("--loss-rtol", type=float, default=0.01)
    parser.add_argument("--compare-steps", type=int, default=50)
    args = parser.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    torch.set_num_threads(int(args.threads))

    digits = load_digits()
    x = (digits.images / 16.0).astype(np.float32)[:, None, :, :]
    y = digits.target.astype(np.int64)
    x_train, x_test, y_train, y_test = train_test_split(x, y, test_size=0.2, random_state=0, stratify=y)
    batch = args.batch_size
    steps_per_epoch = len(x_train) // batch
    rng = np.random.default_rng(0)
    order = np.concatenate([rng.permutation(len(x_train))[:steps_per_epoch * batch] for _ in range(args.epochs)])
    x_steps, y_steps = x_train[order], y_train[order]  # every epoch's batches, in order
    steps = len(order) // batch
    np.savez_compressed(os.path.join(args.workdir, "train.npz"), data=x_steps, target=y_steps)
    np.save(os.path.join(args.workdir, "test_data.npy"), x_test)
    print(f"digits: {len(x_train)} training samples, {args.epochs} epochs of {steps_per_epoch} batches of {batch}, "
          f"{len(x_test)} held out")

    failures = []
    for name in args.optimizers.split(","):
        flags, lr, make_optimizer = OPTIMIZERS[name]
        torch.manual_seed(0)
        model = DigitsCnn()
        model_path = os.path.join(args.workdir, f"digits_{name}.onnx")
        example = (torch.from_numpy(x_train[:batch]), torch.from_numpy(y_train[:batch]))
        torch.onnx.export(model, example, model_path, opset_version=17, input_names=["data", "target"],
                          output_names=["loss", "logits"],
                          dynamic_axes={"data": {0: "batch"}, "target": {0: "batch"}, "logits": {0: "batch"}},
                          training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False)

        # PyTorch from the same initial weights, on the same batches.
        optimizer = make_optimizer(model.parameters(), lr)
        torch_losses = []
        start = time.time()
        for s in range(steps):
            for group in optimizer.param_groups:  # graft train --lr-final 0, in float32 as graft takes it
                group["lr"] = float(np.float32(lr + (0.0 - lr) * s / (steps - 1)))
            xb = torch.from_numpy(x_steps[s * batch:(s + 1) * batch])
            yb = torch.from_numpy(y_steps[s * batch:(s + 1) * batch])
            optimizer.zero_grad()
            loss, _ = model(xb, yb)
            loss.backward()
            optimizer.step()
            torch_losses.append(loss.item())
        torch_seconds = time.time() - start
        with torch.no_grad():
            torch_accuracy = float((model.logits(torch.from_numpy(x_test)).argmax(1).numpy() == y_test).mean())

        trained = os.path.join(args.workdir, f"trained_{name}.onnx")
        log = os.path.join(args.workdir, f"losses_{name}.csv")
        start = time.time()
        out = run([args.graft, "train", model_path, "--data", os.path.join(args.workdir, "train.npz"), "--loss", "loss",
                   "--batch-size", str(batch), "--lr", str(lr), "--lr-final", "0", "--threads", args.threads,
                   "--log", log, "-o", trained] + flags)
        seconds = time.time() - start
        print(out.strip().splitlines()[-1])
        with open(log) as f:
            graft_losses = [float(row["loss"]) for row in csv.DictReader(f)]
        onnx.checker.check_model(onnx.load(trained), full_check=True)  # a standard ONNX model
        outdir = os.path.join(args.workdir, f"eval_{name}")
        run([args.graft, "run", trained, "--input", "data=" + os.path.join(args.workdir, "test_data.npy"),
             "--output-dir", outdir, "--threads", args.threads])
        logits = np.load(os.path.join(outdir, "logits.npy"))
        accuracy = float((logits.argmax(1) == y_test).mean())

        n = min(args.compare_steps, len(graft_losses))
        rel = [abs(g - t) / abs(t) for g, t in zip(graft_losses[:n], torch_losses[:n])]
        worst = int(np.argmax(rel))
        print(f"{name}: {len(graft_losses)} steps in {seconds:.1f} s (torch {torch_seconds:.1f} s); hold-out accuracy graft {accuracy:.4f}, "
              f"torch {torch_accuracy:.4f}; first {n} losses within {max(rel):.2e} relative "
              f"(worst at step {worst + 1}: graft {graft_losses[worst]:.6f}, torch {torch_losses[worst]:.6f}); "
              f"final loss graft {graft_losses[-1]:.4f}, torch {torch_losses[-1]:.4f}")
        if len(graft_losses) != steps:
            failures.append(f"{name}: {len(graft_losses)} logged steps, expected {steps}")
        if n < args.compare_steps:
            failures.append(f"{name}: only {n} steps to compare")
        if accuracy < args.min_accuracy:
            failures.append(f"{name}: hold-out accuracy {accuracy:.4f} < {args.min_accuracy}")
        if max(rel) > args.loss_rtol:
            failures.append(f"{name}: step {worst + 1} loss {graft_losses[worst]} vs torch {torch_losses[worst]}")
    if failures:
        sys.exit("FAILED:\n  " + "\n  ".join(failures))
    print("ok")


if __name__ == "__main__":
    main()
