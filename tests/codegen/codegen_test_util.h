// Helpers for the codegen tests: wrap a graph into one graft.FusedPointwise
// node, make random inputs of any kernel dtype, compare with tolerances.
#pragma once

#include <gtest/gtest.h>

#include <random>

#include "graft/codegen/op_expressions.h"
#include "graft/ir/graph.h"
#include "graft/ir/type_inference.h"
#include "support/graph_runner.h"

namespace graft::testing {

/// A graph of one FusedPointwise node (backend `fuse`) whose body is a clone of `g`.
inline std::unique_ptr<ir::Graph> wrap_fused(const ir::Graph& g) {
  auto outer = std::make_unique<ir::Graph>();
  outer->opset_imports = g.opset_imports;
  std::vector<ir::Value> inputs;
  for (const ir::Node* in : g.inputs()) inputs.push_back(outer->add_input(in->output_names[0], in->output_types[0])->output(0));
  ir::Node* node = outer->add_node("FusedPointwise", inputs, static_cast<int>(g.outputs().size()), "fused", "graft");
  node->subgraph = std::shared_ptr<ir::Graph>(g.clone().release());
  node->backend = "fuse";
  for (size_t i = 0; i < g.outputs().size(); ++i) outer->add_output(node->output(static_cast<int>(i)), "out" + std::to_string(i));
  ir::infer_types(*outer);
  return outer;
}

/// Random values of a kernel dtype: floats uniform in [lo, hi), integers in
/// [lo, hi] rounded, bools fair coins.
inline Tensor random_of(DType dtype, const Shape& shape, uint64_t seed, double lo = -2, double hi = 2) {
  Tensor t(dtype, shape);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  for (int64_t i = 0; i < t.numel(); ++i) {
    double v = dist(rng);
    switch (dtype) {
      case DType::float32: t.data<float>()[i] = static_cast<float>(v); break;
      case DType::float64: t.data<double>()[i] = v; break;
      case DType::int32: t.data<int32_t>()[i] = static_cast<int32_t>(std::lround(v)); break;
      case DType::int64: t.data<int64_t>()[i] = std::lround(v); break;
      case DType::boolean: t.data<bool>()[i] = v > (lo + hi) / 2; break;
      default: break;
    }
  }
  return t;
}

/// Like expect_close, but exact for integers and bools, and a NaN matches a NaN.
inline ::testing::AssertionResult close_enough(const Tensor& got, const Tensor& want, double rtol, double atol) {
  if (got.dtype() != want.dtype())
    return ::testing::AssertionFailure() << "dtype " << dtype_name(got.dtype()) << " vs " << dtype_name(want.dtype());
  if (got.shape() != want.shape())
    return ::testing::AssertionFailure() << "shape " << got.type_string() << " vs " << want.type_string();
  bool exact = !dtype_is_float(got.dtype());
  for (int64_t i = 0; i < got.numel(); ++i) {
    if (exact) {
      if (got.value_as_int64(i) != want.value_as_int64(i))
        return ::testing::AssertionFailure() << "element " << i << ": got " << got.value_as_int64(i) << ", want "
                                             << want.value_as_int64(i);
      continue;
    }
    double a = got.value_as_double(i), b = want.value_as_double(i);
    if (std::isnan(a) && std::isnan(b)) continue;
    if (a == b) continue;  // infinities
    if (!(std::abs(a - b) <= atol + rtol * std::abs(b)))
      return ::testing::AssertionFailure() << "element " << i << ": got " << a << ", want " << b;
  }
  return ::testing::AssertionSuccess();
}

}  // namespace graft::testing
