// Conv against a naive direct convolution written here, over random
// configurations: 1-D/2-D/3-D, groups (depthwise included), dilations,
// strides, pads and every auto_pad mode; plus type inference and bad input.
#include <gtest/gtest.h>

#include <random>

#include "support/graph_runner.h"

using namespace graft;
using namespace graft::ir;
using graft::testing::expect_close;
using graft::testing::random_tensor;
using graft::testing::run_graph;

namespace {

struct ConvCase {
  int64_t batch = 1, in_channels = 1, out_channels = 1, group = 1;
  Shape input, kernel, strides, dilations, pads;  // pads: begins then ends
  std::string auto_pad = "NOTSET";
  bool bias = true;
};

// Pads and output extents computed from the ONNX formulas.
void resolve(const ConvCase& c, Shape& out, Shape& pad_begin) {
  size_t r = c.input.size();
  out.assign(r, 0);
  pad_begin.assign(r, 0);
  for (size_t d = 0; d < r; ++d) {
    int64_t window = (c.kernel[d] - 1) * c.dilations[d] + 1;
    if (c.auto_pad == "NOTSET") {
      pad_begin[d] = c.pads[d];
      out[d] = (c.input[d] + c.pads[d] + c.pads[d + r] - window) / c.strides[d] + 1;
    } else if (c.auto_pad == "VALID") {
      out[d] = (c.input[d] - window) / c.strides[d] + 1;
    } else {
      out[d] = (c.input[d] + c.strides[d] - 1) / c.strides[d];
      int64_t total = std::max<int64_t>(0, (out[d] - 1) * c.strides[d] + window - c.input[d]);
      pad_begin[d] = c.auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
    }
  }
}

Tensor naive_conv(const ConvCase& c, const Tensor& x, const Tensor& w, const Tensor* b) {
  Shape out, pad;
  resolve(c, out, pad);
  size_t r = c.input.size();
  Shape y_shape = {c.batch, c.out_channels};
  y_shape.insert(y_shape.end(), out.begin(), out.end());
  Tensor y(DType::float32, y_shape);
  int64_t cg = c.in_channels / c.group, mg = c.out_channels / c.group;
  int64_t out_size = shape_numel(out), k_size = shape_numel(c.kernel), in_size = shape_numel(c.input);
  for (int64_t n = 0; n < c.batch; ++n)
    for (int64_t m = 0; m < c.out_channels; ++m)
      for (int64_t o = 0; o < out_size; ++o) {
        int64_t oi[3];
        for (int64_t rem = o, d = static_cast<int64_t>(r) - 1; d >= 0; --d) {
          oi[d] = rem % out[d];
          rem /= out[d];
        }
        double acc = b ? b->data<float>()[m] : 0.0;
        int64_t grp = m / mg;
        for (int64_t ci = 0; ci < cg; ++ci)
          for (int64_t k = 0; k < k_size; ++k) {
            int64_t ki[3];
            for (int64_t rem = k, d = static_cast<int64_t>(r) - 1; d >= 0; --d) {
              ki[d] = rem % c.kernel[d];
              rem /= c.kernel[d];
            }
            int64_t offset = 0;
            bool inside = true;
            for (size_t d = 0; d < r; ++d) {
              int64_t i = oi[d] * c.strides[d] - pad[d] + ki[d] * c.dilations[d];
              if (i < 0 || i >= c.input[d]) inside = false;
              offset = offset * c.input[d] + i;
            }
            if (!inside) continue;
            float xv = x.data<float>()[(n * c.in_channels + grp * cg + ci) * in_size + offset];
            float wv = w.data<float>()[(m * cg + ci) * k_size + k];
            acc += static_cast<double>(xv) * wv;
          }
        y.data<float>()[(n * c.out_channels + m) * out_size + o] = static_cast<float>(acc);
      }
  return y;
}

std::unique_ptr<Graph> conv_graph(const ConvCase& c, bool set_attrs_defaults = false) {
  auto g = std::make_unique<Graph>();
  g->opset_imports[""] = 13;
  Shape xs = {c.batch, c.in_channels}, ws = {c.out_channels, c.in_channels / c.group};
  xs.insert(xs.end(), c.input.begin(), c.input.end());
  ws.insert(ws.end(), c.kernel.begin(), c.kernel.end());
  Node* x = g->add_input("x", ValueType::of(DType::float32, xs));
  Node* w = g->add_input("w", ValueType::of(DType::float32, ws));
  std::vector<Value> inputs = {x->output(0), w->output(0)};
  if (c.bias) inputs.push_back(g->add_input("b", ValueType::of(DType::float32, {c.out_channels}))->output(0));
  Node* conv = g->add_node("Conv", inputs, 1, "conv");
  conv->attributes.set("strides", c.strides);
  conv->attributes.set("dilations", c.dilations);
  conv->attributes.set("group", c.group);
  conv->attributes.set("kernel_shape", c.kernel);
  if (c.auto_pad == "NOTSET")
    conv->attributes.set("pads", c.pads);
  else
    conv->attributes.set("auto_pad", c.auto_pad);
  g->add_output(conv->output(0), "y");
  return g;
}

void check_case(const ConvCase& c, uint64_t seed, int threads = 2) {
  auto g = conv_graph(c);
  Shape xs = {c.batch, c.in_channels}, ws = {c.out_channels, c.in_channels / c.group};
  xs.insert(xs.end(), c.input.begin(), c.input.end());
  ws.insert(ws.end(), c.kernel.begin(), c.kernel.end());
  Tensor x = random_tensor(xs, seed), w = random_tensor(ws, seed + 1), b = random_tensor({c.out_channels}, seed + 2);
  std::vector<Tensor> inputs = {x, w};
  if (c.bias) inputs.push_back(b);
  auto got = run_graph(*g, inputs, {"verify", "infer"}, threads);
  expect_close(got[0], naive_conv(c, x, w, c.bias ? &b : nullptr), 1e-4, 1e-4);
}

}  // namespace

