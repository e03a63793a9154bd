#!/usr/bin/env python3
"""Random ONNX graphs of pointwise ops, with the ops and attributes PyTorch's
exporter never writes (Mod, variadic Max/Min/Sum/Mean, Clip with optional
bounds, ThresholdedRelu, Shrink, Celu, IsNaN, IsInf with its detect flags,
CastLike, Gelu, integer Div and Pow, ...), at opset 20, run by graft (fusion
on) and by ONNX Runtime on the same inputs; every output must agree.

With --float16 the graphs are mostly float16: graft computes a float16 model
in float32 (compute-float16-in-float32), as ONNX Runtime's CPU provider does;
outputs agree within float16's precision.

Usage: random_onnx_graphs.py --graft build/bin/graft --workdir DIR [--models N] [--seed S] [--special] [--float16]
Needs python3-onnx and bench/compare's onnxruntime-node (`make ort-check`).
Exit code 0 only when no graph differs.
"""
import argparse
import os
import random
import sys

import numpy as np
from onnx import helper, TensorProto, numpy_helper

from ort_support import compare_with_ort

F32, F64, I32, I64, B = TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.INT32, TensorProto.INT64, TensorProto.BOOL
F16 = TensorProto.FLOAT16
NP = {F32: np.float32, F64: np.float64, I32: np.int32, I64: np.int64, B: np.bool_, F16: np.float16}
NAME = {F32: "float32", F64: "float64", I32: "int32", I64: "int64", B: "bool", F16: "float16"}
FLOATS, INTS = (F32, F64), (I32, I64)  # --float16 adds F16 to FLOATS


class Gen:
    def __init__(self, rng, special):
        self.rng, self.special = rng, special
        self.nodes, self.inits, self.inputs, self.values = [], [], [], []  # values: (name, dtype, shape, approx)
        self.counter = 0
        rank = rng.choice([0, 1, 2, 3, 4])
        self.base = [rng.choice([1, 2, 3, 5, 8, 17]) for _ in range(rank)]

    def name(self, prefix="v"):
        self.counter += 1
        return "%s%d" % (prefix, self.counter)

    def shape(self):
        r = self.rng.randint(0, len(self.base))
        return [d if self.rng.random() < 0.75 else 1 for d in self.base[len(self.base) - r:]]

    def add_input(self, dtype):
        n = self.name("in")
        shp = self.shape() if self.inputs else list(self.base)
        self.inputs.append((n, dtype, shp))
        self.values.append((n, dtype, shp, False))
        return n

    def const(self, dtype, value):
        n = self.name("c")
        self.inits.append(numpy_helper.from_array(np.array(value, dtype=NP[dtype]), n))
        return n

    def node(self, op, ins, dtype, approx=False, **attrs):
        # float16 graphs: ONNX Runtime computes float16 in float32 and drops
        # the rounding of a float16 value that a Cast reads (graft keeps it:
        # the model's Casts round), so no float value is exact.
        approx = approx or (F16 in FLOATS and dtype in FLOATS)
        out = self.name()
        self.nodes.append(helper.make_node(op, ins, [out], **attrs))
        shape = None
        self.values.append((out, dtype, shape, approx))
        return out

    def pick(self, dtypes, exact=False):
        c = [v for v in self.values if v[1] in dtypes and not (exact and v[3])]
        return self.rng.choice(c) if c else None


