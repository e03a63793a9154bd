// RNN, GRU and LSTM against the ONNX formulas written out here step by step
// (explicit dot products per gate), over directions, layouts, sequence
// lengths, initial states, peepholes, linear_before_reset, clip and custom
// activations.
#include <gtest/gtest.h>

#include <cmath>

#include "support/graph_runner.h"

using namespace graft;
using namespace graft::ir;
using graft::testing::expect_close;
using graft::testing::random_tensor;
using graft::testing::run_graph;

namespace {

struct RnnConfig {
  std::string op = "LSTM";
  int64_t seq = 3, batch = 2, input = 3, hidden = 4;
  std::string direction = "forward";
  int64_t layout = 0;
  bool linear_before_reset = false;
  bool bias = true, initial = true, peephole = false, input_forget = false;
  std::vector<int32_t> lengths;  // empty: no sequence_lens input
  std::vector<std::string> activations;
  std::vector<float> alphas, betas;
  float clip = 0;  // 0: no clip attribute
};

int64_t gates(const std::string& op) { return op == "RNN" ? 1 : op == "GRU" ? 3 : 4; }

double activation(const std::string& name, float alpha, float beta, double x) {
  if (name == "Sigmoid") return 1 / (1 + std::exp(-x));
  if (name == "Tanh") return std::tanh(x);
  if (name == "Relu") return std::max(x, 0.0);
  if (name == "LeakyRelu") return x >= 0 ? x : alpha * x;
  if (name == "HardSigmoid") return std::clamp(alpha * x + beta, 0.0, 1.0);
  if (name == "ScaledTanh") return alpha * std::tanh(beta * x);
  ADD_FAILURE() << "activation " << name;
  return 0;
}

struct Inputs {
  Tensor x, w, r, b, lengths, initial_h, initial_c, p;
};

std::vector<Tensor> reference(const RnnConfig& c, const Inputs& in) {
  const int64_t D = c.direction == "bidirectional" ? 2 : 1, H = c.hidden, G = gates(c.op), I = c.input;
  std::vector<std::string> acts = c.activations;
  if (acts.empty()) {
    acts = c.op == "RNN"   ? std::vector<std::string>{"Tanh"}
           : c.op == "GRU" ? std::vector<std::string>{"Sigmoid", "Tanh"}
                           : std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"};
    if (D == 2) {
      std::vector<std::string> once = acts;
      acts.insert(acts.end(), once.begin(), once.end());
    }
  }
  Shape y_shape = c.layout ? Shape{c.batch, c.seq, D, H} : Shape{c.seq, D, c.batch, H};
  Shape s_shape = c.layout ? Shape{c.batch, D, H} : Shape{D, c.batch, H};
  Tensor y(DType::float32, y_shape), yh(DType::float32, s_shape), yc(DType::float32, s_shape);
  auto X = [&](int64_t t, int64_t b, int64_t k) {
    return double(in.x.data<float>()[(c.layout ? b * c.seq + t : t * c.batch + b) * I + k]);
  };
  auto state_at = [&](int64_t d, int64_t b) { return (c.layout ? b * D + d : d * c.batch + b) * H; };
  // alpha and beta are consumed in order by the functions that take them.
  size_t next_alpha = 0, next_beta = 0;
  std::vector<float> alphas(acts.size(), 0), betas(acts.size(), 0);
  for (size_t i = 0; i < acts.size(); ++i) {
    if (acts[i] == "LeakyRelu" || acts[i] == "HardSigmoid" || acts[i] == "ScaledTanh")
      alphas[i] = next_alpha < c.alphas.size() ? c.alphas[next_alpha++] : 0;
    if (acts[i] == "HardSigmoid" || acts[i] == "ScaledTanh")
      betas[i] = next_beta < c.betas.size() ? c.betas[next_beta++] : 0;
  }
  auto clip = [&](double v) { return c.clip > 0 ? std::clamp(v, -double(c.clip), double(c.clip)) : v; };
  for (int64_t d = 0; d < D; ++d) {
    bool reverse = c.direction == "reverse" || d == 1;
    size_t a0 = static_cast<size_t>(d) * acts.size() / static_cast<size_t>(D);
    auto f = [&](size_t which, double v) {
      return activation(acts[a0 + which], alphas[a0 + which], betas[a0 + which], v);
    };
    const float* W = in.w.data<float>() + d * G * H * I;
    const float* R = in.r.data<float>() + d * G * H * H;
    const float* B = c.bias ? in.b.data<float>() + d * 2 * G * H : nullptr;
    for (int64_t b = 0; b < c.batch; ++b) {
      std::vector<double> h(H, 0), cell(H, 0);
      if (c.initial)
        for (int64_t j = 0; j < H; ++j) {
          h[j] = in.initial_h.data<float>()[state_at(d, b) + j];
          if (c.op == "LSTM") cell[j] = in.initial_c.data<float>()[state_at(d, b) + j];
        }
      int64_t len = c.lengths.empty() ? c.seq : c.lengths[b];
      for (int64_t s = 0; s < len; ++s) {
        int64_t t = reverse ? len - 1 - s : s;
        // px[g][j] = W x + Wb, ph[g][j] = R h + Rb
        std::vector<std::vector<double>> px(G, std::vector<double>(H)), ph(G, std::vector<double>(H));
        for (int64_t g = 0; g < G; ++g)
          for (int64_t j = 0; j < H; ++j) {
            double sx = B ? B[g * H + j] : 0, sh = B ? B[G * H + g * H + j] : 0;
            for (int64_t k = 0; k < I; ++k) sx += W[(g * H + j) * I + k] * X(t, b, k);
            for (int64_t k = 0; k < H; ++k) sh += R[(g * H + j) * H + k] * h[k];
            px[g][j] = sx;
            ph[g][j] = sh;
          }
        std::vector<double> hn(H);
        if (c.op == "RNN") {
          for (int64_t j = 0; j < H; ++j) hn[j] = f(0, clip(px[0][j] + ph[0][j]));
        } else if (c.op == "GRU") {
          std::vector<double> z(H), rr(H);
          for (int64_t j = 0; j < H; ++j) {
            z[j] = f(0, clip(px[0][j] + ph[0][j]));
            rr[j] = f(0, clip(px[1][j] + ph[1][j]));
          }
          for (int64_t j = 0; j < H; ++j) {
            double pre;
            if (c.linear_before_reset) {
              pre = px[2][j] + rr[j] * ph[2][j];
            } else {
              pre = px[2][j] + (B ? B[G * H + 2 * H + j] : 0);
              for (int64_t k = 0; k < H; ++k) pre += R[(2 * H + j) * H + k] * (rr[k] * h[k]);
            }
            double candidate = f(1, clip(pre));
            hn[j] = (1 - z[j]) * candidate + z[j] * h[j];
          }
        } else {
          const float* P = c.peephole ? in.p.data<float>() + d * 3 * H : nullptr;
          for (int64_t j = 0; j < H; ++j) {
            double i_gate = f(0, clip(px[0][j] + ph[0][j] + (P ? P[j] * cell[j] : 0)));
            double f_gate =
                c.input_forget ? 1 - i_gate : f(0, clip(px[2][j] + ph[2][j] + (P ? P[2 * H + j] * cell[j] : 0)));
            double candidate = f(1, clip(px[3][j] + ph[3][j]));
            cell[j] = f_gate * cell[j] + i_gate * candidate;
            double o_gate = f(0, clip(px[1][j] + ph[1][j] + (P ? P[H + j] * cell[j] : 0)));
            hn[j] = o_gate * f(2, cell[j]);
          }
        }
        h = hn;
        for (int64_t j = 0; j < H; ++j)
          y.data<float>()[(c.layout ? (b * c.seq + t) * D + d : (t * D + d) * c.batch + b) * H + j] = float(h[j]);
      }
      for (int64_t j = 0; j < H; ++j) {
        yh.data<float>()[state_at(d, b) + j] = float(h[j]);
        yc.data<float>()[state_at(d, b) + j] = float(cell[j]);
      }
    }
  }
  return {y, yh, yc};
}

void check(const RnnConfig& c, uint64_t seed) {
  const int64_t D = c.direction == "bidirectional" ? 2 : 1, H = c.hidden, G = gates(c.op);
  Inputs in;
  in.x = random_tensor(c.layout ? Shape{c.batch, c.seq, c.input} : Shape{c.seq, c.batch, c.input}, seed);
  in.w = random_tensor({D, G * H, c.input}, seed + 1);
  in.r = random_tensor({D, G * H, H}, seed + 2);
  in.b = random_tensor({D, 2 * G * H}, seed + 3);
  Shape s_shape = c.layout ? Shape{c.batch, D, H} : Shape{D, c.batch, H};
  in.initial_h = random_tensor(s_shape, seed + 4);
  in.initial_c = random_tensor(s_shape, seed + 5);
  in.p = random_tensor({D, 3 * H}, seed + 6);
  if (!c.lengths.empty()) in.lengths = Tensor::from_vector<int32_t>(c.lengths, {c.batch});

  auto g = std::make_unique<Graph>();
  g->opset_imports[""] = 14;
  std::vector<Value> node_inputs;
  std::vector<Tensor> feeds;
  auto feed = [&](const std::string& name, const Tensor& t) {
    node_inputs.push_back(g->add_input(name, ValueType::of(t.dtype(), t.shape()))->output(0));
    feeds.push_back(t);
  };
  feed("x", in.x);
  feed("w", in.w);
  feed("r", in.r);
  if (c.bias)
    feed("b", in.b);
  else
    node_inputs.push_back(Value{});
  if (!c.lengths.empty())
    feed("lengths", in.lengths);
  else
    node_inputs.push_back(Value{});
  if (c.initial)
    feed("h0", in.initial_h);
  else
    node_inputs.push_back(Value{});
  if (c.op == "LSTM") {
    if (c.initial)
      feed("c0", in.initial_c);
    else
      node_inputs.push_back(Value{});
    if (c.peephole) feed("p", in.p);
  }
  while (!node_inputs.empty() && !node_inputs.back()) node_inputs.pop_back();
  int outputs = c.op == "LSTM" ? 3 : 2;
  Node* n = g->add_node(c.op, node_inputs, outputs, "cell");
  n->attributes.set("hidden_size", c.hidden);
  n->attributes.set("direction", c.direction);
  n->attributes.set("layout", c.layout);
  if (c.op == "GRU") n->attributes.set("linear_before_reset", int64_t{c.linear_before_reset});
  if (c.op == "LSTM") n->attributes.set("input_forget", int64_t{c.input_forget});
  if (!c.activations.empty()) n->attributes.set("activations", c.activations);
  if (!c.alphas.empty()) n->attributes.set("activation_alpha", c.alphas);
  if (!c.betas.empty()) n->attributes.set("activation_beta", c.betas);
  if (c.clip > 0) n->attributes.set("clip", c.clip);
  for (int i = 0; i < outputs; ++i) g->add_output(n->output(i), "out" + std::to_string(i));
  auto got = run_graph(*g, feeds);
  auto want = reference(c, in);
  for (int i = 0; i < outputs; ++i) {
    SCOPED_TRACE("output " + std::to_string(i));
    expect_close(got[static_cast<size_t>(i)], want[static_cast<size_t>(i)], 1e-4, 1e-5);
  }
}

}  // namespace

