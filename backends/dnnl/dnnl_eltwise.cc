// Pointwise ops: which oneDNN algorithm each pointwise node is (an eltwise
// post-op or primitive; Add, Mul, Sub and Div a binary one, or with a
// one-element constant alpha * x + beta), and their emitters for nodes no
// group absorbed. Eltwise primitives take the layout of their input; a
// binary primitive reads its second operand in the first's layout, or
// broadcast, and switches to a channel-blocked operand, channels-last or a
// broadcast constant where oneDNN's jit binary lacks code for the
// broadcast. Backward: a Relu's gradient, Where(Greater(x, 0), d_y, 0), is
// oneDNN's eltwise backward (relu) on x and d_y in x's layout (a
// convolution's blocked one in a training step), or d_y's when x is plain
// and d_y blocked (x came from the forward's subgraph); the boolean mask is
// never written. GELU's gradient, dy * (Phi(x) + x phi(x)) as the gradient
// builder writes it, is the eltwise backward (gelu_erf) on x and dy
// (dnnl_gelu_gradient.h). A Sum of two gradient contributions is a binary add.
#include <cmath>
#include <optional>

#include "dnnl_emitters.h"

namespace graft::dnnl_backend {

using dnnl::algorithm;
using dnnl::memory;
using dnnl::prop_kind;
using ir::Entry;
using ir::OpId;

// Eltwise post-ops of a pointwise node (HardSigmoid needs two); empty when not pointwise.
std::vector<PostOp> eltwise_post_ops(const ir::Node& node) {
  const ir::Attributes& a = node.attributes;
  auto one = [&](algorithm alg, float alpha = 0, float beta = 0) {
    return std::vector<PostOp>{PostOp{PostOp::Kind::eltwise, &node, alg, alpha, beta, {}}};
  };
  switch (node.op()) {
    case OpId::Relu:
      return one(algorithm::eltwise_relu);
    case OpId::LeakyRelu:
      return one(algorithm::eltwise_relu, a.get_float("alpha", 0.01f));
    case OpId::Sigmoid:
      return one(algorithm::eltwise_logistic);
    case OpId::Tanh:
      return one(algorithm::eltwise_tanh);
    case OpId::Elu:
      return one(algorithm::eltwise_elu, a.get_float("alpha", 1.0f));
    case OpId::HardSwish:
      return one(algorithm::eltwise_hardswish);
    case OpId::Exp:
      return one(algorithm::eltwise_exp);
    case OpId::Abs:
      return one(algorithm::eltwise_abs);
    case OpId::Sqrt:
      return one(algorithm::eltwise_sqrt);
    case OpId::Round:
      return one(algorithm::eltwise_round);  // half to even, as ONNX's Round
    case OpId::Pow:                          // exponent 1 or 2, a constant (check_pow)
      return one(algorithm::eltwise_pow, 1.0f,
                 static_cast<float>(node.inputs[1].node->constant_value.value_as_double(0)));
    case OpId::Gelu:
      return one(a.get_string("approximate", "none") == "tanh" ? algorithm::eltwise_gelu_tanh
                                                               : algorithm::eltwise_gelu_erf);
    case OpId::HardSigmoid: {
      std::vector<PostOp> ops = one(algorithm::eltwise_linear, a.get_float("alpha", 0.2f), a.get_float("beta", 0.5f));
      ops.push_back(PostOp{PostOp::Kind::eltwise, &node, algorithm::eltwise_clip, 0.0f, 1.0f, {}});
      return ops;
    }
    case OpId::Clip: {
      float lo = -INFINITY, hi = INFINITY;
      if (node.opset_version < 11) {
        lo = a.get_float("min", lo);
        hi = a.get_float("max", hi);
      } else {
        if (node.inputs.size() > 1 && node.inputs[1]) lo = node.inputs[1].node->constant_value.value_as_double(0);
        if (node.inputs.size() > 2 && node.inputs[2]) hi = node.inputs[2].node->constant_value.value_as_double(0);
      }
      return one(algorithm::eltwise_clip_v2, lo, hi);
    }
    default:
      return {};
  }
}

algorithm binary_algorithm(OpId op) {
  switch (op) {
    case OpId::Add:
      return algorithm::binary_add;
    case OpId::Mul:
      return algorithm::binary_mul;
    case OpId::Sub:
      return algorithm::binary_sub;
    case OpId::Div:
      return algorithm::binary_div;
    default:
      return algorithm::undef;
  }
}

bool scalar_as_linear(OpId op, int constant_position, float c, float& alpha, float& beta) {
  if (op == OpId::Add) {
    alpha = 1;
    beta = c;
    return true;
  }
  if (op == OpId::Mul) {
    alpha = c;
    beta = 0;
    return true;
  }
  if (op == OpId::Sub && constant_position == 1) {
    alpha = 1;
    beta = -c;
    return true;
  }
  if (op == OpId::Sub && constant_position == 0) {
    alpha = -1;
    beta = c;
    return true;
  }
  if (op == OpId::Div && constant_position == 1 && c != 0) {
    alpha = 1 / c;
    beta = 0;
    return true;
  }
  return false;
}

int emit_eltwise(Builder& b, const ir::Node& node, const std::vector<PostOp>& ops, int src) {
  if (src < 0) src = b.slot_of(b.input(node, 0));
  // A scale of a view that eltwise cannot read in place (attention's
  // q / sqrt(head size) on a strided head): the copy to plain scales too, a
  // reorder with an output scale, one pass over the data instead of two.
  const Dims dims = b.desc(src).dims();
  const bool dense = b.desc(src).get_size() == static_cast<size_t>(product(dims, 0, dims.size())) * sizeof(float);
  if (ops.size() == 1 && ops[0].alg == algorithm::eltwise_linear && ops[0].beta == 0 && !dense) {
    const memory::desc plain = plain_desc(dims);
    dnnl::primitive_attr attr = Builder::new_attr();
    attr.set_output_scales(0, {ops[0].alpha});
    dnnl::reorder::primitive_desc pd(b.engine(), b.desc(src), b.engine(), plain, attr);
    int dst = b.add_slot(plain);
    b.add_step(dnnl::reorder(pd), pd, {{DNNL_ARG_FROM, src}, {DNNL_ARG_TO, dst}}, node.name);
    ++b.program().activation_reorders;
    return dst;
  }
  src = b.dense(src, node.name);
  for (const PostOp& p : ops) {
    dnnl::eltwise_forward::primitive_desc pd(
        dnnl::eltwise_forward::desc(prop_kind::forward_inference, p.alg, b.desc(src), p.alpha, p.beta),
        Builder::new_attr(), b.engine());
    int dst = b.add_slot(pd.dst_desc());
    b.add_step(dnnl::eltwise_forward(pd), pd, {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}}, node.name);
    src = dst;
  }
  return src;
}

