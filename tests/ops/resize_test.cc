// Resize and Upsample against hand-computed values: nearest with every
// nearest_mode, linear, cubic (cubic_coeff_a, exclude_outside), the
// coordinate transformation modes including tf_crop_and_resize with roi and
// extrapolation, antialias, opset 18 axes and keep_aspect_ratio_policy, the
// opset 7/9/10 layouts, and shape inference.
#include <gtest/gtest.h>

#include "ops/data_op_helpers.h"

using namespace graft;
using namespace graft::testing;

namespace {

// Resize (opset 13 layout) of a float tensor with scales or sizes.
std::vector<float> resize(const Tensor& x, const ir::Attributes& attributes, const Tensor& scales,
                          const Tensor& sizes = {}, const Tensor& roi = {}, int opset = 13) {
  auto out = run_op("Resize", {x, roi, scales, sizes}, attributes, opset);
  return values_of<float>(out[0]);
}

void expect_floats(const std::vector<float>& got, const std::vector<float>& want, float tolerance = 1e-5f) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tolerance) << "element " << i;
}

TEST(Resize, NearestModes) {
  Tensor x = floats({1, 2, 3});
  Tensor sizes = ints({6});
  auto with = [&](const std::string& mode) {
    return resize(x, attrs({{"mode", std::string("nearest")}, {"nearest_mode", mode}}), Tensor(), sizes);
  };
  // half_pixel coordinates: -0.25, 0.25, 0.75, 1.25, 1.75, 2.25.
  expect_floats(with("floor"), {1, 1, 1, 2, 2, 3});
  expect_floats(with("ceil"), {1, 2, 2, 3, 3, 3});
  expect_floats(with("round_prefer_floor"), {1, 1, 2, 2, 3, 3});
  Tensor five = ints({5});  // align_corners: 0, 0.5, 1, 1.5, 2 (exact ties)
  auto tie = [&](const std::string& mode) {
    return resize(x,
                  attrs({{"mode", std::string("nearest")},
                         {"nearest_mode", mode},
                         {"coordinate_transformation_mode", std::string("align_corners")}}),
                  Tensor(), five);
  };
  expect_floats(tie("round_prefer_floor"), {1, 1, 2, 2, 3});
  expect_floats(tie("round_prefer_ceil"), {1, 2, 2, 3, 3});
}

TEST(Resize, Linear2dHalfPixelAndAlignCorners) {
  Tensor x = floats({1, 2, 3, 4}, {1, 1, 2, 2});
  auto half = resize(x, attrs({{"mode", std::string("linear")}}), floats({1, 1, 2, 2}));
  expect_floats(std::vector<float>(half.begin(), half.begin() + 4), {1, 1.25, 1.75, 2});
  expect_floats(std::vector<float>(half.begin() + 4, half.begin() + 8), {1.5, 1.75, 2.25, 2.5});
  Tensor row = floats({1, 2});
  expect_floats(
      resize(row,
             attrs({{"mode", std::string("linear")}, {"coordinate_transformation_mode", std::string("align_corners")}}),
             Tensor(), ints({4})),
      {1, 4.0f / 3, 5.0f / 3, 2});
  // Like the reference, align_corners with scales uses scale * input as the output length.
  expect_floats(
      resize(floats({1, 2, 3, 4}),
             attrs({{"mode", std::string("linear")}, {"coordinate_transformation_mode", std::string("align_corners")}}),
             floats({0.6f})),
      {1, 1 + 3 / 1.4f});
}

TEST(Resize, PytorchHalfPixelWithOneOutputFollowsPyTorch) {
  // 3 values at scale 0.5 give one output (floor(1.5)). PyTorch 1.13's
  // interpolate(scale_factor=0.5, mode="linear") reads coordinate
  // (0 + 0.5) / 0.5 - 0.5 = 0.5, the mean of the first two values, and so
  // does ONNX's reference (its single-output case is scale * length == 1);
  // ONNX Runtime reads the first value (2). graft follows PyTorch.
  ir::Attributes linear =
      attrs({{"mode", std::string("linear")}, {"coordinate_transformation_mode", std::string("pytorch_half_pixel")}});
  expect_floats(resize(floats({2, 8, 4}), linear, floats({0.5f})), {5});
  expect_floats(resize(floats({2, 8, 4, 6}), linear, floats({0.5f})), {5, 5});
}

