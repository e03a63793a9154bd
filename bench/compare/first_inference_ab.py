#!/usr/bin/python3
"""Alternated A/B of two graft_runner builds: first inference and steady runs.

    first_inference_ab.py --a OLD/graft_runner --b NEW/graft_runner \\
        --models resnet18_qdq,bert4_seq128_qdq [--rounds 4] [--runs 20] [--workdir build/compare]

For each model, `rounds` times (A then B, then B then A, ...): starts a fresh
worker, reads its first-inference time (load + first run), the CPU time
(user + system, all threads, from /proc) the worker had used by then and
its peak RSS, runs 5 warm-up and `runs` timed runs. Prints per model the
minimum first inference and first-inference CPU of each build, the minimum
of the per-worker minimum run times and the median of the per-worker
medians, with B / A ratios, and the CPU and load average. On a loaded
machine the CPU column is the one to read: the wall time is mostly waiting. Idle threads sleep (OMP_WAIT_POLICY=PASSIVE): on a shared
machine spinning threads make the times meaningless. The models are the
exports `compare.py` made in WORKDIR (inputs.json, else calibration0.json).
"""
import argparse
import json
import os
import statistics
import subprocess
import tempfile


def one_worker(runner, folder, runs, env):
    inputs = os.path.join(folder, "inputs.json")
    if not os.path.exists(inputs):
        inputs = os.path.join(folder, "calibration0.json")
    with tempfile.TemporaryDirectory() as out:
        p = subprocess.Popen([runner, os.path.join(folder, "model.onnx"), inputs, out], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True, env=env)
        ready = json.loads(p.stdout.readline())
        if "error" in ready:
            raise SystemExit("%s: %s" % (runner, ready["error"]))
        with open("/proc/%d/stat" % p.pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        first_cpu_ms = (int(fields[11]) + int(fields[12])) * 1000.0 / os.sysconf("SC_CLK_TCK")  # utime + stime
        p.stdin.write("run 5\n")
        p.stdin.flush()
        p.stdout.readline()
        p.stdin.write("run %d\n" % runs)
        p.stdin.flush()
        times = json.loads(p.stdout.readline())["times_ms"]
        p.stdin.write("quit\n")
        p.stdin.flush()
        p.wait()
    return (ready["first_inference_ms"], min(times), statistics.median(times), ready["first_run_peak_rss_kb"] // 1024,
            first_cpu_ms)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--a", required=True, help="graft_runner of the baseline")
    parser.add_argument("--b", required=True, help="graft_runner of the change")
    parser.add_argument("--models", required=True)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--workdir", default=os.path.join(os.path.dirname(__file__), "..", "..", "build", "compare"))
    args = parser.parse_args()
    env = dict(os.environ, OMP_WAIT_POLICY="PASSIVE")
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    print("CPU %s, %d cores, load average %s" % (cpu, os.cpu_count(), open("/proc/loadavg").read().split()[:3]))
    for model in args.models.split(","):
        folder = os.path.join(args.workdir, model)
        got = {"a": [], "b": []}
        for r in range(args.rounds):
            for v in ("a", "b") if r % 2 == 0 else ("b", "a"):
                got[v].append(one_worker(getattr(args, v), folder, args.runs, env))
        a, b = got["a"], got["b"]
        first = (min(x[0] for x in a), min(x[0] for x in b))
        first_cpu = (min(x[4] for x in a), min(x[4] for x in b))
        fastest = (min(x[1] for x in a), min(x[1] for x in b))
        median = (statistics.median(x[2] for x in a), statistics.median(x[2] for x in b))
        print("%-18s first inference ms %7.0f / %7.0f (%.2f), CPU ms %5.0f / %5.0f (%.2f) | run ms min %7.2f / %7.2f (%.2f), median %7.2f / %7.2f "
              "(%.2f) | peak RSS MiB %d / %d" % (model, first[0], first[1], first[1] / first[0], first_cpu[0],
                                                first_cpu[1], first_cpu[1] / first_cpu[0], fastest[0],
                                                fastest[1], fastest[1] / fastest[0], median[0], median[1],
                                                median[1] / median[0], a[0][3], b[0][3]), flush=True)
    print("load average after: %s" % open("/proc/loadavg").read().split()[:3])


if __name__ == "__main__":
    main()
