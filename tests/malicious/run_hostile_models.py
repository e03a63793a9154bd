"""Runs `graft run` on every hostile model of hostile_models.py and checks its answer.

A case passes when graft exits with the case's code within the time bound, and
for an error: stderr is exactly one line `graft: error: ...` that contains the
case's substring, names no C++ exception type (std::bad_alloc, basic_string,
...), and carries no sanitizer or crash report. Prints one line per case and
the count of clean errors; exits 1 when any case fails.

    /usr/bin/python3 run_hostile_models.py --graft build/bin/graft --workdir build/malicious
"""

import argparse
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hostile_models  # noqa: E402

# What a clean error never contains: C++ exception names leaking through, and
# the reports of sanitizers and of the C++ runtime when it aborts.
FORBIDDEN = ["std::", "bad_alloc", "basic_string", "vector::", "terminate called", "Sanitizer", "runtime error:",
             "Segmentation fault", "Aborted", "core dumped"]


def check(case, graft, time_bound):
    command = [graft, "run", case.path, "--threads", "2"] + case.args
    started = time.monotonic()
    try:
        done = subprocess.run(command, capture_output=True, text=True, errors="replace", timeout=time_bound)
    except subprocess.TimeoutExpired:
        return "no answer within %d s" % time_bound, time.monotonic() - started
    seconds = time.monotonic() - started
    stderr = done.stderr.strip()
    check.last_stderr = stderr
    if done.returncode < 0:
        return "killed by signal %d: %s" % (-done.returncode, stderr[-300:]), seconds
    if done.returncode != case.exit_code:
        return "exit %d, expected %d: %s" % (done.returncode, case.exit_code, stderr[-300:]), seconds
    for word in FORBIDDEN:
        if word in stderr:
            return "stderr holds '%s': %s" % (word, stderr[-300:]), seconds
    if case.exit_code == 0:
        return ("stderr not empty: " + stderr[-300:]) if stderr else None, seconds
    lines = stderr.splitlines()
    if len(lines) != 1 or not lines[0].startswith("graft: error: "):
        return "not one 'graft: error:' line: %r" % stderr[-300:], seconds
    if case.message.lower() not in lines[0].lower():
        return "message lacks '%s': %s" % (case.message, lines[0]), seconds
    return None, seconds


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--graft", required=True, help="the graft binary")
    parser.add_argument("--workdir", required=True, help="folder the models are written to")
    parser.add_argument("--time-bound", type=int, default=60, help="seconds a case may take")
    parser.add_argument("--only", default="", help="run the cases whose name contains this")
    parser.add_argument("--verbose", action="store_true", help="print each error line")
    options = parser.parse_args()

    cases = [c for c in hostile_models.write_cases(os.path.abspath(options.workdir)) if options.only in c.name]
    failures = 0
    clean_errors = 0
    for case in cases:
        problem, seconds = check(case, options.graft, options.time_bound)
        if problem:
            failures += 1
            print("FAIL %-34s %-16s %5.2f s  %s" % (case.name, case.klass, seconds, problem))
        else:
            clean_errors += case.exit_code != 0
            print("ok   %-34s %-16s %5.2f s" % (case.name, case.klass, seconds))
        if options.verbose:
            print("     " + getattr(check, "last_stderr", ""))
    print("%d hostile models, %d clean errors, %d valid models ran, %d failures"
          % (len(cases), clean_errors, sum(c.exit_code == 0 for c in cases), failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
