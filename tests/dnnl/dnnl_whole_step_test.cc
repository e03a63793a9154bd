// A classifier's training step as one dnnl subgraph: the loss and its
// gradient (SoftmaxCrossEntropyLoss, NegativeLogLikelihoodLoss and their
// graft gradients) run on graft's reference kernels inside a dnnl program,
// and GlobalAveragePool's gradient Expand on oneDNN's resampling, so that
// the forward and the backward are no longer two subgraphs with every
// activation the backward reads written plain between them. Each piece
// against the reference kernels, what the checkers decline, and a small
// residual CNN's step through a Session: one dnnl subgraph whose inputs are
// the graph's inputs only, with the reference backend's loss and gradients;
// and in such a program the forward convolutions write the layout the
// backward ones read.
#include "../../backends/dnnl/dnnl_support.h"
#include "autodiff/gradient_check.h"
#include "dnnl_training_case.h"

namespace graft::testing {
namespace {

using ir::OpId;
using ir::Value;

// Class indices in [0, classes), with `ignored` at every third position when not 0.
Tensor targets(const Shape& shape, int64_t classes, int64_t ignored = 0) {
  Tensor t(DType::int64, shape);
  for (int64_t i = 0; i < t.numel(); ++i)
    t.data<int64_t>()[i] = ignored != 0 && i % 3 == 1 ? ignored : (i * 7 + 3) % classes;
  return t;
}

struct LossCase {
  std::string name;
  OpId loss;
  Shape scores;  // [N, C] or [N, C, d]
  std::string reduction;
  bool weights = false;
  int64_t ignore_index = 0;  // 0: no ignore_index attribute
};

// scores = Gemm(x, w) (reshaped for 3-D scores): dnnl compute before the loss,
// as in a classifier; then the loss and its gradient, all one subgraph.
TEST(DnnlWholeStep, LossesAndTheirGradientsMatchTheReferenceKernels) {
  const std::vector<LossCase> cases = {
      {"cross-entropy mean", OpId::SoftmaxCrossEntropyLoss, {6, 10}, "mean"},
      {"cross-entropy sum, weights", OpId::SoftmaxCrossEntropyLoss, {6, 10}, "sum", true},
      {"cross-entropy none, ignore_index", OpId::SoftmaxCrossEntropyLoss, {6, 10}, "none", false, 4},
      {"cross-entropy mean, 3-D, weights, ignore_index", OpId::SoftmaxCrossEntropyLoss, {4, 5, 3}, "mean", true, 2},
      {"negative log-likelihood mean", OpId::NegativeLogLikelihoodLoss, {6, 10}, "mean"},
      {"negative log-likelihood mean, weights, ignore_index",
       OpId::NegativeLogLikelihoodLoss,
       {6, 10},
       "mean",
       true,
       3},
  };
  for (const LossCase& c : cases) {
    SCOPED_TRACE(c.name);
    const bool cross_entropy = c.loss == OpId::SoftmaxCrossEntropyLoss;
    const int64_t n = c.scores[0], classes = c.scores[1];
    const int64_t features = shape_numel(c.scores) / n;
    Shape target_shape = c.scores;
    target_shape.erase(target_shape.begin() + 1);
    auto g = new_graph();
    Value x = float_input(*g, "x", {n, 8});
    Value target = g->add_input("target", ir::ValueType::of(DType::int64, target_shape))->output(0);
    Value scores = named_node(*g, OpId::Gemm, {x, random_constant(*g, "w", {8, features}, 2)}, "fc");
    if (c.scores.size() == 3)
      scores = named_node(*g, OpId::Reshape, {scores, autodiff_check::ints(*g, c.scores)}, "reshape");
    std::vector<Value> loss_inputs = {scores, target};
    if (c.weights) loss_inputs.push_back(g->add_constant("class_weights", random_tensor({classes}, 3))->output(0));
    ir::Node* loss = g->add_node(c.loss, loss_inputs, cross_entropy ? 2 : 1, "loss");
    loss->attributes.set("reduction", c.reduction);
    if (c.ignore_index != 0) loss->attributes.set("ignore_index", c.ignore_index);
    ops::infer_types(*g);
    Shape loss_shape = loss->output_types[0].concrete_shape().value();
    Value d_loss = g->add_constant("d_loss", random_tensor(loss_shape, 4))->output(0);
    std::vector<Value> grad_inputs = {d_loss, scores, target};
    if (c.weights) grad_inputs.push_back(loss->inputs[2]);
    ir::Node* grad =
        g->add_node(cross_entropy ? OpId::SoftmaxCrossEntropyLossGrad : OpId::NegativeLogLikelihoodLossGrad,
                    grad_inputs, 1, "loss_grad");
    grad->attributes = loss->attributes;
    for (int k = 0; k < loss->num_outputs(); ++k) g->add_output(loss->output(k));
    g->add_output(grad->output(0));
    ops::infer_types(*g);
    for (const ir::Node* node : {loss, grad})
      EXPECT_TRUE(dnnl_backend::dnnl_supports(*node))
          << node->name << ": " << dnnl_backend::dnnl_supports(*node).reason;
    auto stats = expect_dnnl_matches_reference(
        *g, {random_tensor({n, 8}, 1), targets(target_shape, classes, c.ignore_index)}, 1e-5);
    EXPECT_EQ(stats.reference_kernel_steps, 2);
  }
}

// A target that is no class index is the reference kernel's one-line error,
// naming the node, as on `ref`.
TEST(DnnlWholeStep, ATargetOutOfRangeIsAClearError) {
  auto g = new_graph();
  Value x = float_input(*g, "x", {3, 8});
  Value target = g->add_input("target", ir::ValueType::of(DType::int64, {3}))->output(0);
  Value scores = named_node(*g, OpId::Gemm, {x, random_constant(*g, "w", {8, 5}, 2)}, "fc");
  g->add_output(named_node(*g, OpId::SoftmaxCrossEntropyLoss, {scores, target}, "the_loss"));
  ops::infer_types(*g);
  auto module = compile_dnnl(*g);
  Tensor bad = Tensor::from_vector<int64_t>({1, 7, 2}, {3});
  try {
    run_module(*module, {random_tensor({3, 8}, 1), bad});
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("the_loss"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("target value 7"), std::string::npos) << e.what();
  }
  Tensor wrong_dtype = Tensor::from_vector<int32_t>({1, 0, 2}, {3});
  EXPECT_THROW(run_module(*module, {random_tensor({3, 8}, 1), wrong_dtype}), Error);
}

// GlobalAveragePool's gradient expands [N, C, 1, 1] to [N, C, H, W]: nearest
// resampling on oneDNN, from a convolution's blocked layout or a plain one.
TEST(DnnlWholeStep, ExpandOfSpatialOnesIsResampling) {
  for (bool after_conv : {true, false}) {
    for (const Shape& out : std::vector<Shape>{{2, 16, 5, 7}, {3, 5, 4}, {2, 8, 3, 1, 4}}) {
      SCOPED_TRACE(shape_to_string(out) + (after_conv ? " after a convolution" : ""));
      const size_t rank = out.size();
      Shape ones = out;
      for (size_t d = 2; d < rank; ++d) ones[d] = 1;
      if (rank == 5) ones[3] = out[3];  // an extent already the output's stays
      auto g = new_graph();
      Value x = float_input(*g, "x", ones);
      if (after_conv) {
        Shape w{out[1], out[1]};
        for (size_t d = 2; d < rank; ++d) w.push_back(1);
        x = named_node(*g, OpId::Conv, {x, random_constant(*g, "w", w, 5)}, "conv");
      }
      Value expanded = named_node(*g, OpId::Expand, {x, autodiff_check::ints(*g, out)}, "expand");
      g->add_output(named_node(*g, OpId::Relu, {expanded}, "relu"));
      ops::infer_types(*g);
      const ir::Node& expand = *expanded.node;
      EXPECT_TRUE(dnnl_backend::dnnl_supports(expand)) << dnnl_backend::dnnl_supports(expand).reason;
      auto stats = expect_dnnl_matches_reference(*g, {random_tensor(ones, 6)}, 1e-6);
      EXPECT_EQ(stats.reference_primitives, 0);
      EXPECT_EQ(stats.reference_kernel_steps, 0);
    }
  }
}

TEST(DnnlWholeStep, OtherExpandsAreNotDnnls) {
  struct Declined {
    Shape in, out;
    std::string reason;
  };
  for (const Declined& d : std::vector<Declined>{{{2, 1, 1, 1}, {2, 16, 3, 3}, "batch or channel"},
                                                 {{1, 16, 1, 1}, {4, 16, 3, 3}, "batch or channel"},
                                                 {{16, 1}, {16, 8}, "rank 3 to 5"},
                                                 {{16, 1, 1}, {2, 16, 4, 4}, "rank 3 to 5"}}) {
    auto g = new_graph();
    Value x = float_input(*g, "x", d.in);
    Value expanded = named_node(*g, OpId::Expand, {x, autodiff_check::ints(*g, d.out)}, "expand");
    g->add_output(expanded);
    ops::infer_types(*g);
    EXPECT_NE(dnnl_backend::dnnl_supports(*expanded.node).reason.find(d.reason), std::string::npos)
        << shape_to_string(d.in) << " -> " << shape_to_string(d.out) << ": "
        << dnnl_backend::dnnl_supports(*expanded.node).reason;
  }
}

// A loss is no reason for a module of its own: scores from outside dnnl
// (a graph input) leave the loss to the reference backend.
TEST(DnnlWholeStep, ALossAwayFromDnnlComputeIsNotASubgraph) {
  auto g = new_graph();
  Value scores = float_input(*g, "scores", {4, 10});
  Value target = g->add_input("target", ir::ValueType::of(DType::int64, {4}))->output(0);
  g->add_output(named_node(*g, OpId::SoftmaxCrossEntropyLoss, {scores, target}, "loss"), "loss");
  runtime::SessionOptions options;
  options.backends = {"dnnl", "fuse", "ref"};
  runtime::Session session(std::move(g), options);
  EXPECT_TRUE(session.partition_report().subgraphs.empty()) << session.partition_report().to_text();
  std::vector<Tensor> got = session.run(std::vector<Tensor>{random_tensor({4, 10}, 1), targets({4}, 10)});
  EXPECT_TRUE(std::isfinite(got.at(0).data<float>()[0]));
}

// conv -> BN (training) -> Relu, a residual block, GlobalAveragePool,
// Flatten, Gemm, SoftmaxCrossEntropyLoss against integer targets: the
// gradient graph of every parameter.
std::unique_ptr<ir::Graph> classifier_step(int64_t batch) {
  auto g = new_graph();
  Value x = float_input(*g, "data", {batch, 3, 12, 12});
  Value target = g->add_input("target", ir::ValueType::of(DType::int64, {batch}))->output(0);
  auto conv_bn = [&](Value in, int64_t in_channels, const std::string& name, uint64_t seed) {
    ir::Node* conv =
        g->add_node(OpId::Conv, {in, random_constant(*g, name + ".w", {16, in_channels, 3, 3}, seed)}, 1, name);
    conv->attributes.set("pads", std::vector<int64_t>{1, 1, 1, 1});
    ir::Node* bn = g->add_node(
        OpId::BatchNormalization,
        {conv->output(0), random_constant(*g, name + ".scale", {16}, seed + 1),
         random_constant(*g, name + ".bias", {16}, seed + 2), random_constant(*g, name + ".mean", {16}, seed + 3),
         g->add_constant(name + ".var", Tensor::from_vector<float>(std::vector<float>(16, 0.8f), {16}))->output(0)},
        1, name + ".bn");
    bn->attributes.set("training_mode", int64_t{1});
    return bn->output(0);
  };
  Value stem = named_node(*g, OpId::Relu, {conv_bn(x, 3, "stem", 10)}, "stem.relu");
  Value a = named_node(*g, OpId::Relu, {conv_bn(stem, 16, "block.conv1", 20)}, "block.relu1");
  Value b = conv_bn(a, 16, "block.conv2", 30);
  Value out = named_node(*g, OpId::Relu, {named_node(*g, OpId::Add, {b, stem}, "block.add")}, "block.relu2");
  Value pooled = named_node(*g, OpId::Flatten, {named_node(*g, OpId::GlobalAveragePool, {out}, "pool")}, "flatten");
  ir::Node* fc = g->add_node(
      OpId::Gemm, {pooled, random_constant(*g, "fc.w", {10, 16}, 40), random_constant(*g, "fc.b", {10}, 41)}, 1, "fc");
  fc->attributes.set("transB", int64_t{1});
  g->add_output(named_node(*g, OpId::SoftmaxCrossEntropyLoss, {fc->output(0), target}, "loss"), "loss");
  return loss_gradient_graph(*g);
}

TEST(DnnlWholeStep, AClassifierTrainingStepIsOneSubgraph) {
  auto step = classifier_step(4);
  DnnlSessionCheck check(*step, {random_tensor({4, 3, 12, 12}, 50), targets({4}, 10)});
  const partition::PartitionReport& report = check.session.partition_report();
  ASSERT_EQ(report.subgraphs.size(), 1u) << report.to_text();
  EXPECT_EQ(report.subgraphs[0].backend, "dnnl");
  std::map<std::string, std::string> backend_of = check.backend_of();
  int boundary_nodes = 0;
  for (const auto& n : step->nodes()) {
    const OpId op = n->op();
    if (op == OpId::SoftmaxCrossEntropyLoss || op == OpId::SoftmaxCrossEntropyLossGrad || op == OpId::Expand) {
      EXPECT_EQ(backend_of[n->name], "dnnl") << n->describe() << "\n" << report.to_text();
      ++boundary_nodes;
    }
  }
  EXPECT_EQ(boundary_nodes, 3);  // the loss, its gradient, the pool's gradient

  // No activation crosses a subgraph boundary: the dnnl module reads the
  // graph's inputs only (its weights are constants of its body).
  runtime::Session::PlannedGraph plan = check.session.plan_for_types(
      {ir::ValueType::of(DType::float32, {4, 3, 12, 12}), ir::ValueType::of(DType::int64, {4})});
  int modules = 0;
  for (const auto& node : plan.graph->nodes()) {
    if (node->backend != "dnnl" || !node->subgraph) continue;
    ++modules;
    for (const Value& input : node->inputs) EXPECT_EQ(input.node->op(), OpId::Input) << input.node->describe();
    const auto& module = plan.modules.at(node->index());
    ASSERT_TRUE(module);
    // the loss, its gradient, the fc bias gradient (a sum over the batch)
    EXPECT_EQ(dnnl_backend::dnnl_module_stats(*module).reference_kernel_steps, 3);
  }
  EXPECT_EQ(modules, 1);

  for (int run = 0; run < 2; ++run) check.expect_run_matches_reference(5e-4, ", run " + std::to_string(run));
}

// In a program with convolution gradients the forward convolutions are made
// for training: the activation a weight gradient reads is the buffer the
// forward convolution (with its Relu) wrote, not a conversion of it (oneDNN
// 2.6's AVX-512 inference convolutions pick channels-last, its backward ones
// nChw16c).
TEST(DnnlWholeStep, TheBackwardReadsTheForwardsActivationsInTheirLayout) {
  if (!onednn_runs_avx512_core()) GTEST_SKIP() << "the layouts asserted are oneDNN's AVX-512 ones";
  auto g = new_graph();
  const Shape shape{4, 32, 28, 28};
  Value x = float_input(*g, "x", shape);
  Value d_out = float_input(*g, "d_out", shape);
  Value w1 = random_constant(*g, "w1", {32, 32, 3, 3}, 60), w2 = random_constant(*g, "w2", {32, 32, 3, 3}, 61);
  ir::Node* conv1 = g->add_node(OpId::Conv, {x, w1}, 1, "conv1");
  Value r = named_node(*g, OpId::Relu, {conv1->output(0)}, "relu");
  ir::Node* conv2 = g->add_node(OpId::Conv, {r, w2}, 1, "conv2");
  ir::Node* w2_grad = g->add_node(OpId::ConvWeightGrad, {d_out, r, w2}, 1, "conv2_weight_grad");
  for (ir::Node* n : {conv1, conv2, w2_grad}) n->attributes.set("pads", std::vector<int64_t>{1, 1, 1, 1});
  g->add_output(conv2->output(0));
  g->add_output(w2_grad->output(0));
  expect_dnnl_matches_reference(*g, {random_tensor(shape, 62), random_tensor(shape, 63)}, 1e-4);
  dnnl_backend::DnnlProgram program = dnnl_backend::build_program(*g);
  const int relu_output = step_argument_slot(program, "conv1+relu", DNNL_ARG_DST);
  const int read_by_gradient = step_argument_slot(program, "conv2_weight_grad", DNNL_ARG_SRC);
  ASSERT_GE(relu_output, 0) << "no step conv1+relu";
  EXPECT_EQ(read_by_gradient, relu_output) << "the weight gradient reads a conversion of the forward's activation";
}

}  // namespace
}  // namespace graft::testing
