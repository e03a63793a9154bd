// ONNX's optimizer ops (ai.onnx.preview.training Adagrad, Momentum, Adam)
// against their specification's formulas written out in double, in what the
// conformance cases leave out: Adam's bias correction (T > 0), float64,
// Adagrad's decay over T, Nesterov momentum with T > 0, two tensors at once;
// and their errors.
#include <gtest/gtest.h>

#include <cmath>

#include "ops/data_op_helpers.h"

using namespace graft;
using graft::testing::attrs;
using graft::testing::expect_error;

namespace {

constexpr const char* kDomain = "ai.onnx.preview.training";

/// One optimizer node over graph inputs fed with `inputs`; all its outputs.
std::vector<Tensor> run_optimizer(const std::string& op, const std::vector<Tensor>& inputs, const ir::Attributes& a,
                                  int num_outputs) {
  ir::Graph g;
  g.opset_imports[kDomain] = 1;
  std::vector<ir::Value> values;
  for (size_t i = 0; i < inputs.size(); ++i)
    values.push_back(
        g.add_input("in" + std::to_string(i), ir::ValueType::of(inputs[i].dtype(), inputs[i].shape()))->output(0));
  ir::Node* n = g.add_node(op, values, num_outputs, "node", kDomain);
  n->attributes = a;
  for (int i = 0; i < num_outputs; ++i) g.add_output(n->output(i), "out" + std::to_string(i));
  return graft::testing::run_graph(g, inputs);
}

Tensor doubles(std::vector<double> v) { return Tensor::from_vector<double>(v, {static_cast<int64_t>(v.size())}); }

TEST(TrainingOptimizers, AdamWithBiasCorrectionInFloat64) {
  const double r = 0.1, alpha = 0.9, beta = 0.99, epsilon = 1e-4, norm = 0.01, post = 0.001;
  const int64_t t = 3;
  const std::vector<double> x{1.0, -2.0, 0.5}, g{0.3, -0.1, 2.0}, v{0.1, 0.0, -0.2}, h{0.5, 0.01, 1.0};
  auto out = run_optimizer(
      "Adam", {Tensor::scalar<double>(r), Tensor::scalar<int64_t>(t), doubles(x), doubles(g), doubles(v), doubles(h)},
      attrs({{"alpha", float(alpha)},
             {"beta", float(beta)},
             {"epsilon", float(epsilon)},
             {"norm_coefficient", float(norm)},
             {"norm_coefficient_post", float(post)}}),
      3);
  ASSERT_EQ(out.size(), 3u);
  const double a = double(float(alpha)), b = double(float(beta)), e = double(float(epsilon)), n = double(float(norm)),
               p = double(float(post));
  const double rate = r * std::sqrt(1 - std::pow(b, t)) / (1 - std::pow(a, t));
  for (size_t i = 0; i < x.size(); ++i) {
    const double gr = n * x[i] + g[i];
    const double v_new = a * v[i] + (1 - a) * gr, h_new = b * h[i] + (1 - b) * gr * gr;
    const double x_new = (1 - p) * (x[i] - rate * v_new / (std::sqrt(h_new) + e));
    EXPECT_NEAR(out[0].data<double>()[i], x_new, 1e-12) << i;
    EXPECT_NEAR(out[1].data<double>()[i], v_new, 1e-12) << i;
    EXPECT_NEAR(out[2].data<double>()[i], h_new, 1e-12) << i;
  }
}

TEST(TrainingOptimizers, AdagradDecaysTheRateWithT) {
  const float r = 0.5f, decay = 0.25f, epsilon = 1e-3f, norm = 0.1f;
  auto out =
      run_optimizer("Adagrad",
                    {Tensor::scalar<float>(r), Tensor::scalar<int64_t>(4), Tensor::from_vector<float>({2.0f}, {1}),
                     Tensor::from_vector<float>({-1.0f}, {1}), Tensor::from_vector<float>({0.5f}, {1})},
                    attrs({{"decay_factor", decay}, {"epsilon", epsilon}, {"norm_coefficient", norm}}), 2);
  const double gr = double(norm) * 2.0 - 1.0, h_new = 0.5 + gr * gr;
  const double x_new = 2.0 - double(r) / (1 + 4 * double(decay)) * gr / (std::sqrt(h_new) + double(epsilon));
  EXPECT_NEAR(out[0].data<float>()[0], x_new, 1e-6);
  EXPECT_NEAR(out[1].data<float>()[0], h_new, 1e-6);
}

TEST(TrainingOptimizers, MomentumOfTwoTensorsStandardAndNesterov) {
  for (const char* mode : {"standard", "nesterov"}) {
    SCOPED_TRACE(mode);
    const bool nesterov = std::string(mode) == "nesterov";
    for (int64_t t : {0, 2}) {
      const float r = 0.1f, alpha = 0.9f, beta = 0.5f, norm = 0.01f;
      const std::vector<float> x1{1.0f}, x2{2.0f, -3.0f}, g1{0.5f}, g2{-1.0f, 0.25f}, v1{0.2f}, v2{0.0f, 1.0f};
      auto out = run_optimizer(
          "Momentum",
          {Tensor::scalar<float>(r), Tensor::scalar<int64_t>(t), Tensor::from_vector<float>(x1, {1}),
           Tensor::from_vector<float>(x2, {2}), Tensor::from_vector<float>(g1, {1}),
           Tensor::from_vector<float>(g2, {2}), Tensor::from_vector<float>(v1, {1}),
           Tensor::from_vector<float>(v2, {2})},
          attrs({{"alpha", alpha}, {"beta", beta}, {"mode", std::string(mode)}, {"norm_coefficient", norm}}), 4);
      ASSERT_EQ(out.size(), 4u);
      auto check = [&](const std::vector<float>& x, const std::vector<float>& g, const std::vector<float>& v,
                       const Tensor& x_out, const Tensor& v_out) {
        for (size_t i = 0; i < x.size(); ++i) {
          const double gr = double(norm) * x[i] + g[i];
          const double v_new = double(alpha) * v[i] + (t > 0 ? double(beta) : 1.0) * gr;
          const double x_new = x[i] - double(r) * (nesterov ? gr + double(alpha) * v_new : v_new);
          EXPECT_NEAR(x_out.data<float>()[i], x_new, 1e-6) << "t " << t << " element " << i;
          EXPECT_NEAR(v_out.data<float>()[i], v_new, 1e-6) << "t " << t << " element " << i;
        }
      };
      check(x1, g1, v1, out[0], out[2]);
      check(x2, g2, v2, out[1], out[3]);
    }
  }
}

TEST(TrainingOptimizers, ErrorsNameWhatIsWrong) {
  const Tensor r = Tensor::scalar<float>(0.1f), t = Tensor::scalar<int64_t>(0),
               x = Tensor::from_vector<float>({1}, {1});
  // Adam needs X, G, V and H for each tensor: 7 inputs are not R, T and groups of 4.
  expect_error(ErrorKind::invalid_model, [&] { run_optimizer("Adam", {r, t, x, x, x, x, x}, {}, 3); });
  // Momentum's mode is standard or nesterov.
  expect_error(ErrorKind::invalid_model, [&] {
    run_optimizer("Momentum", {r, t, x, x, x},
                  attrs({{"alpha", 0.9f}, {"beta", 1.0f}, {"mode", std::string("heavy")}, {"norm_coefficient", 0.0f}}),
                  2);
  });
  // T is an int64 scalar.
  expect_error(ErrorKind::invalid_model, [&] {
    run_optimizer("Adagrad", {r, Tensor::scalar<float>(1), x, x, x}, {}, 2);
  });
  // A gradient of another shape than its tensor.
  expect_error(ErrorKind::invalid_model, [&] {
    run_optimizer("Adagrad", {r, t, x, Tensor::from_vector<float>({1, 2}, {2}), x}, {}, 2);
  });
}

}  // namespace
