#!/usr/bin/env python3
"""graft against ONNX Runtime on the ops whose semantics changed in ONNX
opsets 19 to 22 (docs/onnx-import.md): one small model per change, at its
new opset, on random inputs.

Usage: opset_changes.py --graft build/bin/graft --workdir DIR
Needs python3-onnx and bench/compare's onnxruntime-node (`make ort-check`).
Exit code 0 only when every model agrees.
"""
import argparse
import os
import sys

import numpy as np
import onnx
from onnx import helper, TensorProto as T, numpy_helper

from ort_support import first_difference, run_graft, run_ort, write_inputs

parser = argparse.ArgumentParser(description=__doc__)
parser.add_argument("--graft", required=True)
parser.add_argument("--workdir", required=True)
args = parser.parse_args()
failures = []


def check(name, opset, nodes, inputs, outputs, inits=()):
    folder = os.path.join(args.workdir, name)
    os.makedirs(folder, exist_ok=True)
    graph = helper.make_graph(nodes, name, [helper.make_tensor_value_info(n, t, a.shape) for n, t, a in inputs],
                              [helper.make_tensor_value_info(o, t, None) for o, t in outputs], list(inits))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 10
    path = os.path.join(folder, "model.onnx")
    onnx.save(model, path)
    manifest = write_inputs(folder, {n: a for n, _, a in inputs})
    want, error = run_ort(path, folder, manifest)
    if want is None:
        failures.append(name)
        return print("%-26s ONNX Runtime refuses it: %s" % (name, error[:200]))
    got, error = run_graft(args.graft, path, folder, [n for n, _, _ in inputs])
    if got is None:
        failures.append(name)
        return print("%-26s graft fails: %s" % (name, error[-200:]))
    problem = first_difference(got, {o: want[o] for o, _ in outputs})
    if problem:
        failures.append(name)
    print("%-26s %s" % (name, problem or "agree"))


rng = np.random.default_rng(0)
def f(*shape):
    return rng.standard_normal(shape).astype(np.float32)


# DFT-20: axis input (default -2), and explicit axis 1 on a rank-4 input.
x = f(2, 8, 3, 1)
check("dft20_default_axis", 20, [helper.make_node("DFT", ["x"], ["y"])], [("x", T.FLOAT, x)], [("y", T.FLOAT)])
check("dft20_axis1_len", 20, [helper.make_node("DFT", ["x", "n", "a"], ["y"], onesided=1)], [("x", T.FLOAT, x)], [("y", T.FLOAT)],
      [numpy_helper.from_array(np.array(6, np.int64), "n"), numpy_helper.from_array(np.array(1, np.int64), "a")])
check("dft20_inverse_neg_axis", 20, [helper.make_node("DFT", ["x", "", "a"], ["y"], inverse=1)], [("x", T.FLOAT, f(3, 5, 2))], [("y", T.FLOAT)],
      [numpy_helper.from_array(np.array(-3, np.int64), "a")])
# ReduceMax/Min on bool (opset 20).
b = rng.random((3, 4, 5)) < 0.3
for op in ("ReduceMax", "ReduceMin"):
    check(op + "_bool", 20, [helper.make_node(op, ["x", "ax"], ["y"], keepdims=0)], [("x", T.BOOL, b)], [("y", T.BOOL)],
          [numpy_helper.from_array(np.array([1], np.int64), "ax")])
# QuantizeLinear-21 output_dtype without zero point; DequantizeLinear-21.
xq = f(4, 6) * 3
check("quantize21_output_dtype", 21, [helper.make_node("QuantizeLinear", ["x", "s"], ["y"], output_dtype=T.INT8)], [("x", T.FLOAT, xq)], [("y", T.INT8)],
      [numpy_helper.from_array(np.array(0.05, np.float32), "s")])
