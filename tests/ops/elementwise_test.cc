// Elementwise ops of one input: math functions, activations, rounding, sign,
// predicates, Clip, Cast and Identity, checked against values computed here
// from the formulas.
#include <cmath>
#include <functional>
#include <limits>

#include "ops/math_op_runner.h"

using namespace graft;
using graft::testing::attrs;
using graft::testing::expect_close;
using graft::testing::infer_op;
using graft::testing::random_tensor;
using graft::testing::run_op;

namespace {

/// Applies `f` to each element of a float32 tensor.
Tensor apply_float(const Tensor& x, const std::function<double(double)>& f) {
  Tensor y(DType::float32, x.shape());
  for (int64_t i = 0; i < x.numel(); ++i) y.data<float>()[i] = static_cast<float>(f(x.data<float>()[i]));
  return y;
}

/// A float32 tensor with values spread over [lo, hi].
Tensor spread(float lo, float hi, int64_t n) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = lo + (hi - lo) * static_cast<float>(i) / (n - 1);
  return Tensor::from_vector(v, {n});
}

Tensor run1(const std::string& op, const Tensor& x, const ir::Attributes& a = {}, int opset = 18) {
  return run_op(op, {x}, a, opset)[0];
}

}  // namespace

TEST(Elementwise, MathFunctionsMatchFormulas) {
  struct Case {
    const char* op;
    float lo, hi;
    std::function<double(double)> f;
  };
  std::vector<Case> cases = {
      {"Acos", -1, 1, [](double x) { return std::acos(x); }},
      {"Acosh", 1, 10, [](double x) { return std::acosh(x); }},
      {"Asin", -1, 1, [](double x) { return std::asin(x); }},
      {"Asinh", -5, 5, [](double x) { return std::asinh(x); }},
      {"Atan", -5, 5, [](double x) { return std::atan(x); }},
      {"Atanh", -0.99f, 0.99f, [](double x) { return std::atanh(x); }},
      {"Cos", -5, 5, [](double x) { return std::cos(x); }},
      {"Cosh", -5, 5, [](double x) { return std::cosh(x); }},
      {"Sin", -5, 5, [](double x) { return std::sin(x); }},
      {"Sinh", -5, 5, [](double x) { return std::sinh(x); }},
      {"Tan", -1.5f, 1.5f, [](double x) { return std::tan(x); }},
      {"Tanh", -5, 5, [](double x) { return std::tanh(x); }},
      {"Exp", -5, 5, [](double x) { return std::exp(x); }},
      {"Log", 0.01f, 100, [](double x) { return std::log(x); }},
      {"Sqrt", 0, 100, [](double x) { return std::sqrt(x); }},
      {"Reciprocal", 0.5f, 10, [](double x) { return 1.0 / x; }},
      {"Ceil", -5, 5, [](double x) { return std::ceil(x); }},
      {"Floor", -5, 5, [](double x) { return std::floor(x); }},
      {"Abs", -5, 5, [](double x) { return std::abs(x); }},
      {"Neg", -5, 5, [](double x) { return -x; }},
      {"Sign", -5, 5, [](double x) { return x > 0 ? 1.0 : (x < 0 ? -1.0 : 0.0); }},
      {"Erf", -3, 3, [](double x) { return std::erf(x); }},
      {"Relu", -5, 5, [](double x) { return std::max(x, 0.0); }},
      {"Sigmoid", -20, 20, [](double x) { return 1.0 / (1.0 + std::exp(-x)); }},
      {"Softplus", -20, 20, [](double x) { return std::log(std::exp(x) + 1.0); }},
      {"Softsign", -5, 5, [](double x) { return x / (1.0 + std::abs(x)); }},
      {"Mish", -5, 5, [](double x) { return x * std::tanh(std::log1p(std::exp(x))); }},
      {"HardSwish", -5, 5, [](double x) { return x * std::max(0.0, std::min(1.0, x / 6 + 0.5)); }},
      {"Swish", -20, 20, [](double x) { return x / (1.0 + std::exp(-x)); }},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.op);
    Tensor x = spread(c.lo, c.hi, 101);
    expect_close(run1(c.op, x), apply_float(x, c.f), 1e-5, 1e-6);
  }
}

