#!/usr/bin/env python3
"""Fits the rational approximation of erf used by the CPU JIT for float32.

erf(x) = x * P(x^2) / Q(x^2) on |x| <= 4, i.e. g(t) = erf(sqrt t) / sqrt t
~= P(t) / Q(t) on t in [0, 16], minimizing the maximum relative error (the
relative error of erf is that of g). The fit is a linearized weighted least
squares at Chebyshev nodes (q0 = 1):

    minimize sum_i w_i ((P(t_i) - g_i Q(t_i)) / (g_i Q_prev(t_i)))^2

where Q_prev is the previous iteration's denominator (Loeb / Sanathanan-
Koerner iteration, so that the linear residual approaches the relative
error) and the weights are updated Lawson-style (w_i *= |error_i|), which
drives the solution towards the minimax one. The best iterate is kept, and
then checked in float64 Horner evaluation on a fine grid against mpmath.

Usage: tools/fit_erf.py [numerator_degree=6] [denominator_degree=5]
Needs mpmath. Takes a few minutes. The coefficients printed are the ones in
src/codegen/llvm_jit.cc (erf_approx); degrees 6/5 give 2.1e-9.
"""
import sys

import mpmath as mp

mp.mp.dps = 40
T = mp.mpf(16)
NODES = 300
ITERATIONS = 60


def g(t):
    if t == 0:
        return 2 / mp.sqrt(mp.pi)
    s = mp.sqrt(t)
    return mp.erf(s) / s


def horner(coefficients, t):
    r = coefficients[-1]
    for c in reversed(coefficients[:-1]):
        r = r * t + c
    return r


def fit(m, k):
    ts = [T * (1 - mp.cos(mp.pi * (i + mp.mpf(0.5)) / NODES)) / 2 for i in range(NODES)]
    gs = [g(t) for t in ts]
    weights = [mp.mpf(1)] * NODES
    q_prev = [mp.mpf(1)] * NODES
    best = None
    for _ in range(ITERATIONS):
        rows, rhs = [], []
        for i, t in enumerate(ts):
            scale = mp.sqrt(weights[i]) / (gs[i] * q_prev[i])
            rows.append([scale * t**j for j in range(m + 1)] + [-scale * gs[i] * t**j for j in range(1, k + 1)])
            rhs.append(scale * gs[i])
        x, _ = mp.qr_solve(mp.matrix(rows), mp.matrix(rhs))
        p = [x[j] for j in range(m + 1)]
        q = [mp.mpf(1)] + [x[m + j] for j in range(1, k + 1)]
        errors = [(horner(p, t) / horner(q, t) - gs[i]) / gs[i] for i, t in enumerate(ts)]
        worst = max(abs(e) for e in errors)
        if best is None or worst < best[0]:
            best = (worst, p, q)
        q_prev = [horner(q, t) for t in ts]
        total = sum(weights[i] * abs(errors[i]) for i in range(NODES))
        weights = [weights[i] * abs(errors[i]) / total * NODES for i in range(NODES)]
    return best


def main():
    m = int(sys.argv[1]) if len(sys.argv) > 1 else 6
    k = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    worst, p, q = fit(m, k)
    print("max relative error at the nodes:", mp.nstr(worst, 5))
    pd = [float(c) for c in p]
    qd = [float(c) for c in q]
    if any(c <= 0 for c in qd):
        print("warning: Q has a non-positive coefficient; check that it has no zero on [0, 16]")
    grid_worst = 0
    for i in range(20001):
        x = 4.0 * i / 20000
        t = x * x
        y = x * horner(pd, t) / horner(qd, t)
        ref = mp.erf(x)
        if ref != 0:
            grid_worst = max(grid_worst, abs((mp.mpf(y) - ref) / ref))
    print("max relative error of the float64 evaluation on [0, 4]:", mp.nstr(grid_worst, 5))
    print("P:", ", ".join(repr(c) for c in pd))
    print("Q:", ", ".join(repr(c) for c in qd))


if __name__ == "__main__":
    main()
