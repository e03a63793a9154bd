"""Shared fixtures of the Python tests: small ONNX models made with onnx.helper.

The tests import the `graft` package from PYTHONPATH (CTest sets it to
build/python; after `pip install .` it is the installed one). GRAFT_CLI names
the graft tool for the tests that compare with it.
"""
import os

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper


def make_model(nodes, inputs, outputs, initializers=(), opset=17):
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def save(model, directory, name):
    path = os.path.join(str(directory), name)
    onnx.save(model, path)
    return path


@pytest.fixture(scope="session")
def models(tmp_path_factory):
    """Paths of the test models, by name."""
    d = tmp_path_factory.mktemp("models")
    f = TensorProto.FLOAT
    paths = {}
    # y = relu(x + w), x: float32[N,4] (a symbolic batch).
    paths["add_relu"] = save(make_model(
        [helper.make_node("Add", ["x", "w"], ["a"]), helper.make_node("Relu", ["a"], ["y"])],
        [helper.make_tensor_value_info("x", f, ["N", 4])],
        [helper.make_tensor_value_info("y", f, ["N", 4])],
        [numpy_helper.from_array(np.array([1, -2, 3, -4], np.float32), "w")]), d, "add_relu.onnx")
    # Two inputs, three outputs: s = a + b, p = a * b, n = -a.
    paths["three_out"] = save(make_model(
        [helper.make_node("Add", ["a", "b"], ["s"]), helper.make_node("Mul", ["a", "b"], ["p"]),
         helper.make_node("Neg", ["a"], ["n"])],
        [helper.make_tensor_value_info("a", f, [2, 3]), helper.make_tensor_value_info("b", f, [2, 3])],
        [helper.make_tensor_value_info(n, f, [2, 3]) for n in ("s", "p", "n")]), d, "three_out.onnx")
    # y = x (the output is the input's value).
    paths["identity"] = save(make_model(
        [helper.make_node("Identity", ["x"], ["y"])],
        [helper.make_tensor_value_info("x", f, [3])], [helper.make_tensor_value_info("y", f, [3])]),
        d, "identity.onnx")
    # c = a constant, y = x + 1: an output that is a weight of the model.
    paths["constant_out"] = save(make_model(
        [helper.make_node("Constant", [], ["c"], value=numpy_helper.from_array(np.arange(4, dtype=np.float32))),
         helper.make_node("Add", ["x", "c"], ["y"])],
        [helper.make_tensor_value_info("x", f, [4])],
        [helper.make_tensor_value_info("c", f, [4]), helper.make_tensor_value_info("y", f, [4])]),
        d, "constant_out.onnx")
    # float16 in and out: y = x * x; and a bfloat16 output: z = Cast(x, bfloat16).
    paths["half"] = save(make_model(
        [helper.make_node("Mul", ["x", "x"], ["y"]), helper.make_node("Cast", ["x"], ["z"], to=TensorProto.BFLOAT16)],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT16, [4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT16, [4]),
         helper.make_tensor_value_info("z", TensorProto.BFLOAT16, [4])]), d, "half.onnx")
    # int64 and bool: y = x > 2, s = ReduceSum(x).
    paths["ints"] = save(make_model(
        [helper.make_node("Greater", ["x", "two"], ["y"]), helper.make_node("ReduceSum", ["x"], ["s"], keepdims=0)],
        [helper.make_tensor_value_info("x", TensorProto.INT64, [5])],
        [helper.make_tensor_value_info("y", TensorProto.BOOL, [5]), helper.make_tensor_value_info("s", TensorProto.INT64, [])],
        [numpy_helper.from_array(np.array(2, np.int64), "two")]), d, "ints.onnx")
    # A sequence output: [x, x + x].
    paths["sequence"] = save(make_model(
        [helper.make_node("Add", ["x", "x"], ["d"]), helper.make_node("SequenceConstruct", ["x", "d"], ["s"])],
        [helper.make_tensor_value_info("x", f, [2])],
        [helper.make_tensor_sequence_value_info("s", f, [2])]), d, "sequence.onnx")
    # A heavier model for the thread tests: y = tanh(x @ w1) @ w2, x: float32[B,256].
    rng = np.random.default_rng(0)
    paths["mlp"] = save(make_model(
        [helper.make_node("MatMul", ["x", "w1"], ["h"]), helper.make_node("Tanh", ["h"], ["t"]),
         helper.make_node("MatMul", ["t", "w2"], ["y"])],
        [helper.make_tensor_value_info("x", f, ["B", 256])], [helper.make_tensor_value_info("y", f, ["B", 64])],
        [numpy_helper.from_array((rng.standard_normal((256, 256)) / 16).astype(np.float32), "w1"),
         numpy_helper.from_array((rng.standard_normal((256, 64)) / 16).astype(np.float32), "w2")]), d, "mlp.onnx")
    # A long run (a few tenths of a second of matrix products on one thread): y = x @ w, 8 times.
    n = 1024
    nodes, prev = [], "x"
    for k in range(8):
        nodes.append(helper.make_node("MatMul", [prev, "w"], ["m%d" % k]))
        prev = "m%d" % k
    nodes.append(helper.make_node("Identity", [prev], ["y"]))
    paths["slow"] = save(make_model(
        nodes, [helper.make_tensor_value_info("x", f, [n, n])], [helper.make_tensor_value_info("y", f, [n, n])],
        [numpy_helper.from_array(np.eye(n, dtype=np.float32), "w")]), d, "slow.onnx")
    return paths


@pytest.fixture(scope="session")
def graft_cli():
    path = os.environ.get("GRAFT_CLI")
    if not path or not os.path.exists(path):
        pytest.skip("GRAFT_CLI (the graft tool) is not set")
    return path
