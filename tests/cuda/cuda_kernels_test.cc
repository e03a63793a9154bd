// The CUDA backend's kernels against the reference kernels, one node at a
// time (cuda::run_node_for_test): every float32 pointwise op case, MatMul of
// every batch pattern, Gemm with each transpose and C broadcast, Conv (pads,
// strides, dilations, groups, 1x1, auto_pad, bias), pooling, Softmax and
// LogSoftmax on every axis and both opset semantics, LayerNormalization,
// reductions, and data movement. They need a device: without one each skips
// with "no CUDA device: <reason>" (their sources are compiled here by
// cuda_compile_test.cc).
#include <gtest/gtest.h>

#include "codegen/op_cases.h"
#include "cuda_kernel_cases.h"

namespace graft::testing {
namespace {

void expect_matches(const std::string& op, const std::vector<Shape>& shapes, CudaAttrs attrs = {}) {
  expect_cuda_node_matches(op, shapes, attrs);
}

using Ints = std::vector<int64_t>;

TEST(CudaKernels, EveryFloat32PointwiseOpCaseMatchesTheReference) {
  GRAFT_REQUIRE_CUDA();
  int ran = 0;
  for (const BuiltCase& c : build_op_cases()) {
    if (c.inputs.empty() || c.inputs[0].dtype() != DType::float32) continue;
    SCOPED_TRACE(c.label);
    expect_cuda_matches_reference(*c.graph, c.inputs, 1e-5, 1e-6);
    ++ran;
  }
  EXPECT_GT(ran, 60);
}

TEST(CudaKernels, MatMulOfEveryBatchPattern) {
  GRAFT_REQUIRE_CUDA();
  expect_matches("MatMul", {{5, 7}, {7, 3}});
  expect_matches("MatMul", {{2, 5, 7}, {7, 3}});          // rows folded
  expect_matches("MatMul", {{2, 3, 5, 7}, {2, 3, 7, 4}}); // strided batch
  expect_matches("MatMul", {{2, 1, 5, 7}, {1, 3, 7, 4}}); // broadcast both ways: a loop
  expect_matches("MatMul", {{5, 7}, {3, 7, 2}});          // shared A
  expect_matches("MatMul", {{7}, {7, 3}});
  expect_matches("MatMul", {{4, 7}, {7}});
  expect_matches("MatMul", {{4, 0}, {0, 3}});             // K = 0: zeros
}

TEST(CudaKernels, GemmWithEachTransposeAndCBroadcast) {
  GRAFT_REQUIRE_CUDA();
  for (int64_t ta : {0, 1})
    for (int64_t tb : {0, 1}) {
      Shape a = ta ? Shape{7, 5} : Shape{5, 7}, b = tb ? Shape{3, 7} : Shape{7, 3};
      expect_matches("Gemm", {a, b}, {{"transA", ta}, {"transB", tb}});
      expect_matches("Gemm", {a, b, {3}}, {{"transA", ta}, {"transB", tb}, {"alpha", 0.5f}, {"beta", 2.0f}});
    }
  expect_matches("Gemm", {{5, 7}, {7, 3}, {5, 1}});
  expect_matches("Gemm", {{5, 7}, {7, 3}, {5, 3}});
  expect_matches("Gemm", {{5, 7}, {7, 3}, {1, 1}});
}

TEST(CudaKernels, ConvWithPadsStridesDilationsGroupsAndBias) {
  GRAFT_REQUIRE_CUDA();
  expect_matches("Conv", {{2, 3, 9, 9}, {4, 3, 3, 3}, {4}}, {{"pads", Ints{1, 1, 1, 1}}});
  expect_matches("Conv", {{1, 3, 10, 9}, {4, 3, 3, 2}}, {{"strides", Ints{2, 2}}, {"pads", Ints{1, 0, 1, 0}}});
  expect_matches("Conv", {{1, 2, 9, 9}, {3, 2, 3, 3}}, {{"dilations", Ints{2, 2}}});
  expect_matches("Conv", {{2, 4, 6, 6}, {6, 2, 3, 3}, {6}}, {{"group", int64_t{2}}, {"pads", Ints{1, 1, 1, 1}}});
  expect_matches("Conv", {{1, 4, 6, 6}, {4, 1, 3, 3}}, {{"group", int64_t{4}}, {"auto_pad", std::string("SAME_UPPER")}});
  expect_matches("Conv", {{3, 8, 5, 5}, {6, 8, 1, 1}, {6}});  // 1x1: no im2col
}

TEST(CudaKernels, Pooling) {
  GRAFT_REQUIRE_CUDA();
  cuda_cases::pooling();
}

TEST(CudaKernels, SoftmaxLayerNormAndReductions) {
  GRAFT_REQUIRE_CUDA();
  cuda_cases::softmax_layer_norm_and_reductions();
}

TEST(CudaKernels, DataMovement) {
  GRAFT_REQUIRE_CUDA();
  cuda_cases::data_movement();
}

}  // namespace
}  // namespace graft::testing
