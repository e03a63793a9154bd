"""Running a model with graft and with ONNX Runtime on the same inputs.

ONNX Runtime runs through bench/compare/ort_runner.js (npm onnxruntime-node,
installed by `make ort-check` as by `make compare`); graft through
`graft run --output-dir`. Both write their outputs, read back here as numpy
arrays by output name.
"""
import json
import os
import shutil
import subprocess

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ORT_RUNNER = os.path.join(REPO, "bench", "compare", "ort_runner.js")
NUMPY = {"float16": np.float16, "float32": np.float32, "float64": np.float64, "int8": np.int8, "uint8": np.uint8,
         "int16": np.int16, "int32": np.int32, "int64": np.int64, "bool": np.bool_}


def write_inputs(folder, inputs):
    """Saves {name: array} as NAME.npy (for graft) and NAME.bin plus a
    manifest (for the ONNX Runtime runner); returns the manifest's path."""
    manifest = []
    for name, array in inputs.items():
        np.save(os.path.join(folder, name + ".npy"), array)
        raw = os.path.join(folder, name + ".bin")
        array.tofile(raw)
        manifest.append({"name": name, "dtype": str(array.dtype), "shape": list(array.shape), "file": raw})
    path = os.path.join(folder, "inputs.json")
    with open(path, "w") as f:
        json.dump(manifest, f)
    return path


def run_ort(model, folder, manifest, tag="ort"):
    """ONNX Runtime's outputs by name, or (None, its error)."""
    out = os.path.join(folder, tag)
    os.makedirs(out, exist_ok=True)
    proc = subprocess.run(["node", ORT_RUNNER, model, manifest, out], input="quit\n", capture_output=True, text=True,
                          cwd=os.path.dirname(ORT_RUNNER), timeout=120)
    lines = proc.stdout.strip().splitlines()
    reply = json.loads(lines[0]) if lines else {"error": proc.stderr.strip()[-300:]}
    if not reply.get("ready"):
        return None, reply.get("error", "no reply")
    outputs = {}
    for o in reply["outputs"]:
        if o["dtype"] not in NUMPY:
            return None, "output %s of dtype %s" % (o["name"], o["dtype"])
        outputs[o["name"]] = np.fromfile(o["file"], dtype=NUMPY[o["dtype"]]).reshape(o["shape"])
    return outputs, None


def run_graft(graft, model, folder, input_names, tag="graft", extra=()):
    """graft's outputs by name, or (None, its error)."""
    out = os.path.join(folder, tag)
    command = [graft, "run", model, "--output-dir", out, "--threads", "2", *extra]
    for name in input_names:
        command += ["--input", "%s=%s" % (name, os.path.join(folder, name + ".npy"))]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        return None, (proc.stderr.strip() or proc.stdout.strip())[-400:]
    return {f[:-4]: np.load(os.path.join(out, f)) for f in os.listdir(out) if f.endswith(".npy")}, None


def first_difference(got, want, rtol=1e-4):
    """None when every output of `want` (by name) matches the one of `got`
    (see difference), else "NAME: what differs" for the first that does not."""
    for name, expected in want.items():
        if name not in got:
            return "%s: missing" % name
        problem = difference(got[name], expected, rtol)
        if problem:
            return "%s: %s" % (name, problem)
    return None


def difference(got, want, rtol=1e-4):
    """None when `got` matches `want` (integers and booleans exactly; floats
    within rtol relative plus rtol of the largest finite magnitude, NaN equal
    to NaN), else what differs."""
    if got.shape != want.shape or got.dtype != want.dtype:
        return "%s%s, expected %s%s" % (got.dtype, list(got.shape), want.dtype, list(want.shape))
    if want.dtype.kind == "f":
        if want.dtype == np.float16:
            rtol = max(rtol, 4e-3)
        w, g = want.astype(np.float64), got.astype(np.float64)
        finite = np.isfinite(w)
        scale = max(1.0, float(np.max(np.abs(w[finite])))) if finite.any() else 1.0
        same = np.isclose(g, w, rtol=rtol, atol=rtol * scale, equal_nan=True)
    else:
        same = got == want
    if same.all():
        return None
    at = tuple(np.argwhere(~same)[0])
    return "%d of %d differ; first at %s: got %r, expected %r" % (int((~same).sum()), want.size, at, got[at], want[at])


def compare_with_ort(graft, model, folder, inputs, extra=(), rtol=1e-4):
    """Saves `model` (an onnx ModelProto) and `inputs` (name -> array) in
    `folder`, emptied first, and runs ONNX Runtime and graft (`extra`: more
    `graft run` flags) on them. Returns ("refused", ONNX Runtime's error) when
    ONNX Runtime does not run it (nothing to compare), ("agree", None) after
    removing the folder, or ("differ", what differs or graft's error), keeping
    the folder to look at."""
    import onnx
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    path = os.path.join(folder, "model.onnx")
    onnx.save(model, path)
    manifest = write_inputs(folder, inputs)
    want, error = run_ort(path, folder, manifest)
    if want is None:
        return "refused", error
    got, error = run_graft(graft, path, folder, list(inputs), extra=extra)
    problem = "graft failed: " + error if got is None else first_difference(got, want, rtol)
    if problem:
        return "differ", problem
    shutil.rmtree(folder)
    return "agree", None
