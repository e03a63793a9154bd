// ConvTranspose against a naive scatter loop written here, over random
// configurations: 1-D/2-D/3-D, groups, strides, dilations, pads,
// output_padding, output_shape and auto_pad.
#include <gtest/gtest.h>

#include <random>

#include "support/graph_runner.h"

using namespace graft;
using namespace graft::ir;
using graft::testing::expect_close;
using graft::testing::random_tensor;
using graft::testing::run_graph;

namespace {

struct TransposeCase {
  int64_t batch = 1, in_channels = 2, out_channels = 2, group = 1;
  Shape input, kernel, strides, dilations, pads, output_padding, output_shape;
  std::string auto_pad = "NOTSET";
  bool bias = true;
};

Tensor naive(const TransposeCase& c, const Tensor& x, const Tensor& w, const Tensor* b) {
  size_t r = c.input.size();
  Shape out(r), pad(r);
  for (size_t d = 0; d < r; ++d) {
    int64_t natural = c.strides[d] * (c.input[d] - 1) + c.output_padding[d] + (c.kernel[d] - 1) * c.dilations[d] + 1;
    if (!c.output_shape.empty() || c.auto_pad == "SAME_UPPER" || c.auto_pad == "SAME_LOWER") {
      out[d] = c.output_shape.empty() ? c.input[d] * c.strides[d] : c.output_shape[d];
      int64_t total = natural - out[d];
      int64_t half = static_cast<int64_t>(std::floor(total / 2.0));
      if (c.auto_pad == "SAME_UPPER")
        pad[d] = half;
      else if (c.auto_pad == "SAME_LOWER")
        pad[d] = total - half;
      else
        pad[d] = std::max<int64_t>(0, total) / 2;  // output_shape without pads
    } else {
      out[d] = natural - c.pads[d] - c.pads[d + r];
      pad[d] = c.pads[d];
    }
  }
  Shape y_shape = {c.batch, c.out_channels};
  y_shape.insert(y_shape.end(), out.begin(), out.end());
  Tensor y(DType::float32, y_shape);
  std::vector<double> acc(static_cast<size_t>(y.numel()), 0.0);
  int64_t cg = c.in_channels / c.group, mg = c.out_channels / c.group;
  int64_t in_size = shape_numel(c.input), out_size = shape_numel(out), k_size = shape_numel(c.kernel);
  for (int64_t n = 0; n < c.batch; ++n)
    for (int64_t ci = 0; ci < c.in_channels; ++ci)
      for (int64_t i = 0; i < in_size; ++i)
        for (int64_t mi = 0; mi < mg; ++mi)
          for (int64_t k = 0; k < k_size; ++k) {
            int64_t offset = 0;
            bool inside = true;
            Shape ii(r), ki(r);
            for (int64_t rem = i, d = static_cast<int64_t>(r) - 1; d >= 0; --d)
              ii[d] = rem % c.input[d], rem /= c.input[d];
            for (int64_t rem = k, d = static_cast<int64_t>(r) - 1; d >= 0; --d)
              ki[d] = rem % c.kernel[d], rem /= c.kernel[d];
            for (size_t d = 0; d < r; ++d) {
              int64_t o = ii[d] * c.strides[d] - pad[d] + ki[d] * c.dilations[d];
              if (o < 0 || o >= out[d]) inside = false;
              offset = offset * out[d] + o;
            }
            if (!inside) continue;
            int64_t m = (ci / cg) * mg + mi;
            double xv = x.data<float>()[(n * c.in_channels + ci) * in_size + i];
            double wv = w.data<float>()[(ci * mg + mi) * k_size + k];
            acc[static_cast<size_t>((n * c.out_channels + m) * out_size + offset)] += xv * wv;
          }
  for (int64_t i = 0; i < y.numel(); ++i)
    y.data<float>()[i] =
        static_cast<float>(acc[static_cast<size_t>(i)] + (b ? b->data<float>()[(i / out_size) % c.out_channels] : 0));
  return y;
}

}  // namespace

