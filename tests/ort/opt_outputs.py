#!/usr/bin/env python3
"""`graft opt` writes ONNX for any runtime: for each ONNX backend test case
given (a folder with model.onnx and test_data_set_0), writes graft opt's
version of the model, then runs ONNX Runtime on the original and on graft's
file with the test's inputs. Both must load and agree.

Usage: opt_outputs.py --graft build/bin/graft --workdir DIR CASE_FOLDER_OR_SUITE ... [--limit N]
(a suite folder holds case folders: /usr/share/libonnx-testdata/data/node).
Needs python3-onnx and bench/compare's onnxruntime-node (`make ort-check`).
Exit code 0 only when no case differs or fails to load after graft opt.
"""
import argparse
import os
import shutil
import subprocess
import sys

import numpy as np
import onnx
from onnx import numpy_helper

from ort_support import first_difference, run_ort, write_inputs

FED = {"float32", "float64", "int64", "int32", "int8", "uint8", "bool"}  # what the ONNX Runtime runner feeds


def cases(paths):
    for path in paths:
        if os.path.exists(os.path.join(path, "model.onnx")):
            yield path
        else:
            for name in sorted(os.listdir(path)):
                if os.path.exists(os.path.join(path, name, "model.onnx")):
                    yield os.path.join(path, name)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--graft", required=True)
    parser.add_argument("--workdir", required=True)
    parser.add_argument("--limit", type=int, default=0, help="stop after this many cases (0: all)")
    parser.add_argument("paths", nargs="+")
    args = parser.parse_args()
    agree = differ = not_compared = 0
    for n, case in enumerate(cases(args.paths)):
        if args.limit and n >= args.limit:
            break
        name = os.path.basename(case.rstrip("/"))
        folder = os.path.join(args.workdir, name)
        os.makedirs(folder, exist_ok=True)
        original = os.path.join(case, "model.onnx")
        optimized = os.path.join(folder, "opt.onnx")
        if subprocess.run([args.graft, "opt", original, "-o", optimized], capture_output=True).returncode != 0:
            not_compared += 1  # graft does not import it (training ops, strings): `graft onnx-test` reports those
            continue
        model = onnx.load(original)
        initialized = {i.name for i in model.graph.initializer}
        inputs, fed = {}, True
        for k, value in enumerate(v for v in model.graph.input if v.name not in initialized):
            path = os.path.join(case, "test_data_set_0", "input_%d.pb" % k)
            if not os.path.exists(path):
                fed = False
                break
            try:  # a sequence or optional input is stored as another proto
                tensor = onnx.TensorProto()
                with open(path, "rb") as f:
                    tensor.ParseFromString(f.read())
                array = numpy_helper.to_array(tensor)
            except Exception:
                fed = False
                break
            if str(array.dtype) not in FED:
                fed = False
                break
            inputs[value.name] = np.ascontiguousarray(array)
        if not fed:
            not_compared += 1
            continue
        manifest = write_inputs(folder, inputs)
        want, error = run_ort(original, folder, manifest, "original")
        if want is None:
            not_compared += 1  # ONNX Runtime refuses the original: nothing to hold graft's file to
            continue
        got, error = run_ort(optimized, folder, manifest, "optimized")
        problem = "ONNX Runtime refuses graft opt's file: " + error if got is None else first_difference(got, want)
        if problem:
            differ += 1
            print("DIFF %s %s" % (name, problem[:300]), flush=True)
        else:
            agree += 1
            shutil.rmtree(folder)
    print("graft opt: %d cases agree under ONNX Runtime, %d differ, %d not compared" % (agree, differ, not_compared))
    return 0 if differ == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
