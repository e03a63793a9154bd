// One node of a graph run by a device backend's kernel against the whole
// graph on the reference kernels: what the OpenCL and CUDA kernel tests
// check of every kernel (opencl_test_util.h, cuda_test_util.h).
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "graft/ir/graph.h"
#include "support/graph_runner.h"

namespace graft::testing {

/// The first node of `graph` that is not an Input or a Constant.
inline const ir::Node& compute_node(const ir::Graph& graph) {
  for (const auto& node : graph.nodes())
    if (node->op() != ir::OpId::Input && node->op() != ir::OpId::Constant) return *node;
  ADD_FAILURE() << "the graph has no compute node";
  return *graph.nodes().front();
}

/// Runs one node on a device with host inputs (one per node input, undefined
/// for an absent one) and returns its outputs on the host.
using DeviceNodeRunner = std::function<std::vector<Tensor>(const ir::Node&, const std::vector<Tensor>&)>;

/// Runs the graph's single compute node with `run_node` and the whole graph
/// on the reference kernels with `inputs` (one per graph input), and expects
/// every output to agree within rtol/atol. The graph's types must be
/// inferred (ops::infer_types) and concrete.
inline void expect_node_matches_reference(const ir::Graph& graph, const std::vector<Tensor>& inputs,
                                          const DeviceNodeRunner& run_node, double rtol, double atol) {
  std::vector<Tensor> want = run_graph(graph, inputs);
  const ir::Node& node = compute_node(graph);
  // The node's inputs in node order: graph inputs by position (constants
  // come from the graph, as the device backends take them).
  std::vector<Tensor> node_inputs;
  for (const ir::Value& v : node.inputs) {
    Tensor value;
    if (v) {
      for (size_t i = 0; i < graph.inputs().size(); ++i)
        if (graph.inputs()[i] == v.node) value = inputs[i];
    }
    node_inputs.push_back(value);
  }
  std::vector<Tensor> got = run_node(node, node_inputs);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    SCOPED_TRACE("output " + std::to_string(i) + " of " + node.describe());
    expect_close(got[i], want[i], rtol, atol);
  }
}

}  // namespace graft::testing
