#!/usr/bin/env python3
"""Random programs written in PyTorch, exported to ONNX, run by graft and
compared with PyTorch's own results.

The fusion tests compare fused kernels with graft's reference kernels; this
check compares both with an outside judge, on graphs as PyTorch's exporter
writes them (its Casts, its decompositions of floor division, remainder, gelu).
Each program is a random DAG of elementwise and broadcasting torch ops over
float32, float64, int32, int64 and bool tensors of random broadcasting shapes
(rank 0 to 4); several programs share one model as independent components.
With --layers, layer ops (linear, matmul, convolution, pools, batch and layer
norm, softmax, reductions, transposes, reshapes, concat, slices, splits, pads,
resizing, index_select, expand, cumsum) on float32
come between them, so that the partition into dnnl subgraphs, fused kernels
and reference kernels is exercised at its boundaries.

Values are kept finite and away from undefined behaviour (integer division
by zero, casts of NaN or of out-of-range floats). Ops that turn small float
differences into different discrete results (floor, ceil, round, sign,
comparisons, casts to integers or bool) only take values that nothing
approximate produced: graft's approximations have a stated error, and a
value one ulp below an integer legitimately floors differently.

With --gradient, each model's loss is the sum of its floating-point outputs
times fixed random weights; `graft grad` differentiates it with respect to
every floating-point input, and graft's gradients are compared with PyTorch
autograd's. Ops without a gradient in graft (Pad in reflect or replicate
mode) are left out, and so is any step whose operand sits on a
kink of its op (an exact 0 into relu or abs, a clamp bound, ties into max,
min and max pooling), where the two sides may rightly pick different
one-sided derivatives or split a tie differently (docs/training.md).

Usage: torch_random_programs.py --graft build/bin/graft --workdir DIR [--models N] [--seed S]
       [--programs-per-model K] [--max-steps M] [--layers | --dynamic] [--via onnx|artifact|opt]
       [--more-dtypes] [--fusion on|off] [--backends ref] [--device opencl] [--gradient] [--keep]
Exit code 0 only when every output of every model matches.
"""
import argparse
import os
import random
import shutil
import subprocess
import sys
import warnings

import numpy as np
import torch
import torch.nn.functional as F

FLOATS = (torch.float32, torch.float64)
INTS = (torch.int32, torch.int64)
DTYPES = FLOATS + INTS + (torch.bool,)
# PyTorch's exporter treats rank-0 tensors as scalars in type promotion and
# writes float64 and int32 ones, and what is computed from them, as float32 and
# int64 (sometimes inconsistently: a Where of float32 and float64). Programs
# keep rank-0 values of these dtypes out.
SCALAR_PROMOTED = {torch.float64: torch.float32, torch.int32: torch.int64}
NP_NAMES = {torch.float32: "float32", torch.float64: "float64", torch.int32: "int32", torch.int64: "int64",
            torch.bool: "bool", torch.float16: "float16", torch.int8: "int8", torch.uint8: "uint8",
            torch.int16: "int16"}
# --more-dtypes: float16 (which fused kernels load and store, computing in
# float32 and rounding after every op, as PyTorch does) and the narrow
# integers (which fused kernels do not take: they run on the other backends).
MORE_FLOATS = (torch.float16,)
MORE_INTS = (torch.int8, torch.uint8, torch.int16)


class Op:
    """One program step: `fn` over `arity` operands whose dtypes `accepts`.

    approx: the result may differ from PyTorch's in its last bits: an
      approximated function, a formula ONNX writes differently (HardSwish's
      x * clip(x / 6 + 0.5) against PyTorch's x * relu6(x + 3) / 6), or a
      multiply-add the JIT may fuse into one rounding.
    discrete: the result jumps on small input changes (takes exact values only).
    same: every operand has one dtype (binary arithmetic, Where's branches).
    """

    def __init__(self, name, arity, accepts, fn, approx=False, discrete=False, same=True, make=None, max_input=None):
        self.name, self.arity, self.accepts, self.fn = name, arity, accepts, fn
        self.approx, self.discrete, self.same = approx, discrete, same
        # Periodic functions lose absolute accuracy with the argument's size
        # (an error of 1e-6 relative in x is 1e-4 absolute in sin(x) at 100):
        # they take operands up to this magnitude.
        self.max_input = max_input
        # Layer ops: make(rng, gen, *operands) returns the step's function (with
        # its weights drawn), or None where the operands do not suit it.
        self.make = make

    def instantiate(self, rng, gen, operands):
        return self.make(rng, gen, *operands) if self.make else self.fn


def _gelu(x, approximate="none"):
    """F.gelu; with --gradient written out with erf (or tanh), whose backward
    autograd composes: Debian's PyTorch 1.13 returns garbage from its float32
    gelu backward when the incoming gradient is not contiguous (a Transpose
    after the GELU: gradients of -1.8e3 and 4.6e-41 where float64 and finite
    differences give 0.14 and -0.24). The export is the same ops either way."""
    if not gradient:
        return F.gelu(x, approximate=approximate)
    if approximate == "tanh":
        return 0.5 * x * (1 + torch.tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))
    return 0.5 * x * (1 + torch.erf(x * 0.7071067811865476))


