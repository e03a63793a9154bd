// The vectorized float32 row primitives against scalar std:: math, over
// lengths that exercise the vector body and the tails.
#include "../src/ops/vector_math.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

using namespace graft::ops;

TEST(VectorMath, ExpIsAccurateOverItsDomain) {
  std::vector<float> x(20001), out(x.size());
  for (size_t i = 0; i < x.size(); ++i) x[i] = -90.0f + 90.0f * static_cast<float>(i) / 20000.0f;
  const float sum = vector_math::exp_shifted_sum(x.data(), out.data(), static_cast<int64_t>(x.size()), 0.0f);
  double want_sum = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double want = std::exp(static_cast<double>(x[i]));
    want_sum += want;
    if (want > 1.2e-38)
      ASSERT_NEAR(out[i] / want, 1.0, 3e-7) << "x=" << x[i];
    else
      ASSERT_LE(out[i], 1.2e-38f);
  }
  EXPECT_NEAR(sum / want_sum, 1.0, 1e-5);
  // -inf gives 0, NaN stays NaN, shift moves the argument.
  float special[3] = {-std::numeric_limits<float>::infinity(), std::nanf(""), 3.0f}, special_out[3];
  vector_math::exp_shifted_sum(special, special_out, 3, 3.0f);
  EXPECT_EQ(special_out[0], 0.0f);
  EXPECT_TRUE(std::isnan(special_out[1]));
  EXPECT_EQ(special_out[2], 1.0f);
}

TEST(VectorMath, ReductionsAndRowUpdatesMatchScalarLoops) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  for (int64_t n : {0, 1, 3, 4, 7, 8, 15, 16, 17, 33, 100}) {
    std::vector<float> x(static_cast<size_t>(n)), scale(x.size()), bias(x.size()), y(x.size());
    for (size_t i = 0; i < x.size(); ++i) {
      x[i] = dist(rng);
      scale[i] = dist(rng);
      bias[i] = dist(rng);
    }
    double sum = 0, max = -INFINITY, squares = 0;
    for (float v : x) {
      sum += v;
      max = std::max<double>(max, v);
    }
    const float mean = n ? static_cast<float>(sum / n) : 0.0f;
    for (float v : x) squares += (v - mean) * (v - mean);
    EXPECT_NEAR(vector_math::sum(x.data(), n), sum, 1e-4) << n;
    EXPECT_EQ(vector_math::max(x.data(), n), static_cast<float>(max)) << n;
    EXPECT_NEAR(vector_math::squared_deviation_sum(x.data(), n, mean), squares, 1e-4) << n;
    vector_math::normalize(x.data(), y.data(), n, mean, 0.5f, scale.data(), bias.data());
    for (int64_t i = 0; i < n; ++i)
      EXPECT_NEAR(
          y[static_cast<size_t>(i)],
          (x[static_cast<size_t>(i)] - mean) * 0.5f * scale[static_cast<size_t>(i)] + bias[static_cast<size_t>(i)],
          1e-6);
    vector_math::normalize(x.data(), y.data(), n, mean, 0.5f, scale.data(), nullptr);
    for (int64_t i = 0; i < n; ++i)
      EXPECT_NEAR(y[static_cast<size_t>(i)], (x[static_cast<size_t>(i)] - mean) * 0.5f * scale[static_cast<size_t>(i)],
                  1e-6);
    std::vector<float> z = x;
    vector_math::affine(z.data(), z.data(), n, 2.0f, -1.0f);
    for (int64_t i = 0; i < n; ++i) EXPECT_NEAR(z[static_cast<size_t>(i)], x[static_cast<size_t>(i)] * 2 - 1, 1e-6);
    vector_math::affine(x.data(), y.data(), n, -0.5f, 3.0f);
    for (int64_t i = 0; i < n; ++i) EXPECT_NEAR(y[static_cast<size_t>(i)], x[static_cast<size_t>(i)] * -0.5f + 3, 1e-6);
  }
}

TEST(VectorMath, SigmoidAndTanhAreAccurateEverywhere) {
  // A dense sweep of [-40, 40], values near 0 down to denormals, and the
  // tails of every length up to two vectors (in place for odd lengths).
  std::vector<float> x;
  for (int i = -400000; i <= 400000; ++i) x.push_back(static_cast<float>(i) * 1e-4f);
  for (float tiny = 1e-3f; tiny > 1e-40f; tiny *= 0.37f) {
    x.push_back(tiny);
    x.push_back(-tiny);
  }
  x.push_back(std::numeric_limits<float>::max());
  x.push_back(-std::numeric_limits<float>::max());
  std::vector<float> s(x.size()), t(x.size());
  vector_math::sigmoid(x.data(), s.data(), static_cast<int64_t>(x.size()));
  vector_math::tanh(x.data(), t.data(), static_cast<int64_t>(x.size()));
  double worst_sigmoid = 0, worst_tanh_relative = 0, worst_tanh_absolute = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double v = x[i];
    const double sigmoid = 1.0 / (1.0 + std::exp(-v)), tanh = std::tanh(v);
    if (sigmoid > 1e-37)
      worst_sigmoid = std::max(worst_sigmoid, std::abs(s[i] - sigmoid) / sigmoid);
    else
      ASSERT_LE(s[i], 1.2e-37f) << "x=" << x[i];
    worst_tanh_absolute = std::max(worst_tanh_absolute, std::abs(t[i] - tanh));
    if (tanh != 0) worst_tanh_relative = std::max(worst_tanh_relative, std::abs(t[i] - tanh) / std::abs(tanh));
  }
  EXPECT_LT(worst_sigmoid, 4e-7);
  EXPECT_LT(worst_tanh_absolute, 4e-7);
  EXPECT_LT(worst_tanh_relative, 1e-6);
  std::printf("sigmoid max relative error %.3g; tanh max absolute %.3g, relative %.3g\n", worst_sigmoid,
              worst_tanh_absolute, worst_tanh_relative);
  float special[4] = {std::nanf(""), INFINITY, -INFINITY, 0.0f}, out[4];
  vector_math::sigmoid(special, out, 4);
  EXPECT_TRUE(std::isnan(out[0]));
  EXPECT_EQ(out[1], 1.0f);
  EXPECT_EQ(out[2], 0.0f);
  EXPECT_EQ(out[3], 0.5f);
  vector_math::tanh(special, out, 4);
  EXPECT_TRUE(std::isnan(out[0]));
  EXPECT_EQ(out[1], 1.0f);
  EXPECT_EQ(out[2], -1.0f);
  EXPECT_EQ(out[3], 0.0f);
  for (int64_t n = 0; n <= 33; ++n) {
    std::vector<float> v(static_cast<size_t>(n) + 1, 7.0f), w;
    for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = 0.25f * static_cast<float>(i) - 4.0f;
    w = v;
    vector_math::tanh(w.data(), w.data(), n);  // in place; must not write past n
    for (int64_t i = 0; i < n; ++i) EXPECT_NEAR(w[static_cast<size_t>(i)], std::tanh(v[static_cast<size_t>(i)]), 4e-7);
    EXPECT_EQ(w[static_cast<size_t>(n)], 7.0f) << n;
    w = v;
    vector_math::sigmoid(w.data(), w.data(), n);
    for (int64_t i = 0; i < n; ++i)
      EXPECT_NEAR(w[static_cast<size_t>(i)], 1.0 / (1.0 + std::exp(-v[static_cast<size_t>(i)])), 4e-7);
    EXPECT_EQ(w[static_cast<size_t>(n)], 7.0f) << n;
  }
}
