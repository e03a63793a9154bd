#!/usr/bin/env python3
"""torch_train_worker.py: the PyTorch side of training_step.py.

    torch_train_worker.py MODEL_NAME WEIGHTS.pt INPUTS.json OUTPUT_DIR [--threads N] [--update]

Rebuilds model MODEL_NAME of training_step.py with its loss, loads the weights
the driver exported, and speaks bench/compare's runner protocol: one JSON
line when ready (the first step done, its loss written to OUTPUT_DIR/0.bin),
then "run N" runs N training steps (eager mode, training mode, gradients set
to None, forward, backward; with --update, then torch.optim.AdamW's step
(lr 1e-3, weight decay 0.01, as graft_train_worker); the models of
training_step.CHANNELS_LAST in channels-last memory format) and prints
{"times_ms": [...]}; "quit" exits.
"""
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def send(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def main():
    args = sys.argv[1:]
    if len(args) < 4:
        raise ValueError("usage: torch_train_worker.py MODEL_NAME WEIGHTS.pt INPUTS.json OUTPUT_DIR [--threads N]")
    name, weights, manifest_path, output_dir = args[:4]
    threads = 2
    update = False
    rest = args[4:]
    i = 0
    while i < len(rest):
        if rest[i] == "--threads" and i + 1 < len(rest):
            threads = int(rest[i + 1])
            i += 2
        elif rest[i] == "--update":
            update = True
            i += 1
        else:
            raise ValueError("unknown flag '%s'" % rest[i])

    import numpy as np
    import torch
    import training_step

    torch.set_num_threads(threads)
    torch.set_num_interop_threads(1)
    with open(manifest_path) as f:
        manifest = json.load(f)
    folder = os.path.dirname(os.path.abspath(manifest_path))
    inputs = [torch.from_numpy(np.fromfile(os.path.join(folder, e["file"]), dtype=e["dtype"]).reshape(e["shape"]))
              for e in manifest]
    model, _, _ = training_step.build(name)
    model.load_state_dict(torch.load(weights))
    if name in training_step.CHANNELS_LAST:
        model = model.to(memory_format=torch.channels_last)
        inputs[0] = inputs[0].contiguous(memory_format=torch.channels_last)

    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01) if update else None

    def step():
        model.zero_grad(set_to_none=True)
        loss = model(*inputs)
        loss.backward()
        if optimizer is not None:
            optimizer.step()
        return loss

    start = time.perf_counter()
    loss = step()
    first = time.perf_counter() - start
    a = loss.detach().reshape(1).numpy()
    path = os.path.join(output_dir, "0.bin")
    a.tofile(path)
    send({"ready": True, "first_run_ms": first * 1e3, "threads": threads, "version": torch.__version__,
          "outputs": [{"name": "loss", "dtype": str(a.dtype), "shape": [1], "file": path}]})
    for line in sys.stdin:
        line = line.strip()
        if line == "quit":
            break
        if not line.startswith("run "):
            raise ValueError("unknown request '%s'" % line)
        times = []
        for _ in range(int(line[4:])):
            begin = time.perf_counter()
            step()
            times.append((time.perf_counter() - begin) * 1e3)
        send({"times_ms": times})


if __name__ == "__main__":
    try:
        main()
    except Exception as e:  # reported to the driver as one JSON line
        send({"error": "%s: %s" % (type(e).__name__, e)})
        sys.exit(1)
