#!/usr/bin/env python3
"""torch_runner.py: the PyTorch side of bench/compare (compare.py drives it).

    torch_runner.py MODEL.pt INPUTS.json OUTPUT_DIR [--threads N]

Same protocol as graft_runner.cc. MODEL.pt is the model traced by compare.py
(torch.jit.trace, seeded weights); timed: torch.jit.load + freeze +
torch.jit.optimize_for_inference + the first run. torch.set_num_threads(N)
(default 2), one inter-op thread, runs under torch.inference_mode().
"""
import json
import os
import sys
import time


def peak_rss_kb():
    """VmHWM in KiB (ru_maxrss would include the parent's peak inherited across fork + exec)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return -1


def send(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def main():
    args = sys.argv[1:]
    if len(args) < 3:
        raise ValueError("usage: torch_runner.py MODEL.pt INPUTS.json OUTPUT_DIR [--threads N]")
    model_path, manifest_path, output_dir = args[:3]
    threads = 2
    rest = args[3:]
    for i in range(0, len(rest) - 1, 2):
        if rest[i] == "--threads":
            threads = int(rest[i + 1])
        else:
            raise ValueError("unknown flag '%s'" % rest[i])

    import numpy as np
    import torch
    try:
        import torchvision  # noqa: F401  registers torchvision::nms and roi_align for TorchScript (detection models)
    except ImportError:
        pass
    torch.set_num_threads(threads)
    torch.set_num_interop_threads(1)
    with open(manifest_path) as f:
        manifest = json.load(f)
    folder = os.path.dirname(os.path.abspath(manifest_path))
    files = [e["file"] if os.path.isabs(e["file"]) else os.path.join(folder, os.path.basename(e["file"]))
             for e in manifest]  # a relative file lies beside the manifest
    inputs = [torch.from_numpy(np.fromfile(f, dtype=e["dtype"]).reshape(e["shape"])) for f, e in zip(files, manifest)]
    startup_rss = peak_rss_kb()

    with torch.inference_mode():
        start = time.perf_counter()
        model = torch.jit.load(model_path).eval()
        model = torch.jit.optimize_for_inference(torch.jit.freeze(model))
        loaded = time.perf_counter()
        result = model(*inputs)
        done = time.perf_counter()
        results = list(result) if isinstance(result, (tuple, list)) else [result]
        outputs = []
        for i, t in enumerate(results):
            a = t.detach().contiguous().numpy()
            path = "%s/%d.bin" % (output_dir, i)
            a.tofile(path)
            outputs.append({"name": "output%d" % i, "dtype": str(a.dtype), "shape": list(a.shape), "file": path})
        send({"ready": True, "load_ms": (loaded - start) * 1e3, "first_run_ms": (done - loaded) * 1e3,
              "first_inference_ms": (done - start) * 1e3, "startup_rss_kb": startup_rss, "threads": threads,
              "outputs": outputs, "version": torch.__version__})
        for line in sys.stdin:
            line = line.strip()
            if line == "quit":
                break
            if not line.startswith("run "):
                raise ValueError("unknown request '%s'" % line)
            times = []
            for _ in range(int(line[4:])):
                begin = time.perf_counter()
                model(*inputs)
                times.append((time.perf_counter() - begin) * 1e3)
            send({"times_ms": times})


if __name__ == "__main__":
    try:
        main()
    except Exception as e:  # reported to the driver as one JSON line
        send({"error": "%s: %s" % (type(e).__name__, e)})
        sys.exit(1)
