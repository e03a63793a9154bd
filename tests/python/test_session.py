"""graft.InferenceSession: ONNX Runtime's API shape, options, dtypes."""
import numpy as np
import onnx
import pytest

import graft


def test_version():
    assert isinstance(graft.__version__, str) and graft.__version__.count(".") == 2


def test_inputs_and_outputs_describe_the_model(models):
    sess = graft.InferenceSession(models["add_relu"])
    (x,), (y,) = sess.get_inputs(), sess.get_outputs()
    assert (x.name, x.shape, x.type) == ("x", ["N", 4], "tensor(float)")
    assert (y.name, y.shape, y.type) == ("y", ["N", 4], "tensor(float)")
    half = graft.InferenceSession(models["half"])
    assert [o.type for o in half.get_outputs()] == ["tensor(float16)", "tensor(bfloat16)"]
    ints = graft.InferenceSession(models["ints"])
    assert [o.type for o in ints.get_outputs()] == ["tensor(bool)", "tensor(int64)"]
    assert ints.get_outputs()[1].shape == []
    seq = graft.InferenceSession(models["sequence"])
    assert seq.get_outputs()[0].type == "seq(tensor(float))"


def test_run_computes_the_model(models):
    sess = graft.InferenceSession(models["add_relu"], providers=["CPUExecutionProvider"])
    x = np.linspace(-3, 3, 12, dtype=np.float32).reshape(3, 4)
    (y,) = sess.run(None, {"x": x})
    np.testing.assert_allclose(y, np.maximum(x + np.array([1, -2, 3, -4], np.float32), 0), rtol=1e-6)
    assert y.dtype == np.float32 and y.shape == (3, 4)
    # Another batch size: the symbolic dimension.
    (y1,) = sess.run(None, {"x": x[:1].copy()})
    np.testing.assert_allclose(y1, y[:1])


def test_output_names_select_and_order(models):
    sess = graft.InferenceSession(models["three_out"])
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.full((2, 3), 2, np.float32)
    s, p, n = sess.run(None, {"a": a, "b": b})
    np.testing.assert_array_equal(s, a + b)
    np.testing.assert_array_equal(p, a * b)
    np.testing.assert_array_equal(n, -a)
    n2, s2 = sess.run(["n", "s"], {"a": a, "b": b})
    np.testing.assert_array_equal(n2, -a)
    np.testing.assert_array_equal(s2, a + b)


def test_model_as_bytes_and_as_model_proto(models):
    with open(models["add_relu"], "rb") as f:
        data = f.read()
    x = np.ones((2, 4), np.float32)
    expected = graft.InferenceSession(models["add_relu"]).run(None, {"x": x})[0]
    for model in (data, bytearray(data), onnx.load(models["add_relu"])):
        np.testing.assert_array_equal(graft.InferenceSession(model).run(None, {"x": x})[0], expected)


def test_providers_give_the_backend_order(models):
    assert graft.InferenceSession(models["add_relu"], providers=["fuse", "ref"]).get_providers() == ["fuse", "ref"]
    assert graft.InferenceSession(models["add_relu"], providers=["ref"]).get_providers() == ["ref"]
    default = graft.InferenceSession(models["add_relu"]).get_providers()
    assert graft.InferenceSession(models["add_relu"], providers=["CPUExecutionProvider"]).get_providers() == default
    assert default[-1] == "ref"
    assert "CPUExecutionProvider" in graft.get_available_providers()
    # graft's own keyword wins over providers.
    assert graft.InferenceSession(models["add_relu"], providers=["fuse", "ref"], backends=["ref"]).get_providers() == ["ref"]


def test_unknown_provider_is_rejected_with_the_list(models):
    with pytest.raises(graft.InvalidArgumentError) as e:
        graft.InferenceSession(models["add_relu"], providers=["CUDAExecutionProvider"])
    message = str(e.value)
    assert "CUDAExecutionProvider" in message and "ref" in message and "fuse" in message


def test_session_options(models):
    options = graft.SessionOptions()
    options.intra_op_num_threads = 2
    sess = graft.InferenceSession(models["add_relu"], sess_options=options, providers=["fuse", "ref"])
    assert sess.num_threads == 2
    assert sess.get_session_options() is options
    on = {n["backend"] for n in sess.partition_report()["nodes"] if n["op"] in ("Add", "Relu")}
    assert on == {"fuse"}
    options.graph_optimization_level = graft.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = graft.InferenceSession(models["add_relu"], sess_options=options, providers=["fuse", "ref"])
    off = {n["backend"] for n in sess.partition_report()["nodes"] if n["op"] in ("Add", "Relu")}
    assert "fuse" not in off
    x = np.ones((1, 4), np.float32)
    np.testing.assert_array_equal(sess.run(None, {"x": x})[0], [[2, 0, 4, 0]])
    options.add_session_config_entry("session.x", "1")
    assert options.get_session_config_entry("session.x") == "1"


