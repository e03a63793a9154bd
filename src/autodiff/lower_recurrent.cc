// RNN, LSTM and GRU unrolled over time in standard ops (ONNX formulas, gates
// in ONNX order: LSTM i, o, f, c; GRU z, r, h). Per direction d, with W_d, R_d
// transposed once and the two biases summed (GRU keeps R's h bias apart when
// linear_before_reset is set), each step t (reversed for the reverse
// direction) reads X[t] and the previous state:
//   RNN:  H = tanh(X[t] W^T + H R^T + b).
//   LSTM: [i o f c] = X[t] W^T + H R^T + b; C = f C + i c'; H = o tanh(C)
//         with sigmoid for i, o, f and tanh for c'.
//   GRU:  [z r] = sigmoid(X[t] W_zr^T + H R_zr^T + b_zr);
//         h' = tanh(X[t] W_h^T + (r H) R_h^T + b_h), or with
//         linear_before_reset tanh(X[t] W_h^T + Wb_h + r (H R_h^T + Rb_h));
//         H = (1 - z) h' + z H.
// Y stacks every step's H in time order, per direction; Y_h (and Y_c) the
// last step's state. The node's outputs are then read from these values.
#include "lower_recurrent.h"

#include <unordered_map>

#include "graft/ops/gradient.h"

namespace graft::autodiff {
namespace {

/// Adds nodes of standard ops next to a recurrent node and infers their types.
class Writer {
 public:
  using enum ir::OpId;

  Writer(ir::Graph& graph, const ir::Node& node) : graph_(graph), node_(node) {}

  ir::Value add(ir::OpId op, const std::vector<ir::Value>& inputs,
                std::vector<std::pair<std::string, ir::AttributeValue>> attributes = {}, int num_outputs = 1,
                int output = 0) {
    ir::Node* n = graph_.add_node(op, inputs, num_outputs, node_.name + "/unrolled_" + std::to_string(counter_++));
    n->opset_version = 17;
    n->device = node_.device;
    for (auto& [key, value] : attributes) n->attributes.set(key, std::move(value));
    ops::infer_node_types(*n);
    return n->output(output);
  }
  std::vector<ir::Value> split(ir::Value v, int parts, int64_t extent) {
    ir::Node* n = graph_.add_node(Split, {v, ints(std::vector<int64_t>(static_cast<size_t>(parts), extent))}, parts,
                                  node_.name + "/unrolled_" + std::to_string(counter_++));
    n->opset_version = 17;
    n->attributes.set("axis", int64_t{-1});
    ops::infer_node_types(*n);
    std::vector<ir::Value> out;
    for (int k = 0; k < parts; ++k) out.push_back(n->output(k));
    return out;
  }
  ir::Value ints(const std::vector<int64_t>& values) {
    return constant(Tensor::from_vector<int64_t>(values, {static_cast<int64_t>(values.size())}));
  }
  ir::Value index(int64_t i) { return constant(Tensor::scalar<int64_t>(i)); }
  ir::Value constant(Tensor t) {
    return graph_.add_constant(node_.name + "/unrolled_const_" + std::to_string(counter_++), std::move(t))->output(0);
  }
  /// Row block `begin`..`begin + extent` of the last axis.
  ir::Value slice_last(ir::Value v, int64_t begin, int64_t extent) {
    return add(Slice, {v, ints({begin}), ints({begin + extent}), ints({-1})});
  }

