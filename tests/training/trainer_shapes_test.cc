// Steps of new input shapes: batches of 32, 32, 17 and 32 again on a model
// whose batch dimension is symbolic. Each set of shapes gets its own plan;
// the optimizer state and the step count carry over (AdamW against
// PyTorch's formulas written out in double), and a plan that missed steps
// runs on the newest weights (each step's loss is the forward loss of the
// weights the step before left).
#include <gtest/gtest.h>

#include <cmath>

#include "graft/training/trainer.h"
#include "support/graph_runner.h"
#include "support/trainer_options.h"
#include "support/training_mlp.h"

namespace graft {
namespace {

using ir::OpId;
using ir::Value;

const std::vector<int64_t> kBatches{32, 32, 17, 32};

ir::ValueType batch_of(DType dtype, std::vector<int64_t> dims) {
  ir::ValueType type = ir::ValueType::of(dtype, Shape(dims.begin(), dims.end()));
  type.dims[0] = ir::Dim::symbolic("batch");
  return type;
}

/// loss = mean(x * w) over x [batch, 3]: the gradient of w_j is sum_i x_ij / (3 batch).
std::unique_ptr<ir::Graph> linear_model() {
  auto g = std::make_unique<ir::Graph>();
  g->opset_imports[""] = 17;
  Value x = g->add_input("x", batch_of(DType::float32, {1, 3}))->output(0);
  Value w = g->add_constant("w", Tensor::from_vector<float>({0.5f, -1.0f, 2.0f}, {3}))->output(0);
  ir::Node* mean = g->add_node(OpId::ReduceMean, {g->add_node(OpId::Mul, {x, w})->output(0)});
  mean->attributes.set("keepdims", int64_t{0});
  g->add_output(mean->output(0), "loss");
  return g;
}

TEST(TrainerShapes, AdamWKeepsItsStateAndStepCountAcrossBatchSizes) {
  auto model = linear_model();
  training::TrainerOptions options = testing::trainer_options(training::OptimizerKind::adamw, 0.01f);
  options.optimizer.weight_decay = 0.1f;
  training::Trainer trainer(*model, options);
  // torch.optim.AdamW, written out in double.
  std::vector<double> w{0.5, -1.0, 2.0}, m(3, 0.0), v(3, 0.0);
  const double lr = 0.01, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, decay = 0.1;
  for (size_t k = 0; k < kBatches.size(); ++k) {
    Tensor x = testing::random_tensor({kBatches[k], 3}, 10 + k);
    trainer.step({{"x", x}});
    const int t = static_cast<int>(k) + 1;
    for (size_t j = 0; j < 3; ++j) {
      double grad = 0;
      for (int64_t i = 0; i < kBatches[k]; ++i) grad += x.data<float>()[i * 3 + static_cast<int64_t>(j)];
      grad /= 3.0 * static_cast<double>(kBatches[k]);
      w[j] *= 1 - lr * decay;
      m[j] = beta1 * m[j] + (1 - beta1) * grad;
      v[j] = beta2 * v[j] + (1 - beta2) * grad * grad;
      w[j] -= lr / (1 - std::pow(beta1, t)) * m[j] / (std::sqrt(v[j]) / std::sqrt(1 - std::pow(beta2, t)) + eps);
    }
    Tensor got = trainer.parameter("w");
    for (size_t j = 0; j < 3; ++j)
      EXPECT_NEAR(got.data<float>()[j], w[j], 2e-5 * (1 + std::abs(w[j]))) << "step " << t << " w[" << j << "]";
  }
  EXPECT_EQ(trainer.num_plans(), 2u);
  EXPECT_EQ(trainer.steps(), 4);
}

/// testing::training_mlp with a symbolic batch: x [batch, 6] -> Gemm -> Relu
/// -> Gemm -> SoftmaxCrossEntropyLoss(labels [batch]).
const testing::TrainingMlp kAnyBatch{.batch = std::nullopt};

std::map<std::string, Tensor> batch(int64_t size, uint64_t seed) {
  return testing::training_mlp_batch(size, seed, kAnyBatch);
}

/// The model's loss on `inputs` with the trainer's current parameters, on the reference kernels.
double forward_loss(const ir::Graph& model, const training::Trainer& trainer,
                    const std::map<std::string, Tensor>& inputs) {
  std::unique_ptr<ir::Graph> g = model.clone();
  for (const auto& n : g->nodes())
    if (n->op() == OpId::Constant) n->constant_value = trainer.parameter(n->output_names[0]).clone();
  return testing::run_graph(*g, {inputs.at("x"), inputs.at("labels")})[0].value_as_double(0);
}

TEST(TrainerShapes, EachStepRunsOnTheWeightsTheStepBeforeLeft) {
  auto model = testing::training_mlp(kAnyBatch);
  for (bool recompute : {false, true}) {
    SCOPED_TRACE(recompute ? "recomputing activations" : "keeping activations");
    training::TrainerOptions options = testing::trainer_options(training::OptimizerKind::sgd, 0.1f);
    options.optimizer.momentum = 0.9f;
    options.recompute_pointwise_activations = recompute;
    training::Trainer trainer(*model, options);
    for (size_t k = 0; k < kBatches.size(); ++k) {
      auto inputs = batch(kBatches[k], k);
      const double want = forward_loss(*model, trainer, inputs);
      EXPECT_NEAR(trainer.step(inputs), want, 1e-5 * (1 + std::abs(want))) << "step " << k + 1;
    }
    EXPECT_EQ(trainer.num_plans(), 2u);
    // The exported model takes any batch.
    auto trained = trainer.trained_model();
    EXPECT_FALSE(trained->inputs()[0]->output_types[0].dims[0].is_known());
  }
}

TEST(TrainerShapes, ADimensionTheModelFixesIsStillChecked) {
  auto model = testing::training_mlp(kAnyBatch);
  training::Trainer trainer(*model, testing::trainer_options(training::OptimizerKind::sgd, 0.01f));
  trainer.step(batch(8, 0));
  try {
    trainer.step({{"x", testing::random_tensor({8, 5}, 1)}, {"labels", batch(8, 0).at("labels")}});
    ADD_FAILURE() << "a feature dimension of 5 was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("input 'x' is float32[batch,6], got float32[8,5]"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(trainer.num_plans(), 1u);
}

}  // namespace
}  // namespace graft