TEST(Resize, CubicCoefficientsAndExcludeOutside) {
  Tensor spike = floats({0, 0, 1, 0, 0});
  ir::Attributes cubic =
      attrs({{"mode", std::string("cubic")}, {"coordinate_transformation_mode", std::string("asymmetric")}});
  auto out = resize(spike, cubic, floats({2}));
  // Keys kernel with a = -0.75 at distance 0.5: 0.59375; at an integer position: the sample.
  EXPECT_NEAR(out[3], 0.59375f, 1e-6);
  EXPECT_NEAR(out[4], 1.0f, 1e-6);
  EXPECT_NEAR(out[5], 0.59375f, 1e-6);
  EXPECT_NEAR(out[1], -0.09375f, 1e-6);  // x_original 0.5: the spike is the fourth point
  ir::Attributes soft = cubic;
  soft.set("cubic_coeff_a", -0.5f);
  EXPECT_NEAR(resize(spike, soft, floats({2}))[3], 0.5625f, 1e-6);  // (a+2)/8 - (a+3)/4 + 1
  Tensor x = floats({1, 2, 4});
  EXPECT_NEAR(resize(x, cubic, floats({2}))[1], 1.3125f, 1e-6);
  ir::Attributes exclude = cubic;
  exclude.set("exclude_outside", int64_t{1});
  EXPECT_NEAR(resize(x, exclude, floats({2}))[1], (0.59375f * 1 + 0.59375f * 2 - 0.09375f * 4) / 1.09375f, 1e-6);
}

TEST(Resize, TfCropAndResizeExtrapolates) {
  Tensor x = floats({1, 2, 3, 4, 5});
  ir::Attributes a = attrs({{"mode", std::string("linear")},
                            {"coordinate_transformation_mode", std::string("tf_crop_and_resize")},
                            {"extrapolation_value", 10.0f}});
  // x_original = 2x + 2 for roi [0.5, 1.5] over 5 inputs and 3 outputs.
  expect_floats(resize(x, a, Tensor(), ints({3}), floats({0.5f, 1.5f})), {3, 5, 10});
}

TEST(Resize, AntialiasWidensTheFilterWhenDownscaling) {
  Tensor x = floats({0, 0, 4, 4});
  expect_floats(resize(x, attrs({{"mode", std::string("linear")}}), floats({0.5f}), {}, {}, 18), {0, 4});
  expect_floats(
      resize(x, attrs({{"mode", std::string("linear")}, {"antialias", int64_t{1}}}), floats({0.5f}), {}, {}, 18),
      {0.5, 3.5});
}

TEST(Resize, AxesAndKeepAspectRatio) {
  Tensor x = iota_floats({1, 2, 4});
  auto shape_of = [&](const std::string& policy) {
    return run_op("Resize", {x, Tensor(), Tensor(), ints({4, 4})},
                  attrs({{"axes", std::vector<int64_t>{1, -1}}, {"keep_aspect_ratio_policy", policy}}), 18)[0]
        .shape();
  };
  EXPECT_EQ(shape_of("stretch"), (Shape{1, 4, 4}));
  EXPECT_EQ(shape_of("not_larger"), (Shape{1, 2, 4}));
  EXPECT_EQ(shape_of("not_smaller"), (Shape{1, 4, 8}));
}

TEST(Resize, OlderLayoutsAndUpsample) {
  Tensor x = floats({1, 2});
  auto v10 = run_op("Resize", {x, floats({2})}, {}, 10);
  EXPECT_EQ(values_of<float>(v10[0]), (std::vector<float>{1, 1, 2, 2}));
  auto v7 = run_op("Upsample", {x}, attrs({{"scales", std::vector<float>{2.0f}}}), 7);
  EXPECT_EQ(values_of<float>(v7[0]), (std::vector<float>{1, 1, 2, 2}));
  auto v9 = run_op("Upsample", {x, floats({3})}, attrs({{"mode", std::string("linear")}}), 9);
  expect_floats(values_of<float>(v9[0]), {1, 4.0f / 3, 5.0f / 3, 2, 2, 2});
  expect_error(ErrorKind::invalid_model, [&] { run_op("Resize", {x, Tensor(), floats({-1})}, {}, 13); });
  expect_error(ErrorKind::invalid_model, [&] { run_op("Resize", {x, Tensor(), floats({2, 2})}, {}, 13); });
}

TEST(Resize, Inference) {
  ir::ValueType x{DType::float32, true, {sym("n"), dim(3), dim(10), dim(10)}};
  auto by_scales = infer_op("Resize", {x, {}, {}}, {}, 13, 1, {{2, floats({1, 1, 2.5f, 0.5f})}});
  EXPECT_EQ(by_scales[0].dims, (std::vector<ir::Dim>{sym("n"), dim(3), dim(25), dim(5)}));
  ir::Attributes axes = attrs({{"axes", std::vector<int64_t>{2, 3}}});
  const ir::ValueType no_scales = ir::ValueType::of(DType::float32, {0});  // present but empty
  auto with_axes = infer_op("Resize", {x, {}, no_scales, {}}, axes, 18, 1, {{3, ints({7, 9})}});
  EXPECT_EQ(with_axes[0].dims, (std::vector<ir::Dim>{sym("n"), dim(3), dim(7), dim(9)}));
}

}  // namespace
