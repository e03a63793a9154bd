#!/usr/bin/env python3
"""Training step time and peak memory: graft against PyTorch eager.

For each model, a PyTorch module with its loss (seeded random weights and
data) is exported to ONNX in training mode, `graft grad` writes its
forward+backward graph (the loss and the gradient of every parameter), and
two workers run one training step over and over, each in its own process:

* graft: bench/compare's graft_runner on the gradient graph (a Session with
  every available backend, as `graft run` would);
* PyTorch: torch_train_worker.py, eager mode (PyTorch's fastest CPU mode for
  training), `loss = model(*inputs); loss.backward()` with the gradients
  reset to None before each step; the CNN in channels-last memory format
  (CHANNELS_LAST: about 10% faster than the default for resnet18 here).

By default a step is forward + backward only: neither side updates the
weights. With --update a step also updates them with AdamW (lr 1e-3, weight
decay 0.01, PyTorch's betas and eps): graft's side is graft_train_worker
(training::Trainer, as `graft train` runs a batch: the training graph with
the update nodes, then the new weights written back into the session),
PyTorch's `torch.optim.AdamW(...).step()` after the backward; both update the
PyTorch model's parameters (not the running statistics of its batch
normalizations, which PyTorch updates on the side and graft leaves).
Both use --threads intra-op threads (default 2;
torch.set_num_threads, one inter-op thread) and OMP_WAIT_POLICY=PASSIVE unless
--spin (the machine may be shared). After --warmup steps each, the workers
take turns running --block steps (who goes first alternates) until each has
--runs timed steps; the medians and their ratio are reported. Peak memory is
each worker's VmHWM (peak resident set) at the end, in separate processes;
graft's also as its Session's peak of intermediate values where given. The
loss both compute on the same weights and data is printed as a check (the
script fails when they differ by more than 1e-4 relative).

Models (batch and shape as issue 23 names them):
  resnet18    torchvision resnet18, batch 16 at 224x224, cross-entropy loss
  bert4       4 BERT-base encoder layers (bench/compare's), batch 8, seq 128, MSE loss
  gru         bench/compare's residual GRU cell (hidden 500, 2 steps, batch 100), MSE loss

    training_step.py [--models resnet18,bert4,gru] [--runs 10] [--warmup 2] [--block 2]
                     [--threads 2] [--spin] [--update] [--recompute] [--json out.json] [--workdir DIR]
                     [--graft BIN] [--graft-runner BIN] [--graft-train-worker BIN]

--recompute has `graft grad --recompute` recompute cheap pointwise
activations in the backward part instead of keeping them (docs/training.md,
Memory); run with and without it to compare graft's peak and step time.

Exits 77 when PyTorch is missing (CTest's skip code).
"""
import argparse
import datetime
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "bench", "compare"))
SKIP = 77
MODEL_NAMES = ["resnet18", "bert4", "gru"]
# Models PyTorch runs in channels-last memory format (its faster CPU layout
# for convolutions in training).
CHANNELS_LAST = {"resnet18"}


def training_models():
    """name -> () -> (module returning the loss, inputs, input names)."""
    import torch
    import torch.nn as nn
    import torchvision
    import compare

    builders = compare.model_builders()

    class WithLoss(nn.Module):
        """A model and its loss against the last input (the target)."""

        def __init__(self, net, loss):
            super().__init__()
            self.net = net
            self.loss = loss

        def forward(self, *inputs):
            return self.loss(self.net(*inputs[:-1]), inputs[-1])

    class MeanSquaredError(nn.Module):
        """nn.MSELoss as plain ops (PyTorch 1.13 exports no aten::mse_loss)."""

        def forward(self, output, target):
            return ((output - target) ** 2).mean()

    def resnet18():
        net = torchvision.models.resnet18(weights=None)
        data = torch.randn(16, 3, 224, 224)
        target = torch.randint(0, 1000, (16,))
        return WithLoss(net, nn.CrossEntropyLoss()), (data, target), ["data", "target"]

    def bert4():
        encoder, _ = builders["bert4_seq128"]()
        hidden = torch.randn(8, 128, 768)
        return WithLoss(encoder, MeanSquaredError()), (hidden, torch.randn(8, 128, 768)), ["hidden", "target"]

    def gru():
        cell, (x, h) = builders["gru_cell_residual"]()
        return WithLoss(cell, MeanSquaredError()), (x, h, torch.randn(h.shape)), ["x", "h", "target"]

    return {"resnet18": resnet18, "bert4": bert4, "gru": gru}


