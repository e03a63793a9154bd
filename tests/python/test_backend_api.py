"""graft.backend's own entry points (prepare, run_model, run_node), beside
ONNX's runner in test_onnx_backend.py."""
import numpy as np
import onnx
from onnx import helper

import graft.backend


def test_prepare_and_run_model(models):
    model = onnx.load(models["three_out"])
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    rep = graft.backend.prepare(model)
    s, p, n = rep.run([a, a])
    np.testing.assert_array_equal(p, a * a)
    s2, _, _ = rep.run({"a": a, "b": np.ones_like(a)})
    np.testing.assert_array_equal(s2, a + 1)
    outputs = graft.backend.run_model(model.SerializeToString(), [a, a])
    np.testing.assert_array_equal(outputs[2], -a)
    assert graft.backend.supports_device("CPU") and not graft.backend.supports_device("CUDA")


def test_run_node():
    (y,) = graft.backend.run_node(helper.make_node("Relu", ["x"], ["y"]), [np.array([-1, 2], np.float32)])
    np.testing.assert_array_equal(y, [0, 2])
    (y,) = graft.backend.run_node(helper.make_node("Cast", ["x"], ["y"], to=onnx.TensorProto.INT64),
                                  [np.array([1.5, -2.5], np.float32)], outputs_info=[(np.int64, [2])])
    assert y.dtype == np.int64 and y.tolist() == [1, -2]
