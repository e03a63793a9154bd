#!/usr/bin/env python3
"""torch_runner.py: the PyTorch side of bench/compare (compare.py drives it).

    torch_runner.py MODEL.pt INPUTS.json OUTPUT_DIR [--threads N]

Same protocol as graft_runner.cc. MODEL.pt is the model traced by compare.py
(torch.jit.trace, seeded weights); timed: torch.jit.load + freeze +
torch.jit.optimize_for_inference + the first run. torch.set_num_threads(N)
(default 2), one inter-op thread, runs under torch.inference_mode().
"""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "common"))
import worker_io  # noqa: E402  bench/common: the protocol's shared parts


def main():
    (model_path, manifest_path, output_dir), flags = worker_io.parse_worker_arguments(
        sys.argv[1:], 3, "usage: torch_runner.py MODEL.pt INPUTS.json OUTPUT_DIR [--threads N]", valued=("--threads",))
    threads = int(flags.get("--threads", 2))

    import torch
    try:
        import torchvision  # noqa: F401  registers torchvision::nms and roi_align for TorchScript (detection models)
    except ImportError:
        pass
    torch.set_num_threads(threads)
    torch.set_num_interop_threads(1)
    inputs = [torch.from_numpy(a) for a in worker_io.read_manifest_arrays(manifest_path)]
    startup_rss = worker_io.peak_rss_kb()

    with torch.inference_mode():
        start = time.perf_counter()
        model = torch.jit.load(model_path).eval()
        model = torch.jit.optimize_for_inference(torch.jit.freeze(model))
        loaded = time.perf_counter()
        result = model(*inputs)
        done = time.perf_counter()
        results = list(result) if isinstance(result, (tuple, list)) else [result]
        outputs = [worker_io.write_output(output_dir, i, "output%d" % i, t.detach().contiguous().numpy())
                   for i, t in enumerate(results)]
        worker_io.send({"ready": True, "load_ms": (loaded - start) * 1e3, "first_run_ms": (done - loaded) * 1e3,
                        "first_inference_ms": (done - start) * 1e3, "startup_rss_kb": startup_rss,
                        "threads": threads, "outputs": outputs, "version": torch.__version__})
        worker_io.serve_timed_runs(lambda: model(*inputs))


if __name__ == "__main__":
    worker_io.run_worker(main)
