// A transformer's training step as one dnnl subgraph: GELU's gradient as
// oneDNN's eltwise backward (dnnl_gelu_gradient.h), a squared error's Pow
// and mean inside the program, and the feed-forward block's step (GELU as
// exporters write it, made one Gelu by training::forward_for_gradient)
// partitioned into one dnnl subgraph whose gradients match the reference
// kernels'.
#include <numbers>

#include "../../backends/dnnl/dnnl_gelu_gradient.h"
#include "dnnl_case.h"
#include "dnnl_training_case.h"
#include "graft/training/training_graph.h"

namespace graft::testing {
namespace {

using ir::OpId;
using ir::Value;

Value scalar(Case& c, double v) {
  return c.graph->add_constant("s" + std::to_string(c.seed++), Tensor::scalar(static_cast<float>(v)))->output(0);
}

// dy * (0.5 (1 + erf(x sqrt(1/2))) + x exp(-x^2 / 2) / sqrt(2 pi)), as
// ops::gelu_gradient writes it.
Value gelu_gradient(Case& c, Value x, Value dy) {
  Value cdf = c.op(
      "Mul", {scalar(c, 0.5), c.op("Add", {scalar(c, 1), c.op("Erf", {c.op("Mul", {x, scalar(c, std::sqrt(0.5))})})})});
  Value square = c.op("Mul", {x, x});
  Value pdf = c.op(
      "Mul", {scalar(c, 1 / std::sqrt(2 * std::numbers::pi)), c.op("Exp", {c.op("Mul", {square, scalar(c, -0.5)})})});
  return c.op("Mul", {dy, c.op("Add", {cdf, c.op("Mul", {x, pdf})})});
}

TEST(DnnlGeluGradient, IsOneEltwiseBackward) {
  Case c;
  Value x = c.input({4, 8, 32});
  Value dy = c.input({4, 8, 32});
  auto stats = c.check({gelu_gradient(c, x, dy)});
  EXPECT_EQ(stats.primitives, 1);  // eltwise backward, gelu_erf; none of the ten steps
}

// The same expression after a product, as in a feed-forward layer's
// backward: the gradient is not attached to the product as a post-op (the
// derivative is never written), and a step read outside the expression
// leaves it to the ops one by one, Erf and all, which dnnl cannot run.
TEST(DnnlGeluGradient, AfterAProductAndOnlyWhole) {
  Case c;
  Value x = c.input({2, 6, 16});
  Value dy = c.op("MatMul", {c.input({2, 6, 8}), c.constant({8, 16})});
  auto stats = c.check({gelu_gradient(c, x, dy)});
  EXPECT_EQ(stats.primitives, 2);  // the product, the eltwise backward

  ir::Graph g;
  ir::Value in = g.add_input("x", ir::ValueType::of(DType::float32, {2, 3}))->output(0);
  ir::Value half = g.add_constant("h", Tensor::scalar(static_cast<float>(std::sqrt(0.5))))->output(0);
  ir::Node* erf = g.add_node(OpId::Erf, {g.add_node(OpId::Mul, {in, half}, 1, "scaled")->output(0)}, 1, "erf");
  auto readers = [](const ir::Node&) { return std::vector<const ir::Node*>{}; };
  auto no_output = [](const ir::Node&) { return false; };
  EXPECT_FALSE(dnnl_backend::match_gelu_gradient(*erf, readers, no_output)) << "an Erf alone is no gradient";

  // A dy that broadcasts (one row for every position) is no eltwise backward's.
  Case b;
  Value whole = gelu_gradient(b, b.input({2, 6, 16}), b.input({2, 6, 16}));
  Value broadcast = gelu_gradient(b, b.input({2, 6, 16}), b.input({16}));
  ops::infer_types(*b.graph);
  auto readers_in = [&](const ir::Node& node) {
    std::vector<const ir::Node*> out;
    for (const auto& n : b.graph->nodes())
      for (const Value& in : n->inputs)
        if (in.node == &node) out.push_back(n.get());
    return out;
  };
  EXPECT_TRUE(dnnl_backend::match_gelu_gradient(*whole.node, readers_in, no_output));
  EXPECT_FALSE(dnnl_backend::match_gelu_gradient(*broadcast.node, readers_in, no_output));
}

// MSE as PyTorch exports it, and its gradient's Pow(d, 1): eltwise pow
// primitives, the mean on the reference kernel inside the program.
TEST(DnnlSquaredError, PowAndMeanRunInsideTheProgram) {
  Case c;
  Value d = c.op("Sub", {c.op("MatMul", {c.input({4, 8}), c.constant({8, 6})}), c.input({4, 6})});
  Value two = scalar(c, 2), one = scalar(c, 1);
  Value loss = c.op("ReduceMean", {c.op("Pow", {d, two})}, ints("axes", {0, 1}));
  Value slope = c.op("Mul", {c.op("Pow", {d, one}), two});
  auto stats = c.check({loss, slope});
  EXPECT_EQ(stats.reference_kernel_steps, 1);  // the mean
}

// x [2, 8, 16] -> Linear(16, 32) -> GELU (Div, Erf, Add, Mul, Mul) ->
// Linear(32, 16) -> mean squared error against a target: its training step
// is one dnnl subgraph, the bias gradients (sums over the leading axes, on
// the reference kernel) inside.
TEST(DnnlTransformerStep, AFeedForwardBlocksStepIsOneSubgraph) {
  ir::Graph forward;
  ir::Graph& g = forward;
  Value x = float_input(g, "x", {2, 8, 16});
  Value target = float_input(g, "target", {2, 8, 16});
  auto constant = [&](const std::string& name, float v) { return g.add_constant(name, Tensor::scalar(v))->output(0); };
  Value h = named_node(g, OpId::Add,
                       {named_node(g, OpId::MatMul, {x, random_constant(g, "w1", {16, 32}, 1)}, "mm1"),
                        random_constant(g, "b1", {32}, 2)},
                       "bias1");
  Value erf =
      named_node(g, OpId::Erf, {named_node(g, OpId::Div, {h, constant("root2", std::sqrt(2.0f))}, "div")}, "erf");
  Value gelu =
      named_node(g, OpId::Mul,
                 {named_node(g, OpId::Mul, {h, named_node(g, OpId::Add, {erf, constant("one", 1.0f)}, "add1")}, "mul"),
                  constant("half", 0.5f)},
                 "gelu");
  Value y = named_node(g, OpId::Add,
                       {named_node(g, OpId::MatMul, {gelu, random_constant(g, "w2", {32, 16}, 3)}, "mm2"),
                        random_constant(g, "b2", {16}, 4)},
                       "bias2");
  Value squared =
      named_node(g, OpId::Pow, {named_node(g, OpId::Sub, {y, target}, "error"), constant("two", 2.0f)}, "squared");
  ir::Node* mean = g.add_node(OpId::ReduceMean, {squared}, 1, "mean");
  mean->attributes.set("keepdims", int64_t{0});
  g.add_output(mean->output(0), "loss");
  ops::infer_types(g);

  std::unique_ptr<ir::Graph> fused = training::forward_for_gradient(forward);
  int gelus = 0;
  for (const auto& n : fused->nodes()) gelus += n->op() == OpId::Gelu;
  EXPECT_EQ(gelus, 1);
  std::unique_ptr<ir::Graph> step = autodiff::gradient(*fused, "loss", {"w1", "b1", "w2", "b2"});
  DnnlSessionCheck check(*step, {random_tensor({2, 8, 16}, 5), random_tensor({2, 8, 16}, 6)});
  const partition::PartitionReport& report = check.session.partition_report();
  ASSERT_EQ(report.subgraphs.size(), 1u) << report.to_text();
  EXPECT_EQ(report.subgraphs[0].backend, "dnnl");
  for (const auto& n : report.nodes)
    if (!n.is_source) EXPECT_EQ(n.backend, "dnnl") << n.name << " (" << n.op_type << ")";
  check.expect_run_matches_reference(1e-4);
}

}  // namespace
}  // namespace graft::testing
