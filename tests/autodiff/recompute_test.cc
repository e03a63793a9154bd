// GradientOptions::recompute_pointwise_activations: the same gradients with
// and without it (reference kernels, and the default Session with fusion) on
// an MLP with a GELU written out, a BERT-style encoder block and a CNN block;
// fewer activations kept for the backward part; the recomputed nodes are
// backward nodes, placed after the forward part, and fuse with the backward
// chains that read them, never with forward nodes.
#include "graft/autodiff/recompute.h"

#include <gtest/gtest.h>

#include <cmath>

#include "gradient_check.h"
#include "graft/ir/indexed_graph.h"
#include "graft/ir/verify.h"
#include "graft/passes/pass.h"

namespace graft::testing::autodiff_check {
namespace {

using ir::OpId;
using ir::Value;

Value weight(ir::Graph& g, const std::string& name, const Shape& shape, uint64_t seed, float scale = 0.5f) {
  Tensor t = random_tensor(shape, seed);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] *= scale;
  return g.add_constant(name, t)->output(0);
}

Value scalar(ir::Graph& g, float value) { return g.add_constant("", Tensor::scalar<float>(value))->output(0); }

/// x * 0.5 * (1 + erf(x / sqrt 2)), as PyTorch exports nn.GELU at opset 17.
Value gelu_written_out(ir::Graph& g, Value x) {
  Value erf = node(g, OpId::Erf, {node(g, OpId::Div, {x, scalar(g, std::sqrt(2.0f))})});
  return node(g, OpId::Mul, {node(g, OpId::Mul, {x, scalar(g, 0.5f)}), node(g, OpId::Add, {erf, scalar(g, 1.0f)})});
}

/// A linear layer on [..., in]: MatMul then bias Add.
Value linear(ir::Graph& g, Value x, const std::string& name, int64_t in, int64_t out, uint64_t seed) {
  return node(g, OpId::Add,
              {node(g, OpId::MatMul, {x, weight(g, name + ".weight", {in, out}, seed)}),
               weight(g, name + ".bias", {out}, seed + 1)});
}

/// MSE against a fixed target.
Value mse(ir::Graph& g, Value y, const Shape& shape) {
  Value d = node(g, OpId::Sub, {y, weight(g, "target", shape, 99, 1.0f)});
  return node(g, OpId::ReduceMean, {node(g, OpId::Mul, {d, d})}, {{"keepdims", int64_t{0}}});
}

/// x [4, 6] -> Linear -> GELU (written out) -> Linear -> Sigmoid -> Tanh * x2 -> Linear -> MSE.
std::unique_ptr<ir::Graph> mlp() {
  auto g = std::make_unique<ir::Graph>();
  g->opset_imports[""] = 17;
  Value x = g->add_input("x", ir::ValueType::of(DType::float32, {4, 6}))->output(0);
  Value h = gelu_written_out(*g, linear(*g, x, "fc1", 6, 16, 1));
  Value s = node(*g, OpId::Sigmoid, {linear(*g, h, "fc2", 16, 16, 3)});
  Value t = node(*g, OpId::Mul, {node(*g, OpId::Tanh, {s}), s});
  g->add_output(mse(*g, linear(*g, t, "fc3", 16, 3, 5), {4, 3}), "loss");
  ops::infer_types(*g);
  return g;
}

/// A BERT-style encoder layer on x [2, 5, 8] (post-norm, one head):
/// attention with biases, residual Add, LayerNormalization, GELU MLP,
/// residual Add, LayerNormalization; MSE.
std::unique_ptr<ir::Graph> bert_block() {
  auto g = std::make_unique<ir::Graph>();
  g->opset_imports[""] = 17;
  Value x = g->add_input("x", ir::ValueType::of(DType::float32, {2, 5, 8}))->output(0);
  Value q = linear(*g, x, "q", 8, 8, 10), k = linear(*g, x, "k", 8, 8, 12), v = linear(*g, x, "v", 8, 8, 14);
  Value scores = node(*g, OpId::MatMul, {q, node(*g, OpId::Transpose, {k}, {{"perm", std::vector<int64_t>{0, 2, 1}}})});
  scores = node(*g, OpId::Div, {scores, scalar(*g, std::sqrt(8.0f))});
  Value attention = node(*g, OpId::MatMul, {node(*g, OpId::Softmax, {scores}, {{"axis", int64_t{-1}}}), v});
  Value r = node(*g, OpId::Add, {x, linear(*g, attention, "out", 8, 8, 16)});
  Value n1 = node(*g, OpId::LayerNormalization, {r, weight(*g, "ln1.weight", {8}, 18), weight(*g, "ln1.bias", {8}, 19)},
                  {{"axis", int64_t{-1}}});
  Value mlp = linear(*g, gelu_written_out(*g, linear(*g, n1, "ff1", 8, 32, 20)), "ff2", 32, 8, 22);
  Value n2 = node(*g, OpId::LayerNormalization,
                  {node(*g, OpId::Add, {n1, mlp}), weight(*g, "ln2.weight", {8}, 24), weight(*g, "ln2.bias", {8}, 25)},
                  {{"axis", int64_t{-1}}});
  g->add_output(mse(*g, n2, {2, 5, 8}), "loss");
  ops::infer_types(*g);
  return g;
}

/// A residual CNN block on x [2, 3, 8, 8]: Conv -> BatchNormalization
/// (training) -> Relu -> Conv -> BatchNormalization -> Add(x) -> Relu ->
/// Conv -> Relu -> MaxPool -> Flatten -> Gemm -> SoftmaxCrossEntropyLoss.
std::unique_ptr<ir::Graph> cnn_block() {
  auto g = std::make_unique<ir::Graph>();
  g->opset_imports[""] = 17;
  Value x = g->add_input("x", ir::ValueType::of(DType::float32, {2, 3, 8, 8}))->output(0);
  auto conv_bn = [&](Value in, const std::string& name, uint64_t seed) {
    Value conv = node(*g, OpId::Conv, {in, weight(*g, name + ".weight", {3, 3, 3, 3}, seed)},
                      {{"pads", std::vector<int64_t>{1, 1, 1, 1}}});
    ir::Node* bn =
        g->add_node(OpId::BatchNormalization,
                    {conv, weight(*g, name + ".bn.weight", {3}, seed + 1), weight(*g, name + ".bn.bias", {3}, seed + 2),
                     g->add_constant(name + ".bn.mean", Tensor(DType::float32, {3}))->output(0),
                     g->add_constant(name + ".bn.var", Tensor::from_vector<float>({1, 1, 1}, {3}))->output(0)},
                    3);
    bn->attributes.set("training_mode", int64_t{1});
    return bn->output(0);
  };
  Value h = node(*g, OpId::Relu, {conv_bn(x, "conv1", 30)});
  h = node(*g, OpId::Relu, {node(*g, OpId::Add, {conv_bn(h, "conv2", 33), x})});
  h = node(
      *g, OpId::Relu,
      {node(*g, OpId::Conv, {h, weight(*g, "conv3.weight", {4, 3, 3, 3}, 36), weight(*g, "conv3.bias", {4}, 37)})});
  Value pool = node(*g, OpId::MaxPool, {h},
                    {{"kernel_shape", std::vector<int64_t>{2, 2}}, {"strides", std::vector<int64_t>{2, 2}}});
  Value logits =
      node(*g, OpId::Gemm,
           {node(*g, OpId::Flatten, {pool}), weight(*g, "fc.weight", {5, 36}, 38), weight(*g, "fc.bias", {5}, 39)},
           {{"transB", int64_t{1}}});
  g->add_output(node(*g, OpId::SoftmaxCrossEntropyLoss, {logits, ints(*g, {1, 4})}), "loss");
  ops::infer_types(*g);
  return g;
}

struct Case {
  std::string name;
  std::unique_ptr<ir::Graph> (*build)();
  Shape input;
};

std::vector<Case> cases() {
  return {{"mlp", mlp, {4, 6}}, {"bert_block", bert_block, {2, 5, 8}}, {"cnn_block", cnn_block, {2, 3, 8, 8}}};
}

std::unique_ptr<ir::Graph> gradient_of(const ir::Graph& model, bool recompute) {
  autodiff::GradientOptions options;
  options.recompute_pointwise_activations = recompute;
  std::vector<std::string> wrt = autodiff::trainable_initializers(model, "loss");
  wrt.push_back("x");
  return autodiff::gradient(model, "loss", wrt, options);
}

double largest_magnitude(const Tensor& t) {
  double largest = 0;
  for (int64_t i = 0; i < t.numel(); ++i) largest = std::max(largest, std::abs(t.value_as_double(i)));
  return largest;
}

/// Each output of `got` within 1e-6 of the largest magnitude of the same
/// output of `want`; an output that is zero but for round-off (the key bias's
/// gradient, which softmax cancels) within 1e-8 of the largest of all.
void expect_equal_to_1e6(const std::vector<Tensor>& got, const std::vector<Tensor>& want,
                         const std::vector<std::string>& names) {
  ASSERT_EQ(got.size(), want.size());
  double largest_of_all = 0;
  for (const Tensor& t : want) largest_of_all = std::max(largest_of_all, largest_magnitude(t));
  for (size_t i = 0; i < got.size(); ++i) {
    SCOPED_TRACE(names[i]);
    expect_close(got[i], want[i], 0.0, 1e-6 * std::max(largest_magnitude(want[i]), 1e-2 * largest_of_all));
  }
}

TEST(Recompute, TheGradientsAreTheSameOnTheReferenceKernels) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    auto model = c.build();
    auto plain = gradient_of(*model, false), recomputed = gradient_of(*model, true);
    ir::verify(*recomputed);
    ASSERT_EQ(recomputed->output_names(), plain->output_names());
    std::vector<Tensor> inputs{random_tensor(c.input, 7)};
    expect_equal_to_1e6(run_graph(*recomputed, inputs), run_graph(*plain, inputs), plain->output_names());
  }
}

