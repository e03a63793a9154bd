// A training step's forward and backward nodes on the dnnl backend, against
// the reference kernels on the same random inputs: training-mode
// BatchNormalization (batch statistics, running statistics), a Relu's
// gradient Where(Greater(x, 0), d_y, 0) as oneDNN's eltwise backward, a Sum
// of two gradient contributions; that the normalization's gradient reads the
// forward's statistics rather than computing them again; the layout claim
// (a conv -> batch norm -> relu block's forward and backward in the
// convolutions' blocked layout: no reorder between the backward primitives,
// batch normalization on a blocked implementation); and a residual block's
// gradient graph with every one of these nodes on dnnl.
#include "../../backends/dnnl/dnnl_support.h"
#include "autodiff/gradient_check.h"
#include "dnnl_training_case.h"

namespace graft::testing {
namespace {

using ir::OpId;
using ir::Value;

Value filled(ir::Graph& g, const std::string& name, int64_t n, float value) {
  return g.add_constant(name, Tensor::from_vector<float>(std::vector<float>(static_cast<size_t>(n), value), {n}))
      ->output(0);
}
Value scalar(ir::Graph& g, const std::string& name, float value) {
  return g.add_constant(name, Tensor::from_vector<float>({value}, {}))->output(0);
}

// A training-mode BatchNormalization of `x` with `outputs` outputs (1: Y; 3:
// Y and the running statistics).
ir::Node* batch_norm_training(ir::Graph& g, Value x, int64_t channels, int outputs, const std::string& name) {
  ir::Node* bn = g.add_node(
      OpId::BatchNormalization,
      {x, random_constant(g, name + ".scale", {channels}, 21), random_constant(g, name + ".bias", {channels}, 22),
       random_constant(g, name + ".mean", {channels}, 23), filled(g, name + ".var", channels, 0.7f)},
      outputs, name);
  bn->attributes.set("training_mode", int64_t{1});
  bn->attributes.set("epsilon", 1e-3f);
  bn->attributes.set("momentum", 0.8f);
  return bn;
}

// Conv with `channels` filters of 3x3, padded, on x.
Value conv3x3(ir::Graph& g, Value x, int64_t in_channels, int64_t channels, uint64_t seed, const std::string& name) {
  ir::Node* conv =
      g.add_node(OpId::Conv, {x, random_constant(g, name + ".w", {channels, in_channels, 3, 3}, seed)}, 1, name);
  conv->attributes.set("pads", std::vector<int64_t>{1, 1, 1, 1});
  return conv->output(0);
}

TEST(DnnlTrainingStep, BatchNormalizationTrainingMode) {
  for (const Shape& shape : std::vector<Shape>{{2, 8, 5, 5}, {5, 3}, {3, 4, 7}, {2, 4, 3, 4, 5}, {4, 17, 6, 6}}) {
    for (int outputs : {1, 3}) {
      SCOPED_TRACE(shape_to_string(shape) + " outputs " + std::to_string(outputs));
      auto g = new_graph();
      Value x = float_input(*g, "x", shape);
      ir::Node* bn = batch_norm_training(*g, x, shape[1], outputs, "bn");
      for (int k = 0; k < outputs; ++k) g->add_output(bn->output(k));
      ops::infer_types(*g);
      EXPECT_TRUE(dnnl_backend::dnnl_supports(*bn)) << dnnl_backend::dnnl_supports(*bn).reason;
      expect_dnnl_matches_reference(*g, {random_tensor(shape, 3)}, 2e-5);
    }
  }
}

// After a convolution the normalization reads (and writes) its blocked layout.
TEST(DnnlTrainingStep, BatchNormalizationTrainingModeAfterAConvolution) {
  for (int64_t channels : {16, 24, 5}) {
    SCOPED_TRACE("channels " + std::to_string(channels));
    auto g = new_graph();
    Value x = float_input(*g, "x", {2, 8, 9, 9});
    ir::Node* bn = batch_norm_training(*g, conv3x3(*g, x, 8, channels, 4, "conv"), channels, 3, "bn");
    for (int k = 0; k < 3; ++k) g->add_output(bn->output(k));
    auto stats = expect_dnnl_matches_reference(*g, {random_tensor({2, 8, 9, 9}, 5)}, 5e-5);
    EXPECT_EQ(stats.fused_nodes, 0) << "a training-mode BatchNormalization must not be folded into the convolution";
  }
}

// The gradient with x plain (a module input: a forward activation that
// crossed into the backward's subgraph) and d_y from a convolution: x is
// converted to d_y's blocked layout, and the result is the reference's.
TEST(DnnlTrainingStep, BatchNormalizationGradientWithXPlainAndDyBlocked) {
  auto g = new_graph();
  const Shape shape{2, 16, 7, 7};
  Value x = float_input(*g, "x", shape);
  Value dy = conv3x3(*g, float_input(*g, "dy", shape), 16, 16, 16, "conv");
  ir::Node* grad =
      g->add_node(OpId::BatchNormalizationGrad, {dy, x, random_constant(*g, "scale", {16}, 17)}, 3, "bn_grad");
  grad->attributes.set("epsilon", 1e-3f);
  for (int k = 0; k < 3; ++k) g->add_output(grad->output(k));
  expect_dnnl_matches_reference(*g, {random_tensor(shape, 18), random_tensor(shape, 19)}, 2e-4);
}

// A node with running-statistic outputs in inference mode (ONNX computes
// none there) stays off dnnl.
TEST(DnnlTrainingStep, RunningStatisticsOutputsNeedTrainingMode) {
  auto g = new_graph();
  Value x = float_input(*g, "x", {2, 4, 3, 3});
  ir::Node* bn = batch_norm_training(*g, x, 4, 3, "bn");
  bn->attributes.set("training_mode", int64_t{0});
  ops::infer_types(*g);
  EXPECT_NE(dnnl_backend::dnnl_supports(*bn).reason.find("running statistics"), std::string::npos);
}

// x and d_y plain; x from a convolution (blocked); d_y from one (x is then
// read in d_y's layout).
TEST(DnnlTrainingStep, ReluGradient) {
  enum class Conv { none, on_x, on_dy };
  for (Conv conv : {Conv::none, Conv::on_x, Conv::on_dy}) {
    for (const Shape& shape : std::vector<Shape>{{2, 16, 7, 7}, {3, 5, 4, 6}, {6, 10}}) {
      if (conv != Conv::none && shape.size() != 4) continue;
      SCOPED_TRACE(shape_to_string(shape) + " conv " + std::to_string(static_cast<int>(conv)));
      auto g = new_graph();
      Value x = float_input(*g, "x", shape);
      Value dy = float_input(*g, "dy", shape);
      if (conv == Conv::on_x) x = conv3x3(*g, x, shape[1], shape[1], 6, "conv");
      if (conv == Conv::on_dy) dy = conv3x3(*g, dy, shape[1], shape[1], 6, "conv");
      ir::Node* mask = g->add_node(OpId::Greater, {x, scalar(*g, "zero", 0.0f)}, 1, "mask");
      ir::Node* where = g->add_node(OpId::Where, {mask->output(0), dy, scalar(*g, "zero_dx", 0.0f)}, 1, "relu_grad");
      g->add_output(where->output(0));
      ops::infer_types(*g);
      EXPECT_TRUE(dnnl_backend::dnnl_supports(*mask)) << dnnl_backend::dnnl_supports(*mask).reason;
      EXPECT_TRUE(dnnl_backend::dnnl_supports(*where)) << dnnl_backend::dnnl_supports(*where).reason;
      // x has exact zeros (x > 0 is false there: a zero gradient, as PyTorch's).
      Tensor x_value = random_tensor(shape, 7);
      if (conv != Conv::on_x)
        for (int64_t i = 0; i < x_value.numel(); i += 5) x_value.data<float>()[i] = 0.0f;
      auto stats = expect_dnnl_matches_reference(*g, {x_value, random_tensor(shape, 8)}, 1e-5);
      EXPECT_EQ(stats.reference_primitives, 0);
    }
  }
}

// Only Greater(x, 0) into Where(mask, d_y, 0) is a Relu's gradient.
TEST(DnnlTrainingStep, OtherWheresAndGreatersAreNotDnnls) {
  auto g = new_graph();
  Value x = float_input(*g, "x", {4, 6});
  Value dy = float_input(*g, "dy", {4, 6});
  ir::Node* above_one = g->add_node(OpId::Greater, {x, scalar(*g, "one", 1.0f)}, 1, "above_one");
  ir::Node* mask = g->add_node(OpId::Greater, {x, scalar(*g, "zero", 0.0f)}, 1, "mask");
  ir::Node* leaky = g->add_node(OpId::Where, {mask->output(0), dy, x}, 1, "leaky");
  for (ir::Node* n : {above_one, leaky}) g->add_output(n->output(0));
  ops::infer_types(*g);
  EXPECT_NE(dnnl_backend::dnnl_supports(*above_one).reason.find("x > 0"), std::string::npos);
  EXPECT_NE(dnnl_backend::dnnl_supports(*leaky).reason.find("constant 0"), std::string::npos);
}

TEST(DnnlTrainingStep, SumOfTwoContributions) {
  auto g = new_graph();
  Value x = float_input(*g, "x", {2, 16, 6, 6});
  Value y = float_input(*g, "y", {2, 16, 6, 6});
  g->add_output(g->add_node(OpId::Sum, {conv3x3(*g, x, 16, 16, 9, "conv"), y}, 1, "sum")->output(0));
  expect_dnnl_matches_reference(*g, {random_tensor({2, 16, 6, 6}, 10), random_tensor({2, 16, 6, 6}, 11)}, 1e-5);

  auto three = new_graph();
  Value a = float_input(*three, "a", {2, 3});
  ir::Node* sum = three->add_node(OpId::Sum, {a, a, a}, 1, "three");
  three->add_output(sum->output(0));
  ops::infer_types(*three);
  EXPECT_NE(dnnl_backend::dnnl_supports(*sum).reason.find("two inputs"), std::string::npos);
}

// One conv -> BatchNormalization (training) -> Relu -> conv block and its
// backward by hand (the nodes autodiff writes), as one dnnl subgraph:
//   forward:  y1 = Conv(x, w1); z = BN(y1); r = Relu(z); out = Conv(r, w2)
//   backward: dr = ConvInputGrad(d_out, w2, r); dz = Where(Greater(z, 0), dr, 0);
//             dy1, dscale, dbias = BatchNormalizationGrad(dz, y1, scale);
//             dw1 = ConvWeightGrad(dy1, x, w1); dw2 = ConvWeightGrad(d_out, r, w2)
struct Block {
  std::unique_ptr<ir::Graph> graph = new_graph();
  std::vector<Tensor> inputs;
};

Block conv_bn_relu_block(int64_t channels) {
  Block b;
  ir::Graph& g = *b.graph;
  const Shape x_shape{2, channels, 10, 10};
  Value x = float_input(g, "x", x_shape);
  Value d_out = float_input(g, "d_out", x_shape);
  Value w1 = random_constant(g, "w1", {channels, channels, 3, 3}, 12),
        w2 = random_constant(g, "w2", {channels, channels, 3, 3}, 13);
  ir::Node* conv1 = g.add_node(OpId::Conv, {x, w1}, 1, "conv1");
  ir::Node* bn = batch_norm_training(g, conv1->output(0), channels, 1, "bn");
  ir::Node* relu = g.add_node(OpId::Relu, {bn->output(0)}, 1, "relu");
  ir::Node* conv2 = g.add_node(OpId::Conv, {relu->output(0), w2}, 1, "conv2");
  ir::Node* input_grad = g.add_node(OpId::ConvInputGrad, {d_out, w2, relu->output(0)}, 1, "conv2_input_grad");
  ir::Node* mask = g.add_node(OpId::Greater, {bn->output(0), scalar(g, "zero", 0.0f)}, 1, "relu_mask");
  ir::Node* relu_grad =
      g.add_node(OpId::Where, {mask->output(0), input_grad->output(0), scalar(g, "zero_dx", 0.0f)}, 1, "relu_grad");
  ir::Node* bn_grad =
      g.add_node(OpId::BatchNormalizationGrad, {relu_grad->output(0), conv1->output(0), bn->inputs[1]}, 3, "bn_grad");
  bn_grad->attributes.set("epsilon", 1e-3f);
  ir::Node* w1_grad = g.add_node(OpId::ConvWeightGrad, {bn_grad->output(0), x, w1}, 1, "conv1_weight_grad");
  ir::Node* w2_grad = g.add_node(OpId::ConvWeightGrad, {d_out, relu->output(0), w2}, 1, "conv2_weight_grad");
  for (ir::Node* n : {conv1, conv2, input_grad, w1_grad, w2_grad})
    n->attributes.set("pads", std::vector<int64_t>{1, 1, 1, 1});
  for (ir::Node* n : {conv2, bn_grad, w1_grad, w2_grad}) g.add_output(n->output(0));
  g.add_output(bn_grad->output(1));
  g.add_output(bn_grad->output(2));
  ops::infer_types(g);
  b.inputs = {random_tensor(x_shape, 14), random_tensor(x_shape, 15)};
  return b;
}

TEST(DnnlTrainingStep, ConvBatchNormReluBlockMatchesTheReference) {
  for (int64_t channels : {16, 8}) {
    SCOPED_TRACE("channels " + std::to_string(channels));
    Block block = conv_bn_relu_block(channels);
    expect_dnnl_matches_reference(*block.graph, block.inputs, 2e-4);
  }
}

// The layout claim: in that block the gradient goes from the convolution's
// backward through the Relu's and the normalization's backward to the next
// convolution's backward in one layout, with no conversion (each step reads
// the buffer the previous one wrote; only forward activations are converted
// to the backward primitives' layout, once); the normalization's gradient
// reads the forward's statistics (one forward normalization); and oneDNN
// runs both normalizations on a blocked implementation, not on plain NCHW
// (ncsp).
TEST(DnnlTrainingStep, ConvBatchNormReluBlockKeepsTheGradientInOneLayout) {
  if (!onednn_runs_avx512_core()) GTEST_SKIP() << "the blocked layouts asserted are oneDNN's AVX-512 ones";
  Block block = conv_bn_relu_block(16);
  dnnl_backend::DnnlProgram program = dnnl_backend::build_program(*block.graph);
  auto arg = [&](const std::string& label, int which) { return step_argument_slot(program, label, which); };
  EXPECT_EQ(arg("conv2_input_grad", DNNL_ARG_DIFF_SRC), arg("relu_grad", DNNL_ARG_DIFF_DST));
  EXPECT_EQ(arg("relu_grad", DNNL_ARG_DIFF_SRC), arg("bn_grad", DNNL_ARG_DIFF_DST));
  EXPECT_EQ(arg("bn_grad", DNNL_ARG_DIFF_SRC), arg("conv1_weight_grad", DNNL_ARG_DIFF_DST));
  int normalization_forwards = 0;
  for (const dnnl_backend::Step& step : program.steps) {
    if (step.label == "bn" || step.label == "bn_grad") {
      EXPECT_EQ(step.implementation.find("ncsp"), std::string::npos) << step.label << ": " << step.implementation;
      EXPECT_EQ(step.implementation.rfind("ref", 0), std::string::npos) << step.label << ": " << step.implementation;
    }
    if (step.label.rfind("bn", 0) == 0 && step.label != "bn_grad") ++normalization_forwards;
  }
  EXPECT_EQ(normalization_forwards, 1) << "the gradient computed the batch statistics again";
}

// Where x and d_y both arrive plain, the normalization's gradient still runs
// on the blocked implementation (both converted), not on plain NCHW.
TEST(DnnlTrainingStep, BatchNormalizationGradientOfPlainValuesRunsBlocked) {
  if (!onednn_runs_avx512_core()) GTEST_SKIP() << "the blocked layouts asserted are oneDNN's AVX-512 ones";
  auto g = new_graph();
  const Shape shape{4, 32, 7, 7};
  Value x = float_input(*g, "x", shape);
  Value dy = float_input(*g, "dy", shape);
  ir::Node* grad =
      g->add_node(OpId::BatchNormalizationGrad, {dy, x, random_constant(*g, "scale", {32}, 20)}, 3, "bn_grad");
  for (int k = 0; k < 3; ++k) g->add_output(grad->output(k));
  expect_dnnl_matches_reference(*g, {random_tensor(shape, 21), random_tensor(shape, 22)}, 2e-4);
  dnnl_backend::DnnlProgram program = dnnl_backend::build_program(*g);
  int normalizations = 0;
  for (const dnnl_backend::Step& step : program.steps)
    if (step.label.rfind("bn_grad", 0) == 0 && step.label.find("reorder") == std::string::npos) {
      EXPECT_EQ(step.implementation.find("ncsp"), std::string::npos) << step.label << ": " << step.implementation;
      ++normalizations;
    }
  EXPECT_EQ(normalizations, 2);  // the forward for the statistics, the backward
}

// A residual block's gradient graph from autodiff::gradient, in a Session
// with dnnl, fuse and ref: the training-mode normalizations, the Relu
// gradients and the Sum of the residual's two contributions run on dnnl, and
// the gradients match the reference kernels.
TEST(DnnlTrainingStep, AResidualBlockGradientGraph) {
  using autodiff_check::node;
  auto g = new_graph();
  Value x = float_input(*g, "x", {2, 16, 8, 8});
  Value stem = conv3x3(*g, x, 16, 16, 31, "stem");
  Value a = node(*g, OpId::Relu, {batch_norm_training(*g, stem, 16, 3, "bn0")->output(0)});
  Value b = node(*g, OpId::Relu, {batch_norm_training(*g, conv3x3(*g, a, 16, 16, 32, "c1"), 16, 3, "bn1")->output(0)});
  Value c = batch_norm_training(*g, conv3x3(*g, b, 16, 16, 33, "c2"), 16, 3, "bn2")->output(0);
  Value out = node(*g, OpId::Relu, {node(*g, OpId::Add, {c, a})});
  Value pooled = node(*g, OpId::GlobalAveragePool, {out});
  Value loss = node(*g, OpId::ReduceSum, {node(*g, OpId::Mul, {pooled, pooled})}, {{"keepdims", int64_t{0}}});
  g->add_output(loss, "loss");
  auto grad = loss_gradient_graph(*g);
  DnnlSessionCheck check(*grad, {random_tensor({2, 16, 8, 8}, 34)});
  std::map<std::string, std::string> backend_of = check.backend_of();
  int checked = 0;
  for (const auto& n : grad->nodes()) {
    const OpId op = n->op();
    if (op == OpId::BatchNormalization || op == OpId::BatchNormalizationGrad || op == OpId::Where ||
        op == OpId::Greater || op == OpId::Sum) {
      ASSERT_FALSE(n->name.empty()) << n->describe();
      EXPECT_EQ(backend_of[n->name], "dnnl") << n->describe() << "\n" << check.session.partition_report().to_text();
      ++checked;
    }
  }
  EXPECT_GE(checked, 3 + 3 + 3 + 3 + 1);  // 3 norms and their gradients, 3 Relu gradients (mask, Where), a Sum
  check.expect_run_matches_reference(5e-4);
}

}  // namespace
}  // namespace graft::testing