TEST(Elementwise, Float64AndFloat16) {
  Tensor x64 = Tensor::from_vector<double>({-2.0, -0.5, 0.0, 0.25, 3.0}, {5});
  Tensor y64 = run1("Exp", x64);
  ASSERT_EQ(y64.dtype(), DType::float64);
  for (int64_t i = 0; i < 5; ++i) EXPECT_DOUBLE_EQ(y64.data<double>()[i], std::exp(x64.data<double>()[i]));

  std::vector<float16_t> h;
  for (float v : {-2.0f, -0.5f, 0.0f, 0.25f, 3.0f, 1.1f}) h.push_back(float16_t(v));
  Tensor x16 = Tensor::from_vector(h, {2, 3});
  for (const char* op : {"Exp", "Relu", "Sigmoid", "Tanh"}) {
    SCOPED_TRACE(op);
    Tensor y = run1(op, x16);
    ASSERT_EQ(y.dtype(), DType::float16);
    ASSERT_EQ(y.shape(), (Shape{2, 3}));
    for (int64_t i = 0; i < 6; ++i) {
      float v = static_cast<float>(h[static_cast<size_t>(i)]);
      float want = std::string(op) == "Exp"       ? std::exp(v)
                   : std::string(op) == "Relu"    ? std::max(v, 0.0f)
                   : std::string(op) == "Sigmoid" ? 1.0f / (1.0f + std::exp(-v))
                                                  : std::tanh(v);
      // Computed in float, rounded once to float16.
      EXPECT_EQ(y.data<float16_t>()[i].bits, float16_t(want).bits) << i;
    }
  }
}

TEST(Elementwise, RoundIsHalfToEven) {
  Tensor x = Tensor::from_vector<float>({-2.5f, -1.5f, -0.5f, 0.5f, 1.5f, 2.5f, 2.4f, 2.6f, -2.6f}, {9});
  Tensor y = run1("Round", x);
  std::vector<float> want = {-2, -2, -0.0f, 0, 2, 2, 2, 3, -3};
  for (int64_t i = 0; i < 9; ++i) EXPECT_EQ(y.data<float>()[i], want[static_cast<size_t>(i)]) << i;
}