def step(g):
    rng = g.rng
    kind = rng.choice(["unary_f", "unary_f", "unary_n", "binary", "binary", "variadic", "compare", "where", "logic",
                       "clip", "cast", "mod", "prelu", "isnan", "divint", "powint"])
    if kind == "unary_f":
        v = g.pick(FLOATS)
        if not v: return
        op, attrs = rng.choice([("Exp", {}), ("Log", {}), ("Sqrt", {}), ("Tanh", {}), ("Sigmoid", {}), ("Sin", {}),
                                ("Cos", {}), ("Erf", {}), ("Reciprocal", {}), ("Softplus", {}), ("Softsign", {}),
                                ("Mish", {}), ("HardSwish", {}), ("Floor", {}), ("Ceil", {}), ("Round", {}),
                                ("Elu", {"alpha": rng.choice([0.5, 1.0, 2.0])}),
                                ("Celu", {"alpha": rng.choice([0.5, 1.0, 2.0])}),
                                ("Selu", {"alpha": 1.5, "gamma": 1.1}),
                                ("HardSigmoid", {"alpha": rng.choice([0.2, 0.1666667]), "beta": 0.5}),
                                ("LeakyRelu", {"alpha": rng.choice([0.01, 0.3])}),
                                ("ThresholdedRelu", {"alpha": rng.choice([0.5, 1.0])}),
                                ("Shrink", {"bias": rng.choice([0.0, 0.5]), "lambd": rng.choice([0.5, 1.0])}),
                                ("Gelu", {"approximate": rng.choice(["none", "tanh"])})])
        x = v[0]
        if op in ("Log", "Sqrt"):
            x = g.node("Abs", [x], v[1])
            if op == "Log":
                x = g.node("Add", [x, g.const(v[1], 0.5)], v[1])
        if op == "Reciprocal":
            x = g.node("Add", [g.node("Abs", [x], v[1]), g.const(v[1], 0.5)], v[1])
        if op == "Exp":
            x = g.node("Clip", [x, g.const(v[1], -20.0), g.const(v[1], 20.0)], v[1])
        if op in ("Floor", "Ceil", "Round") and v[3]:
            return
        g.node(op, [x], v[1], approx=v[3] or op not in ("Floor", "Ceil", "Round", "ThresholdedRelu", "Shrink"), **attrs)
    elif kind == "unary_n":
        v = g.pick(FLOATS + INTS, exact=True)
        if not v: return
        # Sign of a float16 NaN: ONNX Runtime's float16 kernel gives 0, graft
        # NaN (as numpy); docs/conformance.md.
        signs = [] if (v[1] == F16 and g.special) else ["Sign"]
        op = rng.choice(["Abs", "Neg", "Relu", "Identity"] + signs)
        g.node(op, [v[0]], v[1], approx=v[3])
    elif kind in ("binary", "compare"):
        a = g.pick(FLOATS + INTS, exact=kind == "compare")
        if not a: return
        b = g.pick((a[1],), exact=kind == "compare")
        if kind == "binary":
            op = rng.choice(["Add", "Sub", "Mul", "Max", "Min"])
            g.node(op, [a[0], b[0]], a[1], approx=a[3] or b[3])
        else:
            op = rng.choice(["Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual"])
            g.node(op, [a[0], b[0]], B)
    elif kind == "variadic":
        a = g.pick(FLOATS + INTS)
        if not a: return
        ins = [a[0]] + [g.pick((a[1],))[0] for _ in range(rng.randint(0, 3))]
        op = rng.choice(["Max", "Min", "Sum"] + (["Mean"] if a[1] in FLOATS else []))
        g.node(op, ins, a[1], approx=True)
    elif kind == "where":
        c = g.pick((B,))
        a = g.pick(FLOATS + INTS)
        if not c or not a: return
        b = g.pick((a[1],))
        g.node("Where", [c[0], a[0], b[0]], a[1], approx=a[3] or b[3])
    elif kind == "logic":
        a = g.pick((B,))
        if not a: return
        op = rng.choice(["And", "Or", "Xor", "Not"])
        ins = [a[0]] if op == "Not" else [a[0], g.pick((B,))[0]]
        g.node(op, ins, B)
    elif kind == "clip":
        a = g.pick(FLOATS + INTS)
        if not a: return
        # An absent bound is numeric_limits' lowest or max (the spec), which
        # clamps infinities; ONNX Runtime does so for float32 but leaves them
        # for float64. Where inputs hold infinities, bounds are given.
        keep = 1.0 if g.special else 0.8
        lo = g.const(a[1], rng.choice([-2, -1, 0])) if rng.random() < keep else ""
        hi = g.const(a[1], rng.choice([1, 3])) if rng.random() < keep else ""
        ins = [a[0], lo, hi]
        while ins and ins[-1] == "": ins.pop()
        g.node("Clip", ins, a[1], approx=a[3])
    elif kind == "cast":
        a = g.pick(FLOATS + INTS + (B,), exact=True)
        if not a: return
        to = rng.choice(list(FLOATS) + [I32, I64, B])
        x = a[0]
        if a[1] in FLOATS and to in INTS:
            # A NaN or infinite float has no integer value (the cast is undefined): 0 instead.
            finite = g.node("Equal", [g.node("Sub", [x, x], a[1]), g.const(a[1], 0.0)], B)
            x = g.node("Where", [finite, x, g.const(a[1], 0.0)], a[1])
            x = g.node("Clip", [x, g.const(a[1], -1000.0), g.const(a[1], 1000.0)], a[1])
        if rng.random() < 0.3:
            like = g.pick((to,))
            if like:
                g.node("CastLike", [x, like[0]], to)
                return
        g.node("Cast", [x], to, to=to)
    elif kind == "mod":
        a = g.pick(INTS + FLOATS, exact=True)
        if not a: return
        b = g.pick((a[1],), exact=True)
        d = g.node("Add", [g.node("Abs", [b[0]], a[1]), g.const(a[1], 1)], a[1])
        fmod = 1 if a[1] in FLOATS else rng.choice([0, 1])
        g.node("Mod", [a[0], d], a[1], approx=True, fmod=fmod)
    elif kind == "prelu":
        a = g.pick(FLOATS)
        if not a: return
        # The slope must broadcast to X (unidirectionally): one value.
        slope = g.const(a[1], rng.choice([0.1, 0.25, -0.5]))
        g.node("PRelu", [a[0], slope], a[1], approx=True)
    elif kind == "isnan":
        a = g.pick(FLOATS)
        if not a: return
        if rng.random() < 0.5:
            g.node("IsNaN", [a[0]], B)
        else:
            g.node("IsInf", [a[0]], B, detect_negative=rng.randint(0, 1), detect_positive=rng.randint(0, 1))
    elif kind == "divint":
        a = g.pick(INTS, exact=True)
        if not a: return
        b = g.pick((a[1],), exact=True)
        d = g.node("Add", [g.node("Abs", [b[0]], a[1]), g.const(a[1], 1)], a[1])
        g.node("Div", [a[0], d], a[1])
    elif kind == "powint":
        a = g.pick(INTS + FLOATS)
        if not a: return
        b = g.pick((a[1],))
        if a[1] in INTS:
            # |base| <= 20, exponent 0..3: no overflow, whose result the
            # runtimes leave undefined (ONNX Runtime goes through double).
            base = g.node("Clip", [a[0], g.const(a[1], -20), g.const(a[1], 20)], a[1])
            e = g.node("Clip", [b[0], g.const(a[1], 0), g.const(a[1], 3)], a[1])
            g.node("Pow", [base, e], a[1], approx=a[3] or b[3])
        else:
            base = g.node("Add", [g.node("Abs", [a[0]], a[1]), g.const(a[1], 0.5)], a[1])
            e = g.node("Clip", [b[0], g.const(a[1], -2.0), g.const(a[1], 2.0)], a[1])
            g.node("Pow", [base, e], a[1], approx=True)


