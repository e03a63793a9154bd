#!/usr/bin/env python3
"""Runs graft's libFuzzer harnesses (fuzz/*_fuzzer.cc) on their corpora.

`make asan-test` runs each for FUZZ_SECONDS (60 in CI), `make fuzz` for as
long as asked; docs/security.md (Fuzzing) describes both. For each harness:

  1. its corpus, build/fuzz/corpus/<harness>/, is seeded (when missing) from
     fuzz/corpus/<harness>/ (small seeds kept in the repository) and from
     generated seeds: the ONNX test suite's small models
     (/usr/share/libonnx-testdata) for the ONNX harnesses, artifacts that
     the sanitizer build's own `graft compile` makes of some of them for the
     artifact harness; the corpus grows from run to run;
  2. the harness fuzzes it for --seconds with a memory limit and a timeout
     per input, --jobs harnesses at a time;
  3. a crash, a leak-free sanitizer report, a timeout or an out-of-memory
     input fails the run: libFuzzer saves the input under
     build/fuzz/findings/<harness>/, and this script prints how to replay it.
     A fixed finding goes to fuzz/regressions/<harness>/, which ctest
     replays (fuzz_replay_<harness>, label unit).

At the end it prints, per harness, the executions, the coverage (libFuzzer's
cov: edges and ft: features) and the corpus size.
"""
import argparse
import concurrent.futures
import os
import pathlib
import re
import shutil
import subprocess
import sys
import time

SOURCE = pathlib.Path(__file__).resolve().parent
ONNX_TESTDATA = pathlib.Path("/usr/share/libonnx-testdata/data")
ONNX_HARNESSES = ("onnx_model_fuzzer", "onnx_structure_fuzzer")
# Small models of the ONNX suite the artifact harness starts from: compiled
# by the sanitizer build's graft (a few seconds each).
ARTIFACT_SEED_MODELS = ("node/test_add", "node/test_relu", "node/test_matmul_2d", "node/test_gemm_default_no_bias",
                        "node/test_conv_with_strides_padding", "node/test_softmax_axis_1", "node/test_reshape_reordered_all_dims",
                        "node/test_transpose_default", "node/test_concat_2d_axis_0", "node/test_gather_0",
                        "node/test_if", "node/test_loop11", "simple/test_expand_shape_model1")
# Bytes of the largest ONNX test model that seeds the ONNX harnesses.
MAX_ONNX_SEED_BYTES = 2048


def onnx_seeds(corpus):
    for model in sorted(ONNX_TESTDATA.glob("*/*/model.onnx")):
        if model.stat().st_size <= MAX_ONNX_SEED_BYTES:
            shutil.copyfile(model, corpus / f"{model.parent.parent.name}_{model.parent.name}.onnx")