 private:
  ir::Graph& graph_;
  const ir::Node& node_;
  int counter_ = 0;
};

bool has(const ir::Node& n, size_t i) { return i < n.inputs.size() && n.inputs[i]; }

/// Whether `n` uses its op's default activations: none given, or the
/// defaults spelled out for each direction (PyTorch's exporter writes RNN's
/// ["Tanh"]), with no activation_alpha or activation_beta.
bool default_activations(const ir::Node& n, int64_t directions) {
  using enum ir::OpId;
  const ir::Attributes& a = n.attributes;
  if (a.has("activation_alpha") || a.has("activation_beta")) return false;
  if (!a.has("activations")) return true;
  const std::vector<std::string> per_direction = n.op() == LSTM  ? std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"}
                                                 : n.op() == GRU ? std::vector<std::string>{"Sigmoid", "Tanh"}
                                                                 : std::vector<std::string>{"Tanh"};
  std::vector<std::string> expected;
  for (int64_t d = 0; d < directions; ++d) expected.insert(expected.end(), per_direction.begin(), per_direction.end());
  return a.get_strings("activations") == expected;
}

/// The outputs of `n` unrolled, or empty when its form is not the common one.
std::vector<ir::Value> unroll(ir::Graph& graph, ir::Node& n) {
  using enum ir::OpId;
  const bool lstm = n.op() == LSTM, rnn = n.op() == RNN;
  const ir::Attributes& a = n.attributes;
  const std::string direction = a.get_string("direction", "forward");
  const int64_t directions = direction == "bidirectional" ? 2 : 1;
  if (a.get_int("layout", 0) != 0 || a.has("clip") || !default_activations(n, directions) || has(n, 4) ||
      (lstm && has(n, 7)) || (lstm && a.get_int("input_forget", 0) != 0))
    return {};
  std::optional<graft::Shape> x_shape = graph.type_of(n.inputs[0]).concrete_shape();
  std::optional<graft::Shape> w_shape = graph.type_of(n.inputs[1]).concrete_shape();
  if (!x_shape || !w_shape || x_shape->size() != 3 || w_shape->size() != 3) return {};
  const int64_t gates = lstm ? 4 : rnn ? 1 : 3;
  const int64_t hidden = (*w_shape)[1] / gates, seq = (*x_shape)[0], batch = (*x_shape)[1];
  const DType dtype = graph.type_of(n.inputs[0]).dtype;
  const bool linear_before_reset = !lstm && a.get_int("linear_before_reset", 0) != 0;
  Writer w(graph, n);

  std::vector<ir::Value> ys, last_h, last_c;
  for (int64_t d = 0; d < directions; ++d) {
    const bool reverse = direction == "reverse" || d == 1;
    ir::Value wt = w.add(Transpose, {w.add(Gather, {n.inputs[1], w.index(d)})});
    ir::Value rd = w.add(Gather, {n.inputs[2], w.index(d)});
    ir::Value zero_bias = w.constant(Tensor(dtype, {gates * hidden}));
    ir::Value wb = zero_bias, rb = zero_bias;
    if (has(n, 3)) {
      ir::Value b = w.add(Gather, {n.inputs[3], w.index(d)});
      wb = w.slice_last(b, 0, gates * hidden);
      rb = w.slice_last(b, gates * hidden, gates * hidden);
    }
    ir::Value h = has(n, 5) ? w.add(Gather, {n.inputs[5], w.index(d)}) : w.constant(Tensor(dtype, {batch, hidden}));
    ir::Value c;
    if (lstm) c = has(n, 6) ? w.add(Gather, {n.inputs[6], w.index(d)}) : w.constant(Tensor(dtype, {batch, hidden}));
    ir::Value one = w.constant([&] {
      Tensor t(dtype, {});
      visit_float_dtype(dtype, "recurrent", [&]<typename T>() { *t.data<T>() = static_cast<T>(1); });
      return t;
    }());
    // GRU: the z, r rows and the h rows of R apart (h multiplies r H).
    ir::Value rt_all = w.add(Transpose, {rd});
    const bool gru = !lstm && !rnn;
    ir::Value rt_zr = gru ? w.slice_last(rt_all, 0, 2 * hidden) : rt_all;
    ir::Value rt_h = gru ? w.slice_last(rt_all, 2 * hidden, hidden) : ir::Value{};
    std::vector<ir::Value> steps(static_cast<size_t>(seq));
    for (int64_t s = 0; s < seq; ++s) {
      const int64_t t = reverse ? seq - 1 - s : s;
      ir::Value xw = w.add(Add, {w.add(MatMul, {w.add(Gather, {n.inputs[0], w.index(t)}), wt}), wb});
      if (rnn) {
        h = w.add(Tanh, {w.add(Add, {w.add(Add, {xw, w.add(MatMul, {h, rt_all})}), rb})});
      } else if (lstm) {
        ir::Value pre = w.add(Add, {w.add(Add, {xw, w.add(MatMul, {h, rt_all})}), rb});
        std::vector<ir::Value> g = w.split(pre, 4, hidden);
        ir::Value i = w.add(Sigmoid, {g[0]}), o = w.add(Sigmoid, {g[1]}), f = w.add(Sigmoid, {g[2]});
        c = w.add(Add, {w.add(Mul, {f, c}), w.add(Mul, {i, w.add(Tanh, {g[3]})})});
        h = w.add(Mul, {o, w.add(Tanh, {c})});
      } else {
        std::vector<ir::Value> xg = w.split(xw, 3, hidden);
        std::vector<ir::Value> rbg = w.split(rb, 3, hidden);
        std::vector<ir::Value> hr = w.split(w.add(MatMul, {h, rt_zr}), 2, hidden);
        ir::Value z = w.add(Sigmoid, {w.add(Add, {w.add(Add, {xg[0], hr[0]}), rbg[0]})});
        ir::Value r = w.add(Sigmoid, {w.add(Add, {w.add(Add, {xg[1], hr[1]}), rbg[1]})});
        ir::Value candidate_in;
        if (linear_before_reset)
          candidate_in = w.add(Add, {xg[2], w.add(Mul, {r, w.add(Add, {w.add(MatMul, {h, rt_h}), rbg[2]})})});
        else
          candidate_in = w.add(Add, {w.add(Add, {xg[2], w.add(MatMul, {w.add(Mul, {r, h}), rt_h})}), rbg[2]});
        ir::Value candidate = w.add(Tanh, {candidate_in});
        h = w.add(Add, {w.add(Mul, {w.add(Sub, {one, z}), candidate}), w.add(Mul, {z, h})});
      }
      steps[static_cast<size_t>(t)] = w.add(Unsqueeze, {h, w.ints({0})});
    }
    ys.push_back(w.add(Unsqueeze, {w.add(Concat, steps, {{"axis", int64_t{0}}}), w.ints({1})}));
    last_h.push_back(w.add(Unsqueeze, {h, w.ints({0})}));
    if (lstm) last_c.push_back(w.add(Unsqueeze, {c, w.ints({0})}));
  }
  auto joined = [&](const std::vector<ir::Value>& parts, int64_t axis) {
    return parts.size() == 1 ? parts[0] : w.add(Concat, parts, {{"axis", axis}});
  };
  std::vector<ir::Value> outputs{joined(ys, 1), joined(last_h, 0)};
  if (lstm) outputs.push_back(joined(last_c, 0));
  return outputs;
}

}  // namespace

void lower_recurrent_nodes(ir::Graph& graph) {
  using enum ir::OpId;
  std::vector<ir::Node*> recurrent;
  for (const auto& n : graph.nodes())
    if ((n->op() == LSTM || n->op() == GRU || n->op() == RNN) && n->inputs.size() >= 3 && n->inputs[0] &&
        dtype_is_float(graph.type_of(n->inputs[0]).dtype))
      recurrent.push_back(n.get());
  for (ir::Node* n : recurrent) {
    std::vector<ir::Value> outputs = unroll(graph, *n);
    if (outputs.empty()) continue;
    auto replace = [&](ir::Value& v) {
      if (v.node == n && v.index >= 0 && static_cast<size_t>(v.index) < outputs.size())
        v = outputs[static_cast<size_t>(v.index)];
    };
    for (const auto& other : graph.nodes())
      for (ir::Value& v : other->inputs) replace(v);
    for (ir::Value& v : graph.mutable_outputs()) replace(v);
  }
}

}  // namespace graft::autodiff
