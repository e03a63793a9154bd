"""worker_io.py: what the PyTorch benchmark workers share.

bench/compare/torch_runner.py and bench/training/torch_train_worker.py import
it by path (sys.path). They speak bench/compare's runner protocol, as graft's
workers do (bench/common/worker_io.h): positional arguments, then flags;
INPUTS.json lists {name, dtype, shape, file} with raw little-endian data (a
relative file lies beside the manifest); one JSON line when ready (the
outputs written to OUTPUT_DIR/<index>.bin); then on stdin "run N" runs N
times and answers {"times_ms": [...]}, "quit" (or the end of input) exits;
any error is one line {"error": "..."} and exit code 1.
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
    """One JSON line to the driver, flushed."""
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def parse_worker_arguments(args, positional, usage, valued=(), switches=()):
    """Splits `args` (sys.argv[1:]) into `positional` (how many) values and
    the flags: "--flag value" for each flag in `valued`, a lone "--flag" (True)
    for each in `switches`. Returns (positional values, {flag: value}).
    ValueError: too few arguments (the message is `usage`), an unknown flag,
    a flag without its value."""
    if len(args) < positional:
        raise ValueError(usage)
    flags = {}
    rest = args[positional:]
    i = 0
    while i < len(rest):
        flag = rest[i]
        if flag in switches:
            flags[flag] = True
            i += 1
        elif flag in valued:
            if i + 1 >= len(rest):
                raise ValueError("flag '%s' needs a value" % flag)
            flags[flag] = rest[i + 1]
            i += 2
        else:
            raise ValueError("unknown flag '%s'" % flag)
    return args[:positional], flags


def read_manifest_arrays(manifest_path):
    """The arrays the manifest lists, in its order (numpy)."""
    import numpy as np
    with open(manifest_path) as f:
        manifest = json.load(f)
    folder = os.path.dirname(os.path.abspath(manifest_path))
    arrays = []
    for e in manifest:
        path = e["file"] if os.path.isabs(e["file"]) else os.path.join(folder, os.path.basename(e["file"]))
        arrays.append(np.fromfile(path, dtype=e["dtype"]).reshape(e["shape"]))
    return arrays


def write_output(output_dir, index, name, array):
    """Writes `array` (numpy) to OUTPUT_DIR/<index>.bin; returns its entry of the ready line."""
    path = os.path.join(output_dir, "%d.bin" % index)
    array.tofile(path)
    return {"name": name, "dtype": str(array.dtype), "shape": list(array.shape), "file": path}


def serve_timed_runs(run_once):
    """Serves "run N" (N calls of run_once, each timed) until "quit" or the end of input."""
    for line in sys.stdin:
        line = line.strip()
        if line == "quit":
            break
        if not line.startswith("run "):
            raise ValueError("unknown request '%s'" % line)
        times = []
        for _ in range(int(line[4:])):
            begin = time.perf_counter()
            run_once()
            times.append((time.perf_counter() - begin) * 1e3)
        send({"times_ms": times})


def run_worker(main):
    """Runs main(); an exception goes to the driver as one JSON line, exit code 1."""
    try:
        main()
    except Exception as e:  # reported to the driver as one JSON line
        send({"error": "%s: %s" % (type(e).__name__, e)})
        sys.exit(1)
