"""ONNX's own backend test runner (onnx.backend.test.BackendTest, Debian's
python3-onnx 1.12 with the libonnx-testdata cases) on graft.backend.

Every case of the four local suites (node, simple, pytorch-converted,
pytorch-operator) runs in this process through graft.InferenceSession; the
`real` suite (models downloaded from the internet) is left out. A model graft
reports as unsupported (graft.UnsupportedError) is skipped, as `graft
onnx-test` counts it unsupported. What is excluded below fails for the reason
written beside it; docs/conformance.md has the counts.
"""
import os
import unittest

import numpy as np
import onnx.backend.test

import graft
import graft.backend


class _Backend(graft.backend.GraftBackend):
    """graft.backend, with an unsupported model reported as a skipped case."""

    @classmethod
    def prepare(cls, model, device="CPU", **kwargs):
        try:
            rep = super().prepare(model, device, **kwargs)
        except graft.UnsupportedError as e:
            raise unittest.SkipTest("graft: unsupported: %s" % e)
        return _Rep(rep.session, rep.input_names)


class _Rep(graft.backend.GraftBackendRep):
    def run(self, inputs, **kwargs):
        try:
            return super().run(inputs, **kwargs)
        except graft.UnsupportedError as e:  # found when planning, at the first run
            raise unittest.SkipTest("graft: unsupported: %s" % e)


class _Runner(onnx.backend.test.BackendTest):
    @classmethod
    def assert_similar_outputs(cls, ref_outputs, outputs, rtol, atol):
        # ONNX 1.12's own version compares dtypes with np.object, which numpy
        # 1.24 (Debian 12) no longer has, and takes len() of a sequence's
        # 0-d items: the same checks, item by item.
        np.testing.assert_equal(len(outputs), len(ref_outputs))
        for ref, out in zip(ref_outputs, outputs):
            cls._assert_similar_value(ref, out, rtol, atol)

    @classmethod
    def _assert_similar_value(cls, ref, out, rtol, atol):
        if isinstance(ref, (list, tuple)) or isinstance(out, (list, tuple)):
            assert isinstance(out, (list, tuple)) and isinstance(ref, (list, tuple)), (type(ref), type(out))
            np.testing.assert_equal(len(out), len(ref))
            for r, o in zip(ref, out):
                cls._assert_similar_value(r, o, rtol, atol)
        elif ref is None or out is None:
            assert ref is None and out is None, (ref, out)
        else:
            np.testing.assert_equal(out.dtype, ref.dtype)
            if ref.dtype == object:
                np.testing.assert_array_equal(out, ref)
            else:
                np.testing.assert_allclose(out, ref, rtol=rtol, atol=atol)


# Cases that fail on graft, each with its reason (the same cases `graft
# onnx-test` fails: docs/conformance.md "What does not pass, and why").
EXCLUDED = [
    # ONNX 1.12's test data gives `like` the shape [1] while the model declares
    # [3,4]; graft refuses inputs that contradict the declared shape.
    r"test_castlike_BFLOAT16_to_FLOAT_",
    r"test_castlike_BFLOAT16_to_FLOAT_expanded_",
    r"test_castlike_FLOAT_to_BFLOAT16_",
    r"test_castlike_FLOAT_to_BFLOAT16_expanded_",
    # ONNX 1.12's expected values truncate to bfloat16; graft rounds to nearest even.
    r"test_cast_FLOAT_to_BFLOAT16_",
    # ONNX 1.12's expected values were made with epsilon 1e-2, which the
    # node does not set; graft uses the spec's default, 1e-6 (0.75596 where
    # the data says 0.75914; test_adam, which sets it, passes).
    r"test_adam_multiple_",
]

backend_test = _Runner(_Backend, __name__)
for pattern in EXCLUDED:
    backend_test.exclude(pattern)
# Not the `real` suite: its models are downloaded.
globals().update({name: case for name, case in backend_test.test_cases.items() if "RealModel" not in name})
