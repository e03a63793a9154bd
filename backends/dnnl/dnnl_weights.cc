// Weights: the values a step reads that do not change from run to run
// (constants, and module inputs the partitioner left outside). Each is
// described once here, with the sources it is made from and how: `fill`
// writes its plain form (a BatchNormalization folded into a convolution's
// weights and bias, a constant broadcast to a full shape), and a reorder
// converts that to the layout the primitive picked. DnnlModule runs the
// conversions on the first run and again whenever a source's version changes.
#include <cmath>

#include "dnnl_emitters.h"
#include "graft/ops/broadcast.h"
#include "graft/ops/evaluate_node.h"
#include "graft/ops/quantized_weight.h"

namespace graft::dnnl_backend {

using dnnl::memory;
using ir::Entry;

namespace {

// The float32 values of quantized weight `dq` (ops::is_quantized_weight),
// by the reference DequantizeLinear kernel: for a product that runs in
// float32 (an int8 one reads the int8 values instead, dnnl_int8.cc). The
// int8 values are constants no training step updates, so the copy never
// goes stale.
Tensor dequantized_weight(const ir::Node& dq) {
  std::vector<Tensor> inputs;
  for (const ir::Value& v : dq.inputs) {
    if (v && v.node->constant_value.storage() && v.node->constant_value.storage()->is_placeholder())
      fail(ErrorKind::unsupported, "dnnl backend: ", dq.describe(),
           " is needed in float32, but its int8 values were released once converted");
    inputs.push_back(v ? v.node->constant_value : Tensor());
  }
  return ops::evaluate_node(dq, std::move(inputs)).at(0);
}

}  // namespace

int Builder::add_weight(Weight w) {
  if (!w.identity) {
    dnnl::reorder::primitive_desc pd(program_.engine, w.plain, program_.engine, w.desc);
    w.convert = dnnl::reorder(pd);
  }
  program_.weights.push_back(std::move(w));
  return add_slot(program_.weights.back().identity ? program_.weights.back().plain : program_.weights.back().desc,
                  SlotKind::weight, static_cast<int>(program_.weights.size()) - 1);
}

WeightSource Builder::source_of(Entry e) {
  const ir::Node& n = indexed_.node(e.node_id);
  WeightSource s;
  if (is_constant(n)) {
    s.constant = n.constant_value;
  } else if (ops::is_quantized_weight(n)) {
    s.constant = dequantized_weight(n);
  } else if (is_input(n)) {
    // Every input of the subgraph has a slot (bind_inputs); an Input node that
    // is not one comes only from a corrupt artifact.
    int slot = entry_slot_[indexed_.entry_id(e)];
    if (slot < 0)
      fail(ErrorKind::invalid_model, "dnnl backend: weight ", n.describe(), " is not an input of the subgraph");
    s.input = program_.slots[slot].index;
  } else {
    fail(ErrorKind::unsupported, "dnnl backend: ", n.describe(),
         " produces a weight; weights must be constants or inputs");
  }
  return s;
}

bool Builder::is_source(Entry e) const { return is_weight_source(indexed_.node(e.node_id)); }

// Built when weights are converted and again when the constant's version
// changes, like any weight.
int Builder::broadcast_constant(Entry e, const Dims& out, const std::string& label) {
  Dims from = expand_rank(dims(e), out.size());
  Weight w;
  w.sources = {source_of(e)};
  w.plain = w.desc = plain_desc(out);
  w.label = label + ".broadcast";
  w.fill = [from, out](const std::vector<Tensor>& s, void* plain_out) {
    float* dst = static_cast<float*>(plain_out);
    const float* src = s[0].data<float>();
    ops::broadcast_for_each<1>(
        out, {&from},
        [&](int64_t at, const std::array<int64_t, 1>& in, int64_t count, const std::array<int64_t, 1>& step) {
          for (int64_t k = 0; k < count; ++k) dst[at + k] = src[in[0] + k * step[0]];
        });
  };
  return add_weight(std::move(w));
}

void conv_weights(Builder& b, const Group& g, const ir::Node& conv, const Dims& w_dims, const memory::desc& w_desc,
                  const memory::desc& b_desc, int& w_slot, int& b_slot) {
  const ir::Node* bn = folded_batch_norm(g);
  bool has_bias = b.has_input(conv, 2);
  std::vector<WeightSource> sources = {b.source_of(b.input(conv, 1))};
  if (has_bias) sources.push_back(b.source_of(b.input(conv, 2)));
  size_t bn_first = sources.size();
  float epsilon = 1e-5f;
  if (bn) {
    for (size_t i = 1; i < 5; ++i) sources.push_back(b.source_of(b.input(*bn, i)));
    epsilon = bn->attributes.get_float("epsilon", 1e-5f);
  }
  int64_t out_channels = b.dims(b.input(conv, 1))[0];
  int64_t per_channel = product(b.dims(b.input(conv, 1)), 1, b.dims(b.input(conv, 1)).size());
  auto scale_of = [bn_first, epsilon](const std::vector<Tensor>& s, int64_t o) {
    return s[bn_first].data<float>()[o] / std::sqrt(s[bn_first + 3].data<float>()[o] + epsilon);
  };
  Weight w;
  w.sources = sources;
  w.plain = plain_desc(w_dims);
  w.desc = w_desc;
  w.label = conv.name;
  if (bn)
    w.fill = [=](const std::vector<Tensor>& s, void* plain_out) {
      float* out = static_cast<float*>(plain_out);
      const float* src = s[0].data<float>();
      for (int64_t o = 0; o < out_channels; ++o) {
        float k = scale_of(s, o);
        for (int64_t i = 0; i < per_channel; ++i) out[o * per_channel + i] = src[o * per_channel + i] * k;
      }
    };
  w_slot = b.add_weight(std::move(w));
  b_slot = -1;
  if (!has_bias && !bn) return;
  Weight bias;
  bias.sources = sources;
  bias.plain = plain_desc({out_channels});
  bias.desc = b_desc;
  bias.label = conv.name + ".bias";
  bias.fill = [=](const std::vector<Tensor>& s, void* plain_out) {
    float* out = static_cast<float*>(plain_out);
    for (int64_t o = 0; o < out_channels; ++o) {
      float value = has_bias ? s[1].data<float>()[o] : 0.0f;
      if (bn) value = (value - s[bn_first + 2].data<float>()[o]) * scale_of(s, o) + s[bn_first + 1].data<float>()[o];
      out[o] = value;
    }
  };
  b_slot = b.add_weight(std::move(bias));
}

}  // namespace graft::dnnl_backend
