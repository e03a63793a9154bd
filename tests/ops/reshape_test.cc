// Reshape, Flatten, Squeeze and Unsqueeze: views that share storage, the
// opset differences (axes attribute vs input, allowzero), negative axes,
// errors, and inference from constant and symbolic inputs.
#include <gtest/gtest.h>

#include "ops/data_op_helpers.h"

using namespace graft;
using namespace graft::testing;

namespace {

TEST(Reshape, IsAViewWithZeroAndMinusOne) {
  Tensor x = iota_floats({2, 3, 4});
  auto out = run_op("Reshape", {x, ints({0, -1, 2})});
  EXPECT_EQ(out[0].shape(), (Shape{2, 6, 2}));
  EXPECT_EQ(out[0].storage(), x.storage()) << "Reshape must not copy";
  EXPECT_EQ(values_of<float>(out[0]), values_of<float>(x));
}

TEST(Reshape, AllowZeroMakesZeroAnExtent) {
  Tensor x(DType::float32, {0, 3});
  auto out = run_op("Reshape", {x, ints({3, 0})}, attrs({{"allowzero", int64_t{1}}}), 14);
  EXPECT_EQ(out[0].shape(), (Shape{3, 0}));
  // Without allowzero the 0 copies the input's dimension 1 (3), so 3x3 != 0 elements.
  expect_error(ErrorKind::invalid_model, [&] { run_op("Reshape", {x, ints({3, 0})}, {}, 14); });
}

TEST(Reshape, BadShapesAreErrors) {
  Tensor x = iota_floats({2, 3});
  expect_error(ErrorKind::invalid_model, [&] { run_op("Reshape", {x, ints({4, -1})}); });
  expect_error(ErrorKind::invalid_model, [&] { run_op("Reshape", {x, ints({-1, -1})}); });
  expect_error(ErrorKind::invalid_model, [&] { run_op("Reshape", {x, ints({7})}); });
}

TEST(Reshape, InfersFromConstantShapeAndSymbols) {
  auto t = infer_op("Reshape", {ir::ValueType{DType::float32, true, {sym("batch"), dim(3), dim(4)}}, {}}, {}, 13, 1,
                    {{1, ints({0, -1})}});
  EXPECT_EQ(t[0].dims, (std::vector<ir::Dim>{sym("batch"), dim(12)}));
  auto batch = infer_op("Reshape", {ir::ValueType{DType::float32, true, {sym("batch"), dim(3), dim(4)}}, {}}, {}, 13, 1,
                        {{1, ints({-1, 12})}});
  EXPECT_EQ(batch[0].dims, (std::vector<ir::Dim>{sym("batch"), dim(12)}));
  auto concrete =
      infer_op("Reshape", {ir::ValueType::of(DType::float32, {2, 3, 4}), {}}, {}, 13, 1, {{1, ints({-1, 6})}});
  EXPECT_EQ(concrete[0], ir::ValueType::of(DType::float32, {4, 6}));
  // A non-constant shape of known length gives the rank.
  auto ranked = infer_op("Reshape", {ir::ValueType::of(DType::float32, {2, 3}), ir::ValueType::of(DType::int64, {3})});
  ASSERT_TRUE(ranked[0].has_rank);
  EXPECT_EQ(ranked[0].dims.size(), 3u);
}

TEST(Flatten, NegativeAndBoundaryAxes) {
  Tensor x = iota_floats({2, 3, 4});
  EXPECT_EQ(run_op("Flatten", {x}, attrs({{"axis", int64_t{-1}}}))[0].shape(), (Shape{6, 4}));
  EXPECT_EQ(run_op("Flatten", {x}, attrs({{"axis", int64_t{0}}}))[0].shape(), (Shape{1, 24}));
  EXPECT_EQ(run_op("Flatten", {x}, attrs({{"axis", int64_t{3}}}))[0].shape(), (Shape{24, 1}));
  auto out = run_op("Flatten", {x});
  EXPECT_EQ(out[0].shape(), (Shape{2, 12}));
  EXPECT_EQ(out[0].storage(), x.storage());
  expect_error(ErrorKind::invalid_model, [&] { run_op("Flatten", {x}, attrs({{"axis", int64_t{4}}})); });
  auto t = infer_op("Flatten", {ir::ValueType{DType::float32, true, {sym("n"), dim(3), dim(4)}}});
  EXPECT_EQ(t[0].dims, (std::vector<ir::Dim>{sym("n"), dim(12)}));
}

TEST(Squeeze, AxesAttributeBefore13InputFrom13) {
  Tensor x = iota_floats({1, 3, 1, 2});
  auto v11 = run_op("Squeeze", {x}, attrs({{"axes", std::vector<int64_t>{0, -2}}}), 11);
  EXPECT_EQ(v11[0].shape(), (Shape{3, 2}));
  EXPECT_EQ(v11[0].storage(), x.storage());
  auto v13 = run_op("Squeeze", {x, ints({-2})}, {}, 13);
  EXPECT_EQ(v13[0].shape(), (Shape{1, 3, 2}));
  auto all = run_op("Squeeze", {x}, {}, 13);
  EXPECT_EQ(all[0].shape(), (Shape{3, 2}));
  expect_error(ErrorKind::invalid_model, [&] { run_op("Squeeze", {x, ints({1})}, {}, 13); });
  expect_error(ErrorKind::invalid_model, [&] { run_op("Squeeze", {x, ints({4})}, {}, 13); });
}

TEST(Squeeze, Inference) {
  ir::ValueType x{DType::float32, true, {dim(1), sym("s"), dim(1)}};
  auto t = infer_op("Squeeze", {x, {}}, {}, 13, 1, {{1, ints({0, -1})}});
  EXPECT_EQ(t[0].dims, (std::vector<ir::Dim>{sym("s")}));
  // Without axes a symbolic dim might be 1: the rank is unknown.
  auto unknown = infer_op("Squeeze", {x}, {}, 13);
  EXPECT_FALSE(unknown[0].has_rank);
}

TEST(Unsqueeze, AxesAttributeBefore13InputFrom13) {
  Tensor x = iota_floats({3, 2});
  auto v11 = run_op("Unsqueeze", {x}, attrs({{"axes", std::vector<int64_t>{0, -1}}}), 11);
  EXPECT_EQ(v11[0].shape(), (Shape{1, 3, 2, 1}));
  EXPECT_EQ(v11[0].storage(), x.storage());
  auto v13 = run_op("Unsqueeze", {x, ints({3, 1})}, {}, 13);
  EXPECT_EQ(v13[0].shape(), (Shape{3, 1, 2, 1}));
  expect_error(ErrorKind::invalid_model, [&] { run_op("Unsqueeze", {x, ints({1, 1})}, {}, 13); });
  expect_error(ErrorKind::invalid_model, [&] { run_op("Unsqueeze", {x, ints({5})}, {}, 13); });
  auto t = infer_op("Unsqueeze", {ir::ValueType{DType::int64, true, {sym("b")}}, {}}, {}, 13, 1, {{1, ints({-1})}});
  EXPECT_EQ(t[0].dims, (std::vector<ir::Dim>{sym("b"), dim(1)}));
}

}  // namespace