def _ops():
    f, i, num, b = FLOATS, INTS, FLOATS + INTS, (torch.bool,)
    ops = [
        # Float unary.
        Op("relu", 1, num, torch.relu),
        Op("sigmoid", 1, f, torch.sigmoid, approx=True),
        Op("tanh", 1, f, torch.tanh, approx=True),
        Op("exp", 1, f, lambda x: torch.exp(torch.clamp(x, -20, 20)), approx=True),
        Op("log", 1, f, lambda x: torch.log(torch.abs(x) + 0.5), approx=True),
        Op("sqrt", 1, f, lambda x: torch.sqrt(torch.abs(x) + 0.01), approx=True),
        Op("erf", 1, f, torch.erf, approx=True),
        Op("sin", 1, f, torch.sin, approx=True, max_input=50),
        Op("cos", 1, f, torch.cos, approx=True, max_input=50),
        Op("reciprocal", 1, f, lambda x: torch.reciprocal(torch.abs(x) + 0.5)),
        # ONNX stores the slope as a float32 attribute: on float64 values
        # 0.1f * -10 is -1.0000000149, where PyTorch's 0.1 gives -1.0.
        Op("leaky_relu", 1, f, lambda x: F.leaky_relu(x, 0.1), approx=True),
        Op("hardsigmoid", 1, f, F.hardsigmoid, approx=True),
        Op("hardswish", 1, f, F.hardswish, approx=True),
        Op("gelu", 1, f, _gelu, approx=True),
        Op("gelu_tanh", 1, f, lambda x: _gelu(x, approximate="tanh"), approx=True),
        Op("softplus", 1, f, F.softplus, approx=True),
        Op("elu", 1, f, F.elu, approx=True),
        Op("selu", 1, f, F.selu, approx=True),
        Op("silu", 1, f, F.silu, approx=True),
        Op("clamp", 1, f, lambda x: torch.clamp(x, -1.5, 2.0)),
        Op("softsign", 1, f, F.softsign),
        Op("logsigmoid", 1, f, F.logsigmoid, approx=True),
        Op("hardtanh", 1, f, F.hardtanh),
        Op("relu6", 1, f, F.relu6),
        Op("mish", 1, f, F.mish, approx=True),
        Op("tan", 1, f, lambda x: torch.tan(torch.clamp(x, -1.2, 1.2)), approx=True),
        Op("asin", 1, f, lambda x: torch.asin(torch.clamp(x, -0.9, 0.9)), approx=True),
        Op("acos", 1, f, lambda x: torch.acos(torch.clamp(x, -0.9, 0.9)), approx=True),
        Op("atan", 1, f, torch.atan, approx=True),
        Op("abs", 1, num, torch.abs),
        Op("neg", 1, num, torch.neg),
        Op("floor", 1, f, torch.floor, discrete=True),
        Op("ceil", 1, f, torch.ceil, discrete=True),
        Op("round", 1, f, torch.round, discrete=True),
        Op("sign", 1, num, torch.sign, discrete=True),
        Op("square", 1, num, lambda x: x * x),
        Op("scale_shift", 1, f, lambda x: x * 0.75 - 0.25, approx=True),
        # Binary arithmetic (broadcasting).
        Op("add", 2, num, torch.add),
        Op("sub", 2, num, torch.sub),
        Op("mul", 2, num, torch.mul),
        Op("div", 2, f, lambda a, b: a / (torch.abs(b) + 0.5)),
        Op("maximum", 2, num, torch.maximum),
        Op("minimum", 2, num, torch.minimum),
        Op("pow", 2, f, lambda a, b: torch.pow(torch.abs(a) + 0.5, torch.clamp(b, -2, 2)), approx=True),
        Op("div_trunc", 2, i, lambda a, b: torch.div(a, torch.abs(b) + 1, rounding_mode="trunc")),
        Op("div_floor", 2, i, lambda a, b: torch.div(a, torch.abs(b) + 1, rounding_mode="floor")),
        Op("fmod", 2, i, lambda a, b: torch.fmod(a, torch.abs(b) + 1)),
        Op("remainder", 2, i, lambda a, b: torch.remainder(a, torch.abs(b) + 1)),
        # Comparisons and selection.
        Op("lt", 2, num, torch.lt, discrete=True),
        Op("gt", 2, num, torch.gt, discrete=True),
        Op("le", 2, num, torch.le, discrete=True),
        Op("ge", 2, num, torch.ge, discrete=True),
        Op("eq", 2, num, torch.eq, discrete=True),
        Op("where", 3, None, torch.where, same=False),
        # Logic.
        Op("not", 1, b, torch.bitwise_not),
        Op("and", 2, b, torch.logical_and),
        Op("or", 2, b, torch.logical_or),
        Op("xor", 2, b, torch.logical_xor),
    ]
    # ONNX has no unsigned Neg or Relu (PyTorch's exporter writes them all
    # the same, and graft refuses such a model with an error naming the node).
    for op in ops:
        if op.name in ("neg", "relu"):
            op.accepts = tuple(t for t in op.accepts if t != torch.uint8)
    # Casts (integers only from exact, bounded values).
    for to in DTYPES:
        name = "to_" + NP_NAMES[to]
        if to in INTS:
            low, high = max(-1000, torch.iinfo(to).min), min(1000, torch.iinfo(to).max)
            ops.append(Op(name, 1, DTYPES, lambda x, to=to, low=low, high=high: torch.clamp(x, low, high).to(to)
                          if x.dtype.is_floating_point else x.to(to), discrete=True))
        else:  # to bool is x != 0: an approximation's tiny value against an exact 0 flips it
            ops.append(Op(name, 1, DTYPES, lambda x, to=to: x.to(to), discrete=to == torch.bool))
    return ops


def _weight(gen, *shape):
    return torch.randn(shape, generator=gen) / max(1.0, float(np.prod(shape[1:])) ** 0.5)


def _dim(rng, x, at_least=1):
    dims = [d for d in range(x.dim()) if x.shape[d] >= at_least]
    return rng.choice(dims) if dims else None


def _linear(rng, gen, x):
    if x.dim() == 0:
        return None
    w = _weight(gen, rng.choice([1, 4, 16, 40]), x.shape[-1])
    b = _weight(gen, w.shape[0]) if rng.random() < 0.7 else None
    return lambda x: F.linear(x, w, b)