TEST(Elementwise, ActivationDefaultsAndAttributes) {
  Tensor x = spread(-4, 4, 33);
  expect_close(run1("Elu", x), apply_float(x, [](double v) { return v < 0 ? std::exp(v) - 1 : v; }));
  expect_close(run1("Elu", x, attrs({{"alpha", 0.5f}})),
               apply_float(x, [](double v) { return v < 0 ? 0.5 * (std::exp(v) - 1) : v; }));
  expect_close(run1("Celu", x, attrs({{"alpha", 2.0f}})), apply_float(x, [](double v) {
                 return std::max(0.0, v) + std::min(0.0, 2.0 * (std::exp(v / 2.0) - 1));
               }));
  const double alpha = 1.67326319217681884765625, gamma = 1.05070102214813232421875;
  expect_close(run1("Selu", x),
               apply_float(x, [&](double v) { return v > 0 ? gamma * v : gamma * (alpha * std::exp(v) - alpha); }));
  expect_close(run1("LeakyRelu", x), apply_float(x, [](double v) { return v < 0 ? 0.01 * v : v; }));
  expect_close(run1("LeakyRelu", x, attrs({{"alpha", 0.2f}})),
               apply_float(x, [](double v) { return v < 0 ? 0.2 * v : v; }));
  expect_close(run1("HardSigmoid", x),
               apply_float(x, [](double v) { return std::max(0.0, std::min(1.0, 0.2 * v + 0.5)); }));
  expect_close(run1("HardSigmoid", x, attrs({{"alpha", 0.5f}, {"beta", 0.6f}})),
               apply_float(x, [](double v) { return std::max(0.0, std::min(1.0, 0.5 * v + 0.6)); }));
  expect_close(run1("ThresholdedRelu", x), apply_float(x, [](double v) { return v > 1.0 ? v : 0.0; }));
  expect_close(run1("ThresholdedRelu", x, attrs({{"alpha", 2.0f}})),
               apply_float(x, [](double v) { return v > 2.0 ? v : 0.0; }));
  expect_close(run1("Shrink", x), apply_float(x, [](double v) { return v < -0.5 ? v : (v > 0.5 ? v : 0.0); }));
  expect_close(run1("Shrink", x, attrs({{"lambd", 1.5f}, {"bias", 1.5f}})),
               apply_float(x, [](double v) { return v < -1.5 ? v + 1.5 : (v > 1.5 ? v - 1.5 : 0.0); }));
  expect_close(run1("Gelu", x, {}, 20),
               apply_float(x, [](double v) { return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))); }));
  expect_close(run1("Gelu", x, attrs({{"approximate", std::string("tanh")}}), 20), apply_float(x, [](double v) {
                 return 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
               }));
  EXPECT_THROW(run1("Gelu", x, attrs({{"approximate", std::string("fast")}}), 20), Error);
  expect_close(run1("Swish", x, attrs({{"alpha", 1.702f}}), 24),
               apply_float(x, [](double v) { return v / (1.0 + std::exp(-double(1.702f) * v)); }));
}

TEST(Elementwise, ActivationsStayFiniteAtExtremes) {
  Tensor x = Tensor::from_vector<float>({-1000.0f, -100.0f, 100.0f, 1000.0f}, {4});
  Tensor sigmoid = run1("Sigmoid", x);
  EXPECT_EQ(sigmoid.data<float>()[0], 0.0f);
  EXPECT_EQ(sigmoid.data<float>()[3], 1.0f);
  Tensor softplus = run1("Softplus", x);
  EXPECT_EQ(softplus.data<float>()[0], 0.0f);
  EXPECT_EQ(softplus.data<float>()[3], 1000.0f);
  Tensor mish = run1("Mish", x);
  EXPECT_EQ(mish.data<float>()[3], 1000.0f);
  EXPECT_FALSE(std::isnan(mish.data<float>()[0]));
  Tensor swish = run1("Swish", x);
  EXPECT_EQ(swish.data<float>()[0], -0.0f);
  EXPECT_EQ(swish.data<float>()[3], 1000.0f);
}

TEST(Elementwise, ActivationsKeepNaN) {
  // NaN in, NaN out, as in ONNX's reference, ONNX Runtime and PyTorch. Celu
  // and HardSigmoid used to give 0 and 1: their std::max/std::min drop a NaN.
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor x = Tensor::from_vector<float>({nan, -1.0f, 2.0f}, {3});
  for (const char* op : {"Celu", "HardSigmoid", "HardSwish", "Elu", "Selu", "LeakyRelu", "Relu", "Softplus", "Softsign",
                         "Sigmoid", "Tanh", "Mish", "Swish"}) {
    SCOPED_TRACE(op);
    Tensor y = run1(op, x);
    EXPECT_TRUE(std::isnan(y.data<float>()[0])) << y.data<float>()[0];
    EXPECT_FALSE(std::isnan(y.data<float>()[1]));
  }
}

