// Shape (with opset 15 start/end), Size, ConstantOfShape, Range, EyeLike and
// Dropout, and inference from constant inputs.
#include <gtest/gtest.h>

#include "ops/data_op_helpers.h"

using namespace graft;
using namespace graft::testing;

namespace {

TEST(Shape, StartAndEndClampFromOpset15) {
  Tensor x(DType::float32, {2, 3, 4});
  EXPECT_EQ(values_of<int64_t>(run_op("Shape", {x})[0]), (std::vector<int64_t>{2, 3, 4}));
  EXPECT_EQ(values_of<int64_t>(run_op("Shape", {x}, attrs({{"start", int64_t{-2}}}), 15)[0]),
            (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(values_of<int64_t>(run_op("Shape", {x}, attrs({{"start", int64_t{-10}}, {"end", int64_t{1}}}), 15)[0]),
            (std::vector<int64_t>{2}));
  EXPECT_EQ(run_op("Shape", {x}, attrs({{"start", int64_t{2}}, {"end", int64_t{1}}}), 15)[0].numel(), 0);
  auto t = infer_op("Shape", {ir::ValueType{DType::float32, true, {sym("b"), dim(3)}}});
  EXPECT_EQ(t[0], ir::ValueType::of(DType::int64, {2}));
  EXPECT_EQ(values_of<int64_t>(run_op("Size", {x})[0]), (std::vector<int64_t>{24}));
}

TEST(ConstantOfShape, ValueAttributeAndInference) {
  auto zeros = run_op("ConstantOfShape", {ints({2, 3})});
  EXPECT_EQ(zeros[0].dtype(), DType::float32);
  EXPECT_EQ(values_of<float>(zeros[0]), std::vector<float>(6, 0.0f));
  auto sevens = run_op("ConstantOfShape", {ints({2})}, attrs({{"value", Tensor::from_vector<int32_t>({7}, {1})}}));
  EXPECT_EQ(values_of<int32_t>(sevens[0]), (std::vector<int32_t>{7, 7}));
  EXPECT_EQ(run_op("ConstantOfShape", {ints({0})})[0].numel(), 0);
  expect_error(ErrorKind::invalid_model, [&] { run_op("ConstantOfShape", {ints({-1})}); });
  auto t = infer_op("ConstantOfShape", {{}}, attrs({{"value", Tensor::from_vector<int64_t>({1}, {1})}}), 13, 1,
                    {{0, ints({4, 5})}});
  EXPECT_EQ(t[0], ir::ValueType::of(DType::int64, {4, 5}));
}

TEST(Range, FloatAndIntegerLengths) {
  auto f = run_op("Range", {Tensor::scalar(1.0f), Tensor::scalar(2.0f), Tensor::scalar(0.3f)});
  ASSERT_EQ(f[0].numel(), 4);
  EXPECT_NEAR(f[0].data<float>()[3], 1.9f, 1e-6);
  auto i = run_op("Range", {Tensor::scalar<int32_t>(10), Tensor::scalar<int32_t>(4), Tensor::scalar<int32_t>(-3)});
  EXPECT_EQ(values_of<int32_t>(i[0]), (std::vector<int32_t>{10, 7}));
  auto empty = run_op("Range", {Tensor::scalar<int64_t>(5), Tensor::scalar<int64_t>(1), Tensor::scalar<int64_t>(2)});
  EXPECT_EQ(empty[0].numel(), 0);
  expect_error(ErrorKind::invalid_model, [&] {
    run_op("Range", {Tensor::scalar<int64_t>(0), Tensor::scalar<int64_t>(1), Tensor::scalar<int64_t>(0)});
  });
  auto t =
      infer_op("Range", {{}, {}, {}}, {}, 13, 1,
               {{0, Tensor::scalar<int64_t>(0)}, {1, Tensor::scalar<int64_t>(10)}, {2, Tensor::scalar<int64_t>(3)}});
  EXPECT_EQ(t[0], ir::ValueType::of(DType::int64, {4}));
}

TEST(EyeLike, OffsetDiagonalAndDtype) {
  Tensor x(DType::int32, {3, 4});
  auto out = run_op("EyeLike", {x}, attrs({{"k", int64_t{1}}, {"dtype", int64_t{1}}}));
  EXPECT_EQ(out[0].dtype(), DType::float32);
  EXPECT_EQ(values_of<float>(out[0]), (std::vector<float>{0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1}));
}

TEST(Dropout, InferenceIsAViewWithTrueMask) {
  Tensor x = iota_floats({2, 3});
  auto out = run_op("Dropout", {x}, {}, 13, 2);
  EXPECT_EQ(out[0].storage(), x.storage());
  EXPECT_EQ(values_of<bool>(out[1]), std::vector<bool>(6, true));
  // Training mode with a seed repeats; kept elements are scaled by 1 / (1 - ratio).
  Tensor big = Tensor::from_vector<float>(std::vector<float>(1000, 1.0f), {1000});
  ir::Attributes seeded = attrs({{"seed", int64_t{3}}});
  auto a = run_op("Dropout", {big, Tensor::scalar(0.25f), Tensor::scalar(true)}, seeded, 13, 2);
  auto b = run_op("Dropout", {big, Tensor::scalar(0.25f), Tensor::scalar(true)}, seeded, 13, 2);
  EXPECT_EQ(values_of<float>(a[0]), values_of<float>(b[0]));
  int kept = 0;
  for (int64_t i = 0; i < 1000; ++i) {
    const float v = a[0].data<float>()[i];
    EXPECT_TRUE(v == 0.0f || std::abs(v - 4.0f / 3.0f) < 1e-6);
    EXPECT_EQ(a[1].data<bool>()[i], v != 0.0f);
    kept += v != 0.0f;
  }
  EXPECT_NEAR(kept, 750, 60);
}

}  // namespace
