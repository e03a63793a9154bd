// Helpers for the OpenCL kernel tests: one-node graphs run by the reference
// kernels and by the OpenCL backend's kernel for the node
// (opencl::run_node_for_test), compared element by element.
#pragma once

#include <gtest/gtest.h>

#include "graft/codegen/opencl_runtime.h"
#include "graft/ir/graph.h"
#include "graft/ops/type_inference.h"
#include "opencl/opencl_kernel.h"
#include "support/device_node_check.h"

namespace graft::testing {

/// Skips the test when no OpenCL device is there (CI has PoCL).
#define GRAFT_REQUIRE_OPENCL()                                                                       \
  do {                                                                                               \
    std::string why = ::graft::codegen::opencl_runtime_unavailable_reason();                         \
    if (!why.empty()) GTEST_SKIP() << "no OpenCL: " << why;                                          \
  } while (0)

/// The graph's single compute node on OpenCL against the whole graph on the
/// reference kernels (expect_node_matches_reference).
inline void expect_opencl_matches_reference(const ir::Graph& graph, const std::vector<Tensor>& inputs,
                                            double rtol = 1e-5, double atol = 1e-5) {
  expect_node_matches_reference(
      graph, inputs,
      [](const ir::Node& node, const std::vector<Tensor>& node_inputs) {
        return opencl::run_node_for_test(node, node_inputs);
      },
      rtol, atol);
}

}  // namespace graft::testing