def build(name):
    """The seeded module (training mode) and inputs of model `name`."""
    import torch
    torch.manual_seed(0)
    model, inputs, names = training_models()[name]()
    return model.train(), inputs, names


def export(name, workdir, graft, recompute=False):
    """Exports model `name` with its loss, writes its gradient graph with
    `graft grad`, the names of its parameters (params.txt, for --update), and
    saves the weights and inputs for the PyTorch worker."""
    import torch
    import compare

    folder = os.path.join(workdir, name)
    os.makedirs(folder, exist_ok=True)
    paths = {"onnx": os.path.join(folder, "model.onnx"), "train": os.path.join(folder, "train.onnx"),
             "weights": os.path.join(folder, "weights.pt"), "inputs": os.path.join(folder, "inputs.json"),
             "params": os.path.join(folder, "params.txt")}
    model, inputs, names = build(name)
    torch.onnx.export(model, inputs, paths["onnx"], opset_version=17, input_names=names, output_names=["loss"],
                      training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False)
    torch.save(model.state_dict(), paths["weights"])
    with open(paths["params"], "w") as f:
        f.write("".join(n + "\n" for n, _ in model.named_parameters()))
    with open(paths["inputs"], "w") as f:
        json.dump(compare.write_tensors(inputs, names, folder, "input"), f)
    started = time.perf_counter()
    subprocess.run([graft, "grad", paths["onnx"], "--loss", "loss", "-o", paths["train"]] +
                   (["--recompute"] if recompute else []), check=True, stdout=subprocess.DEVNULL)
    paths["grad_s"] = time.perf_counter() - started
    return paths


def first_output(ready):
    import numpy as np
    out = ready["outputs"][0]
    return float(np.fromfile(out["file"], dtype=out["dtype"]).reshape(-1)[0])


def time_model(name, args):
    import compare

    paths = export(name, args.workdir, args.graft, args.recompute)
    env = dict(os.environ)
    if not args.spin:
        env["OMP_WAIT_POLICY"] = "PASSIVE"
    out_dirs = {r: os.path.join(args.workdir, name, r + "_out") for r in ("graft", "torch")}
    for d in out_dirs.values():
        os.makedirs(d, exist_ok=True)
    commands = {
        "graft": [args.graft_runner, paths["train"], paths["inputs"], out_dirs["graft"], "--threads", str(args.threads)],
        "torch": [sys.executable, os.path.join(HERE, "torch_train_worker.py"), name, paths["weights"], paths["inputs"],
                  out_dirs["torch"], "--threads", str(args.threads)],
    }
    if args.update:
        commands["graft"] = [args.graft_train_worker, paths["onnx"], paths["inputs"], out_dirs["graft"], "--params",
                             paths["params"], "--threads", str(args.threads)]
        commands["torch"].append("--update")
    workers = {}
    for runtime in ("graft", "torch"):
        log = os.path.join(args.workdir, name, runtime + ".log")
        workers[runtime] = compare.Worker(runtime, commands[runtime], env, log, args.timeout)
    times = {r: [] for r in workers}
    for w in workers.values():
        w.run(args.warmup)
    turn = 0
    while any(len(t) < args.runs for t in times.values()):
        order = ["graft", "torch"] if turn % 2 == 0 else ["torch", "graft"]
        for runtime in order:
            if len(times[runtime]) < args.runs:
                times[runtime] += workers[runtime].run(min(args.block, args.runs - len(times[runtime])))
            time.sleep(0.02)
        turn += 1
    result = {"model": name, "grad_seconds": paths["grad_s"]}
    for runtime, w in workers.items():
        result[runtime] = {"median_ms": compare.median(times[runtime]), "min_ms": min(times[runtime]),
                           "times_ms": times[runtime], "first_run_ms": w.ready.get("first_run_ms"),
                           "loss": first_output(w.ready)}
        if "step_peak_bytes" in w.ready:
            result[runtime]["step_peak_bytes"] = w.ready["step_peak_bytes"]
        result[runtime]["peak_rss_kb"] = w.close()
    result["time_ratio"] = result["graft"]["median_ms"] / result["torch"]["median_ms"]
    result["memory_ratio"] = result["graft"]["peak_rss_kb"] / result["torch"]["peak_rss_kb"]
    return result


