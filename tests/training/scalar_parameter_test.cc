// A trainable parameter of one element (a scalar scale, a [1] offset) and
// the optimizer's one-element state: the kernels that read them (fused
// pointwise kernels, dnnl's eltwise primitives) must see the value each
// step left, not the initial one copied into the kernel as a literal.
#include <gtest/gtest.h>

#include <cmath>

#include "graft/backend/backend.h"
#include "graft/training/trainer.h"

namespace graft {
namespace {

using ir::OpId;
using ir::Value;

constexpr int64_t kSamples = 8, kFeatures = 4;
const std::vector<float> kProjection{0.5f, -0.25f, 1.0f, 0.75f};

/// loss = mean((x @ projection * scale + offset - target)^2), scale of shape
/// [] and offset of shape [1]: both one-element initializers. The projection
/// (not trained) gives dnnl a MatMul to take the Mul and Add into as
/// post-ops.
std::unique_ptr<ir::Graph> scaled_regression(float scale, float offset) {
  auto g = std::make_unique<ir::Graph>();
  g->opset_imports[""] = 17;
  Value x = g->add_input("x", ir::ValueType::of(DType::float32, {kSamples, kFeatures}))->output(0);
  Value target = g->add_input("target", ir::ValueType::of(DType::float32, {kSamples, 1}))->output(0);
  Value w = g->add_constant("projection", Tensor::from_vector<float>(kProjection, {kFeatures, 1}))->output(0);
  Value s = g->add_constant("scale", Tensor::from_vector<float>({scale}, {}))->output(0);
  Value b = g->add_constant("offset", Tensor::from_vector<float>({offset}, {1}))->output(0);
  Value f = g->add_node(OpId::MatMul, {x, w})->output(0);
  Value y = g->add_node(OpId::Add, {g->add_node(OpId::Mul, {f, s})->output(0), b})->output(0);
  Value error = g->add_node(OpId::Sub, {y, target})->output(0);
  ir::Node* mean = g->add_node(OpId::ReduceMean, {g->add_node(OpId::Mul, {error, error})->output(0)});
  mean->attributes.set("keepdims", int64_t{0});
  g->add_output(mean->output(0), "loss");
  return g;
}

std::vector<float> step_x(int k) {
  std::vector<float> x(kSamples * kFeatures);
  for (size_t i = 0; i < x.size(); ++i) x[i] = 0.125f * static_cast<float>(static_cast<int>(i % 7) - 3) + 0.1f * k;
  return x;
}

/// x @ projection, in double.
std::vector<double> projected(const std::vector<float>& x) {
  std::vector<double> f(kSamples, 0.0);
  for (size_t i = 0; i < f.size(); ++i)
    for (size_t j = 0; j < kProjection.size(); ++j) f[i] += x[i * kProjection.size() + j] * kProjection[j];
  return f;
}

std::vector<float> step_target(int k) {
  std::vector<float> t;
  // What the training should approach: scale 2, offset -0.5.
  for (double f : projected(step_x(k))) t.push_back(static_cast<float>(2.0 * f - 0.5));
  return t;
}

/// What a step computes, in double: the loss before the update and the
/// gradients of the scale and the offset.
struct Reference {
  double loss = 0, d_scale = 0, d_offset = 0;
};

Reference reference_step(double scale, double offset, int k) {
  std::vector<double> x = projected(step_x(k));
  std::vector<float> t = step_target(k);
  Reference r;
  for (size_t i = 0; i < x.size(); ++i) {
    double e = x[i] * scale + offset - t[i];
    r.loss += e * e / kSamples;
    r.d_scale += 2 * e * x[i] / kSamples;
    r.d_offset += 2 * e / kSamples;
  }
  return r;
}

float value_of(const Tensor& t) {
  EXPECT_EQ(t.numel(), 1);
  return t.data<float>()[0];
}

bool has_backend(const std::string& name) {
  for (const backend::Backend* b : backend::all_backends())
    if (b->name() == name) return true;
  return false;
}

/// Runs six steps of `options` and checks each step's loss and the
/// parameters it leaves against the same steps in double, with the
/// optimizer's formulas written out (torch.optim.SGD with momentum, AdamW).
void expect_steps_follow_the_reference(training::TrainerOptions options, const std::string& what) {
  const double lr = options.learning_rate;
  auto model = scaled_regression(0.5f, 0.25f);
  training::Trainer trainer(*model, options);
  double scale = 0.5, offset = 0.25;
  double momentum_s = 0, momentum_b = 0;            // SGD
  double m_s = 0, v_s = 0, m_b = 0, v_b = 0;        // AdamW
  const auto& o = options.optimizer;
  for (int k = 1; k <= 6; ++k) {
    Reference r = reference_step(scale, offset, k);
    float loss = trainer.step({{"x", Tensor::from_vector<float>(step_x(k), {kSamples, kFeatures})},
                               {"target", Tensor::from_vector<float>(step_target(k), {kSamples, 1})}});
    if (o.kind == training::OptimizerKind::sgd) {
      momentum_s = k == 1 ? r.d_scale : o.momentum * momentum_s + r.d_scale;
      momentum_b = k == 1 ? r.d_offset : o.momentum * momentum_b + r.d_offset;
      scale -= lr * momentum_s;
      offset -= lr * momentum_b;
    } else {
      auto adamw = [&](double& w, double& m, double& v, double g) {
        w *= 1 - lr * o.weight_decay;
        m = o.beta1 * m + (1 - o.beta1) * g;
        v = o.beta2 * v + (1 - o.beta2) * g * g;
        double step_size = lr / (1 - std::pow(o.beta1, k));
        w -= step_size * m / (std::sqrt(v) / std::sqrt(1 - std::pow(o.beta2, k)) + o.epsilon);
      };
      adamw(scale, m_s, v_s, r.d_scale);
      adamw(offset, m_b, v_b, r.d_offset);
    }
    EXPECT_NEAR(loss, r.loss, 1e-5 * (1 + r.loss)) << what << ", the loss of step " << k;
    EXPECT_NEAR(value_of(trainer.parameter("scale")), scale, 1e-5) << what << ", the scale after step " << k;
    EXPECT_NEAR(value_of(trainer.parameter("offset")), offset, 1e-5) << what << ", the offset after step " << k;
  }
}

training::TrainerOptions options_for(training::OptimizerKind kind, std::vector<std::string> backends, bool fusion) {
  training::TrainerOptions o;
  o.loss = "loss";
  o.parameters = {"scale", "offset"};
  o.optimizer.kind = kind;
  o.optimizer.momentum = kind == training::OptimizerKind::sgd ? 0.9f : 0.0f;
  o.optimizer.weight_decay = kind == training::OptimizerKind::adamw ? 0.01f : 0.0f;
  o.learning_rate = kind == training::OptimizerKind::sgd ? 0.05f : 0.1f;
  o.session.num_threads = 1;
  o.session.backends = std::move(backends);
  o.session.fusion = fusion;
  return o;
}

TEST(ScalarParameter, UnfusedStepsFollowTheReference) {
  expect_steps_follow_the_reference(options_for(training::OptimizerKind::sgd, {"ref"}, false), "sgd, ref");
  expect_steps_follow_the_reference(options_for(training::OptimizerKind::adamw, {"ref"}, false), "adamw, ref");
}

TEST(ScalarParameter, FusedKernelsReadTheUpdatedValueEveryStep) {
  expect_steps_follow_the_reference(options_for(training::OptimizerKind::sgd, {"ref"}, true), "sgd, fused");
  expect_steps_follow_the_reference(options_for(training::OptimizerKind::adamw, {"ref"}, true), "adamw, fused");
}

TEST(ScalarParameter, EveryBackendReadsTheUpdatedValueEveryStep) {
  if (!has_backend("dnnl")) GTEST_SKIP() << "dnnl is not built";
  expect_steps_follow_the_reference(options_for(training::OptimizerKind::sgd, {"dnnl", "ref"}, true),
                                    "sgd, dnnl and fused");
  expect_steps_follow_the_reference(options_for(training::OptimizerKind::adamw, {"dnnl", "ref"}, true),
                                    "adamw, dnnl and fused");
  expect_steps_follow_the_reference(options_for(training::OptimizerKind::sgd, {"dnnl", "ref"}, false),
                                    "sgd, dnnl");
}

}  // namespace
}  // namespace graft
