// Helpers for the OpenCL kernel tests: one-node graphs run by the reference
// kernels and by the OpenCL backend's kernel for the node
// (opencl::run_node_for_test), compared element by element.
#pragma once

#include <gtest/gtest.h>

#include "graft/codegen/opencl_runtime.h"
#include "graft/ir/graph.h"
#include "graft/ops/type_inference.h"
#include "opencl/opencl_kernel.h"
#include "support/graph_runner.h"

namespace graft::testing {

/// Skips the test when no OpenCL device is there (CI has PoCL).
#define GRAFT_REQUIRE_OPENCL()                                                                       \
  do {                                                                                               \
    std::string why = ::graft::codegen::opencl_runtime_unavailable_reason();                         \
    if (!why.empty()) GTEST_SKIP() << "no OpenCL: " << why;                                          \
  } while (0)

/// The first node of `graph` that is not an Input or a Constant.
inline const ir::Node& compute_node(const ir::Graph& graph) {
  for (const auto& node : graph.nodes())
    if (node->op() != ir::OpId::Input && node->op() != ir::OpId::Constant) return *node;
  ADD_FAILURE() << "the graph has no compute node";
  return *graph.nodes().front();
}

/// Runs the graph's single compute node on OpenCL and the whole graph on the
/// reference kernels with `inputs` (one per graph input), and expects every
/// output to agree within rtol/atol. The graph's types must be inferred
/// (ops::infer_types) and concrete.
inline void expect_opencl_matches_reference(const ir::Graph& graph, const std::vector<Tensor>& inputs,
                                            double rtol = 1e-5, double atol = 1e-5) {
  std::vector<Tensor> want = run_graph(graph, inputs);
  const ir::Node& node = compute_node(graph);
  // The node's inputs in node order: graph inputs by position, constants from the graph.
  std::vector<Tensor> node_inputs;
  for (const ir::Value& v : node.inputs) {
    Tensor value;
    if (v) {
      for (size_t i = 0; i < graph.inputs().size(); ++i)
        if (graph.inputs()[i] == v.node) value = inputs[i];
    }
    node_inputs.push_back(value);
  }
  std::vector<Tensor> got = opencl::run_node_for_test(node, node_inputs);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    SCOPED_TRACE("output " + std::to_string(i) + " of " + node.describe());
    expect_close(got[i], want[i], rtol, atol);
  }
}

}  // namespace graft::testing