TEST(Elementwise, IntegerUnaryOps) {
  constexpr int32_t kMin = std::numeric_limits<int32_t>::min();
  Tensor x = Tensor::from_vector<int32_t>({-7, 0, 5, kMin}, {4});
  Tensor abs = run1("Abs", x);
  EXPECT_EQ(abs.values<int32_t>()[0], 7);
  EXPECT_EQ(abs.values<int32_t>()[2], 5);
  EXPECT_EQ(abs.values<int32_t>()[3], kMin);  // wraps, does not trap
  Tensor neg = run1("Neg", x);
  EXPECT_EQ(neg.values<int32_t>()[0], 7);
  EXPECT_EQ(neg.values<int32_t>()[3], kMin);
  Tensor sign = run1("Sign", x);
  EXPECT_EQ(std::vector<int32_t>(sign.values<int32_t>().begin(), sign.values<int32_t>().end()),
            (std::vector<int32_t>{-1, 0, 1, -1}));
  Tensor relu = run1("Relu", Tensor::from_vector<int8_t>({-3, 4}, {2}));
  EXPECT_EQ(relu.values<int8_t>()[0], 0);
  EXPECT_EQ(relu.values<int8_t>()[1], 4);
  Tensor uabs = run1("Abs", Tensor::from_vector<uint8_t>({200, 3}, {2}));
  EXPECT_EQ(uabs.values<uint8_t>()[0], 200);
  Tensor bnot = run1("BitwiseNot", Tensor::from_vector<uint8_t>({0, 0xF0}, {2}));
  EXPECT_EQ(bnot.values<uint8_t>()[0], 0xFF);
  EXPECT_EQ(bnot.values<uint8_t>()[1], 0x0F);
  Tensor lnot = run1("Not", Tensor::from_vector<bool>({true, false}, {2}));
  EXPECT_FALSE(lnot.values<bool>()[0]);
  EXPECT_TRUE(lnot.values<bool>()[1]);
  // Float-only ops reject integers at type inference.
  EXPECT_THROW(run1("Sqrt", x), Error);
  EXPECT_THROW(run1("Neg", Tensor::from_vector<uint8_t>({1}, {1})), Error);
}

TEST(Elementwise, IsNaNAndIsInf) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::nanf("");
  Tensor x = Tensor::from_vector<float>({1.0f, nan, inf, -inf}, {4});
  Tensor isnan = run1("IsNaN", x);
  ASSERT_EQ(isnan.dtype(), DType::boolean);
  EXPECT_EQ((std::vector<bool>(isnan.values<bool>().begin(), isnan.values<bool>().end())),
            (std::vector<bool>{false, true, false, false}));
  auto isinf = [&](const ir::Attributes& a) {
    Tensor y = run1("IsInf", x, a);
    return std::vector<bool>(y.values<bool>().begin(), y.values<bool>().end());
  };
  EXPECT_EQ(isinf({}), (std::vector<bool>{false, false, true, true}));
  EXPECT_EQ(isinf(attrs({{"detect_negative", int64_t{0}}})), (std::vector<bool>{false, false, true, false}));
  EXPECT_EQ(isinf(attrs({{"detect_positive", int64_t{0}}})), (std::vector<bool>{false, false, false, true}));
}

TEST(Elementwise, ClipAttributesBeforeOpset11) {
  Tensor x = Tensor::from_vector<float>({-3, -1, 0, 1, 3}, {5});
  Tensor y = run_op("Clip", {x}, attrs({{"min", -1.5f}, {"max", 2.0f}}), 6)[0];
  EXPECT_EQ((std::vector<float>(y.values<float>().begin(), y.values<float>().end())),
            (std::vector<float>{-1.5f, -1, 0, 1, 2}));
  Tensor only_max = run_op("Clip", {x}, attrs({{"max", 0.5f}}), 6)[0];
  EXPECT_EQ(only_max.values<float>()[0], -3.0f);
  EXPECT_EQ(only_max.values<float>()[4], 0.5f);
}