def make_model(rng, special):
    g = Gen(rng, special)
    main = F16 if F16 in FLOATS else rng.choice([F32, F32, F64, I32, I64])
    for k in range(rng.randint(1, 3)):
        g.add_input(main if k == 0 or rng.random() < 0.6 else rng.choice(list(FLOATS) + [I32, I64, B]))
    for _ in range(rng.randint(2, 14)):
        step(g)
    made = [v for v in g.values if v[0].startswith("v")]
    if not made:
        return None
    outs = [made[-1]] + rng.sample(made[:-1], min(len(made) - 1, 2))
    graph = helper.make_graph(g.nodes, "fuzz",
                              [helper.make_tensor_value_info(n, t, s) for n, t, s in g.inputs],
                              [helper.make_tensor_value_info(o[0], o[1], None) for o in outs], g.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])
    model.ir_version = 8
    return model, g.inputs


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--graft", required=True)
    parser.add_argument("--workdir", required=True)
    parser.add_argument("--models", type=int, default=150)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--special", action="store_true", help="NaN, infinities and signed zeros among the float inputs")
    parser.add_argument("--float16", action="store_true", help="mostly float16 graphs")
    args = parser.parse_args()
    if args.float16:
        global FLOATS
        FLOATS = (F32, F64, F16)
    rng = random.Random(args.seed)
    values = np.random.default_rng(args.seed)
    same = differ = refused = 0
    for i in range(args.models):
        made = make_model(rng, args.special)
        if not made:
            continue
        model, inputs = made
        arrays = {}
        for name, t, shape in inputs:
            if t in FLOATS:
                a = (values.standard_normal(shape) * 2).astype(NP[t])
                if args.special and a.size:
                    flat = a.reshape(-1)
                    for v in (np.nan, np.inf, -np.inf, 0.0, -0.0):
                        if values.random() < 0.5:
                            flat[values.integers(0, flat.size)] = v
            elif t == B:
                a = values.random(shape) < 0.5
            else:
                a = values.integers(-20, 21, shape).astype(NP[t])
            arrays[name] = np.asarray(a, dtype=NP[t])
        # float16 graphs: every float output may carry float16 rounding.
        verdict, problem = compare_with_ort(args.graft, model, os.path.join(args.workdir, "model%d" % i), arrays,
                                            rtol=4e-3 if args.float16 else 1e-4)
        if verdict == "refused":
            refused += 1  # ONNX Runtime's own gaps (float64 kernels, ...): nothing to compare
        elif verdict == "differ":
            differ += 1
            print("DIFF model%d %s" % (i, problem), flush=True)
        else:
            same += 1
    print("%d graphs: graft and ONNX Runtime agree on %d, differ on %d; ONNX Runtime refused %d" % (
        args.models, same, differ, refused))
    return 0 if differ == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
