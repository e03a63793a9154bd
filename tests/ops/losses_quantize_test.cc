// NegativeLogLikelihoodLoss / SoftmaxCrossEntropyLoss (weights, ignore_index,
// reductions) and the linear quantization ops.
#include <gtest/gtest.h>

#include <cmath>

#include "ops/math_op_runner.h"

using namespace graft;
using namespace graft::testing;

namespace {

/// Reference NLL over [N, C, D] log-probabilities with optional weights and ignore_index.
double reference_nll(const Tensor& input, const std::vector<int64_t>& target, const std::vector<float>* weight,
                     std::optional<int64_t> ignore, const std::string& reduction, std::vector<double>* per_position) {
  const int64_t N = input.dim(0), C = input.dim(1), D = input.numel() / (N * C);
  double total = 0, total_weight = 0;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t d = 0; d < D; ++d) {
      int64_t t = target[static_cast<size_t>(n * D + d)];
      double loss = 0, w = 0;
      if (!(ignore && t == *ignore)) {
        w = weight ? (*weight)[static_cast<size_t>(t)] : 1.0;
        loss = -input.value_as_double((n * C + t) * D + d) * w;
      }
      if (per_position) per_position->push_back(loss);
      total += loss;
      total_weight += w;
    }
  return reduction == "sum" ? total : total / total_weight;
}

}  // namespace

TEST(Losses, NegativeLogLikelihoodAllReductions) {
  Tensor input = random_tensor({3, 5, 2}, 1);
  std::vector<int64_t> targets = {0, 4, 2, -1, 1, 3};
  Tensor target = Tensor::from_vector<int64_t>(targets, {3, 2});
  std::vector<float> weights = {0.5f, 1.0f, 2.0f, 0.25f, 3.0f};
  Tensor weight = Tensor::from_vector<float>(weights, {5});
  for (const std::string reduction : {"none", "sum", "mean"}) {
    for (bool with_weight : {false, true}) {
      SCOPED_TRACE(reduction + (with_weight ? " weighted" : ""));
      auto a = attrs({{"reduction", reduction}, {"ignore_index", int64_t{-1}}});
      std::vector<Tensor> ins = {input, target};
      if (with_weight) ins.push_back(weight);
      Tensor y = run_op("NegativeLogLikelihoodLoss", ins, a, 13)[0];
      std::vector<double> per;
      double want = reference_nll(input, targets, with_weight ? &weights : nullptr, -1, reduction, &per);
      if (reduction == "none") {
        ASSERT_EQ(y.shape(), (Shape{3, 2}));
        for (int i = 0; i < 6; ++i) EXPECT_NEAR(y.data<float>()[i], per[i], 1e-6);
      } else {
        ASSERT_EQ(y.shape(), Shape{});
        EXPECT_NEAR(y.data<float>()[0], want, 1e-5);
      }
    }
  }
  // Out-of-range targets are an error unless ignored.
  EXPECT_THROW(run_op("NegativeLogLikelihoodLoss", {input, target}, {}, 13), Error);
  EXPECT_THROW(run_op("NegativeLogLikelihoodLoss", {input, Tensor::from_vector<int64_t>({0, 1, 2}, {3})}, {}, 13),
               Error);
}

TEST(Losses, SoftmaxCrossEntropyWithLogProb) {
  Tensor scores = random_tensor({2, 4, 3}, 7);
  std::vector<int64_t> targets = {1, 3, 0, 2, 2, 1};
  Tensor target = Tensor::from_vector<int64_t>(targets, {2, 3});
  Tensor weight = Tensor::from_vector<float>({1.0f, 2.0f, 0.5f, 1.5f}, {4});
  auto outs = run_op("SoftmaxCrossEntropyLoss", {scores, target, weight}, {}, 13, 2);
  ASSERT_EQ(outs[1].shape(), scores.shape());
  // log_prob is log_softmax over axis 1.
  Tensor log_prob(DType::float32, scores.shape());
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t d = 0; d < 3; ++d) {
      double s = 0;
      for (int64_t c = 0; c < 4; ++c) s += std::exp(scores.data<float>()[(n * 4 + c) * 3 + d]);
      for (int64_t c = 0; c < 4; ++c)
        log_prob.data<float>()[(n * 4 + c) * 3 + d] = scores.data<float>()[(n * 4 + c) * 3 + d] - std::log(s);
    }
  expect_close(outs[1], log_prob, 1e-5, 1e-6);
  std::vector<float> w = {1.0f, 2.0f, 0.5f, 1.5f};
  EXPECT_NEAR(outs[0].data<float>()[0], reference_nll(log_prob, targets, &w, std::nullopt, "mean", nullptr), 1e-5);
  Tensor none = run_op("SoftmaxCrossEntropyLoss", {scores, target}, attrs({{"reduction", std::string("none")}}), 13)[0];
  EXPECT_EQ(none.shape(), (Shape{2, 3}));
  EXPECT_NEAR(none.data<float>()[0], -log_prob.data<float>()[1 * 3 + 0], 1e-5);
  auto t =
      infer_op("SoftmaxCrossEntropyLoss",
               {ir::ValueType{DType::float32, true, {sym("N"), dim(4)}}, ir::ValueType{DType::int64, true, {sym("N")}}},
               attrs({{"reduction", std::string("none")}}), 13, 2);
  EXPECT_EQ(t[0], (ir::ValueType{DType::float32, true, {sym("N")}}));
  EXPECT_EQ(t[1], (ir::ValueType{DType::float32, true, {sym("N"), dim(4)}}));
}

