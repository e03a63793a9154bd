// The structure of gradient graphs: outputs and their names, backward nodes
// marked, sums of contributions, pruning, errors (no builder: the op and the
// path from the loss; a loss that is not a scalar), and a gradient graph
// running through a Session with the default backends and fusion.
#include <gtest/gtest.h>

#include "gradient_check.h"
#include "graft/ir/verify.h"
#include "graft/passes/pass.h"

namespace graft::testing::autodiff_check {
namespace {

using ir::OpId;
using ir::Value;

/// x -> Mul(x, W) -> Tanh -> ReduceSum = loss, with W an initializer.
std::unique_ptr<ir::Graph> small_model() {
  auto g = std::make_unique<ir::Graph>();
  g->opset_imports[""] = 17;
  Value x = g->add_input("x", ir::ValueType::of(DType::float32, {2, 3}))->output(0);
  Value w = g->add_constant("W", Tensor::from_vector<float>({0.1f, -0.2f, 0.3f}, {3}))->output(0);
  Value unused = g->add_constant("unused", Tensor::from_vector<float>({1, 2}, {2}))->output(0);
  ir::Node* mul = g->add_node(OpId::Mul, {x, w}, 1, "mul");
  ir::Node* tanh = g->add_node(OpId::Tanh, {mul->output(0)}, 1, "tanh");
  ir::Node* sum = g->add_node(OpId::ReduceSum, {tanh->output(0)}, 1, "sum");
  sum->attributes.set("keepdims", int64_t{0});
  g->add_output(sum->output(0), "loss");
  g->add_output(g->add_node(OpId::Neg, {unused}, 1, "other")->output(0), "other");
  ops::infer_types(*g);
  return g;
}

TEST(GradientGraph, OutputsAreTheLossThenOneGradientPerValueAndBackwardNodesAreMarked) {
  auto g = small_model();
  auto grad = autodiff::gradient(*g, "loss", {"W", "x"});
  ir::verify(*grad);
  ASSERT_EQ(grad->output_names(), (std::vector<std::string>{"loss", "W_grad", "x_grad"}));
  EXPECT_EQ(grad->type_of(grad->outputs()[1]), ir::ValueType::of(DType::float32, {3}));
  EXPECT_EQ(grad->type_of(grad->outputs()[2]), ir::ValueType::of(DType::float32, {2, 3}));
  size_t backward = 0;
  for (const auto& n : grad->nodes()) {
    if (n->name == "mul" || n->name == "tanh" || n->name == "sum") {
      EXPECT_FALSE(n->is_backward) << n->describe();
    }
    if (n->op() != OpId::Constant && n->op() != OpId::Input && n->name != "mul" && n->name != "tanh" &&
        n->name != "sum") {
      EXPECT_TRUE(n->is_backward) << n->describe();
      ++backward;
    }
    EXPECT_NE(n->name, "other") << "values the loss and gradients do not need are dropped";
  }
  EXPECT_GT(backward, 0u);
  // W is broadcast over the rows of x: its gradient is summed back to [3].
  size_t reduce_sums = 0;
  for (const auto& n : grad->nodes()) reduce_sums += n->is_backward && n->op() == OpId::ReduceSum;
  EXPECT_EQ(reduce_sums, 1u);
}

TEST(GradientGraph, ValuesReadTwiceSumTheirContributions) {
  check_gradients("x * x + exp(x)", {{{3}}}, [](ir::Graph& g, const std::vector<Value>& x) -> std::vector<Value> {
    return {node(g, OpId::Add, {node(g, OpId::Mul, {x[0], x[0]}), node(g, OpId::Exp, {x[0]})})};
  });
}

TEST(GradientGraph, ShapeComputationsAreFoldedSoThatShapesAreKnown) {
  // As exporters write x.view(x.size(0), -1): Shape -> Gather -> Unsqueeze -> Concat -> Reshape.
  auto build = [](ir::Graph& g, const std::vector<Value>& x) -> std::vector<Value> {
    Value zero = g.add_constant("zero", Tensor::scalar<int64_t>(0))->output(0);
    Value batch = node(g, OpId::Gather, {node(g, OpId::Shape, {x[0]}), zero});
    Value shape =
        node(g, OpId::Concat, {node(g, OpId::Unsqueeze, {batch, ints(g, {0})}), ints(g, {-1})}, {{"axis", int64_t{0}}});
    Value flat = node(g, OpId::Reshape, {node(g, OpId::Exp, {x[0]}), shape});
    // Inference alone does not know `flat`'s shape; the loss's terms need one.
    return {node(g, OpId::Reshape, {node(g, OpId::Mul, {flat, flat}), ints(g, {2, 6})})};
  };
  check_gradients("x.view(x.size(0), -1)", {{{2, 3, 2}}}, build);
  auto forward = make_forward({{{2, 3, 2}}}, build, 1);
  auto grad = autodiff::gradient(*forward, "loss", {"x0"});
  for (const auto& n : grad->nodes()) EXPECT_NE(n->op(), OpId::Shape) << n->describe();
}

TEST(GradientGraph, AValueTheLossDoesNotDependOnGetsZeros) {
  auto g = small_model();
  auto grad = autodiff::gradient(*g, "loss", {"unused"});
  auto out = reference_session(*grad)->run({random_tensor({2, 3}, 1)});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[1].shape(), (Shape{2}));
  for (int64_t i = 0; i < 2; ++i) EXPECT_EQ(out[1].value_as_double(i), 0.0);
}

TEST(GradientGraph, AnOpWithoutABuilderIsAnErrorNamingTheOpAndThePath) {
  auto g = std::make_unique<ir::Graph>();
  g->opset_imports[""] = 17;
  Value x = g->add_input("x", ir::ValueType::of(DType::float32, {3, 3}))->output(0);
  Value a = g->add_node(OpId::Det, {x}, 1, "the_det")->output(0);
  Value t = g->add_node(OpId::Tanh, {a}, 1, "the_tanh")->output(0);
  ir::Node* sum = g->add_node(OpId::ReduceSum, {t}, 1, "the_sum");
  sum->attributes.set("keepdims", int64_t{0});
  g->add_output(sum->output(0), "loss");
  try {
    autodiff::gradient(*g, "loss", {"x"});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::unsupported);
    const std::string message = e.what();
    EXPECT_NE(message.find("Det has no gradient builder"), std::string::npos) << message;
    EXPECT_NE(message.find("'the_sum' (ReduceSum) -> 'the_tanh' (Tanh) -> 'the_det' (Det)"), std::string::npos)
        << message;
  }
}