TEST(Elementwise, ClipInputsFromOpset11) {
  Tensor x = Tensor::from_vector<float>({-3, -1, 0, 1, 3}, {5});
  Tensor y = run_op("Clip", {x, Tensor::scalar(-1.5f), Tensor::scalar(2.0f)}, {}, 13)[0];
  EXPECT_EQ((std::vector<float>(y.values<float>().begin(), y.values<float>().end())),
            (std::vector<float>{-1.5f, -1, 0, 1, 2}));
  Tensor no_min = run_op("Clip", {x, Tensor(), Tensor::scalar(0.0f)}, {}, 13)[0];
  EXPECT_EQ((std::vector<float>(no_min.values<float>().begin(), no_min.values<float>().end())),
            (std::vector<float>{-3, -1, 0, 0, 0}));
  Tensor no_bounds = run_op("Clip", {x}, {}, 13)[0];
  expect_close(no_bounds, x);
  // min > max: everything becomes max.
  Tensor crossed = run_op("Clip", {x, Tensor::scalar(2.0f), Tensor::scalar(1.0f)}, {}, 13)[0];
  for (float v : crossed.values<float>()) EXPECT_EQ(v, 1.0f);
  // Integer inputs and a one-element (rank 1) bound.
  Tensor xi = Tensor::from_vector<int64_t>({-10, 5, 10}, {3});
  Tensor yi = run_op("Clip", {xi, Tensor::from_vector<int64_t>({-2}, {1}), Tensor::scalar<int64_t>(7)}, {}, 13)[0];
  EXPECT_EQ((std::vector<int64_t>(yi.values<int64_t>().begin(), yi.values<int64_t>().end())),
            (std::vector<int64_t>{-2, 5, 7}));
  // A bound of another dtype is rejected.
  EXPECT_THROW(run_op("Clip", {x, Tensor::scalar(1.0)}, {}, 13), Error);
  // A non-scalar bound is rejected.
  EXPECT_THROW(run_op("Clip", {x, Tensor::from_vector<float>({1, 2}, {2})}, {}, 13), Error);
}

TEST(Elementwise, CastFloatToFloat16AndBack) {
  // 1 + 2^-11 is halfway between float16 neighbours 1 and 1 + 2^-10: rounds to even (1).
  // 1 + 3 * 2^-11 is halfway between 1 + 2^-10 and 1 + 2^-9: rounds to even (1 + 2^-9).
  std::vector<float> values = {0.0f, 1.0f, 1.0f + 0x1p-11f, 1.0f + 3 * 0x1p-11f, -2.5f, 65504.0f, 70000.0f, 1e-8f};
  Tensor x = Tensor::from_vector(values, {2, 4});
  Tensor h = run1("Cast", x, attrs({{"to", int64_t{10}}}));
  ASSERT_EQ(h.dtype(), DType::float16);
  Tensor back = run1("Cast", h, attrs({{"to", int64_t{1}}}));
  ASSERT_EQ(back.dtype(), DType::float32);
  ASSERT_EQ(back.shape(), (Shape{2, 4}));
  std::vector<float> want = {0.0f, 1.0f, 1.0f, 1.0f + 0x1p-9f, -2.5f, 65504.0f, std::numeric_limits<float>::infinity(),
                             0.0f};
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(back.data<float>()[i], want[i]) << i;
}

TEST(Elementwise, CastDoubleToFloat16RoundsOnce) {
  // 1 + 2^-11 + 2^-40 is just above the float16 halfway point, so it rounds up;
  // through float (which drops the 2^-40) it would round down to 1.
  Tensor x = Tensor::from_vector<double>({1.0 + 0x1p-11 + 0x1p-40}, {1});
  Tensor h = run1("Cast", x, attrs({{"to", int64_t{10}}}));
  EXPECT_EQ(static_cast<float>(h.data<float16_t>()[0]), 1.0f + 0x1p-10f);
  Tensor b = run1("Cast", Tensor::from_vector<double>({1.0 + 0x1p-8 + 0x1p-40}, {1}), attrs({{"to", int64_t{16}}}));
  EXPECT_EQ(static_cast<float>(b.data<bfloat16_t>()[0]), 1.0f + 0x1p-7f);
}