check("qdq21_per_axis", 21, [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"], axis=1), helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"], axis=1)],
      [("x", T.FLOAT, xq)], [("y", T.FLOAT)], [numpy_helper.from_array(np.linspace(0.02, 0.1, 6).astype(np.float32), "s"), numpy_helper.from_array(np.arange(6).astype(np.uint8), "z")])
# GroupNormalization-21: per-channel scale and bias, stash_type.
xg = f(2, 6, 4, 4)
check("groupnorm21", 21, [helper.make_node("GroupNormalization", ["x", "s", "b"], ["y"], num_groups=3, stash_type=1)], [("x", T.FLOAT, xg)], [("y", T.FLOAT)],
      [numpy_helper.from_array(f(6), "s"), numpy_helper.from_array(f(6), "b")])
check("groupnorm18_per_group", 18, [helper.make_node("GroupNormalization", ["x", "s", "b"], ["y"], num_groups=3)], [("x", T.FLOAT, xg)], [("y", T.FLOAT)],
      [numpy_helper.from_array(f(3), "s"), numpy_helper.from_array(f(3), "b")])
# AveragePool-19 dilations; Pad-19 wrap; Resize-19 half_pixel_symmetric; GridSample-20 names.
xp = f(1, 2, 9, 9)
check("avgpool19_dilations", 19, [helper.make_node("AveragePool", ["x"], ["y"], kernel_shape=[3, 3], dilations=[2, 2], pads=[1, 1, 1, 1], count_include_pad=0)], [("x", T.FLOAT, xp)], [("y", T.FLOAT)])
check("pad19_wrap", 19, [helper.make_node("Pad", ["x", "p"], ["y"], mode="wrap")], [("x", T.FLOAT, f(1, 2, 4, 5))], [("y", T.FLOAT)],
      [numpy_helper.from_array(np.array([0, 0, 2, 1, 0, 0, 1, 3], np.int64), "p")])
check("resize19_symmetric", 19, [helper.make_node("Resize", ["x", "", "sc"], ["y"], mode="linear", coordinate_transformation_mode="half_pixel_symmetric")],
      [("x", T.FLOAT, f(1, 1, 4, 6))], [("y", T.FLOAT)], [numpy_helper.from_array(np.array([1, 1, 1.7, 0.6], np.float32), "sc")])
for mode in ("linear", "cubic", "nearest"):
    check("gridsample20_" + mode, 20, [helper.make_node("GridSample", ["x", "g"], ["y"], mode=mode, align_corners=0)],
          [("x", T.FLOAT, f(1, 2, 5, 6)), ("g", T.FLOAT, (rng.random((1, 4, 3, 2)) * 2.2 - 1.1).astype(np.float32))], [("y", T.FLOAT)])
check("gridsample20_3d", 20, [helper.make_node("GridSample", ["x", "g"], ["y"], mode="linear")],
      [("x", T.FLOAT, f(1, 2, 3, 4, 5)), ("g", T.FLOAT, (rng.random((1, 2, 3, 4, 3)) * 2 - 1).astype(np.float32))], [("y", T.FLOAT)])
# Gelu-20, opset 22 Relu/Conv (types only), Cast-19 saturate.
check("gelu20_tanh", 20, [helper.make_node("Gelu", ["x"], ["y"], approximate="tanh")], [("x", T.FLOAT, f(3, 7))], [("y", T.FLOAT)])
check("opset22_conv_relu", 22, [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]), helper.make_node("Relu", ["c"], ["y"])],
      [("x", T.FLOAT, f(1, 3, 6, 6))], [("y", T.FLOAT)], [numpy_helper.from_array(f(4, 3, 3, 3), "w")])
check("cast19_saturate", 19, [helper.make_node("Cast", ["x"], ["y"], to=T.INT64, saturate=1)], [("x", T.FLOAT, f(5) * 10)], [("y", T.INT64)])

print("%d of the models disagree or fail" % len(failures) if failures else "every model agrees")
sys.exit(1 if failures else 0)
