// A transformer's feed-forward block trained with dnnl: GELU as exporters
// write it (Div, Erf, Add, Mul, Mul) and a squared error written in ops
// (Sub, Pow 2, ReduceMean). The Trainer differentiates GELU as one Gelu node
// (training::forward_for_gradient), and its step, whose Session folds no
// constants, is one dnnl subgraph beside the fused updates; the losses and
// weights follow the reference kernels' step for step.
#include <gtest/gtest.h>

#include <cmath>

#include "graft/backend/backend.h"
#include "graft/training/trainer.h"
#include "support/graph_runner.h"
#include "support/trainer_options.h"

namespace graft {
namespace {

using ir::OpId;
using ir::Value;

bool has_backend(const std::string& name) {
  for (const backend::Backend* b : backend::all_backends())
    if (b->name() == name) return true;
  return false;
}

std::unique_ptr<ir::Graph> feed_forward_block() {
  auto g = std::make_unique<ir::Graph>();
  g->opset_imports[""] = 17;
  auto constant = [&](const std::string& name, float v) { return g->add_constant(name, Tensor::scalar(v))->output(0); };
  auto weight = [&](const std::string& name, const Shape& shape, uint64_t seed) {
    Tensor t = testing::random_tensor(shape, seed);
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] *= 0.3f;
    return g->add_constant(name, t)->output(0);
  };
  auto op = [&](OpId id, std::vector<Value> in) { return g->add_node(id, in)->output(0); };
  Value x = g->add_input("x", ir::ValueType::of(DType::float32, {2, 8, 16}))->output(0);
  Value target = g->add_input("target", ir::ValueType::of(DType::float32, {2, 8, 16}))->output(0);
  Value h = op(OpId::Add, {op(OpId::MatMul, {x, weight("w1", {16, 32}, 1)}), weight("b1", {32}, 2)});
  Value erf = op(OpId::Erf, {op(OpId::Div, {h, constant("root2", std::sqrt(2.0f))})});
  Value gelu = op(OpId::Mul, {op(OpId::Mul, {h, op(OpId::Add, {erf, constant("one", 1.0f)})}), constant("half", 0.5f)});
  Value y = op(OpId::Add, {op(OpId::MatMul, {gelu, weight("w2", {32, 16}, 3)}), weight("b2", {16}, 4)});
  ir::Node* mean = g->add_node(OpId::ReduceMean, {op(OpId::Pow, {op(OpId::Sub, {y, target}), constant("two", 2.0f)})});
  mean->attributes.set("keepdims", int64_t{0});
  g->add_output(mean->output(0), "loss");
  return g;
}

TEST(TransformerStep, AFeedForwardBlockTrainsAsOneDnnlSubgraph) {
  if (!has_backend("dnnl")) GTEST_SKIP() << "dnnl is not built";
  auto model = feed_forward_block();
  auto with_dnnl = testing::trainer_options(training::OptimizerKind::adamw, 0.01f, 2);
  with_dnnl.parameters = {"w1", "b1", "w2", "b2"};
  with_dnnl.session.backends = {"dnnl", "fuse", "ref"};
  auto with_ref = with_dnnl;
  with_ref.session.backends = {"ref"};
  with_ref.session.fusion = false;
  training::Trainer dnnl(*model, with_dnnl), reference(*model, with_ref);
  for (uint64_t k = 0; k < 4; ++k) {
    std::map<std::string, Tensor> batch = {{"x", testing::random_tensor({2, 8, 16}, 10 + k)},
                                           {"target", testing::random_tensor({2, 8, 16}, 20 + k)}};
    const float want = reference.step(batch);
    EXPECT_NEAR(dnnl.step(batch), want, 1e-5 * std::abs(want)) << "step " << k + 1;
  }
  for (const std::string& p : with_dnnl.parameters)
    testing::expect_close(dnnl.parameter(p), reference.parameter(p), 1e-4, 1e-5);
  int dnnl_subgraphs = 0, gelus = 0;
  for (const auto& n : dnnl.session()->graph().nodes()) {
    dnnl_subgraphs += n->op() == OpId::Subgraph && n->backend == "dnnl";
    if (n->subgraph)
      for (const auto& inner : n->subgraph->nodes()) gelus += inner->op() == OpId::Gelu;
  }
  EXPECT_EQ(dnnl_subgraphs, 1);
  EXPECT_EQ(gelus, 1);
}

}  // namespace
}  // namespace graft