TEST(Recompute, TheGradientsAreTheSameThroughTheDefaultSessionWithFusion) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    auto model = c.build();
    std::vector<Tensor> inputs{random_tensor(c.input, 8)};
    runtime::SessionOptions options;
    options.num_threads = 1;
    auto plain_graph = gradient_of(*model, false);
    const std::vector<std::string> names = plain_graph->output_names();
    runtime::Session plain(std::move(plain_graph), options), recomputed(gradient_of(*model, true), options);
    expect_equal_to_1e6(recomputed.run(inputs), plain.run(inputs), names);
  }
}

TEST(Recompute, FewerActivationsAreKeptForTheBackwardPart) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    auto model = c.build();
    auto plain = gradient_of(*model, false), recomputed = gradient_of(*model, true);
    std::vector<Value> kept_plain = autodiff::activations_kept_for_backward(*plain);
    std::vector<Value> kept = autodiff::activations_kept_for_backward(*recomputed);
    EXPECT_LT(kept.size(), kept_plain.size());
    EXPECT_LT(autodiff::bytes_of(*recomputed, kept), autodiff::bytes_of(*plain, kept_plain));
    // No forward value that backward nodes now read is a cheap pointwise one
    // that could have been recomputed for free from a kept value: every
    // recomputed node is a backward node named after its forward node.
    size_t copies = 0;
    for (const auto& n : recomputed->nodes()) {
      if (n->name.size() > 11 && n->name.ends_with(".recomputed")) {
        ++copies;
        EXPECT_TRUE(n->is_backward) << n->describe();
      }
    }
    EXPECT_GT(copies, 0u);
  }
}

