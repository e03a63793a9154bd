"""A script written for ONNX Runtime runs on graft after a one-line change,
and gives the outputs ONNX's test data saved, and those of the graft tool."""
import difflib
import glob
import os
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = "/usr/share/libonnx-testdata/data"


def graft_version_of_script(tmp_path):
    """ort_script.py with its import switched to graft: the only change."""
    with open(os.path.join(HERE, "ort_script.py")) as f:
        original = f.read()
    switched = original.replace("import onnxruntime as ort", "import graft as ort")
    diff = [line for line in difflib.unified_diff(original.splitlines(), switched.splitlines(), lineterm="", n=0)
            if line.startswith(("+", "-")) and not line.startswith(("+++", "---"))]
    assert diff == ["-import onnxruntime as ort", "+import graft as ort"]
    path = tmp_path / "graft_script.py"
    path.write_text(switched)
    return str(path)


def run_script(script, *args):
    env = dict(os.environ)
    subprocess.run([sys.executable, script, *map(str, args)], check=True, env=env, capture_output=True, text=True)


@pytest.mark.parametrize("case", ["pytorch-converted/test_Conv2d_groups", "pytorch-converted/test_ConvTranspose2d",
                                  "node/test_gemm_default_matrix_bias", "pytorch-operator/test_operator_maxpool"])
def test_outputs_match_onnx_saved_outputs(case, tmp_path):
    case_dir = os.path.join(DATA, case)
    if not os.path.isdir(case_dir):
        pytest.skip("libonnx-testdata is not installed")
    model = onnx.load(os.path.join(case_dir, "model.onnx"))
    data = os.path.join(case_dir, "test_data_set_0")
    given = []
    for i, value_info in enumerate(model.graph.input[:len(glob.glob(os.path.join(data, "input_*.pb")))]):
        array = numpy_helper.to_array(onnx.load_tensor(os.path.join(data, "input_%d.pb" % i)))
        np.save(tmp_path / ("in%d.npy" % i), array)
        given.append("%s=%s" % (value_info.name, tmp_path / ("in%d.npy" % i)))
    run_script(graft_version_of_script(tmp_path), os.path.join(case_dir, "model.onnx"), tmp_path / "out", *given)
    for i, value_info in enumerate(model.graph.output):
        expected = numpy_helper.to_array(onnx.load_tensor(os.path.join(data, "output_%d.pb" % i)))
        got = np.load(tmp_path / "out" / (value_info.name.replace("/", "_") + ".npy"))
        np.testing.assert_allclose(got, expected, rtol=1e-3, atol=1e-5)


def test_outputs_match_the_graft_tool(tmp_path, graft_cli):
    model = tmp_path / "mlp.onnx"
    subprocess.run([graft_cli, "zoo", "mlp", "-o", model], check=True, capture_output=True)
    x = np.random.default_rng(3).uniform(-1, 1, (4, 784)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    name = onnx.load(str(model)).graph.input[0].name
    run_script(graft_version_of_script(tmp_path), model, tmp_path / "py", "%s=%s" % (name, tmp_path / "x.npy"))
    subprocess.run([graft_cli, "run", model, "--input", "%s=%s" % (name, tmp_path / "x.npy"), "--threads", "1",
                    "--output-dir", tmp_path / "cli"], check=True, capture_output=True)
    cli_files = sorted(os.listdir(tmp_path / "cli"))
    assert cli_files and cli_files == sorted(os.listdir(tmp_path / "py"))
    for f in cli_files:
        np.testing.assert_array_equal(np.load(tmp_path / "py" / f), np.load(tmp_path / "cli" / f))
