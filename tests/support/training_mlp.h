// The tiny classifier the training tests train: x -> Gemm -> Relu -> Gemm
// (or MatMul) -> SoftmaxCrossEntropyLoss against integer labels, and its
// batches. One builder, its sizes and variations chosen by the test.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "graft/ir/graph.h"
#include "support/graph_runner.h"

namespace graft::testing {

/// The shape of a training_mlp: sizes, and the variations the tests need.
struct TrainingMlp {
  /// The batch dimension; nullopt makes it symbolic ("batch").
  std::optional<int64_t> batch = 8;
  int64_t features = 6, hidden = 16, classes = 4;
  /// A bias b2 on the output layer (Gemm); false: MatMul(h, w2).
  bool output_bias = true;
  /// The logits as a second graph output, after the loss.
  bool logits_output = false;
  /// Non-empty: the labels are this constant (named "labels", after the
  /// weights), not a graph input.
  std::vector<int64_t> constant_labels = {};
};

/// x[batch, features] -> Gemm(w1[features, hidden], b1[hidden]) -> Relu ->
/// Gemm(w2[hidden, classes], b2[classes]) (MatMul without b2 when
/// !output_bias) = logits -> SoftmaxCrossEntropyLoss(logits, labels[batch])
/// = "loss". Inputs "x" and "labels"; initializers w1, b1, w2, b2 in that
/// order, from random_tensor with seeds 1 to 4.
inline std::unique_ptr<ir::Graph> training_mlp(const TrainingMlp& mlp = {}) {
  using ir::OpId;
  using ir::Value;
  auto batched = [&](DType dtype, std::vector<int64_t> dims) {
    dims.insert(dims.begin(), mlp.batch.value_or(1));
    ir::ValueType type = ir::ValueType::of(dtype, Shape(dims.begin(), dims.end()));
    if (!mlp.batch) type.dims[0] = ir::Dim::symbolic("batch");
    return type;
  };
  auto g = std::make_unique<ir::Graph>();
  g->opset_imports[""] = 17;
  Value x = g->add_input("x", batched(DType::float32, {mlp.features}))->output(0);
  std::optional<Value> labels;
  if (mlp.constant_labels.empty()) labels = g->add_input("labels", batched(DType::int64, {}))->output(0);
  Value w1 = g->add_constant("w1", random_tensor({mlp.features, mlp.hidden}, 1))->output(0);
  Value b1 = g->add_constant("b1", random_tensor({mlp.hidden}, 2))->output(0);
  Value w2 = g->add_constant("w2", random_tensor({mlp.hidden, mlp.classes}, 3))->output(0);
  std::optional<Value> b2;
  if (mlp.output_bias) b2 = g->add_constant("b2", random_tensor({mlp.classes}, 4))->output(0);
  if (!labels) {
    const int64_t count = static_cast<int64_t>(mlp.constant_labels.size());
    labels = g->add_constant("labels", Tensor::from_vector<int64_t>(mlp.constant_labels, {count}))->output(0);
  }
  Value h = g->add_node(OpId::Relu, {g->add_node(OpId::Gemm, {x, w1, b1})->output(0)})->output(0);
  Value logits = b2 ? g->add_node(OpId::Gemm, {h, w2, *b2})->output(0) : g->add_node(OpId::MatMul, {h, w2})->output(0);
  g->add_output(g->add_node(OpId::SoftmaxCrossEntropyLoss, {logits, *labels})->output(0), "loss");
  if (mlp.logits_output) g->add_output(logits, "logits");
  return g;
}

/// How a training_mlp_batch draws its values.
struct TrainingMlpBatchSeeds {
  uint64_t x_seed_base = 100;  ///< x is random_tensor(x_seed_base + seed)
  uint64_t label_stride = 7;   ///< label i is (i * label_stride + seed) % classes
};

/// A batch of `size` samples for a training_mlp with `features` and
/// `classes`: {"x": float32[size, features], "labels": int64[size]}.
inline std::map<std::string, Tensor> training_mlp_batch(int64_t size, uint64_t seed, const TrainingMlp& mlp = {},
                                                        const TrainingMlpBatchSeeds& seeds = {}) {
  std::vector<int64_t> labels(static_cast<size_t>(size));
  for (size_t i = 0; i < labels.size(); ++i)
    labels[i] = static_cast<int64_t>((i * seeds.label_stride + seed) % static_cast<uint64_t>(mlp.classes));
  return {{"x", random_tensor({size, mlp.features}, seeds.x_seed_base + seed)},
          {"labels", Tensor::from_vector<int64_t>(labels, {size})}};
}

}  // namespace graft::testing
