// Post-op fusion: a group's post-ops attached to its anchor's primitive
// (a convolution or deconvolution; matmuls attach theirs in dnnl_matmul.cc).
//
// Eltwise post-ops go in as they are. A sum post-op (a residual Add) writes
// into the residual's buffer when no one reads the residual afterwards;
// otherwise the residual is first copied into a buffer in the layout the
// anchor picks on its own. A binary post-op reads its operand in that layout
// when the operand has the full output shape, and the anchor then writes
// that layout too.
// When the post-ops would send the anchor to oneDNN's reference code where
// the bare primitive has jit code, the chain is cut before a binary post-op
// and the rest runs as separate eltwise and binary primitives.
#include <algorithm>

#include "dnnl_emitters.h"

namespace graft::dnnl_backend {
namespace {

using dnnl::memory;
using ir::Entry;

// The residual's buffer may take the result when nothing reads the value after this group.
bool can_write_in_place(const Builder& b, Entry residual, int slot, int anchor_input_slot, const Group& g) {
  const Slot& s = b.slot(slot);
  if (s.kind != SlotKind::arena || s.root >= 0 || s.has_views || slot == anchor_input_slot) return false;
  if (b.is_output(residual)) return false;
  for (uint32_t c : b.graph().consumers(residual.node_id)) {
    if (std::find(g.members.begin(), g.members.end(), c) != g.members.end()) continue;
    if (!b.emitted(c)) return false;
  }
  return !b.holds_other_value(slot, residual);
}

// The post-ops of the group's first `count`, in the primitive's attributes:
// post-ops into `ops`; binary operands into `binary_args`; the in-place sum
// target into `sum_slot`.
// A residual that cannot take the result in place is first copied into a
// buffer of `preferred_dst` (the layout the anchor picks on its own).
// A full-shape binary operand (a residual that cannot be a sum: the sum
// must come first) is read in `preferred_dst`'s layout and `dst_preferred`
// set, so that the anchor writes that layout too: given a binary operand
// in one layout and a destination left to it, oneDNN's convolutions fall
// back to a gemm on plain layouts (20x slower on efficientnet_v2's fused
// MBConv blocks, conv -> SiLU -> + input).
void build_post_ops(Builder& b, const Group& g, size_t count, const Dims& dst_dims, dnnl::post_ops& ops,
                    std::vector<std::pair<int, int>>& binary_args, int& sum_slot, int anchor_input_slot,
                    const memory::desc& preferred_dst, const std::string& label, bool& dst_preferred) {
  int index = 0;
  for (size_t k = 0; k < count; ++k) {
    const PostOp& p = g.post_ops[k];
    switch (p.kind) {
      case PostOp::Kind::fold_batch_norm:
        continue;
      case PostOp::Kind::eltwise:
        ops.append_eltwise(1.0f, p.alg, p.alpha, p.beta);
        break;
      case PostOp::Kind::sum: {
        int other = b.slot_of(p.other);
        if (index == 0 && sum_slot == -1 && can_write_in_place(b, p.other, other, anchor_input_slot, g)) {
          ops.append_sum(1.0f);
          sum_slot = other;
          b.forget(p.other);  // dead from here on
          break;
        }
        if (index == 0 && sum_slot == -1 && preferred_dst.dims() == dst_dims) {
          ops.append_sum(1.0f);
          sum_slot = b.add_slot(preferred_dst);
          b.add_reorder(other, sum_slot, label);
          break;
        }
        [[fallthrough]];
      }
      case PostOp::Kind::binary: {
        int other = b.dense(b.slot_of(p.other), label);
        Dims od = expand_rank(b.dims(p.other), dst_dims.size());
        int src1;
        if (b.desc(other).dims() == od && od == dst_dims) {
          src1 = other;
          if (preferred_dst.dims() == dst_dims && sum_slot == -1) {
            src1 = b.as_desc(other, preferred_dst, label);
            dst_preferred = true;
          }
        } else {
          src1 = b.view(b.as_plain(other, label), plain_desc(od));
        }
        ops.append_binary(p.alg, b.desc(src1));
        binary_args.push_back({DNNL_ARG_ATTR_MULTIPLE_POST_OP(index) | DNNL_ARG_SRC_1, src1});
        break;
      }
    }
    ++index;
  }
}

// How many of the group's post-ops go into the anchor's primitive: all,
// unless oneDNN then has only its reference code where the bare primitive
// has jit code. oneDNN 2.6's convolutions have no jit code for a binary
// post-op whose operand has the full output shape (a ConvGRU's gates,
// sigmoid(conv(x)) * h): RAFT's update block ran 100 times slower. The
// chain is then cut before its last binary post-op, or an earlier one,
// whichever keeps jit code, and the rest runs as separate primitives
// (apply_post_ops). The probe uses the operands' descriptors only.
template <typename Primitive, typename Create>
size_t post_ops_with_jit_code(const Builder& b, const Group& g, const Dims& dst_dims, const memory::desc& src_any,
                              const memory::desc& preferred_dst,
                              const typename Primitive::primitive_desc& without_post_ops, Create& create) {
  const size_t all = g.post_ops.size();
  if (on_reference_code(without_post_ops)) return all;
  auto probe = [&](size_t count) {
    dnnl::post_ops ops;
    bool dst_preferred = false;
    for (size_t k = 0; k < count; ++k) {
      const PostOp& p = g.post_ops[k];
      if (p.kind == PostOp::Kind::fold_batch_norm) continue;
      if (p.kind == PostOp::Kind::eltwise) {
        ops.append_eltwise(1.0f, p.alg, p.alpha, p.beta);
        continue;
      }
      if (p.kind == PostOp::Kind::sum && k == 0) {
        ops.append_sum(1.0f);
        continue;
      }
      // As build_post_ops: an operand of the output's shape in the
      // layout the bare primitive prefers, which the output then takes.
      Dims od = expand_rank(b.dims(p.other), dst_dims.size());
      const bool full = od == dst_dims && preferred_dst.dims() == dst_dims;
      ops.append_binary(p.alg, full ? preferred_dst : plain_desc(od));
      dst_preferred = dst_preferred || full;
    }
    dnnl::primitive_attr attr = Builder::new_attr();
    attr.set_post_ops(ops);
    try {
      return !on_reference_code(create(src_any, dst_preferred ? preferred_dst : any_desc(dst_dims), attr));
    } catch (const dnnl::error&) {
      return false;
    }
  };
  if (probe(all)) return all;
  for (size_t cut = all; cut-- > 0;) {
    const PostOp::Kind kind = g.post_ops[cut].kind;
    if ((kind == PostOp::Kind::binary || (kind == PostOp::Kind::sum && cut > 0)) && probe(cut)) return cut;
  }
  return all;
}

}  // namespace

template <typename Primitive>
int finish_anchor(Builder& b, const Group& g, const std::string& label, const Dims& dst_dims, int src_slot,
                  const MakeDesc<Primitive>& make_desc, typename Primitive::primitive_desc& pd, size_t& fused,
                  const std::function<bool()>& fall_back, const AnchorQuantization* quantization) {
  using PrimitiveDesc = typename Primitive::primitive_desc;
  // Every attribute handed here is a fresh handle: configuring it changes no other.
  auto create = [&](const memory::desc& src, const memory::desc& dst, dnnl::primitive_attr attr) {
    if (quantization) quantization->configure(attr);
    try {
      return PrimitiveDesc(make_desc(src, dst), attr, b.engine());
    } catch (const dnnl::error&) {
      if (!fall_back || !fall_back()) throw;
      return PrimitiveDesc(make_desc(src, dst), attr, b.engine());
    }
  };
  dnnl::post_ops ops;
  std::vector<std::pair<int, int>> binary_args;
  int sum_slot = -1;
  memory::desc src_any = any_desc(b.desc(src_slot).dims());
  PrimitiveDesc without_post_ops = create(src_any, any_desc(dst_dims), Builder::new_attr());
  memory::desc preferred_dst = without_post_ops.dst_desc();
  bool dst_preferred = false;
  fused = post_ops_with_jit_code<Primitive>(b, g, dst_dims, src_any, preferred_dst, without_post_ops, create);
  build_post_ops(b, g, fused, dst_dims, ops, binary_args, sum_slot, src_slot, preferred_dst, label, dst_preferred);
  dnnl::primitive_attr attr = Builder::new_attr();
  attr.set_post_ops(ops);
  memory::desc dst_md = sum_slot >= 0 ? b.desc(sum_slot) : dst_preferred ? preferred_dst : any_desc(dst_dims);
  pd = create(src_any, dst_md, attr);
  int src = quantization ? quantization->source(pd.src_desc()) : b.as_desc(src_slot, pd.src_desc(), label);
  int dst = sum_slot >= 0 ? sum_slot : b.add_slot(pd.dst_desc());
  std::vector<std::pair<int, int>> args = {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}};
  for (auto& a : binary_args) args.push_back(a);
  if (sum_slot >= 0) b.forget_conversions(sum_slot);  // its old value is gone
  b.add_step(Primitive(pd), pd, std::move(args), label);
  return dst;
}

