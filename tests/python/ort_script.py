"""An inference script written for ONNX Runtime, unchanged but for its import.

    python3 ort_script.py MODEL.onnx OUTDIR [NAME=INPUT.npy ...]

runs MODEL on the given inputs (random ones, seeded, for those not given) and
writes each output to OUTDIR/<output name>.npy. tests/python/test_ort_script.py
runs it against graft by changing the one line below (`import onnxruntime as
ort` -> `import graft as ort`); ONNX Runtime's Python package is not in Debian.
"""
import os
import sys

import numpy as np
import onnxruntime as ort

NUMPY_TYPES = {"tensor(float)": np.float32, "tensor(double)": np.float64, "tensor(int64)": np.int64,
               "tensor(int32)": np.int32, "tensor(float16)": np.float16, "tensor(bool)": np.bool_}


def main(model, out_dir, *given):
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    sess = ort.InferenceSession(model, sess_options=options, providers=["CPUExecutionProvider"])
    files = dict(g.split("=", 1) for g in given)
    rng = np.random.default_rng(0)
    feed = {}
    for arg in sess.get_inputs():
        if arg.name in files:
            feed[arg.name] = np.load(files[arg.name])
        else:
            shape = [d if isinstance(d, int) else 1 for d in arg.shape]
            feed[arg.name] = rng.uniform(-1, 1, shape).astype(NUMPY_TYPES[arg.type])
        print("input", arg.name, arg.type, arg.shape, "->", feed[arg.name].shape)
    names = [o.name for o in sess.get_outputs()]
    outputs = sess.run(names, feed)
    os.makedirs(out_dir, exist_ok=True)
    for name, value in zip(names, outputs):
        print("output", name, value.dtype, value.shape)
        np.save(os.path.join(out_dir, name.replace("/", "_") + ".npy"), value)


if __name__ == "__main__":
    main(*sys.argv[1:])