def artifact_seeds(corpus, build):
    graft = build / "bin" / "graft"
    env = dict(os.environ, ASAN_OPTIONS="detect_leaks=0", GRAFT_JIT="0")
    for name in ARTIFACT_SEED_MODELS:
        model = ONNX_TESTDATA / name / "model.onnx"
        if not model.exists():
            continue
        output = corpus / (name.replace("/", "_") + ".graft")
        # Not ccodegen: its modules are shared objects that loading dlopens,
        # native code an artifact is trusted with once its checksum is right.
        result = subprocess.run([str(graft), "compile", str(model), "--backends", "dnnl,fuse,ref", "-o", str(output)], env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if result.returncode != 0:
            print(f"  (no artifact seed from {name}: {result.stderr.strip().splitlines()[-1:]})")


def prepare_corpus(harness, build):
    corpus = build / "fuzz" / "corpus" / harness
    if corpus.exists():
        return corpus
    corpus.mkdir(parents=True)
    kept = SOURCE / "corpus" / harness
    if kept.is_dir():
        for seed in kept.iterdir():
            shutil.copyfile(seed, corpus / seed.name)
    if harness in ONNX_HARNESSES and ONNX_TESTDATA.is_dir():
        onnx_seeds(corpus)
    if harness == "artifact_fuzzer" and ONNX_TESTDATA.is_dir():
        artifact_seeds(corpus, build)
    return corpus


def run_harness(harness, build, seconds, rss_limit_mb):
    corpus = build / "fuzz" / "corpus" / harness
    findings = build / "fuzz" / "findings" / harness
    findings.mkdir(parents=True, exist_ok=True)
    log = build / "fuzz" / "logs" / f"{harness}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    command = [str(build / "fuzz" / harness), str(corpus), f"-max_total_time={seconds}", "-timeout=20",
               f"-rss_limit_mb={rss_limit_mb}", f"-malloc_limit_mb={rss_limit_mb}", "-print_final_stats=1",
               f"-artifact_prefix={findings}/", "-close_fd_mask=1"]
    env = dict(os.environ, ASAN_OPTIONS="detect_leaks=0:abort_on_error=0", UBSAN_OPTIONS="print_stacktrace=1")
    start = time.monotonic()
    with open(log, "w") as out:
        code = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT, env=env).returncode
    text = log.read_text(errors="replace")
    stats = {"harness": harness, "code": code, "seconds": time.monotonic() - start, "log": log}
    for key, pattern in (("execs", r"stat::number_of_executed_units:\s*(\d+)"), ("cov", r"cov: (\d+)"),
                         ("ft", r"ft: (\d+)"), ("corpus", r"corp: (\d+)")):
        found = re.findall(pattern, text)
        stats[key] = int(found[-1]) if found else 0
    return stats


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build", required=True, help="the sanitizer build (build-asan)")
    parser.add_argument("--seconds", type=int, default=60, help="fuzzing time per harness")
    parser.add_argument("--jobs", type=int, default=2, help="harnesses run at once")
    parser.add_argument("--rss-limit-mb", type=int, default=3072, help="memory limit of a harness (libFuzzer)")
    parser.add_argument("harnesses", nargs="*", help="harness names (default: every one built)")
    args = parser.parse_args()
    build = pathlib.Path(args.build).resolve()
    harnesses = args.harnesses or sorted(p.stem for p in SOURCE.glob("*_fuzzer.cc"))
    if not args.harnesses and not any((build / "fuzz" / h).exists() for h in harnesses):
        print(f"run_fuzzers: no fuzzer in {build}/fuzz (they are built under clang only): nothing to run")
        return
    missing = [h for h in harnesses if not (build / "fuzz" / h).exists()]
    if missing:
        sys.exit(f"run_fuzzers: not built in {build}/fuzz: {', '.join(missing)} (GRAFT_SANITIZE=ON under clang builds them)")
    for harness in harnesses:
        prepare_corpus(harness, build)
    print(f"fuzzing {len(harnesses)} harnesses for {args.seconds} s each, {args.jobs} at a time", flush=True)
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        results = list(pool.map(lambda h: run_harness(h, build, args.seconds, args.rss_limit_mb), harnesses))
    failed = []
    print(f"{'harness':<24}{'seconds':>8}{'execs':>10}{'cov':>8}{'ft':>8}{'corpus':>8}")
    for r in results:
        print(f"{r['harness']:<24}{r['seconds']:>8.0f}{r['execs']:>10}{r['cov']:>8}{r['ft']:>8}{r['corpus']:>8}"
              + ("" if r["code"] == 0 else f"  FAILED (exit {r['code']})"))
        if r["code"] != 0:
            failed.append(r)
    for r in failed:
        print(f"\n{r['harness']} failed; the end of {r['log']}:")
        print("".join(r["log"].read_text(errors="replace").splitlines(keepends=True)[-40:]))
        print(f"replay: {build}/fuzz/{r['harness']} {build}/fuzz/findings/{r['harness']}/<crash-file>")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