template int finish_anchor<dnnl::convolution_forward>(Builder&, const Group&, const std::string&, const Dims&, int,
                                                      const MakeDesc<dnnl::convolution_forward>&,
                                                      dnnl::convolution_forward::primitive_desc&, size_t&,
                                                      const std::function<bool()>&, const AnchorQuantization*);
template int finish_anchor<dnnl::deconvolution_forward>(Builder&, const Group&, const std::string&, const Dims&, int,
                                                        const MakeDesc<dnnl::deconvolution_forward>&,
                                                        dnnl::deconvolution_forward::primitive_desc&, size_t&,
                                                        const std::function<bool()>&, const AnchorQuantization*);

int apply_post_ops(Builder& b, const Group& g, size_t first, int src, const std::string& label) {
  for (size_t k = first; k < g.post_ops.size(); ++k) {
    const PostOp& p = g.post_ops[k];
    if (p.kind == PostOp::Kind::fold_batch_norm) continue;
    if (p.kind == PostOp::Kind::eltwise) {
      src = emit_eltwise(b, *p.node, {p}, src);
      continue;
    }
    // binary, or a sum that was not the first post-op: an elementwise add.
    src = b.dense(src, label);
    const memory::desc d0 = b.desc(src);  // a copy: adding slots moves them
    int src1 = b.operand_like(p.other, d0, label);
    dnnl::binary::primitive_desc pd(dnnl::binary::desc(p.alg, d0, b.desc(src1), d0), Builder::new_attr(), b.engine());
    int dst = b.add_slot(pd.dst_desc());
    b.add_step(dnnl::binary(pd), pd, {{DNNL_ARG_SRC_0, src}, {DNNL_ARG_SRC_1, src1}, {DNNL_ARG_DST, dst}}, label);
    src = dst;
  }
  return src;
}

}  // namespace graft::dnnl_backend