TEST(Rnn, LstmVariants) {
  RnnConfig c;
  check(c, 1);
  c.peephole = true;
  check(c, 2);
  c.direction = "bidirectional";
  c.lengths = {3, 1};
  check(c, 3);
  c.layout = 1;
  c.direction = "reverse";
  c.initial = false;
  c.bias = false;
  check(c, 4);
  c.input_forget = true;
  c.clip = 0.5f;
  c.layout = 0;
  c.direction = "forward";
  c.lengths = {2, 0};
  check(c, 5);
}

TEST(Rnn, GruVariants) {
  RnnConfig c;
  c.op = "GRU";
  for (bool lbr : {false, true}) {
    c.linear_before_reset = lbr;
    c.direction = "forward";
    c.lengths = {};
    c.layout = 0;
    check(c, 10);
    c.direction = "bidirectional";
    c.lengths = {2, 3};
    check(c, 11);
    c.layout = 1;
    c.direction = "reverse";
    check(c, 12);
  }
}

TEST(Rnn, RnnWithActivationsAndClip) {
  RnnConfig c;
  c.op = "RNN";
  check(c, 20);
  c.direction = "bidirectional";
  c.activations = {"LeakyRelu", "HardSigmoid"};
  c.alphas = {0.3f, 0.25f};
  c.betas = {0.4f};
  c.clip = 0.7f;
  c.batch = 3;
  c.lengths = {1, 3, 2};
  check(c, 21);
}