TEST(Quantize, QuantizeDequantizeRoundTripAndPerAxis) {
  Tensor x = Tensor::from_vector<float>({0.0f, 2.0f, 3.0f, 1000.0f, -254.0f, -1000.0f, 2.5f, 3.5f}, {8});
  Tensor y = run_op("QuantizeLinear", {x, Tensor::scalar(2.0f), Tensor::scalar<uint8_t>(128)}, {}, 13)[0];
  ASSERT_EQ(y.dtype(), DType::uint8);
  // 2.5 / 2 = 1.25 -> 1; 3.5 / 2 = 1.75 -> 2; 3 / 2 = 1.5 -> 2 (ties to even); saturation at 0 and 255.
  EXPECT_EQ(y.to_int64_vector(), (std::vector<int64_t>{128, 129, 130, 255, 1, 0, 129, 130}));
  Tensor yi = run_op("QuantizeLinear", {x, Tensor::scalar(2.0f), Tensor::scalar<int8_t>(-1)}, {}, 13)[0];
  EXPECT_EQ(yi.to_int64_vector(), (std::vector<int64_t>{-1, 0, 1, 127, -128, -128, 0, 1}));
  Tensor d = run_op("DequantizeLinear", {y, Tensor::scalar(2.0f), Tensor::scalar<uint8_t>(128)}, {}, 13)[0];
  EXPECT_EQ(std::vector<float>(d.values<float>().begin(), d.values<float>().end()),
            (std::vector<float>{0, 2, 4, 254, -254, -256, 2, 4}));
  // Per axis 1 on [2, 3]: scale and zero point per column.
  Tensor x2 = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor scales = Tensor::from_vector<float>({1, 2, 4}, {3});
  Tensor zeros = Tensor::from_vector<uint8_t>({0, 10, 20}, {3});
  Tensor q = run_op("QuantizeLinear", {x2, scales, zeros}, {}, 13)[0];
  EXPECT_EQ(q.to_int64_vector(), (std::vector<int64_t>{1, 11, 21, 4, 12, 22}));
  Tensor dq = run_op("DequantizeLinear", {q, scales, zeros}, attrs({{"axis", int64_t{-1}}}), 13)[0];
  EXPECT_EQ(dq.value_as_double(4), 4.0);
  EXPECT_THROW(run_op("QuantizeLinear", {x2, Tensor::from_vector<float>({1, 2}, {2})}, {}, 13), Error);
  // Without zero point: uint8.
  EXPECT_EQ(run_op("QuantizeLinear", {x2, Tensor::scalar(0.5f)}, {}, 10)[0].dtype(), DType::uint8);
}

