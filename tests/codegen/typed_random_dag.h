// Random fused DAGs over every kernel dtype for the codegen property tests
// (interpreter, LLVM JIT, CUDA): every fusible op of op_cases.h, Cast between
// dtypes, Where, broadcasting up to rank 6, special values (NaN, infinities,
// -0, huge and tiny magnitudes, integer extremes and zeros).
//
// Floats may differ by a target's approximations (docs/codegen.md), so an op
// whose result jumps under a one-ulp change of its input (Floor,
// comparisons, Cast to an integer, ...) only reads values that every target
// computes exactly: inputs, and results of exact ops on exact values.
#pragma once

#include <cmath>
#include <limits>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "codegen_test_util.h"
#include "op_cases.h"

namespace graft::testing {

struct TypedDag {
  std::unique_ptr<ir::Graph> graph;
  std::vector<Tensor> inputs;
};

/// Ops whose float result may differ from the reference by an approximation
/// or a contraction (everything but these).
inline bool exact_on_floats(const std::string& op) {
  static const std::set<std::string> exact = {
      "Abs",     "Neg",         "Relu",           "Max",  "Min",  "Identity", "Sign", "Floor", "Ceil",
      "Round",   "IsNaN",       "IsInf",          "Not",  "And",  "Or",       "Xor",  "Equal", "Less",
      "Greater", "LessOrEqual", "GreaterOrEqual", "Cast", "Where"};
  return exact.count(op) > 0;
}

/// Ops whose result jumps under a one-ulp change of a float input.
inline bool jumps(const std::string& op) {
  static const std::set<std::string> jumping = {
      "Floor",       "Ceil",           "Round", "Sign",  "Equal",           "Less",   "Greater",
      "LessOrEqual", "GreaterOrEqual", "IsNaN", "IsInf", "ThresholdedRelu", "Shrink", "Cast"};
  return jumping.count(op) > 0;
}

/// Float values that exercise the edges, mixed into ordinary ones.
inline double special_float(std::mt19937_64& rng) {
  static const double values[] = {std::numeric_limits<double>::quiet_NaN(),
                                  std::numeric_limits<double>::infinity(),
                                  -std::numeric_limits<double>::infinity(),
                                  -0.0,
                                  0.0,
                                  1e30,
                                  -1e30,
                                  1e-30,
                                  -1e-38,
                                  88.5,
                                  -104.0,
                                  0.5,
                                  -2.5};
  return values[rng() % (sizeof values / sizeof values[0])];
}

inline Tensor typed_input(DType dtype, const Shape& shape, std::mt19937_64& rng) {
  Tensor t = random_of(dtype, shape, rng(), -4, 4);
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (rng() % 6 != 0) continue;
    switch (dtype) {
      case DType::float32:
        t.data<float>()[i] = static_cast<float>(special_float(rng));
        break;
      case DType::float64:
        t.data<double>()[i] = special_float(rng);
        break;
      case DType::float16:
        t.data<float16_t>()[i] = float16_t(static_cast<float>(special_float(rng)));
        break;
      case DType::int32: {
        static const int32_t v[] = {0, -1, 1, std::numeric_limits<int32_t>::max(), std::numeric_limits<int32_t>::min()};
        t.data<int32_t>()[i] = v[rng() % 5];
        break;
      }
      case DType::int64: {
        static const int64_t v[] = {0, -1, 1, std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::min()};
        t.data<int64_t>()[i] = v[rng() % 5];
        break;
      }
      default:
        break;
    }
  }
  return t;
}