TEST(GradientGraph, TheLossMustBeAScalarAndNamesMustExist) {
  auto g = small_model();
  auto expect_error = [&](const std::string& loss, std::vector<std::string> wrt, const std::string& text) {
    try {
      autodiff::gradient(*g, loss, wrt);
      ADD_FAILURE() << "expected an error with " << text;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::invalid_argument);
      EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
    }
  };
  expect_error("tanh", {"W"}, "must be a floating-point scalar, but it is float32[2,3]");
  expect_error("nothing", {"W"}, "no value named 'nothing'");
  expect_error("loss", {"mul"}, "is not an initializer or an input");
  expect_error("loss", {"W", "W"}, "'W' is named twice");
}

TEST(GradientGraph, TrainableInitializersAreTheFloatWeightsTheLossReads) {
  auto g = small_model();
  EXPECT_EQ(autodiff::trainable_initializers(*g, "loss"), (std::vector<std::string>{"W"}));
}

TEST(GradientGraph, FusionKeepsForwardAndBackwardNodesApart) {
  // Tanh -> Sigmoid -> Mul chains forward; their gradients are chains of Mul,
  // Sub and Where backward, reading the forward values.
  auto g = std::make_unique<ir::Graph>();
  g->opset_imports[""] = 17;
  Value x = g->add_input("x", ir::ValueType::of(DType::float32, {4, 8}))->output(0);
  Value w = g->add_constant("w", random_tensor({8}, 1))->output(0);
  Value h = node(*g, OpId::Sigmoid, {node(*g, OpId::Tanh, {node(*g, OpId::Mul, {x, w})})});
  Value r = node(*g, OpId::Relu, {node(*g, OpId::Sub, {h, node(*g, OpId::Exp, {x})})});
  g->add_output(node(*g, OpId::ReduceMean, {r}, {{"keepdims", int64_t{0}}}), "loss");
  std::unique_ptr<ir::Graph> fused = autodiff::gradient(*g, "loss", {"w"});
  passes::PassContext context;
  context.verify_after_each = true;
  passes::run_pipeline(fused, {"infer", "fuse-pointwise"}, context);
  size_t forward = 0, backward = 0;
  for (const auto& n : fused->nodes()) {
    if (n->op() != OpId::FusedPointwise) continue;
    (n->is_backward ? backward : forward) += 1;
    for (const auto& member : n->subgraph->nodes()) {
      if (member->op() != OpId::Input && member->op() != OpId::Constant) {
        EXPECT_EQ(member->is_backward, n->is_backward) << member->describe() << " in " << n->describe();
      }
    }
  }
  EXPECT_GE(forward, 1u);
  EXPECT_GE(backward, 1u);
  auto want = run_graph(*autodiff::gradient(*g, "loss", {"w"}), {random_tensor({4, 8}, 2)});
  auto got = run_graph(*fused, {random_tensor({4, 8}, 2)});
  for (size_t i = 0; i < got.size(); ++i) expect_close(got[i], want[i], 1e-5, 1e-6);
}

