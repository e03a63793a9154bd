// Helpers for the codegen tests: wrap a graph into one graft.FusedPointwise
// node, make random inputs of any kernel dtype, compare with tolerances.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <random>
#include <string>

#include "graft/codegen/compile_cache.h"
#include "graft/codegen/op_expressions.h"
#include "graft/ir/graph.h"
#include "graft/ops/type_inference.h"
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
  ops::infer_types(*outer);
  return outer;
}

/// Session options of the reference runs: backend `ref`, no fusion pass, the
/// given passes, verified after each, 2 threads.
inline runtime::SessionOptions reference_options(std::vector<std::string> passes) {
  runtime::SessionOptions options;
  options.passes = std::move(passes);
  options.num_threads = 2;
  options.verify_after_each_pass = true;
  options.fusion = false;
  options.backends = {"ref"};
  return options;
}

/// Runs a clone of `graph` on the reference kernels only: backend `ref`, no
/// fusion pass, the given passes (default: verify and infer). Graphs holding
/// FusedPointwise nodes assigned to `fuse` still run them through that backend.
inline std::vector<Tensor> run_reference(const ir::Graph& graph, const std::vector<Tensor>& inputs,
                                         std::vector<std::string> passes = {"verify", "infer"}) {
  runtime::Session session(graph.clone(), reference_options(std::move(passes)));
  return session.run(inputs);
}

/// Runs a clone of `graph` as run_reference does, but twice, waiting for the
/// compile cache's background compiles in between, and returns the second
/// run's outputs: a Session's fused modules interpret their kernels during
/// the first run while the JIT compiles them, so only a later run executes
/// the compiled code. Fails the test when a kernel fell back to the
/// interpreter while the JIT is on.
inline std::vector<Tensor> run_compiled(const ir::Graph& graph, const std::vector<Tensor>& inputs,
                                        std::vector<std::string> passes = {"verify", "infer"}) {
  runtime::SessionOptions options = reference_options(std::move(passes));
  codegen::CompileCache& cache = codegen::CompileCache::global();
  uint64_t interpreted = cache.counters().interpreted;
  runtime::Session session(graph.clone(), options);
  session.run(inputs);
  cache.wait_for_background_compiles();
  std::vector<Tensor> outputs = session.run(inputs);
  const char* jit = std::getenv("GRAFT_JIT");
  if (codegen::cpu_jit_unavailable_reason().empty() && !(jit && std::string(jit) == "0")) {
    EXPECT_EQ(cache.counters().interpreted, interpreted) << "a fused kernel fell back to the interpreter";
  }
  return outputs;
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
      case DType::float16: t.data<float16_t>()[i] = float16_t(static_cast<float>(v)); break;
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
