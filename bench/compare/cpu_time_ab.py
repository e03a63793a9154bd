#!/usr/bin/env python3
"""CPU time per inference of two graft builds on the same models, alternated.

A before/after comparison that a loaded machine does not blur: wall-clock
latency there is mostly waiting to be scheduled, while the CPU time a run
consumes (user + system) is the work it does (shared caches still add some
spread). For each model and build:

    (CPU time of `graft run MODEL --repeat R+1`) - (CPU time of `--repeat 1`)

divided by R, so that loading and compiling cancel out. Builds alternate
(which goes first flips every round); the median over rounds is reported,
with the ratio after / before, the CPU and the ISA oneDNN was held to.

    cpu_time_ab.py --before /path/to/old/bin/graft --after build/bin/graft \
        --models build/compare/squeezenet1_1/model.onnx,... [--isa avx2] \
        [--threads 1] [--repeat 20] [--rounds 3]

--isa avx2 sets ONEDNN_MAX_CPU_ISA=AVX2 and GRAFT_JIT_LANES=8 (what most
laptops run); with --threads above 1, idle threads sleep
(OMP_WAIT_POLICY=PASSIVE) so that spinning is not counted as work. A build's
shared library is found next to its binary's folder (build/bin/graft ->
build/libgraft.so) through LD_LIBRARY_PATH.
"""
import argparse
import os
import platform
import resource
import statistics
import subprocess
import sys


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def cpu_seconds(binary, model, repeat, args):
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads))
    folder = os.path.dirname(os.path.abspath(binary))
    env["LD_LIBRARY_PATH"] = os.pathsep.join([folder, os.path.dirname(folder), env.get("LD_LIBRARY_PATH", "")])
    if args.isa == "avx2":
        env.update(ONEDNN_MAX_CPU_ISA="AVX2", GRAFT_JIT_LANES="8")
    if args.threads > 1:
        env["OMP_WAIT_POLICY"] = "PASSIVE"
    start = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([binary, "run", model, "--threads", str(args.threads), "--repeat", str(repeat), "--show", "0"],
                   env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    end = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (end.ru_utime - start.ru_utime) + (end.ru_stime - start.ru_stime)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", required=True, help="the baseline build's graft binary")
    parser.add_argument("--after", required=True, help="the build under test")
    parser.add_argument("--models", required=True, help="comma-separated ONNX files")
    parser.add_argument("--isa", choices=["default", "avx2"], default="default")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    builds = {"before": args.before, "after": args.after}
    models = [m for m in args.models.split(",") if m]
    times = {m: {"before": [], "after": []} for m in models}
    for r in range(args.rounds):
        for model in models:
            for name in (["before", "after"] if r % 2 == 0 else ["after", "before"]):
                per_run = (cpu_seconds(builds[name], model, args.repeat + 1, args) -
                           cpu_seconds(builds[name], model, 1, args)) / args.repeat
                times[model][name].append(per_run * 1000)
                print("round %d %s %s: %.2f ms" % (r + 1, os.path.basename(os.path.dirname(model)) or model, name,
                                                   per_run * 1000), file=sys.stderr, flush=True)
    with open("/proc/loadavg") as f:
        load = f.read().split()[0]
    print("%s, oneDNN ISA %s, %d thread(s), CPU ms per inference (median of %d rounds), load average %s" %
          (cpu_model(), args.isa, args.threads, args.rounds, load))
    print()
    print("| model | before | after | after / before |")
    print("|---|---|---|---|")
    for model in models:
        before = statistics.median(times[model]["before"])
        after = statistics.median(times[model]["after"])
        name = os.path.basename(os.path.dirname(model)) or model
        print("| %s | %.2f | %.2f | %.3f |" % (name, before, after, after / before))


if __name__ == "__main__":
    main()
