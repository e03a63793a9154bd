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
#include <algorithm>
#include <limits>

#include "graft/ir/graph_rebuilder.h"
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
std::optional<FakeQuantize> match(const ir::IndexedGraph& g, uint32_t id) {
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

}  // namespace

bool lower_quantize_dequantize(std::unique_ptr<ir::Graph>& graph, PassContext& ctx) {
  // Round, and Clip with its bounds as inputs, came with opset 11.
  if (!may_add_ops_of_opset(*graph, ctx, 11)) return false;
  ir::IndexedGraph g(*graph);
  std::vector<std::optional<FakeQuantize>> pairs(g.num_nodes());
  bool any = false;
  for (uint32_t id = 0; id < g.num_nodes(); ++id) {
    pairs[id] = match(g, id);
    any = any || pairs[id].has_value();
  }
  if (!any) return false;
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
