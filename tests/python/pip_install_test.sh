#!/usr/bin/env bash
# `pip install --no-build-isolation .` from the checkout, offline, into a venv
# made with --system-site-packages (Debian's numpy), reusing the build tree:
# the installed package imports and runs a model from outside the checkout.
# Usage: pip_install_test.sh PYTHON SOURCE_DIR BUILD_DIR
set -euo pipefail
python=$1 source=$2 build=$3
work=$(mktemp -d)
trap 'rm -rf "$work" "$source/graft.egg-info"' EXIT
"$python" -m venv --system-site-packages "$work/venv"
GRAFT_BUILD_DIR=$build PIP_NO_INDEX=1 PIP_DISABLE_PIP_VERSION_CHECK=1 \
  "$work/venv/bin/pip" install -q --no-build-isolation "$source"
cd "$work"
"$work/venv/bin/python" - <<'PY'
import os
import numpy as np
import onnx
from onnx import TensorProto, helper
import graft
assert graft.__file__.startswith(os.getcwd()), graft.__file__  # the venv's copy, not the build tree's
x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])
model = helper.make_model(helper.make_graph([helper.make_node("Sigmoid", ["x"], ["y"])], "g", [x], [y]),
                          opset_imports=[helper.make_opsetid("", 17)])
(out,) = graft.InferenceSession(model.SerializeToString()).run(None, {"x": np.zeros(2, np.float32)})
assert out.tolist() == [0.5, 0.5], out
print("installed graft", graft.__version__, "at", os.path.dirname(graft.__file__), "runs")
PY
