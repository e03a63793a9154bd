// ArgMax/ArgMin (keepdims, select_last_index), TopK (largest/smallest, ties
// by lower index, K as attribute or input), CumSum (exclusive, reverse) and
// Hardmax (opset 13 axis vs the older flattening).
#include <gtest/gtest.h>

#include "ops/data_op_helpers.h"

using namespace graft;
using namespace graft::testing;

namespace {

TEST(ArgMax, TiesKeepdimsAndLastIndex) {
  Tensor x = floats({1, 3, 3, 0, 2, 2}, {2, 3});
  auto first = run_op("ArgMax", {x}, attrs({{"axis", int64_t{-1}}}));
  EXPECT_EQ(first[0].shape(), (Shape{2, 1}));
  EXPECT_EQ(values_of<int64_t>(first[0]), (std::vector<int64_t>{1, 1}));
  auto last =
      run_op("ArgMax", {x}, attrs({{"axis", int64_t{1}}, {"keepdims", int64_t{0}}, {"select_last_index", int64_t{1}}}));
  EXPECT_EQ(last[0].shape(), (Shape{2}));
  EXPECT_EQ(values_of<int64_t>(last[0]), (std::vector<int64_t>{2, 2}));
  auto argmin = run_op("ArgMin", {x}, attrs({{"axis", int64_t{0}}}));
  EXPECT_EQ(values_of<int64_t>(argmin[0]), (std::vector<int64_t>{1, 1, 1}));
  auto t = infer_op("ArgMin", {ir::ValueType{DType::float32, true, {sym("b"), dim(5)}}},
                    attrs({{"axis", int64_t{1}}, {"keepdims", int64_t{0}}}));
  EXPECT_EQ(t[0], (ir::ValueType{DType::int64, true, {sym("b")}}));
}

TEST(TopK, LargestSmallestAndTies) {
  Tensor x = floats({3, 1, 3, 2, 1, 0}, {1, 6});
  auto largest = run_op("TopK", {x, ints({3})}, {}, 11, 2);
  EXPECT_EQ(values_of<float>(largest[0]), (std::vector<float>{3, 3, 2}));
  EXPECT_EQ(values_of<int64_t>(largest[1]), (std::vector<int64_t>{0, 2, 3}));
  auto smallest = run_op("TopK", {x, ints({3})}, attrs({{"largest", int64_t{0}}}), 11, 2);
  EXPECT_EQ(values_of<float>(smallest[0]), (std::vector<float>{0, 1, 1}));
  EXPECT_EQ(values_of<int64_t>(smallest[1]), (std::vector<int64_t>{5, 1, 4}));
  auto v1 = run_op("TopK", {Tensor::from_vector<float>({1, 5, 2, 4}, {2, 2})},
                   attrs({{"k", int64_t{1}}, {"axis", int64_t{0}}}), 9, 2);
  EXPECT_EQ(values_of<float>(v1[0]), (std::vector<float>{2, 5}));
  expect_error(ErrorKind::invalid_model, [&] { run_op("TopK", {x, ints({7})}, {}, 11, 2); });
  auto t = infer_op("TopK", {ir::ValueType{DType::float32, true, {sym("b"), dim(6)}}, {}}, {}, 11, 2, {{1, ints({2})}});
  EXPECT_EQ(t[1], (ir::ValueType{DType::int64, true, {sym("b"), dim(2)}}));
}

TEST(CumSum, ExclusiveReverseAndAxis) {
  Tensor x = floats({1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_EQ(values_of<float>(run_op("CumSum", {x, Tensor::scalar<int32_t>(1)})[0]),
            (std::vector<float>{1, 3, 6, 4, 9, 15}));
  EXPECT_EQ(values_of<float>(run_op("CumSum", {x, Tensor::scalar<int64_t>(-1)},
                                    attrs({{"exclusive", int64_t{1}}, {"reverse", int64_t{1}}}))[0]),
            (std::vector<float>{5, 3, 0, 11, 6, 0}));
  EXPECT_EQ(values_of<float>(run_op("CumSum", {x, Tensor::scalar<int64_t>(0)})[0]),
            (std::vector<float>{1, 2, 3, 5, 7, 9}));
  expect_error(ErrorKind::invalid_model, [&] { run_op("CumSum", {x, Tensor::scalar<int64_t>(2)}); });
}

TEST(Hardmax, AxisBeforeAndFrom13) {
  Tensor x = floats({1, 4, 4, 2, 0, 5}, {2, 3});
  EXPECT_EQ(values_of<float>(run_op("Hardmax", {x}, {}, 13)[0]), (std::vector<float>{0, 1, 0, 0, 0, 1}));
  EXPECT_EQ(values_of<float>(run_op("Hardmax", {x}, attrs({{"axis", int64_t{0}}}), 13)[0]),
            (std::vector<float>{0, 1, 0, 1, 0, 1}));
  // Opset 11, axis 0: the whole tensor is one row.
  EXPECT_EQ(values_of<float>(run_op("Hardmax", {x}, attrs({{"axis", int64_t{0}}}), 11)[0]),
            (std::vector<float>{0, 0, 0, 0, 0, 1}));
}

}  // namespace