namespace {

// `broadcast` dims in the channel-blocked layout of `full` (a convolution's
// aBcd8b, aBcd16b, ...), or nullopt when `full` has no such layout.
std::optional<memory::desc> in_channel_blocks_of(const memory::desc& full, const Dims& broadcast) {
  using tag = memory::format_tag;
  static const std::pair<size_t, tag> blocked[] = {{3, tag::aBc8b},   {3, tag::aBc16b},  {4, tag::aBcd8b},
                                                   {4, tag::aBcd16b}, {5, tag::aBcde8b}, {5, tag::aBcde16b}};
  const size_t rank = full.dims().size();
  if (broadcast.size() != rank) return std::nullopt;
  for (const auto& [tag_rank, t] : blocked)
    if (tag_rank == rank && memory::desc(full.dims(), memory::data_type::f32, t) == full)
      return memory::desc(broadcast, memory::data_type::f32, t);
  return std::nullopt;
}

}  // namespace

int emit_binary(Builder& b, const ir::Node& node) {
  const OpId op = node.op();
  Dims out = dims_of(node.output_types[0]);
  Entry first = b.input(node, 0), second = b.input(node, 1);
  // A one-element constant operand is an eltwise_linear.
  for (int position = 0; position < 2; ++position) {
    Entry c = position == 0 ? first : second, x = position == 0 ? second : first;
    const ir::Node& cn = b.graph().node(c.node_id);
    float alpha, beta;
    if (b.dims(x) == out && is_scalar_constant(cn) &&
        scalar_as_linear(op, position, static_cast<float>(cn.constant_value.value_as_double(0)), alpha, beta))
      return emit_eltwise(b, node, {PostOp{PostOp::Kind::eltwise, &node, algorithm::eltwise_linear, alpha, beta, {}}},
                          b.slot_of(x));
  }
  if (b.dims(first) != out) std::swap(first, second);  // commutative (the checker guarantees it)
  int src0 = b.dense(b.slot_of(first), node.name);
  Dims bd = expand_rank(b.dims(second), out.size());
  auto make = [&](const memory::desc& d0, const memory::desc& d1) {
    return dnnl::binary::primitive_desc(dnnl::binary::desc(binary_algorithm(op), d0, d1, d0), Builder::new_attr(),
                                        b.engine());
  };
  // oneDNN's jit binary reads a broadcast operand of a channel-blocked
  // source (a squeeze-excitation scale, [1,C,1,1] over a convolution's
  // aBcd8b output at AVX2) only in the same blocked layout, not plain: the
  // operand, usually already in that layout (the convolution that computed
  // it picked it), is converted rather than the full source. Without it the
  // scale fell to channels-last below: two reorders of the full source per
  // block, 32 per run of efficientnet_b0.
  if (bd != out && b.dims(second).size() == out.size() && on_reference_code(make(b.desc(src0), plain_desc(bd)))) {
    if (std::optional<memory::desc> blocked = in_channel_blocks_of(b.desc(src0), bd)) {
      dnnl::binary::primitive_desc pd = make(b.desc(src0), *blocked);
      if (!on_reference_code(pd)) {
        int src1 = b.as_desc(b.slot_of(second), *blocked, node.name);
        int dst = b.add_slot(pd.dst_desc());
        b.add_step(dnnl::binary(pd), pd, {{DNNL_ARG_SRC_0, src0}, {DNNL_ARG_SRC_1, src1}, {DNNL_ARG_DST, dst}},
                   node.name);
        return dst;
      }
    }
  }
  int src1 = b.operand_like(second, b.desc(src0), node.name);
  dnnl::binary::primitive_desc pd = make(b.desc(src0), b.desc(src1));
  // A broadcast oneDNN's jit binary has no code for (over a middle
  // dimension: swin's window masks [1,64,1,49,49] over the heads): a
  // constant operand is broadcast once, then both operands are full.
  if (bd != out && on_reference_code(pd) && is_constant(b.graph().node(second.node_id))) {
    dnnl::binary::primitive_desc full = make(b.desc(src0), plain_desc(out));
    if (!on_reference_code(full)) {
      src1 = b.broadcast_constant(second, out, node.name);
      pd = full;
    }
  }
  // oneDNN's jit binary broadcasts a per-channel operand over channel blocks
  // of its vector width only: with the 8-channel blocks a convolution picks
  // for channel counts that are not multiples of 16 (regnet's 48, 104, 208,
  // 440) on AVX-512, it falls back to its reference code (0.85 ms instead
  // of 10 us for a squeeze-excitation scale of [1,440,7,7]). Channels-last
  // takes the jit path for any channel count; the reorder costs microseconds.
  if (bd != out && out.size() >= 3 && out.size() <= 5 && on_reference_code(pd)) {
    memory::desc channels_last(out, memory::data_type::f32,
                               out.size() == 3   ? memory::format_tag::acb
                               : out.size() == 4 ? memory::format_tag::acdb
                                                 : memory::format_tag::acdeb);
    dnnl::binary::primitive_desc alternative = make(channels_last, b.desc(src1));
    if (!on_reference_code(alternative)) {
      src0 = b.as_desc(src0, channels_last, node.name);
      pd = alternative;
    }
  }
  int dst = b.add_slot(pd.dst_desc());
  b.add_step(dnnl::binary(pd), pd, {{DNNL_ARG_SRC_0, src0}, {DNNL_ARG_SRC_1, src1}, {DNNL_ARG_DST, dst}}, node.name);
  return dst;
}

