// The per-op cases of the CUDA kernels other than the pointwise ones:
// MatMul, Gemm, Conv, GRU, pooling, Softmax/LogSoftmax, LayerNormalization,
// reductions and data movement, each a one-node graph run by the backend's
// kernel (cuda::run_node_for_test) and by the reference kernels. Shared by
// cuda_kernels_test.cc (on a GPU) and cuda_fake_kernels_test.cc (on the
// stand-in driver and cuBLAS, kernels run on the host).
#pragma once

#include "cuda_test_util.h"

namespace graft::testing {

inline void expect_cuda_node_matches(const std::string& op, const std::vector<Shape>& shapes, CudaAttrs attrs = {},
                    std::vector<DType> dtypes = {}, int outputs = 1, double rtol = 1e-4, double atol = 1e-4) {
  std::string label = op;
  for (const Shape& s : shapes) label += " " + shape_to_string(s);
  SCOPED_TRACE(label);
  CudaOneNode c = cuda_one_node(op, shapes, attrs, 1, std::move(dtypes), outputs);
  ASSERT_EQ(cuda::kernel_support(*c.node), "");
  expect_cuda_matches_reference(*c.graph, c.inputs, rtol, atol);
}

/// A one-node graph of `op` on a float32 input x of `shape` followed by
/// constant inputs `constants` (Slice's starts/ends/axes/steps, Expand's
/// shape, Reshape's shape), run on CUDA and by the reference kernels.
inline void expect_cuda_node_with_constants_matches(const std::string& op, const Shape& shape,
                                                    std::vector<Tensor> constants, CudaAttrs attrs = {}) {
  SCOPED_TRACE(op + " " + shape_to_string(shape));
  auto g = std::make_unique<ir::Graph>();
  g->opset_imports[""] = 20;
  std::vector<ir::Value> inputs{g->add_input("x", ir::ValueType::of(DType::float32, shape))->output(0)};
  for (size_t i = 0; i < constants.size(); ++i)
    inputs.push_back(g->add_constant("c" + std::to_string(i), std::move(constants[i]))->output(0));
  ir::Node* node = g->add_node(op, inputs, 1, "op");
  for (const auto& [name, value] : attrs) node->attributes.set(name, value);
  node->opset_version = 20;
  g->add_output(node->output(0), "y");
  ops::infer_types(*g);
  ASSERT_EQ(cuda::kernel_support(*node), "");
  expect_cuda_matches_reference(*g, {random_tensor(shape, 4)}, 0, 0);
}

namespace cuda_cases {

using Ints = std::vector<int64_t>;

inline void matmul() {
  expect_cuda_node_matches("MatMul", {{5, 7}, {7, 3}});
  expect_cuda_node_matches("MatMul", {{2, 5, 7}, {7, 3}});          // rows folded
  expect_cuda_node_matches("MatMul", {{2, 3, 5, 7}, {2, 3, 7, 4}}); // strided batch
  expect_cuda_node_matches("MatMul", {{2, 1, 5, 7}, {1, 3, 7, 4}}); // broadcast both ways: a loop
  expect_cuda_node_matches("MatMul", {{5, 7}, {3, 7, 2}});          // shared A
  expect_cuda_node_matches("MatMul", {{7}, {7, 3}});
  expect_cuda_node_matches("MatMul", {{4, 7}, {7}});
  expect_cuda_node_matches("MatMul", {{4, 0}, {0, 3}});             // K = 0: zeros
}

inline void gemm() {
  for (int64_t ta : {0, 1})
    for (int64_t tb : {0, 1}) {
      Shape a = ta ? Shape{7, 5} : Shape{5, 7}, b = tb ? Shape{3, 7} : Shape{7, 3};
      expect_cuda_node_matches("Gemm", {a, b}, {{"transA", ta}, {"transB", tb}});
      expect_cuda_node_matches("Gemm", {a, b, {3}}, {{"transA", ta}, {"transB", tb}, {"alpha", 0.5f}, {"beta", 2.0f}});
    }
  expect_cuda_node_matches("Gemm", {{5, 7}, {7, 3}, {5, 1}});
  expect_cuda_node_matches("Gemm", {{5, 7}, {7, 3}, {5, 3}});
  expect_cuda_node_matches("Gemm", {{5, 7}, {7, 3}, {1, 1}});
}

inline void conv() {
  expect_cuda_node_matches("Conv", {{2, 3, 9, 9}, {4, 3, 3, 3}, {4}}, {{"pads", Ints{1, 1, 1, 1}}});
  expect_cuda_node_matches("Conv", {{1, 3, 10, 9}, {4, 3, 3, 2}}, {{"strides", Ints{2, 2}}, {"pads", Ints{1, 0, 1, 0}}});
  expect_cuda_node_matches("Conv", {{1, 2, 9, 9}, {3, 2, 3, 3}}, {{"dilations", Ints{2, 2}}});
  expect_cuda_node_matches("Conv", {{2, 4, 6, 6}, {6, 2, 3, 3}, {6}}, {{"group", int64_t{2}}, {"pads", Ints{1, 1, 1, 1}}});
  expect_cuda_node_matches("Conv", {{1, 4, 6, 6}, {4, 1, 3, 3}}, {{"group", int64_t{4}}, {"auto_pad", std::string("SAME_UPPER")}});
  expect_cuda_node_matches("Conv", {{3, 8, 5, 5}, {6, 8, 1, 1}, {6}});  // 1x1: no im2col
}

/// GRU with linear_before_reset 0 and 1, with and without B and initial_h,
/// both outputs.
inline void gru() {
  for (int64_t lbr : {0, 1})
    for (bool with_bias : {false, true})
      for (bool with_h0 : {false, true}) {
        SCOPED_TRACE("GRU linear_before_reset " + std::to_string(lbr) + (with_bias ? " B" : "") +
                     (with_h0 ? " initial_h" : ""));
        const int64_t seq = 3, batch = 2, input = 5, hidden = 4;
        auto g = std::make_unique<ir::Graph>();
        g->opset_imports[""] = 14;
        std::vector<Tensor> values;
        auto in = [&](const char* name, const Shape& shape) {
          values.push_back(random_tensor(shape, 10 + values.size()));
          return g->add_input(name, ir::ValueType::of(DType::float32, shape))->output(0);
        };
        ir::Value x = in("x", {seq, batch, input}), w = in("w", {1, 3 * hidden, input}),
                  r = in("r", {1, 3 * hidden, hidden});
        ir::Value b = with_bias ? in("b", {1, 6 * hidden}) : ir::Value{};
        ir::Value h0 = with_h0 ? in("h0", {1, batch, hidden}) : ir::Value{};
        ir::Node* node = g->add_node("GRU", {x, w, r, b, ir::Value{}, h0}, 2, "gru");
        node->attributes.set("hidden_size", hidden);
        node->attributes.set("linear_before_reset", lbr);
        node->opset_version = 14;
        g->add_output(node->output(0), "y");
        g->add_output(node->output(1), "y_h");
        ops::infer_types(*g);
        ASSERT_EQ(cuda::kernel_support(*node), "");
        expect_cuda_matches_reference(*g, values, 1e-5, 1e-5);
      }
}

inline void pooling() {
  expect_cuda_node_matches("MaxPool", {{2, 3, 9, 9}}, {{"kernel_shape", Ints{3, 3}}, {"strides", Ints{2, 2}}, {"pads", Ints{1, 1, 1, 1}}});
  expect_cuda_node_matches("MaxPool", {{1, 2, 8, 8}}, {{"kernel_shape", Ints{2, 2}}, {"ceil_mode", int64_t{1}}, {"strides", Ints{3, 3}}});
  expect_cuda_node_matches("AveragePool", {{1, 2, 7, 7}}, {{"kernel_shape", Ints{3, 3}}, {"pads", Ints{1, 1, 1, 1}}});
  expect_cuda_node_matches("AveragePool", {{1, 2, 7, 7}},
                 {{"kernel_shape", Ints{3, 3}}, {"pads", Ints{1, 1, 1, 1}}, {"count_include_pad", int64_t{1}}});
  expect_cuda_node_matches("GlobalAveragePool", {{2, 3, 7, 7}});
  expect_cuda_node_matches("GlobalMaxPool", {{2, 3, 7, 7}});
}

inline void softmax_layer_norm_and_reductions() {
  for (int64_t axis : {-1, 0, 1}) {
    expect_cuda_node_matches("Softmax", {{3, 4, 300}}, {{"axis", axis}});
    expect_cuda_node_matches("LogSoftmax", {{3, 4, 5}}, {{"axis", axis}});
  }
  expect_cuda_node_matches("LayerNormalization", {{4, 3, 96}, {96}, {96}}, {{"epsilon", 1e-5f}});
  expect_cuda_node_matches("LayerNormalization", {{4, 3, 8}, {3, 8}}, {{"axis", int64_t{1}}});
  expect_cuda_node_matches("ReduceMean", {{2, 3, 4}});  // every axis
  {
    // BatchNormalization (inference) with a positive variance.
    CudaOneNode c = cuda_one_node("BatchNormalization", {{2, 3, 4, 5}, {3}, {3}, {3}, {3}}, {{"epsilon", 1e-3f}});
    for (int64_t k = 0; k < 3; ++k) c.inputs[4].data<float>()[k] = std::abs(c.inputs[4].data<float>()[k]) + 0.5f;
    ASSERT_EQ(cuda::kernel_support(*c.node), "");
    expect_cuda_matches_reference(*c.graph, c.inputs, 1e-5, 1e-5);
  }
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

inline void data_movement() {
  expect_cuda_node_matches("Transpose", {{2, 3, 4, 5}}, {{"perm", Ints{0, 2, 1, 3}}});
  expect_cuda_node_matches("Transpose", {{2, 3, 4}});
  expect_cuda_node_matches("Concat", {{2, 3, 4}, {2, 1, 4}, {2, 2, 4}}, {{"axis", int64_t{1}}});
  expect_cuda_node_matches("Split", {{2, 6, 4}}, {{"axis", int64_t{1}}, {"num_outputs", int64_t{3}}}, {}, 3);
  expect_cuda_node_matches("Gather", {{5, 4}, {3, 2}}, {{"axis", int64_t{0}}}, {DType::float32, DType::int64});
  expect_cuda_node_matches("Gather", {{5, 4, 3}, {2}}, {{"axis", int64_t{1}}}, {DType::float32, DType::int32});
  auto ints = [](std::vector<int64_t> v) {
    const int64_t n = static_cast<int64_t>(v.size());
    return Tensor::from_vector<int64_t>(std::move(v), {n});
  };
  // Slice: a window, a negative step, and clamped ends.
  expect_cuda_node_with_constants_matches("Slice", {4, 6, 5}, {ints({1, 0}), ints({3, 6}), ints({0, 2}), ints({1, 2})});
  expect_cuda_node_with_constants_matches("Slice", {4, 6, 5}, {ints({-1}), ints({-100}), ints({1}), ints({-2})});
  expect_cuda_node_with_constants_matches("Slice", {4, 6}, {ints({2}), ints({1000})});
  expect_cuda_node_with_constants_matches("Expand", {3, 1, 5}, {ints({2, 3, 4, 5})});
  expect_cuda_node_with_constants_matches("Reshape", {3, 4, 5}, {ints({6, -1})});
}

}  // namespace cuda_cases
}  // namespace graft::testing