// DequantizeLinear per axis on a tensor of several parallel chunks (a
// folded weight's dequantization): every element is (x - z[c]) * s[c] as
// the double formula gives it, for each axis, for 8-, 16- and 32-bit x, and
// for float32, float16 and float64 scales.
TEST(Quantize, DequantizePerAxisOfALargeTensorIsTheDoubleFormula) {
  const Shape shape = {3, 7, 2011};  // 42231 values: runs of a parameter cross chunk boundaries
  auto check = [&]<typename X, typename S>(int64_t axis) {
    const int64_t n = 3 * 7 * 2011, channels = shape[static_cast<size_t>(axis)];
    int64_t inner = 1;
    for (size_t d = static_cast<size_t>(axis) + 1; d < shape.size(); ++d) inner *= shape[d];
    std::vector<X> x(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i)
      x[static_cast<size_t>(i)] = static_cast<X>((i * 7919) % 251 - (std::is_signed_v<X> ? 125 : 0));
    std::vector<S> scale(static_cast<size_t>(channels));
    std::vector<X> zero(static_cast<size_t>(channels));
    for (int64_t c = 0; c < channels; ++c) {
      scale[static_cast<size_t>(c)] = static_cast<S>(0.0173f * static_cast<float>(c + 1) + 1e-4f);
      zero[static_cast<size_t>(c)] = static_cast<X>(c % 5);
    }
    Tensor y = run_op("DequantizeLinear",
                      {Tensor::from_vector<X>(x, shape), Tensor::from_vector<S>(scale, {channels}),
                       Tensor::from_vector<X>(zero, {channels})},
                      attrs({{"axis", axis}}), 13)[0];
    ASSERT_EQ(y.dtype(), dtype_v<S>);
    for (int64_t i = 0; i < n; ++i) {
      const size_t c = static_cast<size_t>((i / inner) % channels);
      const double v = (static_cast<double>(x[static_cast<size_t>(i)]) - static_cast<double>(zero[c])) *
                       static_cast<double>(static_cast<compute_t<S>>(scale[c]));
      const S want = static_cast<S>(static_cast<compute_t<S>>(v));
      ASSERT_EQ(static_cast<double>(static_cast<compute_t<S>>(y.data<S>()[i])),
                static_cast<double>(static_cast<compute_t<S>>(want)))
          << "element " << i << ", axis " << axis << ", x " << dtype_name(dtype_v<X>) << ", scale "
          << dtype_name(dtype_v<S>);
    }
  };
  for (int64_t axis : {0, 1, 2}) {
    check.template operator()<int8_t, float>(axis);
    check.template operator()<uint8_t, float>(axis);
    check.template operator()<int16_t, float>(axis);
    check.template operator()<int32_t, float>(axis);
    check.template operator()<int8_t, double>(axis);
    check.template operator()<uint8_t, float16_t>(axis);
  }
}

TEST(Quantize, Opset21OutputDtypeAndBlockedQuantization) {
  Tensor x = Tensor::from_vector<float>({-3.0f, -0.26f, 0.0f, 0.24f, 9.0f}, {5});
  Tensor scale = Tensor::scalar(0.5f);
  ir::Attributes int8_out;
  int8_out.set("output_dtype", int64_t{3});  // int8, with no zero point to say so
  Tensor q = run_op("QuantizeLinear", {x, scale}, int8_out, 21)[0];
  ASSERT_EQ(q.dtype(), DType::int8);
  const int8_t want[] = {-6, -1, 0, 0, 18};  // round half to even: -0.52 -> -1, 0.48 -> 0
  for (int i = 0; i < 5; ++i) EXPECT_EQ(q.data<int8_t>()[i], want[i]) << i;
  // A zero point decides; an output_dtype that contradicts it is an error.
  ir::Attributes uint8_out;
  uint8_out.set("output_dtype", int64_t{2});
  EXPECT_THROW(run_op("QuantizeLinear", {x, scale, Tensor::scalar<int8_t>(0)}, uint8_out, 21), Error);
  ir::Attributes float_out;
  float_out.set("output_dtype", int64_t{1});
  EXPECT_THROW(run_op("QuantizeLinear", {x, scale}, float_out, 21), Error);
  // Blocked quantization is refused by name.
  ir::Attributes blocked;
  blocked.set("block_size", int64_t{2});
  try {
    run_op("QuantizeLinear", {x, scale}, blocked, 21);
    ADD_FAILURE() << "blocked quantization ran";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::unsupported);
    EXPECT_NE(std::string(e.what()).find("blocked quantization"), std::string::npos) << e.what();
  }
}

TEST(Quantize, DynamicQuantizeLinear) {
  Tensor x = Tensor::from_vector<float>({0, 2, -3, -2.5f, 1.34f, 0.5f}, {6});
  auto outs = run_op("DynamicQuantizeLinear", {x}, {}, 11, 3);
  const float scale = 5.0f / 255.0f;
  EXPECT_FLOAT_EQ(outs[1].data<float>()[0], scale);
  EXPECT_EQ(outs[2].data<uint8_t>()[0], 153);  // round(3 / scale) = 153
  EXPECT_EQ(outs[0].to_int64_vector(), (std::vector<int64_t>{153, 255, 0, 26, 221, 179}));
  auto zero = run_op("DynamicQuantizeLinear", {Tensor::from_vector<float>({0, 0}, {2})}, {}, 11, 3);
  EXPECT_EQ(zero[0].to_int64_vector(), (std::vector<int64_t>{0, 0}));
}
