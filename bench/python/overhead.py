"""The Python overhead of one InferenceSession.run against the graft tool's
latency for the same model (docs/python.md "Performance").

    PYTHONPATH=build/python /usr/bin/python3 bench/python/overhead.py --graft build/bin/graft

For each model: the median latency of `graft run MODEL --repeat N --threads 1`
(Session::run on prepared tensors, in C++), the median of sess.run(None, feed)
from Python on the same input (threads=1), and their difference: what the
binding costs per run (dict lookup, wrapping the input without a copy,
releasing and taking the GIL, wrapping the outputs as numpy arrays).
Models: a 4-element Add+Relu (the run is almost all overhead) and the zoo's
MLP (784-512-256-10) at batch 1.
"""
import argparse
import os
import platform
import re
import statistics
import subprocess
import tempfile
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import graft


def tiny_model(path):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    w = numpy_helper.from_array(np.array([1, -2, 3, -4], np.float32), "w")
    graph = helper.make_graph([helper.make_node("Add", ["x", "w"], ["a"]), helper.make_node("Relu", ["a"], ["y"])],
                              "tiny", [x], [y], [w])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)


def python_median_us(path, feed, runs, rounds):
    sess = graft.InferenceSession(path, threads=1)
    for _ in range(200):
        sess.run(None, feed)
    graft._graft.wait_for_background_compiles()
    for _ in range(200):
        sess.run(None, feed)
    medians = []
    for _ in range(rounds):
        times = []
        for _ in range(runs):
            start = time.perf_counter_ns()
            sess.run(None, feed)
            times.append(time.perf_counter_ns() - start)
        medians.append(statistics.median(times) / 1000.0)
    return min(medians)


def cli_median_us(graft_cli, path, name, npy, runs, rounds):
    medians = []
    for _ in range(rounds):
        out = subprocess.run([graft_cli, "run", path, "--input", "%s=%s" % (name, npy), "--threads", "1",
                              "--repeat", str(runs)], capture_output=True, text=True, check=True).stdout
        medians.append(float(re.search(r"latency: median ([0-9.]+) ms", out).group(1)) * 1000.0)
    return min(medians)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--graft", required=True, help="the graft tool (build/bin/graft)")
    parser.add_argument("--runs", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=5, help="repeat the measurement; the best median counts")
    args = parser.parse_args()
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = re.search(r"model name\s*:\s*(.*)", f.read()).group(1)
    except (OSError, AttributeError):
        pass
    print("graft %s, Python %s, numpy %s, CPU %s" % (graft.__version__, platform.python_version(), np.__version__, cpu))
    with tempfile.TemporaryDirectory() as d:
        models = []
        tiny = os.path.join(d, "tiny.onnx")
        tiny_model(tiny)
        models.append(("add_relu[1,4]", tiny, np.ones((1, 4), np.float32)))
        mlp = os.path.join(d, "mlp.onnx")
        subprocess.run([args.graft, "zoo", "mlp", "-o", mlp], check=True, capture_output=True)
        models.append(("mlp batch 1", mlp, np.random.default_rng(0).uniform(-1, 1, (1, 784)).astype(np.float32)))
        print("%-16s %12s %12s %12s" % ("model", "CLI (us)", "Python (us)", "overhead"))
        for label, path, x in models:
            name = onnx.load(path).graph.input[0].name
            npy = os.path.join(d, "x.npy")
            np.save(npy, x)
            cli = cli_median_us(args.graft, path, name, npy, args.runs, args.rounds)
            py = python_median_us(path, {name: x}, args.runs, args.rounds)
            print("%-16s %12.2f %12.2f %12.2f" % (label, cli, py, py - cli))


if __name__ == "__main__":
    main()
