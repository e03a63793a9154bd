// Softmax/LogSoftmax (opset 11 coercion vs opset 13 per-axis), LayerNorm,
// BatchNorm (inference and training), InstanceNorm and GroupNorm against
// formulas evaluated in the test.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "ops/math_op_runner.h"

using namespace graft;
using namespace graft::testing;

namespace {

/// Softmax of x viewed as [outer, n, inner] along n, in double.
Tensor reference_softmax(const Tensor& x, int64_t outer, int64_t n, int64_t inner, bool log) {
  Tensor y(DType::float32, x.shape());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      double m = -INFINITY, s = 0;
      for (int64_t k = 0; k < n; ++k) m = std::max(m, x.value_as_double((o * n + k) * inner + i));
      for (int64_t k = 0; k < n; ++k) s += std::exp(x.value_as_double((o * n + k) * inner + i) - m);
      for (int64_t k = 0; k < n; ++k) {
        double v = x.value_as_double((o * n + k) * inner + i) - m;
        y.data<float>()[(o * n + k) * inner + i] = static_cast<float>(log ? v - std::log(s) : std::exp(v) / s);
      }
    }
  return y;
}

}  // namespace

TEST(Softmax, Opset13IsPerAxisAndOpset11Coerces) {
  Tensor x = random_tensor({2, 3, 4, 5}, 3);
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] *= 20.0f;  // exercise the max subtraction
  for (bool log : {false, true}) {
    const char* op = log ? "LogSoftmax" : "Softmax";
    for (int64_t axis : {0, 1, 2, 3, -1, -3}) {
      SCOPED_TRACE(std::string(op) + " axis " + std::to_string(axis));
      const int64_t a = axis < 0 ? axis + 4 : axis;
      int64_t outer = 1, n = x.dim(a), inner = 1;
      for (int64_t d = 0; d < a; ++d) outer *= x.dim(d);
      for (int64_t d = a + 1; d < 4; ++d) inner *= x.dim(d);
      expect_close(run_op(op, {x}, attrs({{"axis", axis}}), 13)[0], reference_softmax(x, outer, n, inner, log), 1e-5,
                   1e-6);
      // Opset 11: everything from `axis` on is one vector.
      expect_close(run_op(op, {x}, attrs({{"axis", axis}}), 11)[0], reference_softmax(x, outer, n * inner, 1, log),
                   1e-5, 1e-6);
    }
    // Defaults: axis -1 at opset 13, axis 1 (coerced) at opset 11.
    expect_close(run_op(op, {x}, {}, 13)[0], reference_softmax(x, 24, 5, 1, log), 1e-5, 1e-6);
    expect_close(run_op(op, {x}, {}, 11)[0], reference_softmax(x, 2, 60, 1, log), 1e-5, 1e-6);
  }
}

TEST(Softmax, LargeNumbersHalfAndDouble) {
  Tensor x = Tensor::from_vector<float>({1000, 1001, 1002, -1e30f, 0, 1e30f}, {2, 3});
  Tensor y = run_op("Softmax", {x}, {}, 13)[0];
  EXPECT_NEAR(y.data<float>()[2], std::exp(2.0) / (1 + std::exp(1.0) + std::exp(2.0)), 1e-6);
  EXPECT_EQ(y.data<float>()[5], 1.0f);
  Tensor ly = run_op("LogSoftmax", {x}, {}, 13)[0];
  EXPECT_NEAR(ly.data<float>()[0], -std::log(1 + std::exp(1.0) + std::exp(2.0)), 1e-5);
  Tensor xh(DType::float16, {2, 3});
  for (int i = 0; i < 6; ++i) xh.data<float16_t>()[i] = float16_t(static_cast<float>(i) / 2);
  expect_close(to_float(run_op("Softmax", {xh}, attrs({{"axis", int64_t{0}}}), 13)[0]),
               reference_softmax(to_float(xh), 1, 2, 3, false), 1e-3, 1e-3);
  Tensor xd = random_double_tensor({3, 7}, 2);
  Tensor yd = run_op("Softmax", {xd}, {}, 13)[0];
  expect_close(to_float(yd), reference_softmax(xd, 3, 7, 1, false), 1e-6, 1e-7);
  EXPECT_THROW(run_op("Softmax", {xd}, attrs({{"axis", int64_t{2}}}), 13), Error);
}