TEST(Recompute, AReluOutputIsRecomputedFromItsInputWhichReluKeepsAnyway) {
  // Conv -> BatchNormalization -> Relu -> Conv: ReLU's gradient reads its
  // input, the second Conv's weight gradient reads ReLU's output. With the
  // option, the backward part reads only the input, and recomputes the output.
  auto model = cnn_block();
  auto recomputed = gradient_of(*model, true);
  ir::IndexedGraph indexed(*recomputed);
  for (uint32_t id = 0; id < indexed.num_nodes(); ++id) {
    const ir::Node& n = indexed.node(id);
    if (!n.is_backward) continue;
    for (const ir::Entry& e : indexed.inputs(id)) {
      if (!e.present()) continue;
      const ir::Node& producer = indexed.node(e.node_id);
      EXPECT_FALSE(!producer.is_backward && producer.op() == OpId::Relu)
          << n.describe() << " reads the forward " << producer.describe();
    }
  }
  // Each copy comes after every forward node: it is computed in the backward part.
  uint32_t last_forward = 0, first_copy = UINT32_MAX;
  for (uint32_t id = 0; id < indexed.num_nodes(); ++id) {
    const ir::Node& n = indexed.node(id);
    if (!n.is_backward && n.op() != OpId::Constant && n.op() != OpId::Input) last_forward = id;
    if (n.name.ends_with(".recomputed")) first_copy = std::min(first_copy, id);
  }
  EXPECT_LT(last_forward, first_copy);
}

TEST(Recompute, RecomputedNodesFuseWithBackwardChainsNeverWithForwardNodes) {
  auto model = mlp();
  std::unique_ptr<ir::Graph> fused = gradient_of(*model, true);
  passes::PassContext context;
  context.verify_after_each = true;
  passes::run_pipeline(fused, {"infer", "fuse-pointwise"}, context);
  size_t copies_in_fused_nodes = 0;
  for (const auto& n : fused->nodes()) {
    if (n->op() != OpId::FusedPointwise) continue;
    for (const auto& member : n->subgraph->nodes()) {
      if (member->op() == OpId::Input || member->op() == OpId::Constant) continue;
      EXPECT_EQ(member->is_backward, n->is_backward) << member->describe() << " in " << n->describe();
      if (member->name.ends_with(".recomputed")) {
        EXPECT_TRUE(n->is_backward);
        ++copies_in_fused_nodes;
      }
    }
  }
  EXPECT_GT(copies_in_fused_nodes, 0u);
}

TEST(Recompute, WithoutTheOptionTheGraphIsUnchanged) {
  auto model = mlp();
  auto plain = gradient_of(*model, false);
  for (const auto& n : plain->nodes()) EXPECT_FALSE(n->name.ends_with(".recomputed")) << n->describe();
}

}  // namespace
}  // namespace graft::testing::autodiff_check
