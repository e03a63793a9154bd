// training::Trainer: the optimizers' updates against hand-computed ones and
// PyTorch's formulas over several steps, the in-place update of the session's
// weights (versions bumped, a backend that converts weights sees the new
// values), where the update fuses, the exported model, the errors.
#include "graft/training/trainer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "graft/backend/backend.h"
#include "graft/core/error.h"
#include "support/graph_runner.h"
#include "support/trainer_options.h"
#include "support/training_mlp.h"

namespace graft {
namespace {

using ir::OpId;
using ir::Value;

/// loss = sum(w * x): the gradient of w is x.
std::unique_ptr<ir::Graph> linear_model(const std::vector<float>& w0) {
  auto g = std::make_unique<ir::Graph>();
  g->opset_imports[""] = 17;
  Value x = g->add_input("x", ir::ValueType::of(DType::float32, {static_cast<int64_t>(w0.size())}))->output(0);
  Value w = g->add_constant("w", Tensor::from_vector<float>(w0, {static_cast<int64_t>(w0.size())}))->output(0);
  ir::Node* sum = g->add_node(OpId::ReduceSum, {g->add_node(OpId::Mul, {w, x})->output(0)});
  sum->attributes.set("keepdims", int64_t{0});
  g->add_output(sum->output(0), "loss");
  return g;
}

std::vector<float> values(const Tensor& t) { return std::vector<float>(t.data<float>(), t.data<float>() + t.numel()); }

/// The x of step k (1-based): changes every step, so momentum and moments matter.
std::vector<float> step_input(int k) { return {1.0f * k, -2.0f + k, 0.5f * k * k}; }

using testing::trainer_options;

TEST(Optimizers, SgdFirstStepIsTheHandComputedOne) {
  auto model = linear_model({0.5f, -1.0f, 2.0f});
  auto o = trainer_options(training::OptimizerKind::sgd, 0.1f);
  o.optimizer.momentum = 0.9f;
  o.optimizer.weight_decay = 0.01f;
  training::Trainer trainer(*model, o);
  float loss = trainer.step({{"x", Tensor::from_vector<float>({1, 2, -3}, {3})}});
  EXPECT_FLOAT_EQ(loss, 0.5f - 2.0f - 6.0f);
  // w - lr (x + wd w): the momentum buffer starts at the first gradient.
  std::vector<float> w = values(trainer.parameter("w"));
  EXPECT_NEAR(w[0], 0.5 - 0.1 * (1 + 0.005), 1e-6);
  EXPECT_NEAR(w[1], -1.0 - 0.1 * (2 - 0.01), 1e-6);
  EXPECT_NEAR(w[2], 2.0 - 0.1 * (-3 + 0.02), 1e-6);
}

/// torch.optim.SGD (dampening 0) in double, written out.
std::vector<double> torch_sgd(std::vector<double> w, int steps, double lr, double momentum, double decay,
                              bool nesterov) {
  std::vector<double> buffer(w.size(), 0.0);
  for (int k = 1; k <= steps; ++k) {
    std::vector<float> x = step_input(k);
    for (size_t i = 0; i < w.size(); ++i) {
      double d = x[i] + decay * w[i];
      if (momentum != 0) {
        buffer[i] = k == 1 ? d : momentum * buffer[i] + d;
        d = nesterov ? d + momentum * buffer[i] : buffer[i];
      }
      w[i] -= lr * d;
    }
  }
  return w;
}

/// torch.optim.AdamW in double, written out.
std::vector<double> torch_adamw(std::vector<double> w, int steps, double lr, double beta1, double beta2, double eps,
                                double decay) {
  std::vector<double> m(w.size(), 0.0), v(w.size(), 0.0);
  for (int k = 1; k <= steps; ++k) {
    std::vector<float> x = step_input(k);
    for (size_t i = 0; i < w.size(); ++i) {
      w[i] *= 1 - lr * decay;
      m[i] = beta1 * m[i] + (1 - beta1) * x[i];
      v[i] = beta2 * v[i] + (1 - beta2) * x[i] * x[i];
      double step_size = lr / (1 - std::pow(beta1, k));
      double denominator = std::sqrt(v[i]) / std::sqrt(1 - std::pow(beta2, k)) + eps;
      w[i] -= step_size * m[i] / denominator;
    }
  }
  return w;
}

void expect_steps_match(training::Trainer& trainer, const std::function<std::vector<double>(int)>& expected) {
  for (int k = 1; k <= 5; ++k) {
    trainer.step({{"x", Tensor::from_vector<float>(step_input(k), {3})}});
    std::vector<float> got = values(trainer.parameter("w"));
    std::vector<double> want = expected(k);
    for (size_t i = 0; i < got.size(); ++i)
      EXPECT_NEAR(got[i], want[i], 2e-5 * (1 + std::abs(want[i]))) << "step " << k << " w[" << i << "]";
  }
}

TEST(Optimizers, SgdWithMomentumAndDecayFollowsPyTorchOverSteps) {
  const std::vector<float> w0{0.5f, -1.0f, 2.0f};
  for (bool nesterov : {false, true}) {
    auto model = linear_model(w0);
    auto o = trainer_options(training::OptimizerKind::sgd, 0.05f);
    o.optimizer.momentum = 0.9f;
    o.optimizer.weight_decay = 0.1f;
    o.optimizer.nesterov = nesterov;
    training::Trainer trainer(*model, o);
    expect_steps_match(trainer, [&](int k) { return torch_sgd({0.5, -1.0, 2.0}, k, 0.05, 0.9, 0.1, nesterov); });
  }
}

TEST(Optimizers, PlainSgdHasNoState) {
  auto model = linear_model({0.5f, -1.0f, 2.0f});
  training::Trainer trainer(*model, trainer_options(training::OptimizerKind::sgd, 0.1f));
  expect_steps_match(trainer, [&](int k) { return torch_sgd({0.5, -1.0, 2.0}, k, 0.1, 0.0, 0.0, false); });
  EXPECT_EQ(trainer.last_step_stats().state_bytes, 0u);
}

TEST(Optimizers, AdamWFollowsPyTorchOverSteps) {
  auto model = linear_model({0.5f, -1.0f, 2.0f});
  auto o = trainer_options(training::OptimizerKind::adamw, 0.01f);
  o.optimizer.weight_decay = 0.1f;
  training::Trainer trainer(*model, o);
  expect_steps_match(trainer, [&](int k) { return torch_adamw({0.5, -1.0, 2.0}, k, 0.01, 0.9, 0.999, 1e-8, 0.1); });
  EXPECT_EQ(trainer.last_step_stats().state_bytes, 2 * 3 * sizeof(float));
}

TEST(Optimizers, ALearningRateScheduleNeedsNoNewPlan) {
  auto model = linear_model({0.5f, -1.0f, 2.0f});
  training::Trainer trainer(*model, trainer_options(training::OptimizerKind::sgd, 0.1f));
  trainer.step({{"x", Tensor::from_vector<float>({1, 1, 1}, {3})}});
  size_t compiles = trainer.session()->num_compiles();
  trainer.set_learning_rate(0.5f);
  trainer.step({{"x", Tensor::from_vector<float>({1, 1, 1}, {3})}});
  EXPECT_NEAR(values(trainer.parameter("w"))[0], 0.5 - 0.1 - 0.5, 1e-6);
  EXPECT_EQ(trainer.session()->num_compiles(), compiles);
}

/// The constant named `name` in the session's prepared graph (or its subgraphs).
const ir::Node* find_constant(const ir::Graph& graph, const std::string& name) {
  for (const auto& n : graph.nodes()) {
    if (n->op() == OpId::Constant && !n->output_names.empty() && n->output_names[0] == name) return n.get();
    if (n->subgraph)
      if (const ir::Node* found = find_constant(*n->subgraph, name)) return found;
  }
  return nullptr;
}

TEST(InPlaceUpdate, TheSessionsWeightHoldsTheNewValueAndANewVersion) {
  auto model = linear_model({0.5f, -1.0f, 2.0f});
  training::Trainer trainer(*model, trainer_options(training::OptimizerKind::sgd, 0.1f));
  trainer.step({{"x", Tensor::from_vector<float>({1, 2, 3}, {3})}});
  const ir::Node* w = find_constant(trainer.session()->graph(), "w");
  ASSERT_NE(w, nullptr);
  uint64_t version = w->constant_value.storage()->version();
  const void* bytes = w->constant_value.raw_data();
  trainer.step({{"x", Tensor::from_vector<float>({1, 2, 3}, {3})}});
  EXPECT_GT(w->constant_value.storage()->version(), version);
  EXPECT_EQ(w->constant_value.raw_data(), bytes);  // written in place, not replaced
  EXPECT_EQ(values(w->constant_value), values(trainer.parameter("w")));
  EXPECT_NEAR(values(w->constant_value)[2], 2.0 - 2 * 0.1 * 3, 1e-6);
  // The caller's model is left as it was.
  EXPECT_EQ(values(model->nodes()[1]->constant_value), (std::vector<float>{0.5f, -1.0f, 2.0f}));
}

// The tiny MLP of testing::training_mlp: x[8,6] -> Gemm(w1, b1) -> Relu ->
// Gemm(w2, b2) -> SoftmaxCrossEntropyLoss(labels); its batches of 8.
using testing::training_mlp;
std::map<std::string, Tensor> mlp_batch(uint64_t seed) { return testing::training_mlp_batch(8, seed); }

TEST(Trainer, TheLossOfATinyMlpDecreases) {
  auto model = training_mlp();
  training::Trainer trainer(*model, trainer_options(training::OptimizerKind::adamw, 0.01f));
  auto batch = mlp_batch(0);
  float first = trainer.step(batch), last = first;
  for (int k = 0; k < 40; ++k) last = trainer.step(batch);
  EXPECT_LT(last, 0.5f * first);
  EXPECT_EQ(trainer.steps(), 41);
  EXPECT_EQ(trainer.parameters(), (std::vector<std::string>{"w1", "b1", "w2", "b2"}));
  EXPECT_GT(trainer.last_step_stats().peak_bytes, 0u);
  EXPECT_EQ(trainer.last_step_stats().parameter_bytes, (6 * 16 + 16 + 16 * 4 + 4) * sizeof(float));
}

bool has_backend(const std::string& name) {
  for (const backend::Backend* b : backend::all_backends())
    if (b->name() == name) return true;
  return false;
}

TEST(InPlaceUpdate, ABackendThatConvertsWeightsSeesTheNewValuesEveryStep) {
  // dnnl keeps the Gemm weights in its own layout, converted again when
  // their version changes: with a stale copy its losses would part from
  // the reference kernels' after the first step.
  if (!has_backend("dnnl")) GTEST_SKIP() << "dnnl is not built";
  auto model = training_mlp();
  auto with_dnnl = trainer_options(training::OptimizerKind::sgd, 0.2f);
  with_dnnl.optimizer.momentum = 0.9f;
  with_dnnl.session.backends = {"dnnl", "ref"};
  auto with_ref = with_dnnl;
  with_ref.session.backends = {"ref"};
  with_ref.session.fusion = false;
  training::Trainer dnnl(*model, with_dnnl), reference(*model, with_ref);
  for (uint64_t k = 0; k < 8; ++k) {
    auto batch = mlp_batch(k);
    EXPECT_NEAR(dnnl.step(batch), reference.step(batch), 1e-5) << "step " << k + 1;
  }
  bool dnnl_ran = false;
  for (const auto& n : dnnl.session()->graph().nodes()) dnnl_ran = dnnl_ran || n->backend == "dnnl";
  EXPECT_TRUE(dnnl_ran);
  testing::expect_close(dnnl.parameter("w1"), reference.parameter("w1"), 1e-4, 1e-5);
}

TEST(Fusion, TheUpdateFusesApartFromForwardNodes) {
  auto model = training_mlp();
  auto o = trainer_options(training::OptimizerKind::adamw, 0.01f);
  o.session.fusion = true;
  training::Trainer trainer(*model, o);
  trainer.step(mlp_batch(0));
  int fused_updates = 0;
  for (const auto& n : trainer.session()->graph().nodes()) {
    if (n->op() != OpId::FusedPointwise) continue;
    bool update = false;
    for (const auto& inner : n->subgraph->nodes()) {
      if (inner->op() == OpId::Input || inner->op() == OpId::Constant) continue;
      EXPECT_EQ(inner->is_backward, n->is_backward) << inner->describe() << " in " << n->describe();
      update = update || inner->name.find(".update.") != std::string::npos;
    }
    fused_updates += update;
  }
  EXPECT_GE(fused_updates, 1);
  // No update node was left outside a fused node.
  for (const auto& n : trainer.session()->graph().nodes())
    EXPECT_EQ(n->name.find(".update."), std::string::npos) << n->describe();
}

TEST(Export, TheTrainedModelHasTheOutputsButTheLossAndTheTrainedWeights) {
  auto model = training_mlp({.logits_output = true});
  training::Trainer trainer(*model, trainer_options(training::OptimizerKind::sgd, 0.1f));
  auto batch = mlp_batch(0);
  trainer.step(batch);
  std::unique_ptr<ir::Graph> trained = trainer.trained_model();
  ASSERT_EQ(trained->output_names(), std::vector<std::string>{"logits"});
  EXPECT_EQ(trained->type_of(trained->outputs()[0]), ir::ValueType::of(DType::float32, {8, 4}));  // typed for the file
  ASSERT_EQ(trained->inputs().size(), 1u);  // the labels fed only the loss
  EXPECT_EQ(trained->inputs()[0]->output_names[0], "x");
  std::vector<Tensor> logits = testing::run_graph(*trained, {batch.at("x")});
  // The same logits as the model with the trained weights set by hand.
  auto by_hand = training_mlp({.logits_output = true});
  for (const auto& n : by_hand->nodes())
    if (n->op() == OpId::Constant && n->output_names[0] != "labels")
      n->constant_value = trainer.parameter(n->output_names[0]);
  std::vector<Tensor> want = testing::run_graph(*by_hand, {batch.at("x"), batch.at("labels")});
  testing::expect_close(logits[0], want[1]);
}

TEST(Export, AModelWhoseOnlyOutputIsTheLossIsWrittenWhole) {
  auto model = linear_model({1, 2, 3});
  training::Trainer trainer(*model, trainer_options(training::OptimizerKind::sgd, 0.1f));
  trainer.step({{"x", Tensor::from_vector<float>({1, 1, 1}, {3})}});
  auto trained = trainer.trained_model();
  ASSERT_EQ(trained->output_names(), std::vector<std::string>{"loss"});
  for (const auto& n : trained->nodes()) {
    if (n->op() != OpId::Constant) continue;
    EXPECT_EQ(values(n->constant_value), (std::vector<float>{0.9f, 1.9f, 2.9f}));
  }
}

void expect_error(const std::function<void()>& f, ErrorKind kind, const std::string& text) {
  try {
    f();
    ADD_FAILURE() << "no error; expected one containing '" << text << "'";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), kind) << e.what();
    EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
  }
}

