// Helpers for the CUDA backend's tests: skips without a device or NVRTC,
// and one-node graphs run by the reference kernels and by the backend's
// kernel for the node (cuda::run_node_for_test), compared element by element.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>

#include "cuda/cuda_kernel.h"
#include "graft/backend/device_api.h"
#include "graft/codegen/cuda_emitter.h"
#include "graft/ir/graph.h"
#include "graft/ops/type_inference.h"
#include "support/device_node_check.h"

namespace graft::testing {

/// Why there is no CUDA device to run on (empty when there is one).
inline std::string cuda_device_missing() {
  backend::DeviceAPI& api = backend::device_api(DeviceType::cuda);
  if (api.device_count() > 0) return {};
  std::string why = api.unavailable_reason();
  return why.empty() ? "no CUDA device" : why;
}

/// Skips the test when no CUDA device is there (this machine, CI).
#define GRAFT_REQUIRE_CUDA()                                                          \
  do {                                                                                \
    std::string cuda_why = ::graft::testing::cuda_device_missing();                   \
    if (!cuda_why.empty()) GTEST_SKIP() << "no CUDA device: " << cuda_why;            \
  } while (0)

/// Skips the test when NVRTC is not there (it needs no GPU).
#define GRAFT_REQUIRE_NVRTC()                                                         \
  do {                                                                                \
    std::string nvrtc_why = ::graft::codegen::nvrtc_unavailable_reason();             \
    if (!nvrtc_why.empty()) GTEST_SKIP() << "no NVRTC: " << nvrtc_why;                \
  } while (0)

/// Skips the test unless it runs on the stand-in libcuda.so.1
/// (fake_libcuda.cc; the ctest entries cuda_fake_driver*).
#define GRAFT_REQUIRE_FAKE_LIBCUDA()                                                             \
  do {                                                                                           \
    if (!std::getenv("GRAFT_TEST_FAKE_LIBCUDA"))                                                 \
      GTEST_SKIP() << "runs on the stand-in libcuda.so.1 only (ctest -R cuda_fake_driver)";      \
  } while (0)

/// The graph's single compute node on CUDA against the whole graph on the
/// reference kernels (expect_node_matches_reference).
inline void expect_cuda_matches_reference(const ir::Graph& graph, const std::vector<Tensor>& inputs,
                                          double rtol = 1e-5, double atol = 1e-5) {
  expect_node_matches_reference(
      graph, inputs,
      [](const ir::Node& node, const std::vector<Tensor>& node_inputs) {
        return cuda::run_node_for_test(node, node_inputs);
      },
      rtol, atol);
}

using CudaAttrs = std::initializer_list<std::pair<const char*, ir::AttributeValue>>;

/// A one-node graph of `op` over graph inputs of `shapes` (float32 unless
/// `dtypes` says otherwise), inferred, with random inputs (integer inputs:
/// values in [0, 3)).
struct CudaOneNode {
  std::unique_ptr<ir::Graph> graph = std::make_unique<ir::Graph>();
  std::vector<Tensor> inputs;
  ir::Node* node = nullptr;
};

inline CudaOneNode cuda_one_node(const std::string& op, const std::vector<Shape>& shapes, CudaAttrs attrs = {},
                                 uint64_t seed = 1, std::vector<DType> dtypes = {}, int outputs = 1) {
  CudaOneNode c;
  ir::Graph& g = *c.graph;
  g.opset_imports[""] = 20;
  std::vector<ir::Value> values;
  for (size_t i = 0; i < shapes.size(); ++i) {
    DType dtype = i < dtypes.size() ? dtypes[i] : DType::float32;
    values.push_back(g.add_input("x" + std::to_string(i), ir::ValueType::of(dtype, shapes[i]))->output(0));
    if (dtype == DType::float32) {
      c.inputs.push_back(random_tensor(shapes[i], seed * 31 + i));
    } else {
      Tensor t(dtype, shapes[i]);
      for (int64_t k = 0; k < t.numel(); ++k) {
        if (dtype == DType::int64) t.data<int64_t>()[k] = k % 3;
        else if (dtype == DType::int32) t.data<int32_t>()[k] = static_cast<int32_t>(k % 3);
      }
      c.inputs.push_back(t);
    }
  }
  c.node = g.add_node(op, values, outputs, "op");
  for (const auto& [name, value] : attrs) c.node->attributes.set(name, value);
  c.node->opset_version = 20;
  for (int o = 0; o < outputs; ++o) g.add_output(c.node->output(o), "y" + std::to_string(o));
  ops::infer_types(g);
  return c;
}

}  // namespace graft::testing