TEST(Rnn, InfersShapes) {
  auto g = std::make_unique<Graph>();
  g->opset_imports[""] = 14;
  Node* x = g->add_input("x", ValueType{DType::float32, true, {Dim::symbolic("T"), Dim::symbolic("B"), Dim::known(3)}});
  Node* w = g->add_constant("w", random_tensor({2, 20, 3}, 1));
  Node* r = g->add_constant("r", random_tensor({2, 20, 5}, 2));
  Node* n = g->add_node("LSTM", {x->output(0), w->output(0), r->output(0)}, 3, "lstm");
  n->attributes.set("direction", std::string("bidirectional"));
  for (int i = 0; i < 3; ++i) g->add_output(n->output(i), "o" + std::to_string(i));
  runtime::Session s(std::move(g));
  const auto& y = s.outputs()[0].type;
  ASSERT_EQ(y.dims.size(), 4u);
  EXPECT_EQ(y.dims[0], Dim::symbolic("T"));
  EXPECT_EQ(y.dims[1], Dim::known(2));
  EXPECT_EQ(y.dims[2], Dim::symbolic("B"));
  EXPECT_EQ(y.dims[3], Dim::known(5));
  EXPECT_EQ(s.outputs()[2].type.dims[2], Dim::known(5));
  Tensor out = s.run({random_tensor({4, 2, 3}, 3)})[0];
  EXPECT_EQ(out.shape(), (Shape{4, 2, 2, 5}));
}
