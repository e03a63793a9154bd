"""Errors are graft.Error subclasses with the CLI's messages; nothing crashes."""
import subprocess

import numpy as np
import pytest

import graft


def test_kinds_are_subclasses_of_graft_error():
    for cls, kind in [(graft.InvalidModelError, "invalid_model"), (graft.UnsupportedError, "unsupported"),
                      (graft.InvalidArgumentError, "invalid_argument"), (graft.IoError, "io"),
                      (graft.InternalError, "internal"), (graft.ResourceExhaustedError, "resource_exhausted"),
                      (graft.CancelledError, "cancelled")]:
        assert issubclass(cls, graft.Error) and cls.kind == kind
    assert issubclass(graft.InvalidArgumentError, ValueError)
    assert issubclass(graft.IoError, OSError)
    assert issubclass(graft.ResourceExhaustedError, MemoryError)


def test_missing_file_is_an_io_error_with_the_cli_message(tmp_path, graft_cli):
    missing = str(tmp_path / "nope.onnx")
    with pytest.raises(graft.IoError) as e:
        graft.InferenceSession(missing)
    cli = subprocess.run([graft_cli, "run", missing], capture_output=True, text=True)
    assert cli.returncode == 2
    assert cli.stderr.strip() == "graft: error: " + str(e.value)


def test_bad_model_bytes_are_invalid_model():
    with pytest.raises(graft.InvalidModelError):
        graft.InferenceSession(b"this is not a model")


def test_wrong_inputs_raise_and_never_crash(models):
    sess = graft.InferenceSession(models["add_relu"])
    x = np.ones((2, 4), np.float32)
    cases = [
        ({"x": x.astype(np.float64)}, "float64"),          # wrong dtype
        ({"x": np.ones(4, np.float32)}, "rank"),           # wrong rank
        ({"x": np.ones((2, 5), np.float32)}, "x"),         # wrong known dimension
        ({"x": "not an array"}, "str"),                    # not an array
        ({"x": None}, "None"),
        ({"x": object()}, "object"),
        ({"x": np.array(["a"], dtype=object)}, "x"),
        ({"x": np.ones((2, 4), np.complex64)}, "complex"),
        ({}, "missing"),                                   # missing input
        ({"x": x, "z": x}, "'z'"),                         # unknown input
        ({1: x}, "str"),
    ]
    for feed, fragment in cases:
        with pytest.raises(graft.Error) as e:
            sess.run(None, feed)
        assert fragment in str(e.value), (feed, str(e.value))
    with pytest.raises(graft.InvalidArgumentError, match="'nope' is not an output"):
        sess.run(["nope"], {"x": x})
    with pytest.raises(graft.InvalidArgumentError, match="list of names"):
        sess.run("y", {"x": x})
    with pytest.raises(graft.InvalidArgumentError, match="dict"):
        sess.run(None, [x])
    with pytest.raises(TypeError):
        sess.run(None)
    # The session still works.
    np.testing.assert_array_equal(sess.run(None, {"x": x})[0], [[2, 0, 4, 0]] * 2)


def test_a_closed_session_raises(models):
    sess = graft.InferenceSession(models["add_relu"])
    sess.close()
    sess.close()  # twice is fine
    for call in (lambda: sess.run(None, {"x": np.ones((1, 4), np.float32)}), sess.get_providers,
                 sess.partition_report, lambda: sess.num_threads):
        with pytest.raises(graft.InvalidArgumentError, match="closed"):
            call()
    assert [i.name for i in sess.get_inputs()] == ["x"]  # described at load


def test_bad_options_raise(models):
    with pytest.raises(graft.InvalidArgumentError, match="gpu"):
        graft.InferenceSession(models["add_relu"], device="gpu:0")
    options = graft.SessionOptions()
    options.intra_op_num_threads = -1
    with pytest.raises(graft.InvalidArgumentError, match="intra_op_num_threads"):
        graft.InferenceSession(models["add_relu"], sess_options=options)
    with pytest.raises(graft.InvalidArgumentError):
        graft.InferenceSession(models["add_relu"], backends=["nosuch"])
    with pytest.raises(TypeError):
        graft.InferenceSession(models["add_relu"], nosuch_option=1)


def test_a_wrong_input_has_the_cli_message(models, tmp_path, graft_cli):
    bad = np.ones(4, np.float32)
    np.save(tmp_path / "bad.npy", bad)
    with pytest.raises(graft.InvalidArgumentError) as e:
        graft.InferenceSession(models["add_relu"]).run(None, {"x": bad})
    cli = subprocess.run([graft_cli, "run", models["add_relu"], "--input", "x=%s" % (tmp_path / "bad.npy")],
                         capture_output=True, text=True)
    assert cli.returncode == 2
    assert cli.stderr.strip().splitlines()[-1] == "graft: error: " + str(e.value)