def isa():
    flags = ""
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("flags"):
                flags = line
                break
    for name in ("avx512_bf16", "avx512f", "avx2", "avx", "sse4_2"):
        if " " + name + " " in flags + " ":
            return {"avx512_bf16": "AVX-512 (BF16)", "avx512f": "AVX-512", "avx2": "AVX2", "avx": "AVX",
                    "sse4_2": "SSE4.2"}[name]
    return "unknown"


def markdown(results, machine, threads, update, recompute):
    step = "forward + backward + AdamW update" if update else "forward + backward, no optimizer update"
    if recompute:
        step += ", graft recomputing cheap activations"
    lines = ["Training step (%s), %d threads, %s, %s, PyTorch %s." %
             (step, threads, machine["cpu"], machine["isa"], machine["torch"]), "",
             "| model | graft ms | PyTorch ms | graft / PyTorch | graft peak MiB | PyTorch peak MiB | memory ratio | loss graft / PyTorch |",
             "|---|---|---|---|---|---|---|---|"]
    for r in results:
        lines.append("| %s | %.1f | %.1f | %.2f | %.0f | %.0f | %.2f | %.5g / %.5g |" % (
            r["model"], r["graft"]["median_ms"], r["torch"]["median_ms"], r["time_ratio"],
            r["graft"]["peak_rss_kb"] / 1024, r["torch"]["peak_rss_kb"] / 1024, r["memory_ratio"],
            r["graft"]["loss"], r["torch"]["loss"]))
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default=",".join(MODEL_NAMES))
    parser.add_argument("--runs", type=int, default=10, help="timed steps per runtime (median reported)")
    parser.add_argument("--warmup", type=int, default=2, help="untimed steps per runtime after the first")
    parser.add_argument("--block", type=int, default=2, help="steps per turn when the runtimes alternate")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--spin", action="store_true", help="leave OMP_WAIT_POLICY unset (idle threads spin)")
    parser.add_argument("--update", action="store_true",
                        help="each step also updates the weights with AdamW (graft: graft_train_worker)")
    parser.add_argument("--timeout", type=float, default=900, help="seconds a worker may take to answer")
    parser.add_argument("--recompute", action="store_true",
                        help="graft grad --recompute: recompute cheap pointwise activations in the backward part")
    parser.add_argument("--json", help="write every time and figure here")
    parser.add_argument("--workdir", default=os.path.join(ROOT, "build", "bench_training"))
    parser.add_argument("--graft", default=os.path.join(ROOT, "build", "bin", "graft"))
    parser.add_argument("--graft-runner", default=os.path.join(ROOT, "build", "bin", "graft_runner"))
    parser.add_argument("--graft-train-worker", default=os.path.join(ROOT, "build", "bin", "graft_train_worker"))
    args = parser.parse_args()
    try:
        import torch
        import torchvision  # noqa: F401
    except ImportError:
        print("PyTorch or torchvision is missing: skipped")
        return SKIP
    for tool in (args.graft, args.graft_train_worker if args.update else args.graft_runner):
        if not os.path.exists(tool):
            print("%s is missing: build it first (ninja graft_cli graft_runner graft_train_worker)" % tool)
            return 1
    import compare
    machine = compare.machine()
    machine["isa"] = isa()
    machine["torch"] = torch.__version__
    results = []
    for name in args.models.split(","):
        print("%s ..." % name, file=sys.stderr, flush=True)
        results.append(time_model(name, args))
    print(markdown(results, machine, args.threads, args.update, args.recompute))
    disagree = [r["model"] for r in results
                if abs(r["graft"]["loss"] - r["torch"]["loss"]) > 1e-4 * max(abs(r["torch"]["loss"]), 1e-6)]
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"date": datetime.datetime.utcnow().isoformat() + "Z", "machine": machine,
                       "threads": args.threads, "update": args.update, "recompute": args.recompute,
                       "results": results}, f, indent=1)
    if disagree:
        print("graft's loss differs from PyTorch's on the same weights and data: %s" % ", ".join(disagree))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