def _self_matmul(rng, gen, x):
    if x.dim() < 2:
        return None
    if rng.random() < 0.5:
        return lambda x: torch.matmul(x, x.transpose(-1, -2))
    return lambda x: torch.matmul(x.transpose(-1, -2), x)


def _matmul(rng, gen, a, b):
    if a.dim() < 1 or b.dim() < 2 or a.shape[-1] != b.shape[-2]:
        return None
    return torch.matmul


def _softmax(rng, gen, x):
    d = _dim(rng, x)
    if d is None:
        return None
    fn = rng.choice([torch.softmax, torch.log_softmax])
    return lambda x: fn(x, d)


def _layer_norm(rng, gen, x):
    # PyTorch normalizes as x * (w / std) + (b - mean * w / std), which loses
    # digits on rows of low variance (over one element it gives b plus noise):
    # rows of at least 8 random values keep it an accurate judge.
    if x.dim() == 0 or x.shape[-1] < 8:
        return None
    n = x.shape[-1]
    w, b = 1 + _weight(gen, n), _weight(gen, n)
    return lambda x: F.layer_norm(x, (n,), w, b, 1e-5)


def _reduce(rng, gen, x):
    d = _dim(rng, x)
    if d is None:
        return None
    keep = rng.random() < 0.5
    kind = rng.choice(["sum", "mean", "amax", "amin"])
    return lambda x: getattr(torch, kind)(x, d, keepdim=keep)


def _transpose(rng, gen, x):
    if x.dim() < 2:
        return None
    perm = list(range(x.dim()))
    rng.shuffle(perm)
    return lambda x: x.permute(*perm)


def _reshape(rng, gen, x):
    if x.dim() < 2:
        return None
    if rng.random() < 0.5:
        return lambda x: torch.flatten(x, x.dim() - 2)
    return lambda x: x.unsqueeze(1)


def _concat(rng, gen, a, b):
    if a.dim() == 0 or a.dim() != b.dim():
        return None
    dims = [d for d in range(a.dim()) if all(a.shape[k] == b.shape[k] for k in range(a.dim()) if k != d)]
    if not dims:
        return None
    d = rng.choice(dims)
    return lambda a, b: torch.cat([a, b], d)


def _slice(rng, gen, x):
    d = _dim(rng, x, at_least=2)
    if d is None:
        return None
    start = rng.randint(0, min(x.shape[d] - 1, 1 if dynamic else x.shape[d]))
    step = rng.choice([1, 1, 2])
    return lambda x: x.narrow(d, start, x.shape[d] - start)[(slice(None),) * d + (slice(None, None, step),)]


