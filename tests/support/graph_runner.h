// Test helpers: run a graph (a clone of it) through a Session with a chosen
// pass pipeline, and compare outputs.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "graft/runtime/session.h"

namespace graft::testing {

/// Runs a clone of `graph` with exactly the passes given ({"verify"} = none
/// that change the graph) and returns the outputs. Nodes run on the
/// reference kernels (no backend partitions the graph); subgraph nodes the
/// graph already holds run on their own backends.
inline std::vector<Tensor> run_graph(const ir::Graph& graph, const std::vector<Tensor>& inputs,
                                     std::vector<std::string> passes = {"verify", "infer"}, int threads = 2) {
  runtime::SessionOptions options;
  options.passes = std::move(passes);
  options.num_threads = threads;
  options.verify_after_each_pass = true;
  options.backends = {"ref"};
  runtime::Session session(graph.clone(), options);
  return session.run(inputs);
}

/// A float32 tensor of the given shape filled from a seeded uniform [-1, 1).
inline Tensor random_tensor(const Shape& shape, uint64_t seed) {
  Tensor t(DType::float32, shape);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = dist(rng);
  return t;
}

/// Expects equal dtypes and shapes and elementwise |a-b| <= atol + rtol*|b|.
inline void expect_close(const Tensor& got, const Tensor& want, double rtol = 1e-5, double atol = 1e-6) {
  ASSERT_EQ(got.dtype(), want.dtype());
  ASSERT_EQ(got.shape(), want.shape());
  for (int64_t i = 0; i < got.numel(); ++i) {
    double a = got.value_as_double(i), b = want.value_as_double(i);
    if (std::isnan(a) && std::isnan(b)) continue;
    ASSERT_LE(std::abs(a - b), atol + rtol * std::abs(b)) << "element " << i << ": got " << a << ", want " << b;
  }
}

}  // namespace graft::testing