TEST(Conv, RandomConfigurations) {
  std::mt19937 rng(1234);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  const char* modes[] = {"NOTSET", "NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER"};
  for (int iter = 0; iter < 120; ++iter) {
    ConvCase c;
    size_t rank = static_cast<size_t>(pick(1, 3));
    c.batch = pick(1, 2);
    c.group = pick(1, 3);
    c.in_channels = c.group * pick(1, 3);
    c.out_channels = c.group * pick(1, 3);
    if (iter % 7 == 0) c.out_channels = c.in_channels = c.group = pick(2, 5);  // depthwise
    c.auto_pad = modes[pick(0, 4)];
    c.bias = pick(0, 1) == 1;
    for (size_t d = 0; d < rank; ++d) {
      c.kernel.push_back(pick(1, 3));
      c.strides.push_back(pick(1, 3));
      c.dilations.push_back(c.auto_pad == "NOTSET" || c.auto_pad == "VALID" ? pick(1, 2) : pick(1, 2));
      int64_t window = (c.kernel[d] - 1) * c.dilations[d] + 1;
      c.input.push_back(window + pick(0, rank == 3 ? 4 : 8));
    }
    c.pads.assign(2 * rank, 0);
    for (auto& p : c.pads) p = pick(0, 2);
    SCOPED_TRACE("iteration " + std::to_string(iter) + " mode " + c.auto_pad);
    check_case(c, static_cast<uint64_t>(iter) * 10, iter % 3 == 0 ? 1 : 2);
  }
}

TEST(Conv, PointwiseAndLargeChunks) {
  ConvCase c;
  c.batch = 2;
  c.in_channels = 8;
  c.out_channels = 5;
  c.input = {9, 11};
  c.kernel = {1, 1};
  c.strides = {1, 1};
  c.dilations = {1, 1};
  c.pads = {0, 0, 0, 0};
  check_case(c, 5);
  // Large enough that the im2col matrix is cut into several chunks of rows.
  c.batch = 1;
  c.in_channels = 64;
  c.out_channels = 4;
  c.input = {70, 70};
  c.kernel = {3, 3};
  c.pads = {1, 1, 1, 1};
  check_case(c, 9);
}

TEST(Conv, InfersShapesWithSymbolicBatch) {
  auto g = std::make_unique<Graph>();
  g->opset_imports[""] = 13;
  Node* x = g->add_input(
      "x", ValueType{DType::float32, true, {Dim::symbolic("N"), Dim::known(3), Dim::known(224), Dim::known(224)}});
  Node* w = g->add_constant("w", random_tensor({64, 3, 7, 7}, 1));
  Node* conv = g->add_node("Conv", {x->output(0), w->output(0)}, 1, "conv");
  conv->attributes.set("strides", std::vector<int64_t>{2, 2});
  conv->attributes.set("pads", std::vector<int64_t>{3, 3, 3, 3});
  g->add_output(conv->output(0), "y");
  runtime::Session s(std::move(g));
  const ValueType& t = s.outputs()[0].type;
  ASSERT_TRUE(t.has_rank);
  ASSERT_EQ(t.dims.size(), 4u);
  EXPECT_EQ(t.dims[0], Dim::symbolic("N"));
  EXPECT_EQ(t.dims[1], Dim::known(64));
  EXPECT_EQ(t.dims[2], Dim::known(112));
  EXPECT_EQ(t.dims[3], Dim::known(112));
}

