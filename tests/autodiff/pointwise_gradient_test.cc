// Finite differences (float64, central, h = 1e-6; |autodiff - numeric| <=
// 1e-6 + 1e-5 |numeric|) on the gradient builders of pointwise ops.
#include "gradient_check.h"

namespace graft::testing::autodiff_check {
namespace {

using ir::OpId;
using ir::Value;

TEST(PointwiseGradient, UnaryOps) {
  struct Case {
    OpId op;
    Domain domain;
    std::vector<std::pair<std::string, ir::AttributeValue>> attributes;
  };
  const std::vector<Case> cases = {
      {OpId::Neg, Domain::symmetric, {}},
      {OpId::Exp, Domain::symmetric, {}},
      {OpId::Log, Domain::positive, {}},
      {OpId::Sqrt, Domain::positive, {}},
      {OpId::Reciprocal, Domain::positive, {}},
      {OpId::Tanh, Domain::symmetric, {}},
      {OpId::Sin, Domain::symmetric, {}},
      {OpId::Cos, Domain::symmetric, {}},
      {OpId::Abs, Domain::symmetric, {}},
      {OpId::Erf, Domain::symmetric, {}},
      {OpId::Sigmoid, Domain::symmetric, {}},
      {OpId::Relu, Domain::symmetric, {}},
      {OpId::LeakyRelu, Domain::symmetric, {{"alpha", 0.1f}}},
      {OpId::Elu, Domain::symmetric, {{"alpha", 0.7f}}},
      {OpId::Selu, Domain::symmetric, {}},
      {OpId::Celu, Domain::symmetric, {{"alpha", 1.5f}}},
      {OpId::ThresholdedRelu, Domain::symmetric, {{"alpha", 0.2f}}},
      {OpId::Softplus, Domain::symmetric, {}},
      {OpId::Softsign, Domain::symmetric, {}},
      {OpId::Mish, Domain::symmetric, {}},
      {OpId::HardSigmoid, Domain::symmetric, {{"alpha", 0.6f}}},
      {OpId::HardSwish, Domain::symmetric, {}},
      {OpId::Gelu, Domain::symmetric, {}},
      {OpId::Gelu, Domain::symmetric, {{"approximate", std::string("tanh")}}},
      {OpId::Identity, Domain::symmetric, {}},
      {OpId::Floor, Domain::symmetric, {}},
      {OpId::Sign, Domain::symmetric, {}},
  };
  for (const Case& c : cases) {
    check_gradients(std::string(ir::op_name(c.op)), {{{2, 5}, c.domain}},
                    [&](ir::Graph& g, const std::vector<Value>& x) -> std::vector<Value> {
                      return {node(g, c.op, {x[0]}, c.attributes)};
                    });
  }
}

TEST(PointwiseGradient, InverseAndHyperbolicFunctions) {
  // x in [-0.8, 0.8] (Asin, Acos, Atanh), Acosh at x + 1.5.
  for (OpId op :
       {OpId::Asin, OpId::Acos, OpId::Atan, OpId::Tan, OpId::Sinh, OpId::Cosh, OpId::Asinh, OpId::Acosh, OpId::Atanh}) {
    check_gradients(std::string(ir::op_name(op)), {{{2, 4}}},
                    [&](ir::Graph& g, const std::vector<Value>& x) -> std::vector<Value> {
                      Value scaled = op == OpId::Acosh ? node(g, OpId::Add, {x[0], doubles(g, {2.5}, {})})
                                                       : node(g, OpId::Mul, {x[0], doubles(g, {0.8}, {})});
                      return {node(g, op, {scaled})};
                    });
  }
}

TEST(PointwiseGradient, HardSwishOutsideTheRamp) {
  // Inputs of [-1, 1] times 5 reach both flat parts.
  check_gradients("HardSwish", {{{3, 4}}}, [](ir::Graph& g, const std::vector<Value>& x) -> std::vector<Value> {
    return {node(g, OpId::HardSwish, {node(g, OpId::Mul, {x[0], doubles(g, {5.0}, {})})})};
  });
}

TEST(PointwiseGradient, BinaryOpsWithBroadcasting) {
  for (OpId op : {OpId::Add, OpId::Sub, OpId::Mul, OpId::Div, OpId::Pow}) {
    const Domain domain = op == OpId::Div || op == OpId::Pow ? Domain::positive : Domain::symmetric;
    for (const auto& shapes :
         std::vector<std::pair<Shape, Shape>>{{{2, 3}, {2, 3}}, {{2, 3}, {3}}, {{2, 1, 4}, {3, 1}}, {{}, {2, 2}}}) {
      check_gradients(
          std::string(ir::op_name(op)) + " " + shape_to_string(shapes.first) + " " + shape_to_string(shapes.second),
          {{shapes.first, domain}, {shapes.second, domain}},
          [&](ir::Graph& g, const std::vector<Value>& x) -> std::vector<Value> {
            return {node(g, op, {x[0], x[1]})};
          });
    }
  }
}

TEST(PointwiseGradient, PowWithAConstantIntegerExponent) {
  check_gradients("Pow x^3", {{{2, 3}}}, [](ir::Graph& g, const std::vector<Value>& x) -> std::vector<Value> {
    return {node(g, OpId::Pow, {x[0], ints(g, {3}, {})})};
  });
}

// A constant exponent e gives x^(e - 1) with e - 1 a constant: no Sub to
// fold, so a training step's Session (which folds no constants) still has
// a Pow by a constant, which the dnnl backend runs (a squared error).
TEST(PointwiseGradient, PowByAConstantHasAConstantExponentInItsGradient) {
  ir::Graph g;
  Value x = g.add_input("x", ir::ValueType::of(DType::float32, {2, 3}))->output(0);
  Value w = g.add_constant("w", Tensor::from_vector<float>({1, -2, 3, 0.5f, -1, 2}, {2, 3}))->output(0);
  Value two = g.add_constant("two", Tensor::scalar(2.0f))->output(0);
  ir::Node* sum = g.add_node(OpId::ReduceSum, {node(g, OpId::Pow, {node(g, OpId::Mul, {x, w}), two})});
  sum->attributes.set("keepdims", int64_t{0});
  g.add_output(sum->output(0), "loss");
  ops::infer_types(g);
  auto step = autodiff::gradient(g, "loss", {"w"});
  int backward_pows = 0;
  for (const auto& n : step->nodes()) {
    if (!n->is_backward) continue;
    EXPECT_NE(n->op(), OpId::Sub) << n->describe();
    if (n->op() != OpId::Pow) continue;
    ++backward_pows;
    ASSERT_EQ(n->inputs[1].node->op(), OpId::Constant) << n->describe();
    EXPECT_EQ(n->inputs[1].node->constant_value.value_as_double(0), 1.0);
  }
  EXPECT_EQ(backward_pows, 1);
  // d/dw sum((x w)^2) = 2 x^2 w
  Tensor xs = Tensor::from_vector<float>({0.5f, 1, -1, 2, 0.25f, -3}, {2, 3});
  auto out = runtime::Session(step->clone()).run({xs});
  ASSERT_EQ(out.size(), 2u);
  const std::vector<float> wv = {1, -2, 3, 0.5f, -1, 2};
  for (int64_t i = 0; i < 6; ++i) {
    const float xi = xs.data<float>()[i];
    EXPECT_NEAR(out[1].data<float>()[i], 2 * xi * xi * wv[static_cast<size_t>(i)], 1e-5) << i;
  }
}

TEST(PointwiseGradient, VariadicOps) {
  for (OpId op : {OpId::Sum, OpId::Mean, OpId::Max, OpId::Min}) {
    check_gradients(std::string(ir::op_name(op)), {{{2, 3}}, {{3}}, {{2, 1}}},
                    [&](ir::Graph& g, const std::vector<Value>& x) -> std::vector<Value> {
                      return {node(g, op, {x[0], x[1], x[2]})};
                    });
  }
}

TEST(PointwiseGradient, WhereSendsTheGradientToTheChosenBranch) {
  check_gradients("Where", {{{2, 3}}, {{3}}}, [](ir::Graph& g, const std::vector<Value>& x) -> std::vector<Value> {
    Value condition = node(g, OpId::Greater, {x[0], doubles(g, {0.0}, {})});
    return {node(g, OpId::Where, {condition, x[0], x[1]})};
  });
}

TEST(PointwiseGradient, ClipToConstantAndDifferentiatedBounds) {
  check_gradients("Clip constant bounds", {{{3, 4}}},
                  [](ir::Graph& g, const std::vector<Value>& x) -> std::vector<Value> {
                    return {node(g, OpId::Clip, {x[0], doubles(g, {-0.5}, {}), doubles(g, {0.4}, {})})};
                  });
  check_gradients(
      "Clip bounds as inputs", {{{3, 4}}, {{}}, {{}, Domain::positive}},
      [](ir::Graph& g, const std::vector<Value>& x) -> std::vector<Value> {
        // low in [-0.7, -0.3] stays below high in [0.25, 0.75].
        Value low = node(g, OpId::Sub, {node(g, OpId::Mul, {x[1], doubles(g, {0.2}, {})}), doubles(g, {0.5}, {})});
        Value high = node(g, OpId::Mul, {x[2], doubles(g, {0.5}, {})});
        return {node(g, OpId::Clip, {x[0], low, high})};
      });
}

TEST(PointwiseGradient, PReluDifferentiatesTheSlope) {
  check_gradients("PRelu", {{{2, 3, 4}}, {{3, 1}}},
                  [](ir::Graph& g, const std::vector<Value>& x) -> std::vector<Value> {
                    return {node(g, OpId::PRelu, {x[0], x[1]})};
                  });
}

TEST(PointwiseGradient, CastThroughFloat32AndBack) {
  check_gradients(
      "Cast", {{{4}}},
      [](ir::Graph& g, const std::vector<Value>& x) -> std::vector<Value> {
        Value f = node(g, OpId::Cast, {x[0]}, {{"to", static_cast<int64_t>(DType::float32)}});
        Value back = node(g, OpId::Cast, {node(g, OpId::Tanh, {f})}, {{"to", static_cast<int64_t>(DType::float64)}});
        return {back};
      },
      1, 1e-3, 1e-3, 1e-3);
}

}  // namespace
}  // namespace graft::testing::autodiff_check
