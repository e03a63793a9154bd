#!/usr/bin/env python3
"""The cost of the device path: zoo models on the OpenCL device against
graft's CPU backends, in one run of this script (ratios, not absolutes:
machines are noisy), and the bytes copied between host and device per run.

    python3 bench/devices/opencl_vs_cpu.py --graft build/bin/graft \
        [--models resnet50,mobilenet_v2,squeezenet,bert] [--repeat 5] [--threads 2]

For each model: `graft run --repeat N` on the CPU backends (default order)
and with `--device opencl`, the median latency of each, their ratio, the
device run's copies (`--stats`), and whether the outputs' checksums agree.
PoCL runs OpenCL on the CPU: it is not expected to win; on a GPU with an
OpenCL driver the same command measures the GPU. The CPU/ISA the figures
come from is printed first (lscpu) with the OpenCL device (`graft devices`).
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

SHAPES = {"bert": "input_ids=1,128"}


def run(cmd, env=None):
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if p.returncode != 0:
        raise RuntimeError(" ".join(cmd) + " failed:\n" + p.stdout + p.stderr)
    return p.stdout


def median_ms(text):
    m = re.search(r"latency: median ([0-9.]+) ms", text)
    return float(m.group(1)) if m else float("nan")


def checksum(text):
    m = re.search(r"checksum: sum ([-0-9.e+]+)", text)
    return float(m.group(1)) if m else float("nan")


def copies(text):
    m = re.search(r"device copies: .*\((\d+) bytes\) to the device, .*\((\d+) bytes\) to the host", text)
    return (int(m.group(1)), int(m.group(2))) if m else (0, 0)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--graft", default="build/bin/graft")
    ap.add_argument("--models", default="resnet50,mobilenet_v2,squeezenet,bert")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--device", default="opencl:0")
    args = ap.parse_args()
    cpu = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    name = re.search(r"Model name:\s*(.*)", cpu)
    flags = re.search(r"Flags:\s*(.*)", cpu)
    isa = "avx512f" if flags and "avx512f" in flags.group(1) else ("avx2" if flags and "avx2" in flags.group(1) else "?")
    print(f"CPU: {name.group(1) if name else '?'} ({isa}), {args.threads} threads")
    for line in run([args.graft, "devices"]).splitlines():
        if line.startswith(args.device.split(":")[0] + ":"):
            print("device:", line.strip())
    print(f"{'model':14} {'cpu ms':>9} {'device ms':>10} {'device/cpu':>10} {'to device':>12} {'to host':>10}  outputs")
    with tempfile.TemporaryDirectory() as work:
        for model in args.models.split(","):
            path = os.path.join(work, model + ".onnx")
            run([args.graft, "zoo", model, "-o", path])
            common = [args.graft, "run", path, "--repeat", str(args.repeat), "--threads", str(args.threads), "--stats"]
            if model in SHAPES:
                common += ["--shape", SHAPES[model]]
            host = run(common)
            device = run(common + ["--device", args.device])
            h, d = median_ms(host), median_ms(device)
            to_dev, to_host = copies(device)
            a, b = checksum(host), checksum(device)
            agree = "agree" if abs(a - b) <= 1e-3 * max(1.0, abs(a)) else f"DIFFER ({a} vs {b})"
            print(f"{model:14} {h:9.2f} {d:10.2f} {d / h:10.2f} {to_dev:12d} {to_host:10d}  {agree}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
