"""graft.partition, graft.compile, graft.devices and session profiling."""
import json
import os
import subprocess

import numpy as np
import onnx
import pytest

import graft


def test_partition_returns_the_report_as_a_dict(models, graft_cli):
    report = graft.partition(models["add_relu"], backends=["fuse", "ref"])
    assert report["backends"] == ["fuse", "ref"]
    by_name = {n["name"]: n for n in report["nodes"]}
    assert by_name["a"]["backend"] == "fuse" and by_name["y"]["backend"] == "fuse"
    # The same document as `graft partition --format json`.
    cli = subprocess.run([graft_cli, "partition", models["add_relu"], "--backends", "fuse,ref", "--format", "json"],
                         capture_output=True, text=True, check=True)
    expected = json.loads(cli.stdout)
    for key in ("backends", "nodes", "subgraphs", "per_backend", "summary"):
        assert report[key] == expected[key], key
    # Fusion off, a model proto, and the plan for given shapes.
    off = graft.partition(onnx.load(models["add_relu"]), backends=["fuse", "ref"], fusion=False)
    assert {n["backend"] for n in off["nodes"] if not n["source"]} == {"ref"}
    planned = graft.partition(models["add_relu"], shapes={"x": [3, 4]})
    assert planned["nodes"]
    with pytest.raises(graft.InvalidArgumentError):
        graft.partition(models["add_relu"], backends=["nosuch"])


def test_compile_writes_an_artifact_that_runs(models, tmp_path):
    path = tmp_path / "add_relu.graft"
    info = graft.compile(models["add_relu"], path, shapes={"x": [2, 4]})
    assert os.path.getsize(path) == info["file_bytes"] > 0
    assert info["graft_version"] == graft.__version__
    sess = graft.InferenceSession(str(path))
    x = np.array([[1, 2, 3, 4], [-1, -2, -3, -4]], np.float32)
    expected = graft.InferenceSession(models["add_relu"]).run(None, {"x": x})[0]
    np.testing.assert_array_equal(sess.run(None, {"x": x})[0], expected)
    with pytest.raises(graft.InvalidArgumentError):  # N is symbolic: a shape is needed
        graft.compile(models["add_relu"], tmp_path / "no_shape.graft")


def test_devices_lists_the_cpu_and_backends():
    d = graft.devices()
    assert d["cpu"]["threads"] >= 1 and d["cpu"]["architecture"]
    names = [b["name"] for b in d["backends"]]
    assert "ref" in names and "fuse" in names
    assert all(isinstance(b["available"], bool) for b in d["backends"])
    assert isinstance(d["opencl"], list)
    assert set(d["cuda"]) >= {"nvrtc", "device_architecture"} and isinstance(d["opencl_kernels"], str)


def test_profile_gives_the_per_node_table(models, tmp_path):
    options = graft.SessionOptions()
    options.enable_profiling = True
    options.profile_file_prefix = str(tmp_path / "prof")
    sess = graft.InferenceSession(models["three_out"], sess_options=options, providers=["ref"])
    a = np.ones((2, 3), np.float32)
    for _ in range(3):
        sess.run(None, {"a": a, "b": a})
    p = sess.profile()
    assert p["runs"] == 3
    ops = {row["op_type"] for row in p["by_node"]}
    assert {"Add", "Mul", "Neg"} <= ops
    assert all(row["backend"] == "ref" and row["microseconds"] >= 0 for row in p["by_node"])
    assert "Add" in p["text"]
    name = sess.end_profiling()
    with open(name) as f:
        trace = json.load(f)
    assert any(e.get("cat") == "node" for e in trace["traceEvents"])
    assert sess.profile()["runs"] == 0  # end_profiling cleared them
    with pytest.raises(graft.InvalidArgumentError, match="profiling is off"):
        graft.InferenceSession(models["three_out"]).profile()