TEST(GradientGraph, RunsThroughASessionWithTheDefaultBackendsAndFusion) {
  // An MLP in float32: the default pipeline (passes, dnnl where built, fusion
  // of the backward pointwise chains) agrees with the reference kernels.
  auto g = std::make_unique<ir::Graph>();
  g->opset_imports[""] = 17;
  Value x = g->add_input("x", ir::ValueType::of(DType::float32, {8, 5}))->output(0);
  Value w1 = g->add_constant("w1", random_tensor({5, 16}, 1))->output(0);
  Value b1 = g->add_constant("b1", random_tensor({16}, 2))->output(0);
  Value w2 = g->add_constant("w2", random_tensor({16, 3}, 3))->output(0);
  Value h = node(*g, OpId::Gelu, {node(*g, OpId::Add, {node(*g, OpId::MatMul, {x, w1}), b1})});
  Value logits = node(*g, OpId::MatMul, {node(*g, OpId::Sigmoid, {h}), w2});
  Value loss = node(*g, OpId::SoftmaxCrossEntropyLoss, {logits, ints(*g, {0, 1, 2, 0, 1, 2, 0, 1})});
  g->add_output(loss, "loss");
  auto grad = autodiff::gradient(*g, "loss", autodiff::trainable_initializers(*g, "loss"));
  ASSERT_EQ(grad->output_names(), (std::vector<std::string>{"loss", "w1_grad", "b1_grad", "w2_grad"}));
  std::vector<Tensor> inputs{random_tensor({8, 5}, 4)};
  auto want = run_graph(*grad, inputs);
  runtime::Session session(grad->clone());
  auto got = session.run(inputs);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    SCOPED_TRACE(grad->output_names()[i]);
    expect_close(got[i], want[i], 1e-4, 1e-5);
  }
}

TEST(GradientGraph, LogOfSigmoidStaysFiniteWhereTheSigmoidUnderflows) {
  // PyTorch exports logsigmoid as Log(Sigmoid(x)); through the chain rule its
  // gradient at x = -120 would be 0 * (1 / 0). d/dx log(sigmoid(x)) = sigmoid(-x).
  auto g = std::make_unique<ir::Graph>();
  g->opset_imports[""] = 17;
  Value x = g->add_input("x", ir::ValueType::of(DType::float32, {4}))->output(0);
  Value log_sigmoid = node(*g, OpId::Log, {node(*g, OpId::Sigmoid, {x})});
  g->add_output(node(*g, OpId::ReduceSum, {log_sigmoid}, {{"keepdims", int64_t{0}}}), "loss");
  auto grad = autodiff::gradient(*g, "loss", {"x"});
  const std::vector<float> xs{-120.0f, -3.0f, 0.5f, 90.0f};
  auto out = run_graph(*grad, {Tensor::from_vector<float>(xs, {4})});
  ASSERT_EQ(out.size(), 2u);
  double loss = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    const double expected = 1.0 / (1.0 + std::exp(static_cast<double>(xs[i])));
    EXPECT_NEAR(out[1].data<float>()[i], expected, 1e-6) << "x = " << xs[i];
    loss += -std::log1p(std::exp(-static_cast<double>(xs[i])));
  }
  EXPECT_NEAR(out[0].data<float>()[0], loss, 1e-3 * std::abs(loss));
}

}  // namespace
}  // namespace graft::testing::autodiff_check