def test_float16_and_bfloat16(models):
    sess = graft.InferenceSession(models["half"])
    x = np.array([0.5, -1.5, 2.0, 3.0], np.float16)
    y, z = sess.run(None, {"x": x})
    assert y.dtype == np.float16
    np.testing.assert_array_equal(y, x * x)
    # bfloat16: the bits as uint16, with a dtype that says so.
    assert z.dtype == np.uint16 and z.dtype.metadata == {"graft_dtype": "bfloat16"}
    assert z.dtype == graft.bfloat16
    np.testing.assert_array_equal(graft.bfloat16_to_float32(z), x.astype(np.float32))


def test_int64_bool_and_scalar_outputs(models):
    sess = graft.InferenceSession(models["ints"])
    x = np.array([1, 2, 3, 4, 5], np.int64)
    y, s = sess.run(None, {"x": x})
    assert y.dtype == np.bool_ and s.dtype == np.int64 and s.shape == ()
    np.testing.assert_array_equal(y, x > 2)
    assert int(s) == 15


def test_lists_and_non_contiguous_arrays_are_converted(models):
    sess = graft.InferenceSession(models["ints"])
    y, s = sess.run(None, {"x": [1, 2, 3, 4, 5]})
    assert int(s) == 15
    add = graft.InferenceSession(models["add_relu"])
    big = np.arange(32, dtype=np.float32).reshape(4, 8)
    view = big[:, ::2]  # not contiguous
    assert not view.flags.c_contiguous
    np.testing.assert_array_equal(add.run(None, {"x": view})[0], add.run(None, {"x": view.copy()})[0])
    swapped = np.ones((1, 4), ">f4")  # big-endian
    np.testing.assert_array_equal(add.run(None, {"x": swapped})[0], [[2, 0, 4, 0]])


def test_sequence_output_is_a_list(models):
    sess = graft.InferenceSession(models["sequence"])
    x = np.array([1.5, -2], np.float32)
    (s,) = sess.run(None, {"x": x})
    assert isinstance(s, list) and len(s) == 2
    np.testing.assert_array_equal(s[0], x)
    np.testing.assert_array_equal(s[1], x + x)


def test_context_manager_closes(models):
    with graft.InferenceSession(models["add_relu"]) as sess:
        assert not sess.closed
    assert sess.closed


def test_empty_output_names_mean_all_outputs(models):
    sess = graft.InferenceSession(models["three_out"])
    a = np.ones((2, 3), np.float32)
    assert len(sess.run([], {"a": a, "b": a})) == 3


def test_device_option_runs_on_an_opencl_device(models):
    devices = graft.devices()["opencl"]
    if not devices:
        pytest.skip("no OpenCL device")
    sess = graft.InferenceSession(models["add_relu"], device=devices[0]["device"])
    assert sess.get_providers()[0] == "opencl"
    x = np.linspace(-4, 4, 8, dtype=np.float32).reshape(2, 4)
    expected = graft.InferenceSession(models["add_relu"]).run(None, {"x": x})[0]
    np.testing.assert_allclose(sess.run(None, {"x": x})[0], expected, rtol=1e-6)


def test_model_metadata(models):
    model = onnx.load(models["add_relu"])
    model.producer_name = "graft-test"
    onnx.helper.set_model_props(model, {"author": "me"})
    for source in (model.SerializeToString(), model):
        meta = graft.InferenceSession(source).get_modelmeta()
        assert meta.producer_name == "graft-test" and meta.graph_name == "g"
        assert meta.custom_metadata_map == {"author": "me"}


def test_bfloat16_input_from_uint16_bits(tmp_path):
    from onnx import TensorProto, helper
    model = helper.make_model(helper.make_graph(
        [helper.make_node("Cast", ["x"], ["y"], to=TensorProto.FLOAT)], "g",
        [helper.make_tensor_value_info("x", TensorProto.BFLOAT16, [3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])]), opset_imports=[helper.make_opsetid("", 17)])
    sess = graft.InferenceSession(model)
    assert sess.get_inputs()[0].type == "tensor(bfloat16)"
    values = np.array([1.5, -2.0, 0.15625], np.float32)
    bits = (values.view(np.uint32) >> 16).astype(np.uint16)
    (y,) = sess.run(None, {"x": bits})
    np.testing.assert_array_equal(y, values)
    with pytest.raises(graft.InvalidArgumentError, match="bfloat16"):
        sess.run(None, {"x": values})


def test_cpu_provider_after_others_adds_the_rest_of_the_default_order(models):
    default = graft.InferenceSession(models["add_relu"]).get_providers()
    sess = graft.InferenceSession(models["add_relu"], providers=["fuse", "CPUExecutionProvider"])
    assert sess.get_providers() == ["fuse"] + [b for b in default if b != "fuse"]
    if "dnnl" in default:
        sess = graft.InferenceSession(models["add_relu"], providers=[("DnnlExecutionProvider", {}), "ref"])
        assert sess.get_providers() == ["dnnl", "ref"]


def test_an_empty_batch(models):
    sess = graft.InferenceSession(models["add_relu"])
    (y,) = sess.run(None, {"x": np.zeros((0, 4), np.float32)})
    assert y.shape == (0, 4) and y.dtype == np.float32