TEST(TrainerErrors, NameWhatIsWrong) {
  auto model = linear_model({1, 2, 3});
  auto o = trainer_options(training::OptimizerKind::sgd, 0.1f);
  o.loss = "nope";
  expect_error([&] { training::Trainer t(*model, o); }, ErrorKind::invalid_argument, "no value named 'nope'");
  o = trainer_options(training::OptimizerKind::sgd, -1.0f);
  expect_error([&] { training::Trainer t(*model, o); }, ErrorKind::invalid_argument, "learning rate");
  o = trainer_options(training::OptimizerKind::sgd, 0.1f);
  o.optimizer.nesterov = true;
  expect_error([&] { training::Trainer t(*model, o); }, ErrorKind::invalid_argument, "Nesterov");
  o = trainer_options(training::OptimizerKind::adamw, 0.1f);
  o.optimizer.beta2 = 1.0f;
  expect_error([&] { training::Trainer t(*model, o); }, ErrorKind::invalid_argument, "beta2");
  expect_error([] { training::parse_optimizer_kind("adam"); }, ErrorKind::invalid_argument, "unknown optimizer 'adam'");

  training::Trainer trainer(*model, trainer_options(training::OptimizerKind::sgd, 0.1f));
  expect_error(
      [&] {
        trainer.step({{"x", Tensor(DType::float32, {4})}});
      },
      ErrorKind::invalid_argument, "input 'x' is float32[3], got float32[4]");
  expect_error(
      [&] {
        trainer.step({{"x", Tensor(DType::float64, {3})}});
      },
      ErrorKind::invalid_argument, "input 'x' is float32[3], got float64[3]");
  expect_error([&] { trainer.step({}); }, ErrorKind::invalid_argument, "no value for the model's input 'x'");
  expect_error(
      [&] {
        trainer.step({{"x", Tensor(DType::float32, {3})}, {"y", Tensor(DType::float32, {3})}});
      },
      ErrorKind::invalid_argument, "no input named 'y'");
  trainer.step({{"x", Tensor(DType::float32, {3})}});
  expect_error(
      [&] {
        trainer.step({{"x", Tensor(DType::float32, {4})}});
      },
      ErrorKind::invalid_argument, "input 'x' is float32[3], got float32[4]");
  expect_error([&] { trainer.parameter("x"); }, ErrorKind::invalid_argument, "not a trained parameter");

  auto params = trainer_options(training::OptimizerKind::sgd, 0.1f);
  params.parameters = {"x"};
  training::Trainer of_input(*model, params);
  expect_error(
      [&] {
        of_input.step({{"x", Tensor(DType::float32, {3})}});
      },
      ErrorKind::invalid_argument, "only initializers are trained");
}

TEST(TrainerErrors, ANonScalarLossIsRefused) {
  auto g = std::make_unique<ir::Graph>();
  g->opset_imports[""] = 17;
  Value x = g->add_input("x", ir::ValueType::of(DType::float32, {3}))->output(0);
  Value w = g->add_constant("w", Tensor::from_vector<float>({1, 2, 3}, {3}))->output(0);
  g->add_output(g->add_node(OpId::Mul, {w, x})->output(0), "loss");
  training::Trainer trainer(*g, trainer_options(training::OptimizerKind::sgd, 0.1f));
  expect_error(
      [&] {
        trainer.step({{"x", Tensor(DType::float32, {3})}});
      },
      ErrorKind::invalid_argument, "must be a floating-point scalar");
}

}  // namespace
}  // namespace graft
