"""DLPack both ways: outputs are numpy arrays (which export __dlpack__), and
inputs may be any object with __dlpack__ (a PyTorch tensor), read in place."""
import numpy as np
import pytest

import graft
from graft import _graft


def test_outputs_export_dlpack_without_a_copy(models):
    sess = graft.InferenceSession(models["add_relu"])
    (y,) = sess.run(None, {"x": np.ones((2, 4), np.float32)})
    z = np.from_dlpack(y)
    assert np.shares_memory(y, z)


def test_dlpack_inputs_are_read_in_place(models):
    torch = pytest.importorskip("torch")
    t = torch.arange(8, dtype=torch.float32).reshape(2, 4)
    assert _graft._input_address(t, "float32") == t.data_ptr()
    sess = graft.InferenceSession(models["add_relu"])
    (y,) = sess.run(None, {"x": t})
    np.testing.assert_array_equal(y, np.maximum(t.numpy() + np.array([1, -2, 3, -4], np.float32), 0))
    # And back: torch views graft's output buffer.
    back = torch.from_dlpack(y)
    assert back.data_ptr() == y.__array_interface__["data"][0]


def test_a_dlpack_input_numpy_cannot_view_is_an_error(models):
    torch = pytest.importorskip("torch")
    t = torch.ones((2, 4), requires_grad=True)  # refuses to export
    with pytest.raises(graft.InvalidArgumentError, match="__dlpack__"):
        graft.InferenceSession(models["add_relu"]).run(None, {"x": t})
