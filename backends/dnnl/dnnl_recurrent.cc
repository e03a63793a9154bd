// Recurrent ops: ONNX LSTM and GRU (one direction) on oneDNN's LSTM, GRU
// and linear-before-reset GRU primitives. Their weights are reordered into
// oneDNN's gate order and layout when weights are converted (the layouts
// are described at emit_recurrent).
#include <algorithm>
#include <type_traits>

#include "dnnl_emitters.h"

namespace graft::dnnl_backend {

using dnnl::memory;
using dnnl::prop_kind;
using ir::OpId;

// LSTM and GRU (one direction) on oneDNN's recurrent primitives. ONNX
// stores W as [1, G*H, I], R as [1, G*H, H] and B as [1, 2*G*H] (input then
// recurrence biases), gates in its own order (LSTM: input, output, forget,
// cell; GRU: update, reset, hidden); oneDNN wants [layer, direction, I,
// gate, H] in its order (LSTM: input, forget, cell, output; GRU: update,
// reset, output) and one bias per gate, plus a fourth for the
// linear-before-reset GRU, whose recurrence bias of the hidden gate stays
// inside the reset product. The weights are converted once like a
// convolution's.
int emit_recurrent(Builder& b, uint32_t id) {
  const ir::Node& node = b.graph().node(id);
  const bool lstm = node.op() == OpId::LSTM;
  const bool linear_before_reset = !lstm && node.attributes.get_int("linear_before_reset", 0) != 0;
  const int64_t gates = lstm ? 4 : 3, bias_gates = linear_before_reset ? 4 : gates;
  Dims x = b.dims(b.input(node, 0));
  const int64_t steps = x[0], batch = x[1], input_size = x[2];
  const int64_t hidden = b.dims(b.input(node, 1))[1] / gates;
  const auto direction = node.attributes.get_string("direction", "forward") == "reverse"
                             ? dnnl::rnn_direction::unidirectional_right2left
                             : dnnl::rnn_direction::unidirectional_left2right;
  // oneDNN's gate g is ONNX's gate onnx_gate[g].
  const std::vector<int64_t> onnx_gate = lstm ? std::vector<int64_t>{0, 2, 3, 1} : std::vector<int64_t>{0, 1, 2};
  int src = b.view(b.as_plain(b.slot_of(b.input(node, 0)), node.name), plain_desc({steps, batch, input_size}));
  const memory::desc state_desc = plain_desc({1, 1, batch, hidden}), none;
  auto state = [&](size_t i) {
    if (!b.has_input(node, i)) return -1;
    return b.view(b.as_plain(b.slot_of(b.input(node, i)), node.name), state_desc);
  };
  const int h0 = state(5), c0 = lstm ? state(6) : -1;
  const memory::desc w_any = any_desc({1, 1, input_size, gates, hidden}),
                     r_any = any_desc({1, 1, hidden, gates, hidden});
  const memory::desc bias_desc = plain_desc({1, 1, bias_gates, hidden}), y_desc = plain_desc({steps, batch, hidden});
  const memory::desc h0_desc = h0 >= 0 ? state_desc : none;
  memory::desc w_desc, r_desc, b_desc, y_out, h_out, c_out;
  dnnl::primitive primitive;
  dnnl::primitive_desc_base pd_base;
  // Creates the primitive of type Rnn from its descriptor's arguments and
  // reads off the layouts it picked.
  auto create = [&]<typename Rnn>(std::type_identity<Rnn>, auto&&... desc_args) {
    typename Rnn::primitive_desc pd(typename Rnn::desc(prop_kind::forward_inference, direction, desc_args...),
                                    Builder::new_attr(), b.engine());
    w_desc = pd.weights_layer_desc();
    r_desc = pd.weights_iter_desc();
    b_desc = pd.bias_desc();
    y_out = pd.dst_layer_desc();
    h_out = pd.dst_iter_desc();
    if constexpr (std::is_same_v<Rnn, dnnl::lstm_forward>) c_out = pd.dst_iter_c_desc();
    primitive = Rnn(pd);
    pd_base = pd;
  };
  const memory::desc& x_desc = b.desc(src);
  if (lstm)
    create(std::type_identity<dnnl::lstm_forward>{}, x_desc, h0_desc, c0 >= 0 ? state_desc : none, w_any, r_any,
           bias_desc, y_desc, state_desc, state_desc);
  else if (linear_before_reset)
    create(std::type_identity<dnnl::lbr_gru_forward>{}, x_desc, h0_desc, w_any, r_any, bias_desc, y_desc, state_desc);
  else
    create(std::type_identity<dnnl::gru_forward>{}, x_desc, h0_desc, w_any, r_any, bias_desc, y_desc, state_desc);
  // [G*H, K] in ONNX's gate order -> [K, G, H] in oneDNN's.
  auto gates_weight = [&](size_t i, int64_t k, const memory::desc& desc, const std::string& label) {
    Weight w;
    w.sources = {b.source_of(b.input(node, i))};
    w.plain = plain_desc({1, 1, k, gates, hidden});
    w.desc = desc;
    w.label = label;
    w.fill = [=](const std::vector<Tensor>& s, void* plain_out) {
      float* out = static_cast<float*>(plain_out);
      const float* in = s[0].data<float>();
      for (int64_t g = 0; g < gates; ++g)
        for (int64_t h = 0; h < hidden; ++h) {
          const float* row = in + (onnx_gate[static_cast<size_t>(g)] * hidden + h) * k;
          for (int64_t j = 0; j < k; ++j) out[(j * gates + g) * hidden + h] = row[j];
        }
    };
    return b.add_weight(std::move(w));
  };
  const int w_slot = gates_weight(1, input_size, w_desc, node.name + ".W");
  const int r_slot = gates_weight(2, hidden, r_desc, node.name + ".R");
  const bool has_bias = b.has_input(node, 3);
  Weight bias_weight;
  bias_weight.sources = {b.source_of(b.input(node, has_bias ? 3 : 1))};  // W only stands in for an absent bias (zeros)
  bias_weight.plain = bias_desc;
  bias_weight.desc = b_desc;
  bias_weight.label = node.name + ".B";
  bias_weight.fill = [=](const std::vector<Tensor>& s, void* plain_out) {
    float* out = static_cast<float*>(plain_out);
    for (int64_t g = 0; g < bias_gates; ++g)
      for (int64_t h = 0; h < hidden; ++h) {
        float value = 0;
        if (has_bias) {
          const float* bias = s[0].data<float>();
          const int64_t onnx = onnx_gate[static_cast<size_t>(std::min(g, gates - 1))];
          const float input_bias = bias[onnx * hidden + h], recurrence_bias = bias[(gates + onnx) * hidden + h];
          if (!linear_before_reset || g < 2)
            value = input_bias + recurrence_bias;
          else
            value = g == 2 ? input_bias : recurrence_bias;
        }
        out[g * hidden + h] = value;
      }
  };
  const int b_slot = b.add_weight(std::move(bias_weight));
  const int y = b.add_slot(y_out), y_h = b.add_slot(h_out);
  std::vector<std::pair<int, int>> args = {{DNNL_ARG_SRC_LAYER, src},       {DNNL_ARG_WEIGHTS_LAYER, w_slot},
                                           {DNNL_ARG_WEIGHTS_ITER, r_slot}, {DNNL_ARG_BIAS, b_slot},
                                           {DNNL_ARG_DST_LAYER, y},         {DNNL_ARG_DST_ITER, y_h}};
  int y_c = -1;
  if (lstm) {
    y_c = b.add_slot(c_out);
    args.push_back({DNNL_ARG_DST_ITER_C, y_c});
  }
  if (h0 >= 0) args.push_back({DNNL_ARG_SRC_ITER, h0});
  if (c0 >= 0) args.push_back({DNNL_ARG_SRC_ITER_C, c0});
  b.add_step(primitive, pd_base, std::move(args), node.name);
  // Y is [steps, 1, batch, hidden]; Y_h (and Y_c) [1, batch, hidden].
  if (node.num_outputs() > 1) b.set_slot(id, 1, b.view(y_h, plain_desc({1, batch, hidden})));
  if (node.num_outputs() > 2 && lstm) b.set_slot(id, 2, b.view(y_c, plain_desc({1, batch, hidden})));
  return b.view(y, plain_desc({steps, 1, batch, hidden}));
}

}  // namespace graft::dnnl_backend