int emit_relu_mask(Builder& b, uint32_t id) {
  const ir::Node& node = b.graph().node(id);
  if (b.output_entries()[b.graph().entry_id(id, 0)])
    fail(ErrorKind::unsupported, "dnnl backend: ", node.describe(),
         ": a Relu gradient's mask is read outside the subgraph (dnnl writes no boolean values)");
  for (uint32_t consumer : b.graph().consumers(id))
    if (b.graph().node(consumer).op() != OpId::Where)
      fail(ErrorKind::unsupported, "dnnl backend: ", node.describe(), ": a Relu gradient's mask read by ",
           b.graph().node(consumer).describe());
  return -1;  // never written: each Where reads x (emit_relu_gradient)
}

namespace {

// oneDNN's eltwise backward of `alg`: the gradient of x from d_y, both in
// x's layout (or d_y's, in_blocked_layout_of).
int eltwise_gradient(Builder& b, algorithm alg, Entry x, Entry d_y, const std::string& label) {
  const int gradient = b.dense(b.slot_of(d_y), label);
  const int src = in_blocked_layout_of(b, b.dense(b.slot_of(x), label), gradient, label);
  const memory::desc data = b.desc(src);
  const int dy = b.as_desc(gradient, data, label);
  dnnl::eltwise_forward::primitive_desc hint(
      dnnl::eltwise_forward::desc(prop_kind::forward_training, alg, data, 0.0f, 0.0f), Builder::new_attr(), b.engine());
  dnnl::eltwise_backward::primitive_desc pd(dnnl::eltwise_backward::desc(alg, data, data, 0.0f, 0.0f),
                                            Builder::new_attr(), b.engine(), hint);
  const int dx = b.add_slot(pd.diff_src_desc());
  b.add_step(dnnl::eltwise_backward(pd), pd, {{DNNL_ARG_SRC, src}, {DNNL_ARG_DIFF_DST, dy}, {DNNL_ARG_DIFF_SRC, dx}},
             label);
  return dx;
}

}  // namespace