TEST(Conv, Float64AndFloat16) {
  auto g = std::make_unique<Graph>();
  g->opset_imports[""] = 13;
  for (DType dtype : {DType::float64, DType::float16}) {
    auto graph = std::make_unique<Graph>();
    graph->opset_imports[""] = 13;
    Node* x = graph->add_input("x", ValueType::of(dtype, {1, 2, 4, 4}));
    Node* w = graph->add_input("w", ValueType::of(dtype, {3, 2, 3, 3}));
    Node* conv = graph->add_node("Conv", {x->output(0), w->output(0)}, 1, "conv");
    conv->attributes.set("pads", std::vector<int64_t>{1, 1, 1, 1});
    graph->add_output(conv->output(0), "y");
    Tensor xf = random_tensor({1, 2, 4, 4}, 3), wf = random_tensor({3, 2, 3, 3}, 4);
    ConvCase c;
    c.in_channels = 2;
    c.out_channels = 3;
    c.input = {4, 4};
    c.kernel = {3, 3};
    c.strides = {1, 1};
    c.dilations = {1, 1};
    c.pads = {1, 1, 1, 1};
    Tensor want = naive_conv(c, xf, wf, nullptr);
    auto convert = [&](const Tensor& t) {
      Tensor out(dtype, t.shape());
      for (int64_t i = 0; i < t.numel(); ++i) {
        float v = t.data<float>()[i];
        if (dtype == DType::float64)
          out.data<double>()[i] = v;
        else
          out.data<float16_t>()[i] = float16_t(v);
      }
      return out;
    };
    auto got = run_graph(*graph, {convert(xf), convert(wf)});
    ASSERT_EQ(got[0].dtype(), dtype);
    ASSERT_EQ(got[0].shape(), want.shape());
    double tol = dtype == DType::float16 ? 2e-2 : 1e-5;
    for (int64_t i = 0; i < want.numel(); ++i)
      EXPECT_NEAR(got[0].value_as_double(i), want.data<float>()[i], tol * (1 + std::abs(want.data<float>()[i])));
  }
}

TEST(Conv, RejectsMismatchedChannels) {
  auto g = std::make_unique<Graph>();
  g->opset_imports[""] = 13;
  Node* x = g->add_input("x", ValueType{DType::float32, true, {Dim::known(1), Dim{}, Dim::known(5), Dim::known(5)}});
  Node* w = g->add_input("w", ValueType::of(DType::float32, {2, 3, 3, 3}));
  Node* conv = g->add_node("Conv", {x->output(0), w->output(0)}, 1, "conv");
  g->add_output(conv->output(0), "y");
  try {
    run_graph(*g, {random_tensor({1, 4, 5, 5}, 1), random_tensor({2, 3, 3, 3}, 2)});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid_model);
    EXPECT_NE(std::string(e.what()).find("conv"), std::string::npos) << e.what();
  }
}

TEST(Conv, RejectsMalformedAttributes) {
  struct BadCase {
    std::string attribute;
    ir::AttributeValue value;
  };
  std::vector<BadCase> cases = {{"pads", std::vector<int64_t>{1, 1}},
                                {"strides", std::vector<int64_t>{0, 1}},
                                {"auto_pad", std::string("SAME")},
                                {"kernel_shape", std::vector<int64_t>{5, 5}},
                                {"group", int64_t{4}},
                                {"dilations", std::vector<int64_t>{9, 9}}};  // window 19 > input 6
  for (const BadCase& bad : cases) {
    auto g = std::make_unique<Graph>();
    g->opset_imports[""] = 13;
    Node* x = g->add_input("x", ValueType{DType::float32, true, {Dim::known(1), Dim{}, Dim{}, Dim{}}});
    Node* w = g->add_input("w", ValueType{DType::float32, true, {Dim::known(2), Dim{}, Dim{}, Dim{}}});
    Node* conv = g->add_node("Conv", {x->output(0), w->output(0)}, 1, "conv");
    conv->attributes.set(bad.attribute, bad.value);
    g->add_output(conv->output(0), "y");
    SCOPED_TRACE(bad.attribute);
    try {
      run_graph(*g, {random_tensor({1, 2, 6, 6}, 1), random_tensor({2, 2, 3, 3}, 2)});
      ADD_FAILURE() << "expected an error";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::invalid_model) << e.what();
      EXPECT_NE(std::string(e.what()).find("conv"), std::string::npos) << e.what();
    }
  }
}