TEST(ConvTranspose, RandomConfigurations) {
  std::mt19937 rng(77);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (int iter = 0; iter < 80; ++iter) {
    TransposeCase c;
    size_t rank = static_cast<size_t>(pick(1, 3));
    c.batch = pick(1, 2);
    c.group = pick(1, 2);
    c.in_channels = c.group * pick(1, 3);
    c.out_channels = c.group * pick(1, 3);
    c.bias = pick(0, 1) == 1;
    int mode = pick(0, 4);  // 0,1: pads; 2: output_shape; 3: SAME_UPPER; 4: SAME_LOWER
    c.auto_pad = mode == 3 ? "SAME_UPPER" : mode == 4 ? "SAME_LOWER" : "NOTSET";
    for (size_t d = 0; d < rank; ++d) {
      c.input.push_back(pick(1, rank == 3 ? 3 : 5));
      c.kernel.push_back(pick(1, 3));
      c.strides.push_back(pick(1, 3));
      c.dilations.push_back(pick(1, 2));
      c.output_padding.push_back(pick(0, static_cast<int>(c.strides.back()) - 1));
    }
    c.pads.assign(2 * rank, 0);
    for (size_t d = 0; d < 2 * rank; ++d) c.pads[d] = pick(0, static_cast<int>(c.kernel[d % rank] - 1));
    if (mode == 2)
      for (size_t d = 0; d < rank; ++d)
        c.output_shape.push_back(c.strides[d] * (c.input[d] - 1) + (c.kernel[d] - 1) * c.dilations[d] + 1 +
                                 pick(-1, 1));
    Shape xs = {c.batch, c.in_channels}, ws = {c.in_channels, c.out_channels / c.group};
    xs.insert(xs.end(), c.input.begin(), c.input.end());
    ws.insert(ws.end(), c.kernel.begin(), c.kernel.end());
    auto g = std::make_unique<Graph>();
    g->opset_imports[""] = 11;
    Node* x = g->add_input("x", ValueType::of(DType::float32, xs));
    Node* w = g->add_input("w", ValueType::of(DType::float32, ws));
    std::vector<Value> inputs = {x->output(0), w->output(0)};
    if (c.bias) inputs.push_back(g->add_input("b", ValueType::of(DType::float32, {c.out_channels}))->output(0));
    Node* n = g->add_node("ConvTranspose", inputs, 1, "deconv");
    n->attributes.set("strides", c.strides);
    n->attributes.set("dilations", c.dilations);
    n->attributes.set("group", c.group);
    n->attributes.set("output_padding", c.output_padding);
    if (c.auto_pad != "NOTSET")
      n->attributes.set("auto_pad", c.auto_pad);
    else if (c.output_shape.empty())
      n->attributes.set("pads", c.pads);
    if (!c.output_shape.empty()) n->attributes.set("output_shape", c.output_shape);
    g->add_output(n->output(0), "y");
    Tensor xt = random_tensor(xs, iter * 3u), wt = random_tensor(ws, iter * 3u + 1),
           bt = random_tensor({c.out_channels}, iter * 3u + 2);
    std::vector<Tensor> feeds = {xt, wt};
    if (c.bias) feeds.push_back(bt);
    SCOPED_TRACE("iteration " + std::to_string(iter) + " mode " + std::to_string(mode));
    expect_close(run_graph(*g, feeds)[0], naive(c, xt, wt, c.bias ? &bt : nullptr), 1e-4, 1e-4);
  }
}

TEST(ConvTranspose, InfersUpsampledShape) {
  auto g = std::make_unique<Graph>();
  g->opset_imports[""] = 11;
  Node* x = g->add_input(
      "x", ValueType{DType::float32, true, {Dim::symbolic("N"), Dim::known(4), Dim::known(8), Dim::known(8)}});
  Node* w = g->add_constant("w", random_tensor({4, 3, 4, 4}, 1));
  Node* n = g->add_node("ConvTranspose", {x->output(0), w->output(0)}, 1, "up");
  n->attributes.set("strides", std::vector<int64_t>{2, 2});
  n->attributes.set("pads", std::vector<int64_t>{1, 1, 1, 1});
  g->add_output(n->output(0), "y");
  runtime::Session s(std::move(g));
  const ValueType& t = s.outputs()[0].type;
  ASSERT_EQ(t.dims.size(), 4u);
  EXPECT_EQ(t.dims[0], Dim::symbolic("N"));
  EXPECT_EQ(t.dims[1], Dim::known(3));
  EXPECT_EQ(t.dims[2], Dim::known(16));
  EXPECT_EQ(t.dims[3], Dim::known(16));
}
