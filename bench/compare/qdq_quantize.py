#!/usr/bin/env python3
"""Static int8 quantization of a float ONNX model in the QDQ format, as ONNX
Runtime's quantize_static writes it (QuantFormat.QDQ, default options):

* the nodes quantized: Conv, Gemm, MatMul whose second input is an
  initializer, and Add of two activations (not of a constant: a GELU's
  1 + erf stays whole);
* every float activation such a node reads or writes gets one
  QuantizeLinear -> DequantizeLinear pair, uint8, asymmetric, per tensor
  (scale = (max - min) / 255 over a range that includes 0, zero point
  round(-min / scale)); every consumer of the tensor reads the pair's output;
* weights: int8, symmetric (zero point 0, values in [-127, 127]), per output
  channel for Conv (scale = max |w| / 127 per channel), per tensor for Gemm
  and MatMul, stored as int8 initializers behind a DequantizeLinear;
* a Conv's or Gemm's bias: int32 with scale input_scale * weight_scale, behind
  a DequantizeLinear, as ONNX Runtime quantizes it (its int8 kernels need it so);
* ranges: min/max of each tensor over the calibration inputs (random inputs
  of the model's input shapes), computed with ONNX Runtime on the float model
  (bench/compare/ort_runner.js).

A Relu, or a Clip from 0, right after a quantized node is removed, as
quantize_static removes it: its output's range starts at 0, so the uint8
quantization of the node's output (zero point 0) clamps where it did; a Clip
to 6 clamps at the calibrated maximum, at most 6. The result records, in `<out>.json`, the quantization step of
each graph output (what "within one quantization step" means for it).

    qdq_quantize.py FLOAT.onnx OUT.onnx [--calibration 3] [--seed 100]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))

QUANTIZED_OPS = ("Conv", "Gemm", "MatMul", "Add")


def float_tensors(model):
    """Names of float32 values (inputs, outputs, intermediates) by shape inference."""
    import onnx
    from onnx import TensorProto
    inferred = onnx.shape_inference.infer_shapes(model)
    g = inferred.graph
    names = set()
    for v in list(g.input) + list(g.output) + list(g.value_info):
        if v.type.tensor_type.elem_type == TensorProto.FLOAT:
            names.add(v.name)
    return names


def constant_value(model, name):
    """The value of an initializer or Constant node output `name`, or None."""
    from onnx import numpy_helper
    for t in model.graph.initializer:
        if t.name == name:
            return numpy_helper.to_array(t)
    for node in model.graph.node:
        if node.op_type == "Constant" and node.output[0] == name:
            for a in node.attribute:
                if a.name == "value":
                    return numpy_helper.to_array(a.t)
    return None


def remove_activations(model, chosen):
    """Removes each Relu, or Clip from 0, whose input only it reads and comes from a chosen node."""
    graph = model.graph
    producer = {o: node for node in chosen for o in node.output}
    readers = {}
    for node in graph.node:
        for i in node.input:
            readers[i] = readers.get(i, 0) + 1
    outputs = {o.name for o in graph.output}
    removed = []
    for node in graph.node:
        if node.op_type not in ("Relu", "Clip") or node.input[0] not in producer:
            continue
        if readers.get(node.input[0]) != 1 or node.input[0] in outputs:
            continue
        if node.op_type == "Clip":
            low = constant_value(model, node.input[1]) if len(node.input) > 1 and node.input[1] else None
            if low is None or float(low) != 0.0:
                continue
        source = producer[node.input[0]]
        source.output[list(source.output).index(node.input[0])] = node.output[0]
        removed.append(node)
    for node in removed:
        graph.node.remove(node)
    return len(removed)


def constant_names(model):
    """Initializers and Constant node outputs (ONNX Runtime's quant_pre_process makes the latter initializers)."""
    return {t.name for t in model.graph.initializer} | \
        {n.output[0] for n in model.graph.node if n.op_type == "Constant"}


def nodes_to_quantize(model, floats):
    initializers = constant_names(model)
    chosen = []
    for node in model.graph.node:
        if node.op_type not in QUANTIZED_OPS:
            continue
        if node.op_type == "MatMul" and (len(node.input) < 2 or node.input[1] not in initializers):
            continue
        if node.op_type in ("Conv", "Gemm") and (len(node.input) < 2 or node.input[1] not in initializers):
            continue
        if node.op_type == "Add" and not all(i in floats and i not in initializers for i in node.input):
            continue
        chosen.append(node)
    return chosen


def activations_of(nodes, initializers, floats):
    """Float activations the chosen nodes read (not their weights and biases) or write."""
    names = []
    for node in nodes:
        reads = node.input[:1] if node.op_type in ("Conv", "Gemm", "MatMul") else node.input
        for name in list(reads) + list(node.output):
            if name and name in floats and name not in initializers and name not in names:
                names.append(name)
    return names


def calibrate(model, names, input_manifests, workdir):
    """min/max of each value in `names` over the calibration inputs (ONNX Runtime, float model)."""
    import numpy as np
    import onnx
    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    outputs = {o.name for o in probe.graph.output}
    for name in names:
        if name not in outputs:
            probe.graph.output.append(onnx.helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, None))
    probe_path = os.path.join(workdir, "calibration.onnx")
    onnx.save(probe, probe_path)
    ranges = {}
    for k, manifest in enumerate(input_manifests):
        out_dir = os.path.join(workdir, "calibration_out%d" % k)
        os.makedirs(out_dir, exist_ok=True)
        proc = subprocess.Popen(["node", os.path.join(HERE, "ort_runner.js"), probe_path, manifest, out_dir,
                                 "--threads", "2", "--spin", "0"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                cwd=HERE)
        line = proc.stdout.readline()
        proc.stdin.write(b"quit\n")
        proc.stdin.close()
        proc.wait()
        message = json.loads(line)
        if "error" in message:
            raise RuntimeError("calibration run failed: %s" % message["error"])
        for entry in message["outputs"]:
            if entry["name"] not in names:
                continue
            values = np.fromfile(entry["file"], dtype=np.float32)
            lo, hi = float(values.min()), float(values.max())
            old = ranges.get(entry["name"])
            ranges[entry["name"]] = (min(lo, old[0]), max(hi, old[1])) if old else (lo, hi)
    return ranges


def uint8_parameters(lo, hi):
    lo, hi = min(lo, 0.0), max(hi, 0.0)
    scale = (hi - lo) / 255.0
    if scale == 0.0:
        return 1.0, 0
    zero_point = int(round(-lo / scale))
    return scale, max(0, min(255, zero_point))


def quantize(model_path, out_path, input_manifests, workdir):
    import numpy as np
    import onnx
    from onnx import helper, numpy_helper, TensorProto
    model = onnx.load(model_path)
    original = onnx.ModelProto()
    original.CopyFrom(model)  # calibrated as it is; every name kept below is one of its values
    graph = model.graph
    floats = float_tensors(model)
    initializers = {t.name: t for t in graph.initializer}
    chosen = nodes_to_quantize(model, floats)
    removed = remove_activations(model, chosen)
    activations = activations_of(chosen, constant_names(model), floats)
    ranges = calibrate(original, activations, input_manifests, workdir)
    params = {name: uint8_parameters(*ranges[name]) for name in activations if name in ranges}
    graph_inputs = {i.name for i in graph.input}
    new_nodes = []
    added = []

    def constant(name, array):
        graph.initializer.append(numpy_helper.from_array(array, name))
        return name

    # Activations: producer writes NAME_float, the pair gives NAME back (graph
    # inputs: the pair's output is a new name every consumer is pointed at).
    renamed_input = {}
    for name, (scale, zero_point) in params.items():
        s = constant(name + "_scale", np.array(scale, dtype=np.float32))
        z = constant(name + "_zero_point", np.array(zero_point, dtype=np.uint8))
        if name in graph_inputs:
            source, target = name, name + "_dequantized"
            renamed_input[name] = target
        else:
            source, target = name + "_float", name
            for node in graph.node:
                for i, o in enumerate(node.output):
                    if o == name:
                        node.output[i] = source
        added.append((source, helper.make_node("QuantizeLinear", [source, s, z], [name + "_quantized"],
                                               name=name + "_QuantizeLinear")))
        added.append((source, helper.make_node("DequantizeLinear", [name + "_quantized", s, z], [target],
                                               name=name + "_DequantizeLinear")))
    for node in graph.node:
        for i, v in enumerate(node.input):
            if v in renamed_input:
                node.input[i] = renamed_input[v]

    # Weights and biases (a bias's scale is its input's: a graph input's by its own name).
    original_input = {v: k for k, v in renamed_input.items()}
    weight_nodes = []
    done = {}  # a weight or bias several nodes share is quantized once
    for node in chosen:
        if node.op_type not in ("Conv", "Gemm", "MatMul"):
            continue
        w_name = node.input[1]
        if w_name in done:
            node.input[1] = done[w_name]
            continue
        w = numpy_helper.to_array(initializers[w_name]).astype(np.float32)
        per_channel = node.op_type == "Conv"
        if per_channel:
            largest = np.abs(w.reshape(w.shape[0], -1)).max(axis=1)
            scale = np.where(largest > 0, largest / 127.0, 1.0).astype(np.float32)
            q = np.clip(np.round(w / scale.reshape((-1,) + (1,) * (w.ndim - 1))), -127, 127).astype(np.int8)
            zero = np.zeros(w.shape[0], dtype=np.int8)
        else:
            largest = float(np.abs(w).max())
            scale = np.array(largest / 127.0 if largest > 0 else 1.0, dtype=np.float32)
            q = np.clip(np.round(w / scale), -127, 127).astype(np.int8)
            zero = np.array(0, dtype=np.int8)
        q_name = constant(w_name + "_quantized", q)
        s_name = constant(w_name + "_scale", scale)
        z_name = constant(w_name + "_zero_point", zero)
        dq_w = w_name + "_dequantized"
        attrs = {"axis": 0} if per_channel else {}
        weight_nodes.append(helper.make_node("DequantizeLinear", [q_name, s_name, z_name], [dq_w],
                                             name=w_name + "_DequantizeLinear", **attrs))
        node.input[1] = dq_w
        done[w_name] = dq_w
        x_name = original_input.get(node.input[0], node.input[0])
        if node.op_type in ("Conv", "Gemm") and len(node.input) > 2 and node.input[2] in initializers \
                and node.input[2] not in done and x_name in params:
            b_name = node.input[2]
            b = numpy_helper.to_array(initializers[b_name]).astype(np.float32)
            b_scale = (params[x_name][0] * scale).astype(np.float32)
            if b_scale.ndim == 0:
                b_scale = np.full(b.shape, b_scale, dtype=np.float32)
            if b.shape != b_scale.shape:
                continue
            qb = np.round(b / b_scale).astype(np.int32)
            qb_name = constant(b_name + "_quantized", qb)
            bs_name = constant(b_name + "_scale", b_scale)
            bz_name = constant(b_name + "_zero_point", np.zeros(b.shape, dtype=np.int32))
            dq_b = b_name + "_dequantized"
            weight_nodes.append(helper.make_node("DequantizeLinear", [qb_name, bs_name, bz_name], [dq_b],
                                                 name=b_name + "_DequantizeLinear", axis=0))
            node.input[2] = dq_b
            done[b_name] = dq_b

    # Topological order: weights first, each pair right after its producer.
    pairs_after = {}
    for source, n in added:
        pairs_after.setdefault(source, []).append(n)
    ordered = list(weight_nodes)
    for name in graph_inputs:
        ordered += pairs_after.pop(name, [])
    for node in graph.node:
        ordered.append(node)
        for o in node.output:
            ordered += pairs_after.pop(o, [])
    del graph.node[:]
    graph.node.extend(ordered)
    # Unused float weights (and a removed Clip's bounds) go.
    used = {i for n in graph.node for i in n.input} | {o.name for o in graph.output}
    unused_constants = [n for n in graph.node if n.op_type == "Constant" and n.output[0] not in used]
    for n in unused_constants:
        graph.node.remove(n)
    keep = [t for t in graph.initializer if t.name in used]
    del graph.initializer[:]
    graph.initializer.extend(keep)
    del graph.value_info[:]
    onnx.checker.check_model(model)
    onnx.save(model, out_path)
    info = {"output_steps": [params[o.name][0] if o.name in params else None for o in graph.output],
            "quantized_nodes": len(chosen), "quantized_activations": len(params), "removed_activations": removed}
    with open(out_path + ".json", "w") as f:
        json.dump(info, f)
    return info


def random_manifests(model_path, count, seed, folder):
    """`count` input sets of the model's input shapes: standard normal floats (as compare.py's inputs)."""
    import numpy as np
    import onnx
    model = onnx.load(model_path)
    initializers = {t.name for t in model.graph.initializer}
    rng = np.random.default_rng(seed)
    manifests = []
    for k in range(count):
        entries = []
        for v in model.graph.input:
            if v.name in initializers:
                continue
            shape = [d.dim_value for d in v.type.tensor_type.shape.dim]
            a = rng.standard_normal(shape).astype(np.float32)
            file = "calibration%d_%s.bin" % (k, v.name)
            a.tofile(os.path.join(folder, file))
            entries.append({"name": v.name, "dtype": "float32", "shape": shape, "file": file})
        path = os.path.join(folder, "calibration%d.json" % k)
        with open(path, "w") as f:
            json.dump(entries, f)
        manifests.append(path)
    return manifests


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model")
    parser.add_argument("out")
    parser.add_argument("--calibration", type=int, default=3, help="random calibration inputs")
    parser.add_argument("--seed", type=int, default=100)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as workdir:
        manifests = random_manifests(args.model, args.calibration, args.seed, workdir)
        info = quantize(args.model, args.out, manifests, workdir)
    print("%s: %d nodes quantized, %d activations" % (args.out, info["quantized_nodes"], info["quantized_activations"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
