#!/usr/bin/env python3
"""Writes the float16 chain models of docs/codegen.md's float16 figures: an
8-op pointwise chain (Sigmoid, Neg, Abs, Tanh, Relu, Exp, Neg, Sqrt) over
16M values, in float16 (chain16.onnx) and in float32 (chain32.onnx), for

    python3 bench/float16/chain_models.py DIR
    build/bin/graft run DIR/chain16.onnx --repeat 10 --stats --threads 2 [--fusion off]
    build/bin/graft run DIR/chain32.onnx --repeat 10 --stats --threads 2

Needs python3-onnx.
"""
import os
import sys

from onnx import TensorProto, helper, save

OPS = ["Sigmoid", "Neg", "Abs", "Tanh", "Relu", "Exp", "Neg", "Sqrt"]
ELEMENTS = 16 * 1024 * 1024


def chain(dtype):
    nodes, previous = [], "x"
    for i, op in enumerate(OPS):
        nodes.append(helper.make_node(op, [previous], ["v%d" % i]))
        previous = "v%d" % i
    graph = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("x", dtype, [ELEMENTS])],
                              [helper.make_tensor_value_info(previous, dtype, [ELEMENTS])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    os.makedirs(sys.argv[1], exist_ok=True)
    save(chain(TensorProto.FLOAT16), os.path.join(sys.argv[1], "chain16.onnx"))
    save(chain(TensorProto.FLOAT), os.path.join(sys.argv[1], "chain32.onnx"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