def _conv(rng, gen, x):
    if x.dim() != 4 or x.shape[2] < 3 or x.shape[3] < 3:
        return None
    c = x.shape[1]
    groups = rng.choice([g for g in (1, c) if c % g == 0])
    out = c if groups == c else rng.choice([1, 4, 8])
    k, stride, pad = rng.choice([(1, 1, 0), (3, 1, 1), (3, 2, 1), (3, 1, 0)])
    w, b = _weight(gen, out, c // groups, k, k), _weight(gen, out)
    return lambda x: F.conv2d(x, w, b, stride, pad, 1, groups)


def _pool(rng, gen, x):
    if x.dim() != 4 or x.shape[2] < 2 or x.shape[3] < 2:
        return None
    kind = rng.choice(["max", "avg", "global"])
    if kind == "max":
        return lambda x: F.max_pool2d(x, 2, 2)
    if kind == "avg":
        return lambda x: F.avg_pool2d(x, 2, 2)
    return lambda x: F.adaptive_avg_pool2d(x, 1)


def _batch_norm(rng, gen, x):
    if x.dim() != 4:
        return None
    c = x.shape[1]
    mean, var = _weight(gen, c), 0.5 + torch.rand(c, generator=gen)
    w, b = 1 + _weight(gen, c), _weight(gen, c)
    return lambda x: F.batch_norm(x, mean, var, w, b, False, 0.0, 1e-5)


def _split(rng, gen, x):
    d = _dim(rng, x, at_least=2)
    if d is None:
        return None
    size = rng.randint(1, x.shape[d] - 1)
    pick = rng.randint(0, 1)
    # Both parts are computed (a Split with two outputs); one is combined
    # back so that the node's outputs feed different consumers.
    return lambda x: torch.split(x, [size, x.shape[d] - size], d)[pick] * 2 + torch.split(
        x, [size, x.shape[d] - size], d)[pick].abs()


def _pad(rng, gen, x):
    if x.dim() == 0:
        return None
    pads = [rng.randint(0, 2) for _ in range(2 * min(x.dim(), 2))]
    mode = rng.choice(["constant", "reflect", "replicate"]) if x.dim() >= 3 and min(x.shape[-2:]) > 2 else "constant"
    if mode != "constant":
        pads = [min(p, 1) for p in pads]
        return lambda x: F.pad(x, pads[:4] if len(pads) == 4 else pads, mode=mode)
    return lambda x: F.pad(x, pads, value=0.5)


def _interpolate(rng, gen, x):
    if x.dim() != 4:
        return None
    mode = rng.choice(["nearest", "bilinear"])
    scale = rng.choice([2, 3])
    if mode == "nearest":
        return lambda x: F.interpolate(x, scale_factor=scale, mode="nearest")
    return lambda x: F.interpolate(x, scale_factor=scale, mode="bilinear", align_corners=False)


def _index_select(rng, gen, x):
    d = _dim(rng, x)
    if d is None:
        return None
    # Indices below 2 stay valid at any other extent (symbolic ones are at least 2).
    top = min(x.shape[d], 2) if dynamic else x.shape[d]
    index = torch.tensor([rng.randint(0, top - 1) for _ in range(rng.randint(1, 6))])
    return lambda x: torch.index_select(x, d, index)


def _expand(rng, gen, x):
    if x.dim() == 0 or 1 not in x.shape:
        return None
    shape = [rng.choice([2, 3]) if e == 1 else e for e in x.shape]
    return lambda x: x.expand(*shape)


def _cumsum(rng, gen, x):
    d = _dim(rng, x)
    if d is None:
        return None
    return lambda x: torch.cumsum(x, d)


def _reduce_more(rng, gen, x):
    d = _dim(rng, x)
    if d is None:
        return None
    keep = rng.random() < 0.5
    kind = rng.choice(["logsumexp", "norm", "prod", "var"])
    if kind == "logsumexp":
        return lambda x: torch.logsumexp(x, d, keepdim=keep)
    if kind == "norm":
        return lambda x: torch.norm(x, dim=d, keepdim=keep)
    if kind == "prod":
        return lambda x: torch.prod(torch.clamp(x, -1.5, 1.5), d, keepdim=keep)
    return lambda x: torch.var(x, d, keepdim=keep, unbiased=False)


def _group_norm(rng, gen, x):
    if x.dim() != 4:
        return None
    c = x.shape[1]
    if rng.random() < 0.5:
        return lambda x: F.instance_norm(x, eps=1e-5)
    groups = rng.choice([g for g in (1, 2, 4, c) if c % g == 0])
    w, b = 1 + _weight(gen, c), _weight(gen, c)
    return lambda x: F.group_norm(x, groups, w, b, 1e-5)


def _embedding(rng, gen, ids):
    vocab = rng.choice([5, 30])
    table = torch.randn(vocab, rng.choice([1, 4, 8]), generator=gen)
    return lambda ids: F.embedding(torch.clamp(torch.abs(ids), 0, vocab - 1), table)


def _argmax(rng, gen, x):
    d = _dim(rng, x)
    if d is None:
        return None
    kind, keep = rng.choice([torch.argmax, torch.argmin]), rng.random() < 0.5
    return lambda x: kind(x, d, keepdim=keep)


def _seeded_module(gen, module):
    """`module` in eval mode with weights drawn from `gen` (scaled like the
    default initialisation, so that values stay in range)."""
    with torch.no_grad():
        for parameter in module.parameters():
            fan_in = parameter.shape[-1] if parameter.dim() > 1 else parameter.shape[0]
            parameter.copy_(torch.randn(parameter.shape, generator=gen) / fan_in ** 0.5)
            parameter.requires_grad_(False)  # exported as constants, like the other ops' weights
    return module.eval()


def _recurrent(rng, gen, x):
    # [sequence, batch, features], as nn.GRU/LSTM/RNN take it by default.
    if x.dim() != 3:
        return None
    kind = rng.choice([torch.nn.GRU, torch.nn.LSTM, torch.nn.RNN])
    module = _seeded_module(gen, kind(x.shape[-1], rng.choice([1, 4, 8]), num_layers=rng.choice([1, 2]),
                                      bidirectional=rng.random() < 0.5))
    return lambda x: module(x)[0]


def _attention(rng, gen, x):
    # [sequence, batch, embedding], self-attention as nn.MultiheadAttention
    # exports it (projections, head reshapes, softmax of scaled scores).
    if x.dim() != 3:
        return None
    heads = rng.choice([h for h in (1, 2, 4) if x.shape[-1] % h == 0])
    module = _seeded_module(gen, torch.nn.MultiheadAttention(x.shape[-1], heads))
    return lambda x: module(x, x, x, need_weights=False)[0]


# Layer ops that read no extent of their operands when drawn (no weights
# shaped after them), with --dynamic: they run at other extents unchanged.
SHAPE_GENERIC = {"self_matmul", "softmax", "reduce", "transpose", "reshape", "slice", "pool", "pad", "interpolate",
                 "index_select", "cumsum", "reduce_more", "embedding", "argmax"}
# Set by main for --dynamic: the draws above keep to what holds at any extent.
dynamic = False
# Set by main for --gradient (see NO_GRADIENT and on_a_kink).
gradient = False

# Layer ops: float32 only (what the dnnl backend and the exporter's layer
# patterns take); their sums round in another order than PyTorch's, so their
# results count as approximate.
LAYER_OPS = [Op(name, arity, (torch.float32,), None, approx=True, make=make) for name, arity, make in [
    ("linear", 1, _linear), ("self_matmul", 1, _self_matmul), ("matmul", 2, _matmul), ("softmax", 1, _softmax),
    ("layer_norm", 1, _layer_norm), ("reduce", 1, _reduce), ("transpose", 1, _transpose),
    ("reshape", 1, _reshape), ("concat", 2, _concat), ("slice", 1, _slice), ("conv", 1, _conv),
    ("pool", 1, _pool), ("batch_norm", 1, _batch_norm), ("split", 1, _split), ("pad", 1, _pad),
    ("interpolate", 1, _interpolate), ("index_select", 1, _index_select), ("expand", 1, _expand),
    ("cumsum", 1, _cumsum), ("reduce_more", 1, _reduce_more), ("group_norm", 1, _group_norm),
    ("recurrent", 1, _recurrent), ("attention", 1, _attention)]] + [
    # Gathers rows of a table by int64 ids (clamped into range).
    Op("embedding", 1, (torch.int64,), None, approx=False, make=_embedding),
    # Index of the first largest (smallest) value: ties, as after a Relu, go to the first.
    Op("argmax", 1, (torch.float32, torch.int64, torch.int32), None, discrete=True, make=_argmax)]

OPS = _ops()


# --gradient: layer ops whose ONNX form has no gradient builder in graft
# (Pad in reflect and replicate modes).
NO_GRADIENT = {"pad"}
# Ops with a kink or a tie: one-sided derivatives that graft and PyTorch may
# pick differently at these points. A step is not drawn when an operand holds
# one of the op family's breakpoints exactly (random inputs never do; relu's
# zeros, clamp's bounds and integer-valued results do).
KINKED = {"relu", "abs", "leaky_relu", "hardtanh", "relu6", "clamp", "hardsigmoid", "hardswish", "log", "sqrt",
          "reciprocal", "div", "pow", "reduce_more", "softsign", "square", "tan", "asin", "acos", "layer_norm",
          "group_norm", "batch_norm", "attention", "recurrent"}
BREAKPOINTS = torch.tensor([0.0, 1.0, -1.0, 1.5, -1.5, 2.0, -2.0, 3.0, -3.0, 6.0, 1.2, -1.2, 0.9, -0.9, 20.0, -20.0])
# Ops that pick among their operands' elements: a tie splits differently.
TIED = {"maximum", "minimum", "reduce", "pool", "reduce_more"}


def on_a_kink(op, operands):
    floats = [t for t in operands if t.dtype.is_floating_point and t.numel()]
    if op.name in KINKED and any(bool(torch.isin(t.double(), BREAKPOINTS.double()).any()) for t in floats):
        return True
    if op.name in TIED:
        if any(torch.unique(t).numel() < t.numel() for t in floats):
            return True
        if len(floats) == 2 and bool((floats[0] == floats[1]).any()):
            return True
    return False


class Value:
    def __init__(self, tensor, approx):
        self.tensor, self.approx = tensor, approx


def random_shapes(rng, count):
    """`count` shapes that broadcast together: suffixes of one base shape with
    some extents set to 1."""
    rank = rng.choice([0, 1, 2, 2, 3, 3, 4])
    base = [rng.choice(EXTENTS) for _ in range(rank)]
    shapes = []
    for _ in range(count):
        r = rng.randint(max(0, rank - 2), rank) if rank else 0
        shape = [d if rng.random() < 0.7 else 1 for d in base[rank - r:]]
        shapes.append(shape)
    shapes[0] = list(base)  # one input spans the whole iteration space
    rng.shuffle(shapes)
    return shapes


EXTENTS = [1, 2, 3, 5, 7, 16, 33]


def random_input(rng, gen, shape, dtype):
    if dtype.is_floating_point:
        return torch.randn(shape, generator=gen, dtype=dtype) * 2
    if dtype == torch.bool:
        return torch.rand(shape, generator=gen) < 0.5
    if dtype == torch.uint8:
        return torch.randint(0, 21, shape, generator=gen, dtype=dtype)
    return torch.randint(-20, 21, shape, generator=gen, dtype=dtype)


class Program:
    """A random DAG of OPS over fresh inputs, executed eagerly as it is drawn
    (so every choice sees real dtypes and values), replayable for tracing."""

    def __init__(self, rng, gen, index, max_steps, layers):
        n_inputs = rng.randint(1, 4)
        shapes = random_shapes(rng, n_inputs)
        layer_ops = [op for op in LAYER_OPS if op.name in SHAPE_GENERIC] if dynamic else LAYER_OPS
        if gradient:
            layer_ops = [op for op in layer_ops if op.name not in NO_GRADIENT]
        ops = OPS + layer_ops * 4 if layers else OPS
        main = rng.choice([torch.float32] * 4 + [torch.float64, torch.int32, torch.int64])
        if layers:
            main = torch.float32
            draw = rng.random()
            if draw < 0.4:  # an image batch for convolutions and pools
                shapes[0] = [rng.choice([1, 2]), rng.choice([1, 3, 8]), rng.choice([5, 8, 15]), rng.choice([4, 9, 16])]
            elif draw < 0.6:  # a sequence [steps, batch, features] for recurrent layers and attention
                shapes[0] = [rng.choice([1, 3, 7]), rng.choice([1, 2]), rng.choice([4, 8, 16])]
        self.inputs = []
        for k, shape in enumerate(shapes):
            dtype = main if rng.random() < 0.7 else rng.choice(DTYPES)
            if not shape and dtype in SCALAR_PROMOTED:
                dtype = SCALAR_PROMOTED[dtype]
            self.inputs.append(("p%d_in%d" % (index, k), random_input(rng, gen, shape, dtype)))
        self.steps = []  # (op, operand indices, function)
        values = [Value(t, False) for _, t in self.inputs]
        n_steps = rng.randint(2, max_steps)
        attempts = 0
        while len(self.steps) < n_steps and attempts < 40 * max_steps:
            attempts += 1
            op = rng.choice(ops)
            args = self._pick(rng, op, values)
            if args is None:
                continue
            operands = [values[a].tensor for a in args]
            if op.max_input and any(t.numel() and float(t.abs().max()) > op.max_input for t in operands):
                continue
            fn = op.instantiate(rng, gen, operands)
            if fn is None:
                continue
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    out = fn(*operands)
            except (RuntimeError, ValueError, IndexError):
                continue  # shapes that do not broadcast, a norm over one value
            if out.numel() > 1 << 21:
                continue
            if out.dim() == 0 and out.dtype in SCALAR_PROMOTED:
                continue  # see SCALAR_PROMOTED
            if out.dtype.is_floating_point and not bool(torch.isfinite(out).all()):
                continue  # keep values finite: inf - inf, casts of inf
            if out.dtype.is_floating_point and out.numel() and float(out.abs().max()) > 1e6:
                continue
            if gradient and on_a_kink(op, operands):
                continue
            values.append(Value(out, op.approx or any(values[a].approx for a in args)))
            self.steps.append((op, args, fn))
        # Outputs: the last value and up to two others computed on the way.
        computed = list(range(len(self.inputs), len(values)))
        self.outputs = computed[-1:] + rng.sample(computed[:-1], min(len(computed) - 1, rng.randint(0, 2)))
        self.expected = [values[o].tensor for o in self.outputs]
        # The exporter drops inputs no output reads.
        needed = set(self.outputs)
        for k in range(len(self.steps) - 1, -1, -1):
            if len(self.inputs) + k in needed:
                needed.update(self.steps[k][1])
        self.used = [k for k in range(len(self.inputs)) if k in needed]
        self.needed = needed

    @staticmethod
    def _pick(rng, op, values):
        candidates = [k for k, v in enumerate(values) if not (op.discrete and v.approx)]
        if op.name == "where":
            conds = [k for k in candidates if values[k].tensor.dtype == torch.bool]
            if not conds:
                return None
            a = rng.choice(range(len(values)))
            same = [k for k, v in enumerate(values) if v.tensor.dtype == values[a].tensor.dtype]
            return [rng.choice(conds), a, rng.choice(same)]
        candidates = [k for k in candidates if values[k].tensor.dtype in op.accepts]
        if not candidates:
            return None
        first = rng.choice(candidates)
        if op.arity == 1:
            return [first]
        same = [k for k in candidates if values[k].tensor.dtype == values[first].tensor.dtype]
        return [first] + [rng.choice(same) for _ in range(op.arity - 1)]

    def resized(self, rng, gen, index):
        """For --dynamic: the names of the inputs' dimensions that may vary
        (every extent above 1, one name per position of the iteration space,
        shared by the inputs that span it), new inputs whose extents at those
        dimensions are drawn anew, and the outputs PyTorch computes from them;
        None when no draw keeps every value finite."""
        rank = max(len(t.shape) for _, t in self.inputs)
        axes = {}
        for k in self.used:
            name, tensor = self.inputs[k]
            offset = rank - tensor.dim()
            axes[name] = {d: "p%d_d%d" % (index, offset + d) for d in range(tensor.dim()) if tensor.shape[d] > 1}
        for _ in range(10):
            extents = {}
            for dims in axes.values():
                for label in dims.values():
                    extents.setdefault(label, rng.choice(EXTENTS[1:]))
            inputs = []
            for k in self.used:
                name, tensor = self.inputs[k]
                shape = [extents[axes[name][d]] if d in axes[name] else 1 for d in range(tensor.dim())]
                inputs.append(random_input(rng, gen, shape, tensor.dtype))
            try:
                values = self.replay(inputs, every_value=True)
            except (RuntimeError, IndexError):
                continue  # a layer op that does not hold at these extents
            if all(not v.dtype.is_floating_point or not v.numel() or
                   (bool(torch.isfinite(v).all()) and float(v.abs().max()) <= 1e6) for v in values if v is not None):
                return axes, inputs, [values[o] for o in self.outputs]
        return None

    def replay(self, used_inputs, every_value=False):
        values = [None] * len(self.inputs)
        for k, tensor in zip(self.used, used_inputs):
            values[k] = tensor
        for k, (op, args, fn) in enumerate(self.steps):
            needed = len(self.inputs) + k in self.needed
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                values.append(fn(*[values[a] for a in args]) if needed else None)
        return values if every_value else [values[o] for o in self.outputs]


class Model(torch.nn.Module):
    def __init__(self, programs):
        super().__init__()
        self.programs = programs

    def forward(self, *inputs):
        outputs, at = [], 0
        for p in self.programs:
            n = len(p.used)
            outputs.extend(p.replay(inputs[at:at + n]))
            at += n
        return tuple(outputs)


def compare(got, want, rtol, atol):
    """None when they match, else what differs."""
    if got.shape != want.shape:
        return "shape %s, expected %s" % (got.shape, want.shape)
    if got.dtype != want.dtype:
        return "dtype %s, expected %s" % (got.dtype, want.dtype)
    if want.dtype == np.bool_ or np.issubdtype(want.dtype, np.integer):
        bad = np.argwhere(got != want)
        if len(bad):
            at = tuple(bad[0])
            return "%d of %d elements differ; first at %s: got %s, expected %s" % (
                len(bad), want.size, at, got[at], want[at])
        return None
    if want.dtype == np.float16:  # every op rounds to 11 bits
        rtol, atol = max(rtol, 4e-3), max(atol, 4e-3)
    g, w = got.astype(np.float64), want.astype(np.float64)
    scale = max(1.0, float(np.max(np.abs(w)))) if w.size else 1.0
    err = np.abs(g - w)
    bad = np.argwhere(~(err <= atol * scale + rtol * np.abs(w)))
    if len(bad):
        at = tuple(bad[0])
        return "%d of %d elements differ; first at %s: got %r, expected %r" % (len(bad), want.size, at, g[at], w[at])
    return None


def describe(program):
    lines = ["inputs: " + ", ".join("%s %s%s" % (n, NP_NAMES[t.dtype], list(t.shape)) for n, t in program.inputs)]
    n = len(program.inputs)
    for k, (op, args, _) in enumerate(program.steps):
        if n + k in program.needed:
            lines.append("  v%d = %s(%s)" % (n + k, op.name, ", ".join("v%d" % a for a in args)))
    lines.append("outputs: " + ", ".join("v%d" % o for o in program.outputs))
    return "\n".join(lines)


def run_model(index, args, rng):
    gen = torch.Generator().manual_seed(args.seed * 100003 + index)
    programs = [Program(rng, gen, k, args.max_steps, args.layers) for k in range(args.programs_per_model)]
    folder = os.path.join(args.workdir, "model%d" % index)
    os.makedirs(folder, exist_ok=True)
    onnx_path = os.path.join(folder, "model.onnx")
    model = Model(programs)
    inputs = [p.inputs[k][1] for p in programs for k in p.used]
    input_names = [p.inputs[k][0] for p in programs for k in p.used]
    output_names = ["p%d_out%d" % (k, j) for k, p in enumerate(programs) for j in range(len(p.outputs))]
    if args.gradient:
        return run_gradient_model(folder, programs, model, inputs, input_names, gen, args)
    dynamic_axes = None
    if args.dynamic:
        # Exported with every extent above 1 symbolic, run at other extents.
        dynamic_axes, inputs = {}, []
        for k, p in enumerate(programs):
            resized = p.resized(rng, gen, k)
            if resized is None:  # keeps its shapes (no draw stayed finite)
                inputs.extend(p.inputs[j][1] for j in p.used)
                continue
            axes, new_inputs, p.expected = resized
            dynamic_axes.update(axes)
            inputs.extend(new_inputs)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            traced = tuple(p.inputs[k][1] for p in programs for k in p.used)
            torch.onnx.export(model, traced, onnx_path, opset_version=args.opset, input_names=input_names,
                              output_names=output_names, do_constant_folding=True, dynamic_axes=dynamic_axes)
    except Exception as e:  # the exporter's limits (instance_norm of a padded value: "unknown channel size")
        return None, "%s: %s" % (type(e).__name__, str(e).splitlines()[0][:200])
    backends = ["--backends", args.backends] if args.backends else []
    if args.device:
        backends += ["--device", args.device]
    model_path = onnx_path
    if args.via != "onnx":
        # Through an artifact (graft compile), or through graft's own ONNX
        # writer after its passes (graft opt).
        model_path = os.path.join(folder, "model.graft" if args.via == "artifact" else "model.opt.onnx")
        if args.via == "artifact":
            prepare = [args.graft, "compile", onnx_path, "-o", model_path, "--fusion", args.fusion] + backends
            for name, tensor in zip(input_names, inputs):  # compiled for the extents it will run at
                if dynamic_axes and dynamic_axes.get(name):
                    prepare += ["--shape", "%s=%s" % (name, ",".join(str(d) for d in tensor.shape))]
        else:
            prepare = [args.graft, "opt", onnx_path, "-o", model_path]
        proc = subprocess.run(prepare, capture_output=True, text=True)
        if proc.returncode != 0:
            return ["graft %s failed: " % prepare[1] + (proc.stderr.strip() or proc.stdout.strip())[-600:] + "\n" +
                    "\n".join(describe(p) for p in programs)], 0
    command = [args.graft, "run", model_path, "--output-dir", os.path.join(folder, "out"), "--threads", "2"]
    if args.via != "artifact":  # an artifact was partitioned and fused when compiled
        command += ["--fusion", args.fusion, "--report"] + backends
    for name, tensor in zip(input_names, inputs):
        path = os.path.join(folder, name + ".npy")
        np.save(path, tensor.numpy())
        command += ["--input", "%s=%s" % (name, path)]
    proc = subprocess.run(command, capture_output=True, text=True)
    if proc.returncode != 0:
        return ["graft failed: " + (proc.stderr.strip() or proc.stdout.strip())[-600:] + "\n" +
                "\n".join(describe(p) for p in programs)], 0
    fused = 0
    for line in proc.stdout.splitlines():
        if line.startswith("partition:") and " fuse " in line:
            fused = int(line.split(" fuse ")[1].split()[0])
        # On a device, the device's backend took the nodes (it fuses inside its subgraphs).
        if args.device and line.startswith("partition:") and " %s " % args.device.split(":")[0] in line:
            fused = int(line.split(" %s " % args.device.split(":")[0])[1].split()[0])
    failures = []
    at = 0
    for k, p in enumerate(programs):
        for j, want in enumerate(p.expected):
            name = output_names[at]
            at += 1
            got = np.load(os.path.join(folder, "out", name + ".npy"))
            problem = compare(got, want.numpy(), args.rtol, args.atol)
            if problem:
                failures.append("output %s: %s\n%s" % (name, problem, describe(p)))
    if not failures and not args.keep:
        shutil.rmtree(folder)
    return failures, fused


class WeightedLoss(torch.nn.Module):
    """The sum of a model's floating-point outputs times fixed random weights
    (float32): a loss whose gradient reaches every output with its own values."""

    def __init__(self, model, weights):
        super().__init__()
        self.model, self.weights = model, weights

    def forward(self, *inputs):
        terms = [(out.to(torch.float32) * w).sum()
                 for out, w in zip(self.model(*inputs), self.weights) if w is not None]
        return torch.stack(terms).sum()


def run_gradient_model(folder, programs, model, inputs, input_names, gen, args):
    """--gradient: graft's gradient of a weighted sum of the outputs with
    respect to every floating-point input against PyTorch autograd's."""
    weights = [torch.randn(want.shape, generator=gen) if want.dtype.is_floating_point else None
               for p in programs for want in p.expected]
    wrt = [k for k, t in enumerate(inputs) if t.dtype.is_floating_point]
    if all(w is None for w in weights) or not wrt:
        return None, "(nothing to differentiate: no floating-point output or input)"
    loss_model = WeightedLoss(model, weights)
    leaves = [t.clone().requires_grad_(True) if k in wrt else t for k, t in enumerate(inputs)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        loss = loss_model(*leaves)
        grads = torch.autograd.grad(loss, [leaves[k] for k in wrt], allow_unused=True)
    grads = [torch.zeros_like(inputs[k]) if g is None else g for k, g in zip(wrt, grads)]
    onnx_path = os.path.join(folder, "model.onnx")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(loss_model, tuple(inputs), onnx_path, opset_version=args.opset,
                              input_names=input_names, output_names=["loss"], do_constant_folding=True)
    except Exception as e:
        return None, "%s: %s" % (type(e).__name__, str(e).splitlines()[0][:200])
    # The exporter drops inputs that reach the loss through no floating-point
    # path (their gradient is zero in PyTorch too).
    import onnx
    kept = {i.name for i in onnx.load(onnx_path, load_external_data=False).graph.input}
    grads = [g for k, g in zip(wrt, grads) if input_names[k] in kept]
    names = [input_names[k] for k in wrt if input_names[k] in kept]
    if not names:
        return None, "(nothing to differentiate: the exported loss reads no floating-point input)"
    grad_path = os.path.join(folder, "grad.onnx")
    proc = subprocess.run([args.graft, "grad", onnx_path, "--loss", "loss", "--wrt", ",".join(names), "-o", grad_path],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        return ["graft grad failed: " + (proc.stderr.strip() or proc.stdout.strip())[-600:] + "\n" +
                "\n".join(describe(p) for p in programs)], 0
    command = [args.graft, "run", grad_path, "--output-dir", os.path.join(folder, "out"), "--threads", "2",
               "--fusion", args.fusion, "--report"] + (["--backends", args.backends] if args.backends else [])
    for name, tensor in zip(input_names, inputs):
        if name not in kept:
            continue
        path = os.path.join(folder, name + ".npy")
        np.save(path, tensor.numpy())
        command += ["--input", "%s=%s" % (name, path)]
    proc = subprocess.run(command, capture_output=True, text=True)
    if proc.returncode != 0:
        return ["graft failed: " + (proc.stderr.strip() or proc.stdout.strip())[-600:] + "\n" +
                "\n".join(describe(p) for p in programs)], 0
    fused = 0
    for line in proc.stdout.splitlines():
        if line.startswith("partition:") and " fuse " in line:
            fused = int(line.split(" fuse ")[1].split()[0])
    failures = []
    for name, want in [("loss", loss.detach())] + [(n + "_grad", g) for n, g in zip(names, grads)]:
        got = np.load(os.path.join(folder, "out", name + ".npy"))
        problem = compare(got, want.numpy(), args.rtol, args.atol)
        if problem:
            failures.append("%s: %s\n%s" % (name, problem, "\n".join(describe(p) for p in programs)))
    if not failures and not args.keep:
        shutil.rmtree(folder)
    return failures, fused


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--graft", required=True)
    parser.add_argument("--workdir", required=True)
    parser.add_argument("--models", type=int, default=30)
    parser.add_argument("--programs-per-model", type=int, default=6)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--max-steps", type=int, default=12, help="ops per program: 2 to this many")
    parser.add_argument("--opset", type=int, default=17)
    parser.add_argument("--backends", default="")
    parser.add_argument("--device", default="", help="run graft on this device (opencl): its backend first, copies at the boundaries")
    parser.add_argument("--layers", action="store_true",
                        help="mix in layer ops (linear, matmul, conv, pools, norms, softmax, reductions, "
                             "transposes, concat, slices) between the pointwise ones, float32")
    parser.add_argument("--rtol", type=float, default=1e-4)
    parser.add_argument("--atol", type=float, default=1e-4)
    parser.add_argument("--dynamic", action="store_true",
                        help="export every extent above 1 as a symbolic dimension and run at other extents "
                             "(with --layers, only the layer ops that hold at any extent)")
    parser.add_argument("--more-dtypes", action="store_true",
                        help="also float16 values (fused, computed in float32) and int8, uint8 and int16 ones (run by the other backends)")
    parser.add_argument("--fusion", choices=["on", "off"], default="on",
                        help="off: the other backends (dnnl, ccodegen, ref) take the pointwise ops too")
    parser.add_argument("--via", choices=["onnx", "artifact", "opt"], default="onnx",
                        help="run the exported model (onnx), the artifact graft compile makes of it, "
                             "or the ONNX graft opt writes after its passes")
    parser.add_argument("--gradient", action="store_true",
                        help="compare graft grad's gradients of a weighted sum of the outputs with PyTorch autograd's")
    parser.add_argument("--keep", action="store_true", help="keep every model's folder, not only failing ones")
    args = parser.parse_args()
    if args.gradient and (args.dynamic or args.via != "onnx" or args.device):
        parser.error("--gradient takes the exported model as it is (no --dynamic, --via or --device)")
    global dynamic, gradient, FLOATS, INTS, DTYPES, OPS
    dynamic = args.dynamic  # with --layers, only the layer ops of SHAPE_GENERIC
    gradient = args.gradient  # leaves out ops without gradients and steps on kinks
    if args.more_dtypes:
        FLOATS, INTS = FLOATS + MORE_FLOATS, INTS + MORE_INTS
        DTYPES = FLOATS + INTS + (torch.bool,)
        OPS = _ops()
    torch.set_num_threads(1)
    os.makedirs(args.workdir, exist_ok=True)
    rng = random.Random(args.seed)
    failed = fused_total = not_exported = 0
    for index in range(args.models):
        failures, fused = run_model(index, args, rng)
        if failures is None:
            print("NOT EXPORTED model%d (PyTorch's exporter refused it) %s" % (index, fused), flush=True)
            not_exported += 1
            continue
        fused_total += fused
        for f in failures:
            print("FAIL model%d %s" % (index, f), flush=True)
        failed += bool(failures)
    fused = "" if args.via == "artifact" else "; %d nodes ran %s" % (fused_total, "on " + args.device if args.device else "fused")
    print("%d of %d models matched PyTorch (%d programs each)%s%s" % (
        args.models - failed - not_exported, args.models, args.programs_per_model, fused,
        "; %d not exported" % not_exported if not_exported else ""))
    if not_exported * 10 > args.models:
        print("FAIL: more than a tenth of the models could not be exported: the generator needs fixing")
        return 1
    if fused_total == 0 and args.via != "artifact" and args.fusion == "on":
        print("FAIL: nothing ran on " + args.device if args.device else "FAIL: nothing was fused")
        return 1
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
