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
#include "cuda_test_util.h"

namespace graft::testing {
namespace {

void expect_matches(const std::string& op, const std::vector<Shape>& shapes, CudaAttrs attrs = {},
                    std::vector<DType> dtypes = {}, int outputs = 1, double rtol = 1e-4, double atol = 1e-4) {
  std::string label = op;
  for (const Shape& s : shapes) label += " " + shape_to_string(s);
  SCOPED_TRACE(label);
  CudaOneNode c = cuda_one_node(op, shapes, attrs, 1, std::move(dtypes), outputs);
  ASSERT_EQ(cuda::kernel_support(*c.node), "");
  expect_cuda_matches_reference(*c.graph, c.inputs, rtol, atol);
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
  expect_matches("MaxPool", {{2, 3, 9, 9}}, {{"kernel_shape", Ints{3, 3}}, {"strides", Ints{2, 2}}, {"pads", Ints{1, 1, 1, 1}}});
  expect_matches("MaxPool", {{1, 2, 8, 8}}, {{"kernel_shape", Ints{2, 2}}, {"ceil_mode", int64_t{1}}, {"strides", Ints{3, 3}}});
  expect_matches("AveragePool", {{1, 2, 7, 7}}, {{"kernel_shape", Ints{3, 3}}, {"pads", Ints{1, 1, 1, 1}}});
  expect_matches("AveragePool", {{1, 2, 7, 7}},
                 {{"kernel_shape", Ints{3, 3}}, {"pads", Ints{1, 1, 1, 1}}, {"count_include_pad", int64_t{1}}});
  expect_matches("GlobalAveragePool", {{2, 3, 7, 7}});
  expect_matches("GlobalMaxPool", {{2, 3, 7, 7}});
}

TEST(CudaKernels, SoftmaxLayerNormAndReductions) {
  GRAFT_REQUIRE_CUDA();
  for (int64_t axis : {-1, 0, 1}) {
    expect_matches("Softmax", {{3, 4, 300}}, {{"axis", axis}});
    expect_matches("LogSoftmax", {{3, 4, 5}}, {{"axis", axis}});
  }
  expect_matches("LayerNormalization", {{4, 3, 96}, {96}, {96}}, {{"epsilon", 1e-5f}});
  expect_matches("LayerNormalization", {{4, 3, 8}, {3, 8}}, {{"axis", int64_t{1}}});
  expect_matches("ReduceMean", {{2, 3, 4}});  // every axis
  // Axes as a constant input (opset 18+): consecutive axes in the middle.
  for (const char* op : {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin"}) {
    SCOPED_TRACE(op);
    auto g = std::make_unique<ir::Graph>();
    g->opset_imports[""] = 20;
    ir::Value x = g->add_input("x", ir::ValueType::of(DType::float32, {2, 3, 4, 5}))->output(0);
    ir::Value axes = g->add_constant("axes", Tensor::from_vector<int64_t>({1, 2}, {2}))->output(0);
    ir::Node* node = g->add_node(op, {x, axes}, 1, "op");
    node->opset_version = 20;
    g->add_output(node->output(0), "y");
    ops::infer_types(*g);
    ASSERT_EQ(cuda::kernel_support(*node), "");
    expect_cuda_matches_reference(*g, {random_tensor({2, 3, 4, 5}, 3)}, 1e-5, 1e-5);
  }
}

TEST(CudaKernels, DataMovement) {
  GRAFT_REQUIRE_CUDA();
  expect_matches("Transpose", {{2, 3, 4, 5}}, {{"perm", Ints{0, 2, 1, 3}}});
  expect_matches("Transpose", {{2, 3, 4}});
  expect_matches("Concat", {{2, 3, 4}, {2, 1, 4}, {2, 2, 4}}, {{"axis", int64_t{1}}});
  expect_matches("Split", {{2, 6, 4}}, {{"axis", int64_t{1}}, {"num_outputs", int64_t{3}}}, {}, 3);
  expect_matches("Gather", {{5, 4}, {3, 2}}, {{"axis", int64_t{0}}}, {DType::float32, DType::int64});
  expect_matches("Gather", {{5, 4, 3}, {2}}, {{"axis", int64_t{1}}}, {DType::float32, DType::int32});
}

}  // namespace
}  // namespace graft::testing
