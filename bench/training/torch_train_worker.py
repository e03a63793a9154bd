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
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "common"))
import worker_io  # noqa: E402  bench/common: the protocol's shared parts


def main():
    usage = "usage: torch_train_worker.py MODEL_NAME WEIGHTS.pt INPUTS.json OUTPUT_DIR [--threads N] [--update]"
    (name, weights, manifest_path, output_dir), flags = worker_io.parse_worker_arguments(
        sys.argv[1:], 4, usage, valued=("--threads",), switches=("--update",))
    threads = int(flags.get("--threads", 2))
    update = flags.get("--update", False)

    import torch
    import training_step

    torch.set_num_threads(threads)
    torch.set_num_interop_threads(1)
    inputs = [torch.from_numpy(a) for a in worker_io.read_manifest_arrays(manifest_path)]
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
    output = worker_io.write_output(output_dir, 0, "loss", loss.detach().reshape(1).numpy())
    worker_io.send({"ready": True, "first_run_ms": first * 1e3, "threads": threads, "version": torch.__version__,
                    "outputs": [output]})
    worker_io.serve_timed_runs(step)


if __name__ == "__main__":
    worker_io.run_worker(main)
