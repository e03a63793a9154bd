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
  cuda_cases::matmul();
}

TEST(CudaKernels, GemmWithEachTransposeAndCBroadcast) {
  GRAFT_REQUIRE_CUDA();
  cuda_cases::gemm();
}

TEST(CudaKernels, ConvWithPadsStridesDilationsGroupsAndBias) {
  GRAFT_REQUIRE_CUDA();
  cuda_cases::conv();
}

TEST(CudaKernels, GruForwardBothResetOrders) {
  GRAFT_REQUIRE_CUDA();
  cuda_cases::gru();
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