TEST(LayerNorm, MatchesFormulaWithStatistics) {
  Tensor x = random_tensor({2, 3, 8}, 4);
  for (int64_t axis : {-1, 1}) {
    const int64_t a = axis < 0 ? axis + 3 : axis;
    const int64_t width = a == 2 ? 8 : 24, rows = 48 / width;
    Shape normalized = a == 2 ? Shape{8} : Shape{3, 8};
    Tensor scale = random_tensor(normalized, 5), bias = random_tensor({8}, 6);  // B broadcasts
    auto outs = run_op("LayerNormalization", {x, scale, bias}, attrs({{"axis", axis}, {"epsilon", 1e-3f}}), 17, 3);
    ASSERT_EQ(outs.size(), 3u);
    EXPECT_EQ(outs[1].shape(), a == 2 ? (Shape{2, 3, 1}) : (Shape{2, 1, 1}));
    for (int64_t r = 0; r < rows; ++r) {
      double mean = 0, var = 0;
      for (int64_t i = 0; i < width; ++i) mean += x.data<float>()[r * width + i];
      mean /= width;
      for (int64_t i = 0; i < width; ++i) var += std::pow(x.data<float>()[r * width + i] - mean, 2);
      var /= width;
      const double inv_std = 1 / std::sqrt(var + 1e-3);
      EXPECT_NEAR(outs[1].data<float>()[r], mean, 1e-6);
      EXPECT_NEAR(outs[2].data<float>()[r], inv_std, 1e-4);
      for (int64_t i = 0; i < width; ++i) {
        double want =
            (x.data<float>()[r * width + i] - mean) * inv_std * scale.data<float>()[i] + bias.data<float>()[i % 8];
        EXPECT_NEAR(outs[0].data<float>()[r * width + i], want, 1e-5);
      }
    }
  }
  // No bias, one output, float64.
  Tensor xd = random_double_tensor({4, 6}, 1);
  Tensor ones = Tensor::from_vector<double>(std::vector<double>(6, 1.0), {6});
  Tensor y = run_op("LayerNormalization", {xd, ones}, {}, 17)[0];
  double s = 0;
  for (int i = 0; i < 6; ++i) s += y.data<double>()[i];
  EXPECT_NEAR(s, 0.0, 1e-12);
  EXPECT_THROW(run_op("LayerNormalization", {xd, Tensor::from_vector<double>({1, 2}, {2})}, {}, 17), Error);
}

TEST(LayerNorm, InfersStatisticShapes) {
  auto t = infer_op(
      "LayerNormalization",
      {ir::ValueType{DType::float16, true, {sym("B"), sym("S"), dim(768)}}, ir::ValueType::of(DType::float16, {768})},
      {}, 17, 3);
  EXPECT_EQ(t[0], (ir::ValueType{DType::float16, true, {sym("B"), sym("S"), dim(768)}}));
  EXPECT_EQ(t[1], (ir::ValueType{DType::float32, true, {sym("B"), sym("S"), dim(1)}}));
}

TEST(BatchNorm, InferenceAndTrainingMode) {
  Tensor x = random_tensor({2, 3, 4, 5}, 9);
  Tensor scale = random_tensor({3}, 1), bias = random_tensor({3}, 2), mean = random_tensor({3}, 3);
  Tensor var = Tensor::from_vector<float>({0.5f, 1.0f, 2.0f}, {3});
  Tensor y = run_op("BatchNormalization", {x, scale, bias, mean, var}, attrs({{"epsilon", 1e-2f}}), 15)[0];
  for (int64_t i = 0; i < x.numel(); ++i) {
    int64_t c = i / 20 % 3;
    double want =
        (x.data<float>()[i] - mean.data<float>()[c]) / std::sqrt(var.data<float>()[c] + 1e-2) * scale.data<float>()[c] +
        bias.data<float>()[c];
    ASSERT_NEAR(y.data<float>()[i], want, 1e-5) << i;
  }
  auto outs = run_op("BatchNormalization", {x, scale, bias, mean, var},
                     attrs({{"training_mode", int64_t{1}}, {"momentum", 0.8f}}), 15, 3);
  for (int64_t c = 0; c < 3; ++c) {
    double m = 0, v = 0;
    for (int64_t n = 0; n < 2; ++n)
      for (int64_t i = 0; i < 20; ++i) m += x.data<float>()[(n * 3 + c) * 20 + i];
    m /= 40;
    for (int64_t n = 0; n < 2; ++n)
      for (int64_t i = 0; i < 20; ++i) v += std::pow(x.data<float>()[(n * 3 + c) * 20 + i] - m, 2);
    v /= 40;
    EXPECT_NEAR(outs[1].data<float>()[c], mean.data<float>()[c] * 0.8 + m * 0.2, 1e-6);
    EXPECT_NEAR(outs[2].data<float>()[c], var.data<float>()[c] * 0.8 + v * 0.2, 1e-6);
    double want0 = (x.data<float>()[c * 20] - m) / std::sqrt(v + 1e-5) * scale.data<float>()[c] + bias.data<float>()[c];
    EXPECT_NEAR(outs[0].data<float>()[c * 20], want0, 1e-5);
  }
  EXPECT_THROW(run_op("BatchNormalization", {x, scale, bias, mean, random_tensor({4}, 1)}, {}, 15), Error);
}

