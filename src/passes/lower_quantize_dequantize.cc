// Replaces each QuantizeLinear -> DequantizeLinear pair with per-tensor
// (scalar constant) scales and zero points, the "QDQ" fake quantization that
// quantization-aware exports (PyTorch's quantized models, ONNX Runtime's
// quantizer) put around every convolution and product, by the float
// arithmetic it stands for:
//   q = clamp(round_half_even(x / s) + z, lo, hi)      (QuantizeLinear)
//   y = (q - z') * s'                                 (DequantizeLinear)
// written as Div, Round, Add, Clip, Sub, Mul (Div, Round, Clip, Mul when
// z == z'). These are pointwise ops that `fuse` compiles into one kernel and
// that `dnnl` attaches as post-ops to the convolution before them, where the
// pair ran as two reference kernels and a layout round trip per layer. The
// values are those of the reference kernels: each step is the same float
// operation (integers below 2^24 are exact in float32), except that a NaN
// stays NaN where QuantizeLinear makes it the zero point. An identity Cast
// between the two (PyTorch writes one) is looked through. Per-axis scales and
// 16-bit types other than the 8-bit ones are left alone; the pair's
// QuantizeLinear stays while something else reads it (eliminate-dead-code
// removes it otherwise).
//
// First, QLinearConv and QLinearMatMul (ONNX Runtime's QOperator format) with
// constant scales, zero points, weights and bias become DequantizeLinear ->
// Conv / MatMul -> QuantizeLinear, with the weights dequantized once,
// (w - w_zero) * w_scale, and the int32 bias as B * x_scale * w_scale: the
// same values up to float rounding (the kernels requantize the exact integer
// sum; this rounds a float sum). Their pairs with the neighbouring
// QuantizeLinear and DequantizeLinear are then lowered as any, and the
// backends run them as they run a QDQ model (dnnl: in int8, docs/dnnl.md).
#include <algorithm>
#include <limits>

#include "graft/ir/graph_rebuilder.h"
#include "graft/ops/type_inference.h"
#include "graft/passes/pass.h"
#include "pattern_util.h"