int emit_relu_gradient(Builder& b, const ir::Node& node) {
  const ir::Node& mask = b.graph().node(b.input(node, 0).node_id);
  if (mask.op() != OpId::Greater)
    fail(ErrorKind::unsupported, "dnnl backend: ", node.describe(), ": its condition is not a Greater in the subgraph");
  return eltwise_gradient(b, algorithm::eltwise_relu, b.input(mask, 0), b.input(node, 1), node.name);
}

int emit_gelu_gradient(Builder& b, const GeluGradient& gradient) {
  return eltwise_gradient(b, algorithm::eltwise_gelu_erf, b.graph().entry_of(gradient.x),
                          b.graph().entry_of(gradient.dy), gradient.product->name);
}

int emit_sum(Builder& b, const ir::Node& node) {
  const int src0 = b.dense(b.slot_of(b.input(node, 0)), node.name);
  const memory::desc like = b.desc(src0);
  const int src1 = b.operand_like(b.input(node, 1), like, node.name);
  dnnl::binary::primitive_desc pd(dnnl::binary::desc(algorithm::binary_add, like, b.desc(src1), like),
                                  Builder::new_attr(), b.engine());
  const int dst = b.add_slot(pd.dst_desc());
  b.add_step(dnnl::binary(pd), pd, {{DNNL_ARG_SRC_0, src0}, {DNNL_ARG_SRC_1, src1}, {DNNL_ARG_DST, dst}}, node.name);
  return dst;
}

}  // namespace graft::dnnl_backend