TEST(InstanceAndGroupNorm, MatchFormula) {
  Tensor x = random_tensor({2, 4, 3, 3}, 11);
  Tensor scale = random_tensor({4}, 1), bias = random_tensor({4}, 2);
  auto check = [&](const Tensor& y, int64_t groups, const Tensor& s, const Tensor& b) {
    const int64_t cpg = 4 / groups, span = cpg * 9;
    for (int64_t n = 0; n < 2; ++n)
      for (int64_t g = 0; g < groups; ++g) {
        const int64_t base = (n * groups + g) * span;
        double m = 0, v = 0;
        for (int64_t i = 0; i < span; ++i) m += x.data<float>()[base + i];
        m /= span;
        for (int64_t i = 0; i < span; ++i) v += std::pow(x.data<float>()[base + i] - m, 2);
        v /= span;
        for (int64_t i = 0; i < span; ++i) {
          const int64_t c = g * cpg + i / 9;
          const int64_t p = s.numel() == 4 ? c : g;
          double want = (x.data<float>()[base + i] - m) / std::sqrt(v + 1e-5) * s.data<float>()[p] + b.data<float>()[p];
          ASSERT_NEAR(y.data<float>()[base + i], want, 1e-5);
        }
      }
  };
  check(run_op("InstanceNormalization", {x, scale, bias}, {}, 6)[0], 4, scale, bias);
  check(run_op("GroupNormalization", {x, scale, bias}, attrs({{"num_groups", int64_t{2}}}), 18)[0], 2, scale, bias);
  Tensor gs = random_tensor({2}, 3), gb = random_tensor({2}, 4);
  check(run_op("GroupNormalization", {x, gs, gb}, attrs({{"num_groups", int64_t{2}}}), 18)[0], 2, gs, gb);
  EXPECT_THROW(run_op("GroupNormalization", {x, scale, bias}, attrs({{"num_groups", int64_t{3}}}), 18), Error);
}

TEST(Lrn, MatchesWindowedFormula) {
  Tensor x = random_tensor({2, 5, 3, 2}, 21);
  const int64_t size = 4;
  const double alpha = 0.02, beta = 0.6, bias = 1.5;
  Tensor y = run_op("LRN", {x}, attrs({{"size", size}, {"alpha", 0.02f}, {"beta", 0.6f}, {"bias", 1.5f}}), 13)[0];
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t c = 0; c < 5; ++c)
      for (int64_t s = 0; s < 6; ++s) {
        double sum = 0;
        for (int64_t w = std::max<int64_t>(0, c - 1); w <= std::min<int64_t>(4, c + 2); ++w)
          sum += std::pow(x.data<float>()[(n * 5 + w) * 6 + s], 2);
        const int64_t i = (n * 5 + c) * 6 + s;
        EXPECT_NEAR(y.data<float>()[i], x.data<float>()[i] / std::pow(bias + alpha / size * sum, beta), 1e-6);
      }
}

TEST(MeanVarianceNormalization, DefaultAndCustomAxes) {
  Tensor x = random_tensor({2, 3, 2, 2}, 31);
  auto check = [&](const Tensor& y, const std::vector<int>& reduced_dims) {
    // Group elements by their kept coordinates.
    std::map<std::vector<int64_t>, std::vector<int64_t>> groups;
    for (int64_t i = 0; i < 24; ++i) {
      std::vector<int64_t> coords = {i / 12, i / 4 % 3, i / 2 % 2, i % 2}, key;
      for (int d = 0; d < 4; ++d)
        if (std::find(reduced_dims.begin(), reduced_dims.end(), d) == reduced_dims.end()) key.push_back(coords[d]);
      groups[key].push_back(i);
    }
    for (auto& [key, members] : groups) {
      double m = 0, v = 0;
      for (int64_t i : members) m += x.data<float>()[i];
      m /= members.size();
      for (int64_t i : members) v += std::pow(x.data<float>()[i] - m, 2);
      v /= members.size();
      for (int64_t i : members) EXPECT_NEAR(y.data<float>()[i], (x.data<float>()[i] - m) / (std::sqrt(v) + 1e-9), 1e-5);
    }
  };
  check(run_op("MeanVarianceNormalization", {x}, {}, 13)[0], {0, 2, 3});
  check(run_op("MeanVarianceNormalization", {x}, attrs({{"axes", std::vector<int64_t>{1}}}), 13)[0], {1});
  check(run_op("MeanVarianceNormalization", {x}, attrs({{"axes", std::vector<int64_t>{2, 3}}}), 13)[0], {2, 3});
}

TEST(LpNormalization, L1AndL2AlongAxis) {
  Tensor x = random_tensor({3, 4}, 41);
  for (int64_t p : {1, 2})
    for (int64_t axis : {0, 1}) {
      Tensor y = run_op("LpNormalization", {x}, attrs({{"p", p}, {"axis", axis}}), 13)[0];
      for (int64_t i = 0; i < 3; ++i)
        for (int64_t j = 0; j < 4; ++j) {
          double norm = 0;
          for (int64_t k = 0; k < (axis == 0 ? 3 : 4); ++k) {
            double v = x.data<float>()[axis == 0 ? k * 4 + j : i * 4 + k];
            norm += p == 1 ? std::abs(v) : v * v;
          }
          if (p == 2) norm = std::sqrt(norm);
          EXPECT_NEAR(y.data<float>()[i * 4 + j], x.data<float>()[i * 4 + j] / norm, 1e-6);
        }
    }
  Tensor zeros(DType::float32, {2, 2});
  EXPECT_EQ(run_op("LpNormalization", {zeros}, {}, 13)[0].data<float>()[0], 0.0f);
}
