"""The hostile models of graft's malicious-model suite (docs/security.md).

Each case is a model a hostile or careless author could hand to graft: external
data that escapes the model's folder, tensors whose dims lie, graphs with
cycles, attributes of the wrong type or absurd size, ops whose outputs would
need exabytes, loops that never end, files that are not ONNX at all. Every
case names what `graft run` must answer: the exit code and a substring of its
one-line error (or, for the valid models among them, exit 0).

`write_cases(folder)` writes every model into `folder` and returns the cases;
run_hostile_models.py runs them. Only python3-onnx (Debian) is needed.
"""

import os
from dataclasses import dataclass, field

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

FLOAT = TensorProto.FLOAT
INT64 = TensorProto.INT64


@dataclass
class Case:
    name: str          # file stem, and the name the runner reports
    klass: str         # the class of attack (docs/security.md lists them)
    path: str = ""     # the model file, set by write_cases
    args: list = field(default_factory=list)  # extra `graft run` arguments
    exit_code: int = 2
    message: str = ""  # a substring of the error line (case-insensitive); "" for exit 0


def _model(nodes, inputs, outputs, initializers=(), opset=17, name="hostile"):
    graph = helper.make_graph(nodes, name, inputs, outputs, list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


def _vi(name, dims, dtype=FLOAT):
    return helper.make_tensor_value_info(name, dtype, dims)


def _i64(name, values):
    return numpy_helper.from_array(np.array(values, dtype=np.int64), name)


def _f32(name, values):
    return numpy_helper.from_array(np.array(values, dtype=np.float32), name)


def _save(model, folder, name):
    path = os.path.join(folder, name + ".onnx")
    with open(path, "wb") as f:
        f.write(model.SerializeToString())
    return path


def _external_weight_model(location, offset=None, length=None):
    """Y = X + W where W's 4 floats live in external data at `location`."""
    weight = TensorProto()
    weight.name = "W"
    weight.data_type = FLOAT
    weight.dims.extend([4])
    weight.data_location = TensorProto.EXTERNAL
    entries = [("location", location)]
    if offset is not None:
        entries.append(("offset", str(offset)))
    if length is not None:
        entries.append(("length", str(length)))
    for key, value in entries:
        entry = weight.external_data.add()
        entry.key = key
        entry.value = value
    return _model([helper.make_node("Add", ["X", "W"], ["Y"])], [_vi("X", [4])], [_vi("Y", [4])], [weight])


def _conv(attributes, weight_shape=(1, 1, 3, 3), x_shape=(1, 1, 8, 8)):
    weight = _f32("W", np.ones(weight_shape))
    node = helper.make_node("Conv", ["X", "W"], ["Y"], **attributes)
    return _model([node], [_vi("X", list(x_shape))], [_vi("Y", None)], [weight])


def _one_node(op, inputs, initializers, attributes=None, x_shape=(2, 2), opset=17, output_dtype=FLOAT):
    node = helper.make_node(op, inputs, ["Y"], **(attributes or {}))
    graph_inputs = [_vi("X", list(x_shape))] if "X" in inputs else []
    return _model([node], graph_inputs, [_vi("Y", None, output_dtype)], initializers, opset=opset)


def _nested_if(depth):
    """Y = X + 1 inside `depth` If nodes, each then-branch holding the next (valid)."""
    def body(level):
        if level == depth:
            one = helper.make_node("Constant", [], ["one_%d" % level], value=_f32("v", [1.0]))
            add = helper.make_node("Add", ["X", "one_%d" % level], ["out_%d" % level])
            return helper.make_graph([one, add], "leaf_%d" % level, [], [_vi("out_%d" % level, [1])])
        inner = body(level + 1)
        cond = helper.make_node("Constant", [], ["c_%d" % level], value=numpy_helper.from_array(np.array(True), "c"))
        zero = helper.make_node("Constant", [], ["zero_%d" % level], value=_f32("v", [0.0]))
        other = helper.make_graph([zero], "else_%d" % level, [], [_vi("zero_%d" % level, [1])])
        node = helper.make_node("If", ["c_%d" % level], ["out_%d" % level], then_branch=inner, else_branch=other)
        return helper.make_graph([cond, node], "level_%d" % level, [], [_vi("out_%d" % level, [1])])

    top = body(1)
    graph = helper.make_graph(list(top.node), "nested_if", [_vi("X", [1])], [_vi("out_1", [1])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def _loop(trip_count):
    """A Loop of `trip_count` iterations (cond always true) adding 1 each time."""
    one = helper.make_node("Constant", [], ["one"], value=_f32("v", [1.0]))
    add = helper.make_node("Add", ["acc_in", "one"], ["acc_out"])
    keep = helper.make_node("Identity", ["cond_in"], ["cond_out"])
    body = helper.make_graph(
        [one, add, keep], "body",
        [_vi("i", [], INT64), _vi("cond_in", [], TensorProto.BOOL), _vi("acc_in", [1])],
        [_vi("cond_out", [], TensorProto.BOOL), _vi("acc_out", [1])])
    loop = helper.make_node("Loop", ["M", "cond", "X"], ["Y"], body=body)
    initializers = [_i64("M", trip_count), numpy_helper.from_array(np.array(True), "cond")]
    return _model([loop], [_vi("X", [1])], [_vi("Y", [1])], initializers)


def write_cases(folder):
    """Writes every hostile model into `folder`; returns the list of Cases."""
    os.makedirs(folder, exist_ok=True)
    cases = []

    def add(name, klass, model, message, args=(), exit_code=2):
        path = _save(model, folder, name) if isinstance(model, onnx.ModelProto) else model
        cases.append(Case(name, klass, path, list(args), exit_code, message))

    def raw(name, data):
        path = os.path.join(folder, name + ".onnx")
        with open(path, "wb") as f:
            f.write(data)
        return path

    # --- external data escaping the model's folder, or lying about its extent
    sub = os.path.join(folder, "external")
    os.makedirs(sub, exist_ok=True)
    with open(os.path.join(folder, "outside.bin"), "wb") as f:
        f.write(np.ones(4, np.float32).tobytes())
    with open(os.path.join(sub, "weights.bin"), "wb") as f:
        f.write(np.ones(4, np.float32).tobytes())
    link = os.path.join(sub, "link.bin")
    if os.path.lexists(link):
        os.remove(link)
    os.symlink(os.path.join(folder, "outside.bin"), link)

    def external(name, model, message):
        path = _save(model, sub, name)
        cases.append(Case(name, "external data", path, [], 2, message))

    external("external_dotdot", _external_weight_model("../outside.bin"), "outside")
    external("external_absolute", _external_weight_model(os.path.join(folder, "outside.bin")), "absolute")
    external("external_symlink", _external_weight_model("link.bin"), "outside")
    external("external_missing", _external_weight_model("nothing_here.bin"), "nothing_here.bin")
    external("external_offset_past_end", _external_weight_model("weights.bin", offset=1 << 40), "offset")
    external("external_length_past_end", _external_weight_model("weights.bin", offset=8, length=16), "weights.bin")
    external("external_negative_offset", _external_weight_model("weights.bin", offset=-16), "offset")

    # --- tensors whose dims lie
    negative = TensorProto(name="W", data_type=FLOAT, dims=[-4])
    negative.float_data.extend([1.0] * 4)
    add("dims_negative", "tensor dims",
        _model([helper.make_node("Add", ["X", "W"], ["Y"])], [_vi("X", [4])], [_vi("Y", None)], [negative]), "W")
    overflowing = TensorProto(name="W", data_type=FLOAT, dims=[1 << 32, 1 << 32, 1 << 32])
    overflowing.raw_data = b"\0" * 16
    add("dims_overflowing", "tensor dims",
        _model([helper.make_node("Add", ["X", "W"], ["Y"])], [_vi("X", [4])], [_vi("Y", None)], [overflowing]), "W")
    short = TensorProto(name="W", data_type=FLOAT, dims=[1000, 1000])
    short.raw_data = b"\0" * 16
    add("dims_short_raw_data", "tensor dims",
        _model([helper.make_node("Add", ["X", "W"], ["Y"])], [_vi("X", [4])], [_vi("Y", None)], [short]), "W")
    short_typed = TensorProto(name="W", data_type=FLOAT, dims=[8])
    short_typed.float_data.extend([1.0, 2.0])
    add("dims_short_float_data", "tensor dims",
        _model([helper.make_node("Add", ["X", "W"], ["Y"])], [_vi("X", [8])], [_vi("Y", None)], [short_typed]), "W")
    add("input_negative_dim", "tensor dims",
        _model([helper.make_node("Relu", ["X"], ["Y"])], [_vi("X", [2, -7])], [_vi("Y", None)]), "X")
    bad_dtype = TensorProto(name="W", data_type=999, dims=[1])
    bad_dtype.raw_data = b"\0" * 4
    add("tensor_unknown_dtype", "tensor dims",
        _model([helper.make_node("Add", ["X", "W"], ["Y"])], [_vi("X", [1])], [_vi("Y", None)], [bad_dtype]), "W")

    # --- graph structure
    add("cycle", "graph structure",
        _model([helper.make_node("Relu", ["B"], ["A"], name="first"), helper.make_node("Relu", ["A"], ["B"], name="second"),
                helper.make_node("Add", ["X", "A"], ["Y"])], [_vi("X", [2])], [_vi("Y", None)]), "cycle")
    add("self_loop", "graph structure",
        _model([helper.make_node("Add", ["X", "A"], ["A"], name="selfish"), helper.make_node("Relu", ["A"], ["Y"])],
               [_vi("X", [2])], [_vi("Y", None)]), "selfish")
    add("undefined_input", "graph structure",
        _model([helper.make_node("Add", ["X", "nowhere"], ["Y"])], [_vi("X", [2])], [_vi("Y", None)]), "nowhere")
    add("duplicate_output", "graph structure",
        _model([helper.make_node("Relu", ["X"], ["Y"]), helper.make_node("Neg", ["X"], ["Y"])],
               [_vi("X", [2])], [_vi("Y", None)]), "Y")
    add("missing_graph_output", "graph structure",
        _model([helper.make_node("Relu", ["X"], ["Y"])], [_vi("X", [2])], [_vi("Z", None)]), "Z")

    # --- attributes out of range or of the wrong type
    add("conv_zero_stride", "attributes", _conv({"strides": [0, 0]}), "stride")
    add("conv_zero_dilation", "attributes", _conv({"dilations": [0, 1]}), "dilation")
    add("conv_zero_group", "attributes", _conv({"group": 0}), "group")
    add("conv_negative_pad", "attributes", _conv({"pads": [-5, 0, 0, 0]}), "pad")
    add("conv_huge_pads", "attributes", _conv({"pads": [1 << 40, 1 << 40, 1 << 40, 1 << 40]}), "Conv",
        ["--max-memory", "256M"])
    add("conv_kernel_larger_than_input", "attributes", _conv({}, weight_shape=(1, 1, 100, 100)), "Conv")
    add("maxpool_huge_kernel", "attributes",
        _one_node("MaxPool", ["X"], [], {"kernel_shape": [1 << 40, 1 << 40]}, x_shape=(1, 1, 4, 4)), "MaxPool")
    add("attribute_wrong_type", "attributes", _conv({"strides": 1.5}), "strides")
    add("attribute_string_for_ints", "attributes", _conv({"group": "many"}), "group")
    add("cast_unknown_type", "attributes", _one_node("Cast", ["X"], [], {"to": 999}), "to")
    add("transpose_bad_perm", "attributes", _one_node("Transpose", ["X"], [], {"perm": [0, 0]}), "perm")
    add("gather_axis_out_of_range", "attributes",
        _one_node("Gather", ["X", "I"], [_i64("I", [0])], {"axis": 7}), "axis")
    add("softmax_axis_out_of_range", "attributes", _one_node("Softmax", ["X"], [], {"axis": -9}), "axis")
    add("depth_to_space_zero_block", "attributes",
        _one_node("DepthToSpace", ["X"], [], {"blocksize": 0}, x_shape=(1, 4, 2, 2)), "blocksize")
    add("slice_zero_step", "attributes",
        _one_node("Slice", ["X", "s", "e", "a", "st"], [_i64("s", [0]), _i64("e", [2]), _i64("a", [0]), _i64("st", [0])]),
        "step")

    # --- sizes that would need more memory than any machine has
    big = ["--max-memory", "256M"]
    add("tile_huge", "huge sizes", _one_node("Tile", ["X", "r"], [_i64("r", [1 << 30, 1 << 30])]), "bytes", big)
    topk = helper.make_node("TopK", ["X", "k"], ["Y", "I"])
    add("topk_huge_k", "huge sizes",
        _model([topk], [_vi("X", [2, 2])], [_vi("Y", None), _vi("I", None, INT64)], [_i64("k", [1 << 40])]), "k")
    add("range_huge", "huge sizes",
        _one_node("Range", ["a", "b", "d"], [_f32("a", 0.0), _f32("b", 1e18), _f32("d", 1.0)]), "too many", big)
    add("range_large", "huge sizes",
        _one_node("Range", ["a", "b", "d"], [_f32("a", 0.0), _f32("b", 1e10), _f32("d", 1.0)]), "memory limit", big)
    add("constant_of_shape_huge", "huge sizes",
        _one_node("ConstantOfShape", ["s"], [_i64("s", [1 << 20, 1 << 20, 1 << 20])]), "bytes", big)
    add("constant_of_shape_default_limit", "huge sizes",
        _one_node("ConstantOfShape", ["s"], [_i64("s", [1 << 24, 1 << 24])]), "memory limit")
    add("expand_huge", "huge sizes", _one_node("Expand", ["X", "s"], [_i64("s", [1 << 31, 1 << 31])], x_shape=(1, 1)), "bytes", big)
    add("reshape_huge", "huge sizes", _one_node("Reshape", ["X", "s"], [_i64("s", [1 << 40, 1 << 40])]), "2^63")
    add("reshape_two_minus_one", "huge sizes", _one_node("Reshape", ["X", "s"], [_i64("s", [-1, -1])]), "-1")
    add("pad_huge", "huge sizes",
        _one_node("Pad", ["X", "p"], [_i64("p", [1 << 30, 1 << 30, 1 << 30, 1 << 30])]), "bytes", big)
    add("onehot_huge_depth", "huge sizes",
        _one_node("OneHot", ["I", "depth", "values"],
                  [_i64("I", [1, 2]), _i64("depth", [1 << 50]), _f32("values", [0.0, 1.0])]), "depth", big)
    resize_scales = _one_node("Resize", ["X", "", "scales"], [_f32("scales", [1.0, 1.0, 1e9, 1e9])],
                              x_shape=(1, 1, 4, 4))
    add("resize_scale_1e9", "huge sizes", resize_scales, "bytes", big)
    add("resize_scale_1e9_default_limit", "huge sizes", resize_scales, "bytes")
    add("resize_scale_1e4", "huge sizes",
        _one_node("Resize", ["X", "", "scales"], [_f32("scales", [1.0, 1.0, 1e4, 1e4])], x_shape=(1, 1, 4, 4)),
        "memory limit", big)
    add("resize_sizes_huge", "huge sizes",
        _one_node("Resize", ["X", "", "", "sizes"], [_i64("sizes", [1, 1, 1 << 31, 1 << 31])], x_shape=(1, 1, 4, 4)),
        "bytes", big)
    add("matmul_huge_weights", "huge sizes",
        _model([helper.make_node("ConstantOfShape", ["s"], ["W"]), helper.make_node("MatMul", ["X", "W"], ["Y"])],
               [_vi("X", [1, 4])], [_vi("Y", None)], [_i64("s", [4, 1 << 36])]), "bytes", big)

    # --- control flow
    add("loop_trip_count_2_62", "control flow", _loop(1 << 62), "deadline", ["--timeout", "2"])
    add("if_nested_40_deep", "control flow", _nested_if(40), "", [], exit_code=0)
    add("if_nested_200_deep", "control flow", _nested_if(200), "limit")

    # --- ops and opsets graft does not know
    add("unknown_op", "unknown ops",
        _model([helper.make_node("FrobnicateTensor", ["X"], ["Y"])], [_vi("X", [2])], [_vi("Y", None)]),
        "FrobnicateTensor")
    add("unknown_domain", "unknown ops",
        _model([helper.make_node("Relu", ["X"], ["Y"], domain="com.evil")], [_vi("X", [2])], [_vi("Y", None)]),
        "com.evil")
    add("opset_99", "unknown ops",
        _model([helper.make_node("Relu", ["X"], ["Y"])], [_vi("X", [2])], [_vi("Y", None)], opset=99), "99")

    # --- files that are not ONNX
    valid = _model([helper.make_node("Relu", ["X"], ["Y"])], [_vi("X", [2])], [_vi("Y", None)]).SerializeToString()
    add("garbage_file", "not ONNX", raw("garbage_file", bytes(range(256)) * 4), "not a valid ONNX model")
    add("empty_file", "not ONNX", raw("empty_file", b""), "empty")
    add("truncated_file", "not ONNX", raw("truncated_file", valid[: len(valid) // 2]), "not a valid ONNX model")
    add("missing_file", "not ONNX", os.path.join(folder, "no_such_model.onnx"), "no_such_model.onnx")
    add("directory_as_model", "not ONNX", sub, "external")
    return cases