namespace graft::passes {
namespace {

using ir::Entry;

// The value of a one-element constant of any numeric dtype behind `e`.
std::optional<double> scalar_number(const ir::IndexedGraph& g, Entry e) {
  const Tensor* t = pattern::constant_of(g, e);
  if (!t || t->numel() != 1) return std::nullopt;
  return t->value_as_double(0);
}

struct FakeQuantize {
  Entry x;
  double scale = 1, zero = 0, lo = 0, hi = 0;  // QuantizeLinear's
  double out_scale = 1, out_zero = 0;          // DequantizeLinear's
};

// The pair ending at DequantizeLinear node `id`, if it is one.
std::optional<FakeQuantize> match_fake_quantize(const ir::IndexedGraph& g, uint32_t id) {
  if (!pattern::is_op(g, id, ir::OpId::DequantizeLinear)) return std::nullopt;
  const ir::Node& dq = g.node(id);
  auto dq_in = g.inputs(id);
  if (dq_in.size() < 2 || dq.output_types[0].dtype != DType::float32) return std::nullopt;
  Entry q = dq_in[0];
  // PyTorch's export casts the quantized tensor to its own type first.
  if (pattern::produced_by(g, q, ir::OpId::Cast)) {
    const Entry from = g.inputs(q.node_id)[0];
    if (!from.present() ||
        g.node(q.node_id).output_types[0].dtype != g.node(from.node_id).output_types[from.index].dtype)
      return std::nullopt;
    q = from;
  }
  if (!pattern::produced_by(g, q, ir::OpId::QuantizeLinear)) return std::nullopt;
  auto q_in = g.inputs(q.node_id);
  const DType qtype = g.node(q.node_id).output_types[0].dtype;
  FakeQuantize f;
  if (qtype == DType::uint8) {
    f.lo = std::numeric_limits<uint8_t>::min();
    f.hi = std::numeric_limits<uint8_t>::max();
  } else if (qtype == DType::int8) {
    f.lo = std::numeric_limits<int8_t>::min();
    f.hi = std::numeric_limits<int8_t>::max();
  } else {
    return std::nullopt;
  }
  if (q_in.size() < 2 || !q_in[0].present()) return std::nullopt;
  f.x = q_in[0];
  const ir::Node& x_producer = g.node(f.x.node_id);
  if (x_producer.output_types[f.x.index].dtype != DType::float32) return std::nullopt;
  const Tensor* s = pattern::constant_of(g, q_in[1]);
  const Tensor* s_out = pattern::constant_of(g, dq_in[1]);
  if (!s || !s_out || s->dtype() != DType::float32 || s_out->dtype() != DType::float32 || s->numel() != 1 ||
      s_out->numel() != 1)
    return std::nullopt;
  f.scale = s->value_as_double(0);
  f.out_scale = s_out->value_as_double(0);
  if (q_in.size() > 2 && q_in[2].present()) {
    std::optional<double> z = scalar_number(g, q_in[2]);
    if (!z) return std::nullopt;
    f.zero = *z;
  }
  if (dq_in.size() > 2 && dq_in[2].present()) {
    std::optional<double> z = scalar_number(g, dq_in[2]);
    if (!z) return std::nullopt;
    f.out_zero = *z;
  }
  return f;
}

// A constant behind `e` with one value, or one per channel of `channels`.
const Tensor* per_channel_constant(const ir::IndexedGraph& g, Entry e, int64_t channels) {
  const Tensor* t = pattern::constant_of(g, e);
  if (!t || !(t->numel() == 1 || (t->rank() == 1 && t->numel() == channels))) return nullptr;
  return t;
}

bool is_8bit(const Tensor* t) { return t && (t->dtype() == DType::uint8 || t->dtype() == DType::int8); }

// Whether QLinearConv / QLinearMatMul node `id` has what the expansion needs
// as constants: scalar scales and zero points of x and y, 8-bit weights with
// scales and zero points per tensor or per output channel (a Conv's
// dimension 0, a 2-D MatMul's columns), an int32 bias per channel.
bool expandable(const ir::IndexedGraph& g, uint32_t id) {
  const bool conv = pattern::is_op(g, id, ir::OpId::QLinearConv);
  if (!conv && !pattern::is_op(g, id, ir::OpId::QLinearMatMul)) return false;
  auto in = g.inputs(id);
  if (in.size() < 8) return false;
  for (size_t i : {1, 2, 6, 7}) {
    const Tensor* t = pattern::constant_of(g, in[i]);
    if (!t || t->numel() != 1) return false;
  }
  const Tensor* w = pattern::constant_of(g, in[3]);
  if (!is_8bit(w) || w->rank() < 2 || (!conv && w->rank() != 2)) return false;
  const int64_t channels = conv ? w->dim(0) : w->dim(1);
  const Tensor* w_scale = per_channel_constant(g, in[4], channels);
  if (!w_scale || w_scale->dtype() != DType::float32 || !per_channel_constant(g, in[5], channels)) return false;
  if (in.size() > 8 && in[8].present()) {
    const Tensor* bias = pattern::constant_of(g, in[8]);
    if (!conv || !bias || bias->dtype() != DType::int32 || bias->numel() != channels) return false;
  }
  return true;
}

bool expand_qlinear_ops(std::unique_ptr<ir::Graph>& graph) {
  ir::IndexedGraph g(*graph);
  std::vector<bool> expand(g.num_nodes());
  bool any = false;
  for (uint32_t id = 0; id < g.num_nodes(); ++id) any = (expand[id] = expandable(g, id)) || any;
  if (!any) return false;
  ir::GraphRebuilder rebuilder(g);
  ir::Graph& target = rebuilder.target();
  for (uint32_t id = 0; id < g.num_nodes(); ++id) {
    if (!expand[id]) {
      rebuilder.copy(id);
      continue;
    }
    const ir::Node& node = g.node(id);
    const bool conv = node.op() == ir::OpId::QLinearConv;
    auto in = g.inputs(id);
    const std::string base = node.name.empty() ? "qlinear_" + std::to_string(id) : node.name;
    const Tensor& w = *pattern::constant_of(g, in[3]);
    const Tensor& w_scale = *pattern::constant_of(g, in[4]);
    const Tensor& w_zero = *pattern::constant_of(g, in[5]);
    const double x_scale = pattern::constant_of(g, in[1])->value_as_double(0);
    const int64_t channels = conv ? w.dim(0) : w.dim(1);
    auto channel_of = [&](int64_t i) { return conv ? i / (w.numel() / channels) : i % channels; };
    auto at = [](const Tensor& t, int64_t c) { return t.value_as_double(t.numel() == 1 ? 0 : c); };
    Tensor weights(DType::float32, w.shape());
    float* wf = weights.data<float>();
    for (int64_t i = 0; i < w.numel(); ++i) {
      const int64_t c = channel_of(i);
      wf[i] = static_cast<float>((w.value_as_double(i) - at(w_zero, c)) * at(w_scale, c));
    }
    const std::vector<ir::Value> x_inputs = {rebuilder.map(in[0]), rebuilder.map(in[1]), rebuilder.map(in[2])};
    ir::Value x = target.add_node("DequantizeLinear", x_inputs, 1, base + "/DequantizeLinear")->output(0);
    std::vector<ir::Value> inputs = {x, target.add_constant(base + "/weights", std::move(weights))->output(0)};
    if (in.size() > 8 && in[8].present()) {
      const Tensor& b = *pattern::constant_of(g, in[8]);
      Tensor bias(DType::float32, {channels});
      for (int64_t c = 0; c < channels; ++c)
        bias.data<float>()[c] = static_cast<float>(b.value_as_double(c) * x_scale * at(w_scale, c));
      inputs.push_back(target.add_constant(base + "/bias", std::move(bias))->output(0));
    }
    ir::Node* product = target.add_node(conv ? "Conv" : "MatMul", inputs, 1, base + (conv ? "/Conv" : "/MatMul"));
    if (conv) product->attributes = node.attributes;
    ir::Node* y = target.add_node("QuantizeLinear", {product->output(0), rebuilder.map(in[6]), rebuilder.map(in[7])}, 1,
                                  base + "/QuantizeLinear");
    rebuilder.replace(id, y);
  }
  graph = rebuilder.finish();
  ops::infer_types(*graph);
  return true;
}

}  // namespace

bool lower_quantize_dequantize(std::unique_ptr<ir::Graph>& graph, PassContext& ctx) {
  // Round, and Clip with its bounds as inputs, came with opset 11.
  if (!may_add_ops_of_opset(*graph, ctx, 11)) return false;
  const bool expanded = expand_qlinear_ops(graph);
  ir::IndexedGraph g(*graph);
  std::vector<std::optional<FakeQuantize>> pairs(g.num_nodes());
  bool any = false;
  for (uint32_t id = 0; id < g.num_nodes(); ++id) {
    pairs[id] = match_fake_quantize(g, id);
    any = any || pairs[id].has_value();
  }
  if (!any) return expanded;
  ir::GraphRebuilder rebuilder(g);
  ir::Graph& target = rebuilder.target();
  auto scalar = [&](const std::string& name, double v) {
    return target.add_constant(name, Tensor::scalar<float>(static_cast<float>(v)))->output(0);
  };
  for (uint32_t id = 0; id < g.num_nodes(); ++id) {
    if (!pairs[id]) {
      rebuilder.copy(id);
      continue;
    }
    const FakeQuantize& f = *pairs[id];
    const std::string base = g.node(id).name.empty() ? "fake_quantize_" + std::to_string(id) : g.node(id).name;
    ir::Value v = target.add_node("Div", {rebuilder.map(f.x), scalar(base + "/scale", f.scale)}, 1, base + "/Div")->output(0);
    ir::Node* round = target.add_node("Round", {v}, 1, base + "/Round");
    round->opset_version = std::max(round->opset_version, 11);  // Round and Clip's bound inputs are opset 11
    v = round->output(0);
    double lo = f.lo, hi = f.hi;
    if (f.zero == f.out_zero) {  // clamp(r + z, lo, hi) - z == clamp(r, lo - z, hi - z) on integers
      lo -= f.zero;
      hi -= f.zero;
    } else if (f.zero != 0) {
      v = target.add_node("Add", {v, scalar(base + "/zero_point", f.zero)}, 1, base + "/Add")->output(0);
    }
    ir::Node* clip = target.add_node("Clip", {v, scalar(base + "/low", lo), scalar(base + "/high", hi)}, 1, base + "/Clip");
    clip->opset_version = std::max(clip->opset_version, 11);
    v = clip->output(0);
    if (f.zero != f.out_zero && f.out_zero != 0)
      v = target.add_node("Sub", {v, scalar(base + "/out_zero_point", f.out_zero)}, 1, base + "/Sub")->output(0);
    ir::Node* mul = target.add_node("Mul", {v, scalar(base + "/out_scale", f.out_scale)}, 1, base + "/Mul");
    rebuilder.replace(id, mul);
  }
  graph = rebuilder.finish();
  return true;
}

}  // namespace graft::passes
