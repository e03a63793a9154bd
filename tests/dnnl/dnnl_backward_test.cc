// autodiff's backward ops on the dnnl backend against their reference
// kernels on the same random inputs: convolution gradients (strides, pads,
// dilations, groups, auto_pad, 1 to 3 spatial dimensions, odd shapes), max
// and average pooling gradients (ceil_mode, padding counted or not,
// dilations), batch and layer normalization gradients (1 or 3 outputs); what
// dnnl refuses, with the reason in the partition report and the node left to
// the reference kernel; and a small CNN's gradient graph run with dnnl and
// with the reference kernels.
#include "../../backends/dnnl/dnnl_support.h"
#include "autodiff/gradient_check.h"
#include "dnnl_case.h"
#include "dnnl_training_case.h"

namespace graft::testing {
namespace {

using ir::OpId;
using ir::Value;

// The output shape of `op` (a Conv or a pool) on inputs of `shapes`.
Shape forward_output_shape(OpId op, const std::vector<Shape>& shapes, const Attrs& attrs) {
  auto g = new_graph();
  std::vector<Value> in;
  for (size_t i = 0; i < shapes.size(); ++i) in.push_back(float_input(*g, "in" + std::to_string(i), shapes[i]));
  ir::Node* n = g->add_node(op, in, 1, "forward");
  if (attrs) attrs(n->attributes);
  g->add_output(n->output(0));
  ops::infer_types(*g);
  return n->output_types[0].concrete_shape().value();
}

struct ConvCase {
  Shape x, w;
  Attrs attrs;
};

// ConvInputGrad(d_y, w, x) and ConvWeightGrad(d_y, x, w) of one convolution.
dnnl_backend::DnnlModuleStats check_conv_gradients(const ConvCase& conv) {
  Case c;
  Value dy = c.input(forward_output_shape(OpId::Conv, {conv.x, conv.w}, conv.attrs));
  Value w = c.input(conv.w);
  Value x = c.input(conv.x);
  return c.check_every_output({c.node(OpId::ConvInputGrad, {dy, w, x}, 1, conv.attrs),
                               c.node(OpId::ConvWeightGrad, {dy, x, w}, 1, conv.attrs)});
}

TEST(DnnlBackward, ConvolutionGradients2d) {
  const std::vector<ConvCase> cases = {
      {{2, 16, 9, 9}, {32, 16, 3, 3}, ints("pads", {1, 1, 1, 1})},
      {{3, 8, 10, 11}, {12, 4, 3, 3}, all({one_int("group", 2), ints("strides", {2, 2}), ints("pads", {1, 0, 1, 0})})},
      {{2, 32, 12, 12}, {32, 1, 3, 3}, all({one_int("group", 32), ints("pads", {1, 1, 1, 1})})},
      {{1, 8, 11, 13},
       {8, 8, 3, 3},
       all({ints("dilations", {2, 2}), ints("strides", {2, 1}), one_string("auto_pad", "SAME_UPPER")})},
      {{2, 8, 11, 13}, {4, 8, 2, 2}, one_string("auto_pad", "SAME_LOWER")},
      {{2, 3, 17, 15}, {16, 3, 7, 7}, all({ints("strides", {2, 2}), ints("pads", {3, 3, 3, 3})})},  // resnet's stem
      {{2, 64, 7, 7}, {128, 64, 1, 1}, ints("strides", {2, 2})},                                    // a downsample
      {{1, 5, 9, 7}, {7, 5, 3, 2}, all({ints("strides", {3, 2}), ints("pads", {2, 0, 1, 1})})},
      {{2, 6, 8, 8}, {9, 2, 3, 3}, all({one_int("group", 3), ints("dilations", {1, 2}), ints("pads", {1, 2, 1, 2})})},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE("case " + std::to_string(i));
    check_conv_gradients(cases[i]);
  }
}

TEST(DnnlBackward, ConvolutionGradients1dAnd3d) {
  check_conv_gradients({{2, 4, 20}, {6, 4, 5}, ints("pads", {2, 2})});
  check_conv_gradients(
      {{3, 6, 19}, {6, 2, 3}, all({one_int("group", 3), ints("strides", {2}), ints("dilations", {2})})});
  check_conv_gradients({{1, 4, 5, 6, 7}, {6, 4, 3, 3, 3}, ints("pads", {1, 1, 1, 1, 1, 1})});
  check_conv_gradients(
      {{2, 4, 6, 5, 7}, {8, 4, 1, 3, 2}, all({ints("strides", {2, 1, 2}), ints("pads", {0, 1, 0, 0, 1, 1})})});
}

// A resnet-like convolution's gradients run oneDNN's jit kernels, in its
// blocked layouts, with the weights converted once.
TEST(DnnlBackward, ConvolutionGradientsAvoidTheReferenceImplementation) {
  auto stats = check_conv_gradients({{2, 16, 14, 14}, {16, 16, 3, 3}, ints("pads", {1, 1, 1, 1})});
  EXPECT_EQ(stats.reference_primitives, 0);
  EXPECT_EQ(stats.weights, 1);
}

struct PoolCase {
  OpId op;
  Shape x;
  Attrs attrs;
};

TEST(DnnlBackward, PoolingGradients) {
  const std::vector<PoolCase> cases = {
      {OpId::MaxPool,
       {2, 16, 11, 11},
       all({ints("kernel_shape", {3, 3}), ints("strides", {2, 2}), ints("pads", {1, 1, 1, 1})})},
      {OpId::MaxPool,
       {1, 8, 11, 10},
       all({ints("kernel_shape", {2, 2}), ints("strides", {2, 2}), one_int("ceil_mode", 1)})},
      {OpId::MaxPool, {2, 5, 11, 11}, all({ints("kernel_shape", {2, 2}), ints("dilations", {2, 2})})},
      {OpId::MaxPool,
       {3, 4, 9, 7},
       all({ints("kernel_shape", {3, 2}), ints("strides", {1, 2}), one_string("auto_pad", "SAME_UPPER")})},
      {OpId::MaxPool, {2, 3, 13}, all({ints("kernel_shape", {4}), ints("strides", {3}), ints("pads", {1, 2})})},
      {OpId::MaxPool, {1, 4, 5, 6, 7}, all({ints("kernel_shape", {2, 2, 2}), ints("strides", {2, 2, 2})})},
      {OpId::AveragePool,
       {2, 16, 11, 11},
       all({ints("kernel_shape", {3, 3}), ints("pads", {1, 1, 1, 1}), one_int("count_include_pad", 1)})},
      {OpId::AveragePool,
       {2, 16, 11, 11},
       all({ints("kernel_shape", {3, 3}), ints("strides", {2, 2}), ints("pads", {1, 1, 1, 1})})},
      {OpId::AveragePool,
       {1, 7, 11, 10},
       all({ints("kernel_shape", {2, 2}), ints("strides", {2, 2}), one_int("ceil_mode", 1)})},
      {OpId::AveragePool, {2, 3, 13}, all({ints("kernel_shape", {3}), ints("strides", {2}), ints("pads", {1, 1})})},
      {OpId::AveragePool,
       {1, 4, 5, 6, 7},
       all({ints("kernel_shape", {3, 2, 3}), ints("strides", {2, 2, 1}), ints("pads", {1, 0, 1, 1, 1, 0})})},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE("case " + std::to_string(i));
    const PoolCase& p = cases[i];
    Case c;
    Value dy = c.input(forward_output_shape(p.op, {p.x}, p.attrs));
    Value x = c.input(p.x);
    OpId grad = p.op == OpId::MaxPool ? OpId::MaxPoolGrad : OpId::AveragePoolGrad;
    c.check_every_output({c.node(grad, {dy, x}, 1, p.attrs)});
  }
}

TEST(DnnlBackward, BatchNormalizationGradient) {
  for (const Shape& x_shape : std::vector<Shape>{{2, 8, 5, 5}, {5, 3}, {3, 4, 7}, {2, 4, 3, 4, 5}, {4, 17, 6, 6}}) {
    SCOPED_TRACE(shape_to_string(x_shape));
    for (int outputs : {1, 3}) {
      Case c;
      Value dy = c.input(x_shape);
      Value x = c.input(x_shape);
      Value scale = c.input({x_shape[1]});
      c.check_every_output({c.node(OpId::BatchNormalizationGrad, {dy, x, scale}, outputs, one_float("epsilon", 1e-3f))},
                           2e-4);
    }
  }
}

TEST(DnnlBackward, LayerNormalizationGradient) {
  struct LnCase {
    Shape x;
    int64_t axis;
  };
  for (const LnCase& l :
       std::vector<LnCase>{{{2, 7, 32}, -1}, {{2, 7, 32}, 1}, {{6, 10}, -1}, {{3, 5, 4, 6}, 2}, {{9}, 0}}) {
    SCOPED_TRACE(shape_to_string(l.x) + " axis " + std::to_string(l.axis));
    for (int outputs : {1, 3}) {
      Case c;
      Value dy = c.input(l.x);
      Value x = c.input(l.x);
      const int64_t axis = l.axis < 0 ? l.axis + static_cast<int64_t>(l.x.size()) : l.axis;
      Value scale = c.input(Shape(l.x.begin() + axis, l.x.end()));
      c.check_every_output({c.node(OpId::LayerNormalizationGrad, {dy, x, scale}, outputs, one_int("axis", l.axis))},
                           2e-4);
    }
  }
}

// What dnnl does not run stays on the reference kernel, and the partition
// report says why.
TEST(DnnlBackward, RefusalsLeaveTheNodeToTheReferenceWithTheReason) {
  auto g = new_graph();
  auto in = [&](const std::string& name, const Shape& s) { return float_input(*g, name, s); };
  // A ConvTranspose's weight gradient (x and d_y exchanged) keeps its output_padding.
  ir::Node* transposed = g->add_node(
      OpId::ConvWeightGrad, {in("a", {1, 4, 5, 5}), in("b", {1, 3, 10, 10}), in("w", {4, 3, 2, 2})}, 1, "transposed");
  transposed->attributes.set("strides", std::vector<int64_t>{2, 2});
  transposed->attributes.set("output_padding", std::vector<int64_t>{0, 0});
  // A dilated average pool.
  ir::Node* dilated = g->add_node(OpId::AveragePoolGrad, {in("dy", {1, 2, 3, 3}), in("x", {1, 2, 7, 7})}, 1, "dilated");
  dilated->attributes.set("kernel_shape", std::vector<int64_t>{3, 3});
  dilated->attributes.set("dilations", std::vector<int64_t>{2, 2});
  for (ir::Node* n : {transposed, dilated}) g->add_output(n->output(0));
  ops::infer_types(*g);
  EXPECT_NE(dnnl_backend::dnnl_supports(*transposed).reason.find("output_padding"), std::string::npos);
  EXPECT_NE(dnnl_backend::dnnl_supports(*dilated).reason.find("dilated AveragePool"), std::string::npos);

  runtime::SessionOptions options;
  options.backends = {"dnnl", "ref"};
  runtime::Session session(g->clone(), options);
  std::map<std::string, std::string> backend_of, why_not_dnnl;
  for (const auto& n : session.partition_report().nodes) {
    backend_of[n.name] = n.backend;
    for (const auto& d : n.declined)
      if (d.backend == "dnnl") why_not_dnnl[n.name] = d.detail;
  }
  for (const char* name : {"transposed", "dilated"}) {
    EXPECT_EQ(backend_of[name], "ref") << name;
    EXPECT_FALSE(why_not_dnnl[name].empty()) << name;
  }
  EXPECT_NE(why_not_dnnl["transposed"].find("output_padding"), std::string::npos) << why_not_dnnl["transposed"];
}

// A small CNN's gradient graph (autodiff::gradient): Conv -> training-mode
// BatchNormalization -> Relu -> MaxPool -> Conv (strided, grouped) ->
// AveragePool -> Flatten -> Gemm -> SoftmaxCrossEntropyLoss, with a
// LayerNormalization on the side. Its backward convolutions, pools and
// normalizations run on dnnl and the gradients match the reference kernels.
TEST(DnnlBackward, ASmallCnnGradientGraph) {
  using autodiff_check::node;
  auto g = new_graph();
  Value x = float_input(*g, "x", {4, 3, 12, 12});
  // No bias before the batch normalization: its gradient is zero, rounding noise.
  Value conv1 = node(*g, OpId::Conv, {x, random_constant(*g, "w1", {8, 3, 3, 3}, 1)},
                     {{"pads", std::vector<int64_t>{1, 1, 1, 1}}});
  ir::Node* bn =
      g->add_node(OpId::BatchNormalization,
                  {conv1, random_constant(*g, "gamma", {8}, 3), random_constant(*g, "beta", {8}, 4),
                   g->add_constant("mean", Tensor::from_vector<float>(std::vector<float>(8, 0.0f), {8}))->output(0),
                   g->add_constant("var", Tensor::from_vector<float>(std::vector<float>(8, 1.0f), {8}))->output(0)},
                  3, "bn");
  bn->attributes.set("training_mode", int64_t{1});
  Value relu = node(*g, OpId::Relu, {bn->output(0)});
  Value pool = node(*g, OpId::MaxPool, {relu},
                    {{"kernel_shape", std::vector<int64_t>{3, 3}},
                     {"strides", std::vector<int64_t>{2, 2}},
                     {"pads", std::vector<int64_t>{1, 1, 1, 1}}});
  Value conv2 = node(
      *g, OpId::Conv, {pool, random_constant(*g, "w2", {16, 4, 3, 3}, 5), random_constant(*g, "b2", {16}, 2)},
      {{"strides", std::vector<int64_t>{2, 2}}, {"pads", std::vector<int64_t>{1, 1, 1, 1}}, {"group", int64_t{2}}});
  Value avg = node(*g, OpId::AveragePool, {conv2}, {{"kernel_shape", std::vector<int64_t>{3, 3}}});
  Value flat = node(*g, OpId::Flatten, {avg});
  Value norm = node(*g, OpId::LayerNormalization,
                    {flat, random_constant(*g, "ln_scale", {16}, 6), random_constant(*g, "ln_bias", {16}, 7)});
  Value logits =
      node(*g, OpId::Gemm, {norm, random_constant(*g, "fc", {5, 16}, 8), random_constant(*g, "fc_bias", {5}, 9)},
           {{"transB", int64_t{1}}});
  Value loss = node(*g, OpId::SoftmaxCrossEntropyLoss, {logits, autodiff_check::ints(*g, {0, 3, 1, 4})});
  g->add_output(loss, "loss");
  auto grad = loss_gradient_graph(*g);
  DnnlSessionCheck check(*grad, {random_tensor({4, 3, 12, 12}, 10)});
  std::map<std::string, std::string> backend_by_name = check.backend_of();
  std::map<OpId, std::string> backend_of;
  for (const auto& node : grad->nodes())
    if (node->is_backward && backend_by_name.count(node->name)) backend_of[node->op()] = backend_by_name[node->name];
  for (OpId op : {OpId::ConvInputGrad, OpId::ConvWeightGrad, OpId::MaxPoolGrad, OpId::AveragePoolGrad,
                  OpId::BatchNormalizationGrad, OpId::LayerNormalizationGrad})
    EXPECT_EQ(backend_of[op], "dnnl") << ir::op_schema(op).name << "\n" << check.session.partition_report().to_text();
  check.expect_run_matches_reference(2e-4);
}

}  // namespace
}  // namespace graft::testing
