"""bench/compare/qdq_quantize.py: a float model quantized statically into
ONNX Runtime's QDQ format, and graft running it within one quantization
step of ONNX Runtime (with int8 convolutions where oneDNN has VNNI)."""
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import graft

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
COMPARE = os.path.join(ROOT, "bench", "compare")
sys.path.insert(0, COMPARE)
import qdq_quantize  # noqa: E402


def needs_onnx_runtime():
    if not shutil.which("node") or not os.path.isdir(os.path.join(COMPARE, "node_modules", "onnxruntime-node")):
        pytest.skip("ONNX Runtime for node (bench/compare/node_modules) is not installed")


def conv_relu_conv_add(path):
    """x -> Conv -> Relu -> Conv (+ x) -> output: two convolutions and a residual Add."""
    rng = np.random.default_rng(3)
    inits = [numpy_helper.from_array(rng.standard_normal(s).astype(np.float32) * 0.3, n)
             for n, s in (("w1", (8, 8, 3, 3)), ("b1", (8,)), ("w2", (8, 8, 3, 3)), ("b2", (8,)))]
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1]),
             helper.make_node("Add", ["c2", "x"], ["y"])]
    graph = helper.make_graph(nodes, "block", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 16, 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 16, 16])], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)


def run_onnx_runtime(model, manifest, out_dir):
    proc = subprocess.run(["node", os.path.join(COMPARE, "ort_runner.js"), model, manifest, out_dir, "--threads", "1",
                           "--spin", "0"], input=b"quit\n", capture_output=True, cwd=COMPARE, check=True)
    entry = json.loads(proc.stdout.splitlines()[0])["outputs"][0]
    return np.fromfile(entry["file"], dtype=np.float32).reshape(entry["shape"])


def test_quantized_model_has_the_qdq_format_and_graft_runs_it_within_a_step(tmp_path):
    needs_onnx_runtime()
    float_path, qdq_path = str(tmp_path / "float.onnx"), str(tmp_path / "qdq.onnx")
    conv_relu_conv_add(float_path)
    manifests = qdq_quantize.random_manifests(float_path, 2, 100, str(tmp_path))
    info = qdq_quantize.quantize(float_path, qdq_path, manifests, str(tmp_path))
    model = onnx.load(qdq_path)
    ops = [n.op_type for n in model.graph.node]
    assert "Relu" not in ops, "a Relu after a quantized Conv is folded into the uint8 range"
    assert info["removed_activations"] == 1 and info["quantized_nodes"] == 3
    inits = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    for w in ("w1", "w2"):
        q = inits[w + "_quantized"]
        assert q.dtype == np.int8 and np.all(np.abs(q).reshape(8, -1).max(axis=1) == 127), "symmetric per channel"
        assert inits[w + "_scale"].shape == (8,)
    assert inits["b1_quantized"].dtype == np.int32
    activations = [n for n in model.graph.node if n.op_type == "QuantizeLinear"]
    assert len(activations) == info["quantized_activations"] == 4  # x, r1 (the Relu's output), c2, y
    assert all(inits[n.input[2]].dtype == np.uint8 for n in activations)

    # graft against ONNX Runtime on a fresh input.
    x = np.random.default_rng(7).standard_normal((1, 8, 16, 16)).astype(np.float32)
    x.tofile(str(tmp_path / "test_x.bin"))
    with open(tmp_path / "test.json", "w") as f:
        json.dump([{"name": "x", "dtype": "float32", "shape": [1, 8, 16, 16], "file": "test_x.bin"}], f)
    os.makedirs(tmp_path / "ort_out")
    want = run_onnx_runtime(qdq_path, str(tmp_path / "test.json"), str(tmp_path / "ort_out"))
    (got,) = graft.InferenceSession(qdq_path).run(None, {"x": x})
    step = info["output_steps"][0]
    assert np.max(np.abs(got - want)) <= step * 1.001
