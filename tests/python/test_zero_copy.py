"""Inputs read in place and outputs that view graft's buffers, checked by address."""
import sys

import numpy as np

import graft
from graft import _graft


def address(array):
    return array.__array_interface__["data"][0]


def test_contiguous_input_of_the_right_dtype_is_not_copied():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    # The conversion run() uses, seen through a test hook: the tensor views x's buffer.
    assert _graft._input_address(x, "float32") == address(x)
    h = np.zeros(8, np.float16)
    assert _graft._input_address(h, "float16") == address(h)
    b = np.zeros(8, np.uint16)  # bfloat16 bits
    assert _graft._input_address(b, "bfloat16") == address(b)
    # Not contiguous, or not aligned, or byte-swapped: a copy.
    assert _graft._input_address(x[:, ::2], "float32") != address(x)
    assert _graft._input_address(x.astype(">f4"), "float32") != address(x)


def test_the_input_is_kept_alive_while_graft_holds_it_and_released_after(models):
    sess = graft.InferenceSession(models["add_relu"])
    x = np.ones((2, 4), np.float32)
    before = sys.getrefcount(x)
    for _ in range(3):
        sess.run(None, {"x": x})
    assert sys.getrefcount(x) == before


def test_outputs_view_graft_buffers(models):
    sess = graft.InferenceSession(models["three_out"])
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    outputs = sess.run(None, {"a": a, "b": a})
    for y in outputs:
        # The array's base is a capsule owning graft's Tensor, and the array's
        # data is that tensor's buffer.
        assert not y.flags.owndata
        assert type(y.base).__name__ == "PyCapsule"
        assert _graft._capsule_address(y.base) == address(y)
        assert y.flags.writeable and y.flags.c_contiguous
    # Each run hands out new buffers: earlier results stay as they were.
    first = [o.copy() for o in outputs]
    again = sess.run(None, {"a": a * 10, "b": a})
    for y, saved, new in zip(outputs, first, again):
        np.testing.assert_array_equal(y, saved)
        assert not np.shares_memory(y, new)
    # The buffer outlives the session.
    del sess
    np.testing.assert_array_equal(outputs[0], a + a)


def test_an_output_that_is_an_input_or_a_weight_is_the_callers_own(models):
    sess = graft.InferenceSession(models["identity"])
    x = np.array([1, 2, 3], np.float32)
    (y,) = sess.run(None, {"x": x})
    np.testing.assert_array_equal(y, x)
    assert not np.shares_memory(x, y)  # an input passed through is copied
    y[0] = 100
    assert x[0] == 1
    sess = graft.InferenceSession(models["constant_out"])
    c, _ = sess.run(None, {"x": np.zeros(4, np.float32)})
    c[:] = -1  # a weight returned as an output: writing to it leaves the model alone
    c2, y2 = sess.run(None, {"x": np.zeros(4, np.float32)})
    np.testing.assert_array_equal(c2, np.arange(4))
    np.testing.assert_array_equal(y2, np.arange(4))


def test_float16_outputs_are_viewed_too(models):
    sess = graft.InferenceSession(models["half"])
    y, z = sess.run(None, {"x": np.ones(4, np.float16)})
    for out in (y, z):
        assert _graft._capsule_address(out.base) == address(out)


def test_inputs_read_in_place_are_not_written(models):
    # Read-only inputs are taken as they are, and graft leaves every input's bytes alone.
    for name, feed in [("add_relu", {"x": np.linspace(-5, 5, 64, dtype=np.float32).reshape(16, 4)}),
                       ("mlp", {"x": np.linspace(-1, 1, 512, dtype=np.float32).reshape(2, 256)}),
                       ("half", {"x": np.array([-1, 2, -3, 4], np.float16)})]:
        sess = graft.InferenceSession(models[name])
        saved = {k: v.copy() for k, v in feed.items()}
        for v in feed.values():
            v.flags.writeable = False
        for _ in range(3):
            sess.run(None, feed)
        for k in feed:
            np.testing.assert_array_equal(feed[k], saved[k])