/// A random DAG of fusible ops; with `opaque`, also Softmax nodes (not
/// fusible) on float values, so that the fusion pass cuts the DAG into
/// several fused nodes around them.
inline TypedDag make_typed_dag(uint64_t seed, bool opaque = false) {
  std::mt19937_64 rng(seed);
  auto pick = [&](size_t n) { return static_cast<size_t>(rng() % n); };
  TypedDag dag;
  dag.graph = std::make_unique<ir::Graph>();
  ir::Graph& g = *dag.graph;
  g.opset_imports[""] = 20;
  const DType all[] = {f32, f64, f16, i32, i64, boolean};
  size_t rank = pick(7);
  Shape base(rank);
  for (int64_t& d : base) d = 1 + static_cast<int64_t>(pick(4));
  struct Available {
    ir::Value value;
    DType dtype;
    bool exact;
  };
  std::vector<Available> values;
  size_t n_inputs = 1 + pick(4);
  for (size_t i = 0; i < n_inputs; ++i) {
    DType dtype = all[pick(6)];
    Shape shape;
    for (size_t d = pick(rank + 1); d < rank; ++d) shape.push_back(pick(3) == 0 ? 1 : base[d]);
    ir::Value v = g.add_input("x" + std::to_string(i), ir::ValueType::of(dtype, shape))->output(0);
    values.push_back({v, dtype, true});
    dag.inputs.push_back(typed_input(dtype, shape, rng));
  }
  // A value of `dtype` (exact when `need_exact`), casting one when none is at
  // hand; dtype undefined when none can be had.
  auto operand = [&](DType dtype, bool need_exact) -> Available {
    std::vector<size_t> fits, castable;
    for (size_t i = 0; i < values.size(); ++i) {
      if (need_exact && !values[i].exact) continue;
      if (values[i].dtype == f64 && dtype == f16) continue;  // not fused: it would round twice
      (values[i].dtype == dtype ? fits : castable).push_back(i);
    }
    if (!fits.empty() && (castable.empty() || pick(4) != 0)) return values[fits[pick(fits.size())]];
    if (castable.empty()) return {{}, DType::undefined, false};
    const Available& from = values[castable[pick(castable.size())]];
    // A float cast to an integer or bool jumps: only from exact values.
    if (dtype_is_float(from.dtype) && !dtype_is_float(dtype) && !from.exact) return {{}, DType::undefined, false};
    ir::Node* cast = g.add_node("Cast", {from.value});
    cast->attributes.set("to", int64_t(static_cast<int>(dtype)));
    cast->opset_version = 20;
    Available made{cast->output(0), dtype, from.exact};
    values.push_back(made);
    return made;
  };
  const std::vector<OpCase> cases = op_cases();
  size_t n_nodes = 1 + pick(12), made = 0;
  for (size_t attempt = 0; made < n_nodes && attempt < 100; ++attempt) {
    if (opaque && pick(6) == 0) {  // Softmax on the last axis of a float value of rank >= 1
      std::vector<size_t> floats;
      for (size_t i = 0; i < values.size(); ++i)
        if (dtype_is_float(values[i].dtype) && g.type_of(values[i].value).dims.size() >= 1) floats.push_back(i);
      if (floats.empty()) continue;
      const Available& from = values[floats[pick(floats.size())]];
      ir::Node* node = g.add_node("Softmax", {from.value});
      node->opset_version = 20;
      ++made;
      values.push_back({node->output(0), from.dtype, false});
      continue;
    }
    if (pick(8) == 0) {  // Where on a bool condition
      DType t = all[pick(5)];
      Available c = operand(boolean, true), a = operand(t, false), b = operand(t, false);
      if (c.dtype != boolean || a.dtype != t || b.dtype != t) continue;
      ++made;
      ir::Node* node = g.add_node("Where", {c.value, a.value, b.value});
      node->opset_version = 20;
      values.push_back({node->output(0), t, c.exact && a.exact && b.exact});
      continue;
    }
    const OpCase& c = cases[pick(cases.size())];
    DType t = c.dtypes[pick(c.dtypes.size())];
    // Integer powers (any magnitude) and Erf of integers (erf in double, then
    // truncated: 0.99999999999 or 1) are left to op_cases.
    if ((c.op == "Pow" || c.op == "Erf") && !dtype_is_float(t)) continue;
    if (c.op == "PRelu") continue;  // its slope must broadcast to X alone: op_cases covers it
    bool need_exact = jumps(c.op) && dtype_is_float(t);
    std::vector<ir::Value> args;
    bool exact = !dtype_is_float(t) || exact_on_floats(c.op);
    for (int i = 0; i < c.arity; ++i) {
      Available a = operand(t, need_exact);
      if (a.dtype != t) break;  // no value of this dtype could be made exactly
      args.push_back(a.value);
      exact = exact && a.exact;
    }
    if (static_cast<int>(args.size()) != c.arity) continue;
    ++made;
    ir::Node* node = g.add_node(c.op, args);
    node->attributes = c.attrs;
    node->opset_version = 20;
    ops::infer_types(g);
    DType out = g.type_of(node->output(0)).dtype;
    values.push_back({node->output(0), out, exact});
  }
  if (values.size() == n_inputs)
    values.push_back({g.add_node("Identity", {values[0].value})->output(0), values[0].dtype, true});
  g.add_output(values.back().value, "y0");
  if (pick(3) == 0 && values.size() > n_inputs + 1)
    g.add_output(values[n_inputs + pick(values.size() - n_inputs - 1)].value, "y1");
  ops::infer_types(g);
  return dag;
}

/// Tolerances: exact for integers and bools; for floats, float16's when any
/// value is float16 (two float16 steps: a float16 result of an approximated
/// function may land one step away, and the ops after it carry that), else
/// float32's when any value is float32 (a float64 output may come from a
/// float32 one), else float64's. `coarsest` is the coarsest float dtype
/// among the values (coarsest_float).
inline double typed_dag_rtol(DType t, DType coarsest) {
  if (!dtype_is_float(t)) return 0;
  return coarsest == DType::float16 ? 4e-3 : coarsest == DType::float32 ? 1e-4 : 1e-10;
}
inline double typed_dag_atol(DType t, DType coarsest) { return typed_dag_rtol(t, coarsest) * 0.1; }
inline DType coarsest_float(const ir::KernelIR& ir) {
  DType c = DType::float64;
  for (const ir::Expr& e : ir.exprs)
    if (e.dtype == DType::float16) return DType::float16;
    else if (e.dtype == DType::float32) c = DType::float32;
  return c;
}
inline DType coarsest_float(const ir::Graph& g) {
  DType c = DType::float64;
  for (const auto& node : g.nodes())
    for (const ir::ValueType& t : node->output_types)
      if (t.dtype == DType::float16) return DType::float16;
      else if (t.dtype == DType::float32) c = DType::float32;
  return c;
}
inline double typed_dag_rtol(DType t, const ir::KernelIR& ir) { return typed_dag_rtol(t, coarsest_float(ir)); }
inline double typed_dag_atol(DType t, const ir::KernelIR& ir) { return typed_dag_atol(t, coarsest_float(ir)); }

}  // namespace graft::testing