TEST(Elementwise, CastIntegersAndBool) {
  Tensor x = Tensor::from_vector<float>({-2.7f, -0.5f, 0.0f, 2.9f, 300.0f, std::nanf("")}, {6});
  Tensor i = run1("Cast", x, attrs({{"to", int64_t{7}}}));
  ASSERT_EQ(i.dtype(), DType::int64);
  EXPECT_EQ((std::vector<int64_t>(i.values<int64_t>().begin(), i.values<int64_t>().end())),
            (std::vector<int64_t>{-2, 0, 0, 2, 300, 0}));
  Tensor b = run1("Cast", x, attrs({{"to", int64_t{9}}}));
  EXPECT_EQ((std::vector<bool>(b.values<bool>().begin(), b.values<bool>().end())),
            (std::vector<bool>{true, true, false, true, true, true}));
  Tensor f = run1("Cast", Tensor::from_vector<bool>({true, false}, {2}), attrs({{"to", int64_t{1}}}));
  EXPECT_EQ(f.values<float>()[0], 1.0f);
  EXPECT_EQ(f.values<float>()[1], 0.0f);
  Tensor narrow = run1("Cast", Tensor::from_vector<int32_t>({300, -1}, {2}), attrs({{"to", int64_t{2}}}));
  EXPECT_EQ(narrow.values<uint8_t>()[0], 44);  // 300 mod 256
  EXPECT_EQ(narrow.values<uint8_t>()[1], 255);
  Tensor same = run1("Cast", x, attrs({{"to", int64_t{1}}}));
  expect_close(same, x);
  // Casts to string are valid ONNX that graft does not run.
  try {
    run1("Cast", x, attrs({{"to", int64_t{8}}}));
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::unsupported) << e.what();
  }
}

TEST(Elementwise, CastLikeTakesInputOnesDtype) {
  Tensor x = Tensor::from_vector<float>({1.5f, -2.5f}, {2});
  Tensor like = Tensor::from_vector<int32_t>({0}, {1});
  Tensor y = run_op("CastLike", {x, like}, {}, 15)[0];
  ASSERT_EQ(y.dtype(), DType::int32);
  ASSERT_EQ(y.shape(), (Shape{2}));
  EXPECT_EQ(y.values<int32_t>()[0], 1);
  EXPECT_EQ(y.values<int32_t>()[1], -2);
  auto types =
      infer_op("CastLike", {ir::ValueType::of(DType::float32, {2, 3}), ir::ValueType::of(DType::float16, {})}, {}, 15);
  EXPECT_EQ(types[0], ir::ValueType::of(DType::float16, {2, 3}));
}

TEST(Elementwise, IdentityPassesValuesThrough) {
  Tensor x = Tensor::from_vector<int64_t>({4, 5, 6}, {3});
  Tensor y = run1("Identity", x);
  EXPECT_EQ((std::vector<int64_t>(y.values<int64_t>().begin(), y.values<int64_t>().end())),
            (std::vector<int64_t>{4, 5, 6}));
}

TEST(Elementwise, UnaryTypeInference) {
  using ir::Dim;
  ir::ValueType symbolic{DType::float32, true, {Dim::symbolic("n"), Dim::known(3)}};
  EXPECT_EQ(infer_op("Exp", {symbolic})[0], symbolic);
  ir::ValueType as_bool = symbolic;
  as_bool.dtype = DType::boolean;
  EXPECT_EQ(infer_op("IsNaN", {symbolic})[0], as_bool);
  EXPECT_EQ(infer_op("Cast", {symbolic}, attrs({{"to", int64_t{7}}}))[0].dtype, DType::int64);
  EXPECT_THROW(infer_op("Cast", {symbolic}), Error);  // `to` is required
  EXPECT_THROW(infer_op("Exp", {ir::ValueType::of(DType::int32, {2})}), Error);
  EXPECT_THROW(infer_op("Not", {ir::ValueType::of(DType::float32, {2})}), Error);
}
