// Matrix products: MatMul and Gemm anchors with their groups' post-ops
// (Gemm's C is the first, a binary add; alpha an output scale). Operands are
// read in place as strided views where oneDNN's brgemm takes them (a
// Transpose is such a view), else copied to plain. A MatMul by a constant
// [K, N] runs on the rows flattened to 2-D, so that the weight is packed
// once into oneDNN's blocked layout. A product read only by a Transpose
// (attention's head merge) writes the transposed layout directly where the
// implementation allows.
#include <algorithm>
#include <optional>
#include <span>
#include <utility>

#include "dnnl_emitters.h"
#include "dnnl_int8.h"

namespace graft::dnnl_backend {
namespace {

using dnnl::algorithm;
using dnnl::memory;
using ir::Entry;
using ir::OpId;

// Whether every binary operand of the group's post-ops is a row vector or
// the full result, so that the product may run on rows flattened to 2-D.
bool collapsible_post_ops(const Builder& b, const Group& g, const Dims& dst_dims) {
  for (const PostOp& p : g.post_ops) {
    if (p.kind == PostOp::Kind::eltwise) continue;
    Dims od = expand_rank(b.dims(p.other), dst_dims.size());
    if (od.size() != dst_dims.size()) return false;
    bool row = product(od, 0, od.size() - 1) == 1;
    if (!row && od != dst_dims) return false;
  }
  return true;
}

// Attention's head merge: a product [batch, heads, seq, head size] whose
// only reader is a Transpose (to [batch, seq, heads, head size], then
// reshaped to [batch, seq, hidden]) may write the transposed layout
// directly: its destination is the Transpose's output, plain, read through
// the inverse permutation. The Transpose and the Reshape after it are then
// views instead of a copy. Returns that strided descriptor and the
// Transpose's output extents, or nothing when the group's result is read
// otherwise (post-ops other than eltwise would need their operands in that
// layout too).
std::optional<std::pair<memory::desc, Dims>> transposed_destination(const Builder& b, const Group& g,
                                                                    const Dims& dst_dims) {
  const std::span<const uint32_t> readers = b.graph().consumers(g.last);
  if (readers.size() != 1 || b.is_output({g.last, 0})) return std::nullopt;
  const ir::Node& reader = b.graph().node(readers[0]);
  if (reader.op() != OpId::Transpose) return std::nullopt;
  for (const PostOp& p : g.post_ops)
    if (p.kind != PostOp::Kind::eltwise) return std::nullopt;
  const Dims out = dims_of(reader.output_types[0]);
  std::vector<int64_t> perm(dst_dims.size());
  for (size_t i = 0; i < perm.size(); ++i) perm[i] = static_cast<int64_t>(perm.size() - 1 - i);
  perm = reader.attributes.get_ints("perm", perm);
  if (out.size() != dst_dims.size() || perm.size() != dst_dims.size()) return std::nullopt;
  const Dims out_strides = row_major_strides(out);
  Dims strides(dst_dims.size());
  for (size_t i = 0; i < perm.size(); ++i) strides[static_cast<size_t>(perm[i])] = out_strides[i];
  if (strides == row_major_strides(dst_dims)) return std::nullopt;  // a Transpose of size-1 axes only
  return std::make_pair(memory::desc(dst_dims, memory::data_type::f32, strides), out);
}

// A constant weight [.., K, N] stored transposed ([N, K] in memory) where
// oneDNN's jit gemm runs the product: the matmuls without brgemm (AVX2 and
// older ISAs) take a constant weight in the layout asked for, and under
// `any` they ask for plain [K, N], whose packing reads rows N floats apart.
// When that stride is a multiple of 1 KiB, the rows fall into a few cache
// sets and the packing dominates the products of up to a few hundred rows.
// On the 2-core EPYC at AVX2, 2 threads, plain -> transposed GFLOP/s
// (bench/gemm/jit_gemm_weight_layout_bench):
// 128x768x3072 101 -> 208 (BERT's FFN), 128x1024x4096 98 -> 190, 64x512x2048
// 102 -> 210, 128x768x1536 154 -> 214, 128x768x768 213 -> 222; where the
// stride is not such a multiple, transposed was up to 9% slower
// (128x768x1000 221 -> 202, the GRU's 100x500x1500 223 -> 218), and
// 1024-row products moved by under 1% either way. Single rows
// (matrix-vector products) keep [K, N], as fast or faster there. Returns
// the product on the transposed weight, or nothing where it does not apply
// or `chosen` packs the weight into a blocked layout (brgemm), or oneDNN
// would run another implementation.
std::optional<dnnl::matmul::primitive_desc> transposed_weights_product(const Builder& b, const memory::desc& a_md,
                                                                       const Dims& weight_dims,
                                                                       const memory::desc& dst_md,
                                                                       const dnnl::primitive_attr& attr,
                                                                       const dnnl::matmul::primitive_desc& chosen) {
  const size_t rank = weight_dims.size();
  const int64_t rows = dst_md.dims()[rank - 2];
  const int64_t plain_row_bytes = weight_dims[rank - 1] * static_cast<int64_t>(sizeof(float));
  if (rows == 1 || plain_row_bytes % 1024 != 0 || !is_unblocked(chosen.weights_desc())) return std::nullopt;
  Dims strides = row_major_strides(weight_dims);
  strides[rank - 1] = weight_dims[rank - 2];
  strides[rank - 2] = 1;
  const memory::desc transposed(weight_dims, memory::data_type::f32, strides);
  dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a_md, transposed, dst_md), attr, b.engine(), true);
  if (!pd || std::string(pd.impl_info_str()) != chosen.impl_info_str()) return std::nullopt;
  return pd;
}

}  // namespace

// MatMul and Gemm; Gemm's C becomes the first (binary add) post-op.
int emit_matmul(Builder& b, const Group& g, const std::string& label) {
  const ir::Node& node = b.graph().node(g.anchor);
  if (g.int8) {  // dnnl_int8.cc; else float32 on the source's values
    if (int result = emit_int8_matmul(b, g, label); result >= 0) return result;
    if (!g.int8->source->folded_nodes.empty())
      b.set_slot(g.int8->source->folded_nodes.back(), 0, dequantized_source(b, *g.int8->source, label));
  }
  bool gemm = node.op() == OpId::Gemm;
  Dims a_dims = b.dims(b.input(node, 0)), b_dims = b.dims(b.input(node, 1));
  Dims dst_dims = dims_of(node.output_types[0]);
  size_t rank = dst_dims.size();
  bool trans_a = gemm && node.attributes.get_int("transA", 0) != 0;
  bool trans_b = gemm && node.attributes.get_int("transB", 0) != 0;
  float alpha = gemm ? node.attributes.get_float("alpha", 1.0f) : 1.0f;
  float beta = gemm ? node.attributes.get_float("beta", 1.0f) : 1.0f;

  // Operands as strided views of rank `rank` (transposed: the last two dims
  // swapped). Unblocked layouts, plain or strided like a Transpose's view,
  // are read in place; blocked ones are reordered to plain first.
  auto operand = [&](Entry e, bool transposed, int& slot) {
    slot = b.slot_of(e);
    if (!is_unblocked(b.desc(slot))) slot = b.as_plain(slot, label);
    const memory::desc& from = b.desc(slot);
    Dims d = from.dims();
    Dims st = strides_of(from);
    while (d.size() < rank) {
      st.insert(st.begin(), d[0] * st[0]);
      d.insert(d.begin(), 1);
    }
    if (transposed) {
      std::swap(d[rank - 1], d[rank - 2]);
      std::swap(st[rank - 1], st[rank - 2]);
    }
    memory::desc md(d, memory::data_type::f32, st);
    slot = b.view(slot, md);
    return md;
  };
  int a_slot, b_slot;
  memory::desc a_md = operand(b.input(node, 0), trans_a, a_slot);
  Entry b_entry = b.input(node, 1);
  memory::desc b_md = operand(b_entry, trans_b, b_slot);
  const bool b_one_matrix = product(b_md.dims(), 0, rank - 2) == 1;
  bool b_packed = b.is_source(b_entry) && b_one_matrix;

  // x[..., M, K] times one [K, N]: one 2-D product of (batch * M) rows, so
  // that oneDNN packs a constant weight once into its blocked layout, and
  // reads a weight that is an input (a training step's parameter, updated
  // in place: W^T through a Transpose's strides) as it lies, where the
  // batched product would copy it to plain first.
  int dst_root = -1;
  if (b_one_matrix && rank > 2 && !gemm && is_plain(a_md) && collapsible_post_ops(b, g, dst_dims)) {
    int64_t rows = product(dst_dims, 0, rank - 1);
    int64_t k = a_md.dims()[rank - 1], n = dst_dims[rank - 1];
    a_slot = b.view(a_slot, plain_desc({rows, k}));
    const auto* st = b_md.data.format_desc.blocking.strides;
    b_md = memory::desc({k, n}, memory::data_type::f32, {st[rank - 2], st[rank - 1]});
    if (!b_packed) b_slot = b.view(b_slot, b_md);
    a_md = b.desc(a_slot);
    dst_root = b.add_slot(plain_desc(dst_dims));
    dst_dims = {rows, n};
    rank = 2;
  }
  dnnl::post_ops ops;
  std::vector<std::pair<int, int>> binary_args;
  int post_index = 0;
  if (gemm && b.has_input(node, 2)) {
    Entry c = b.input(node, 2);
    Dims cd = expand_rank(b.dims(c), 2);
    int c_slot;
    if (b.is_source(c)) {
      Weight w;
      w.sources = {b.source_of(c)};
      w.plain = w.desc = plain_desc(cd);
      w.label = node.name + ".C";
      w.identity = beta == 1.0f;
      if (!w.identity)
        w.fill = [beta](const std::vector<Tensor>& s, void* plain_out) {
          float* out = static_cast<float*>(plain_out);
          const float* src = s[0].data<float>();
          for (int64_t i = 0; i < s[0].numel(); ++i) out[i] = beta * src[i];
        };
      c_slot = b.add_weight(std::move(w));
    } else {
      c_slot = b.view(b.as_plain(b.slot_of(c), label), plain_desc(cd));
    }
    ops.append_binary(algorithm::binary_add, b.desc(c_slot));
    binary_args.push_back({DNNL_ARG_ATTR_MULTIPLE_POST_OP(post_index) | DNNL_ARG_SRC_1, c_slot});
    ++post_index;
  }
  // Post-ops of the group after C. Sums become binary adds here (matmul's dst is plain).
  for (const PostOp& p : g.post_ops) {
    if (p.kind == PostOp::Kind::eltwise) {
      ops.append_eltwise(1.0f, p.alg, p.alpha, p.beta);
    } else if (p.expand) {
      int src1 = b.broadcast_constant(p.other, dst_dims, label);
      ops.append_binary(p.alg, b.desc(src1));
      binary_args.push_back({DNNL_ARG_ATTR_MULTIPLE_POST_OP(post_index) | DNNL_ARG_SRC_1, src1});
    } else {
      int other = b.slot_of(p.other);
      Dims od = expand_rank(b.dims(p.other), std::max(rank, b.dims(p.other).size()));
      if (od.size() > rank) od = {product(od, 0, od.size() - 1) == 1 ? 1 : dst_dims[0], od.back()};
      int src1 = b.view(b.as_plain(other, label), plain_desc(od));
      ops.append_binary(p.alg, b.desc(src1));
      binary_args.push_back({DNNL_ARG_ATTR_MULTIPLE_POST_OP(post_index) | DNNL_ARG_SRC_1, src1});
    }
    ++post_index;
  }
  dnnl::primitive_attr attr = Builder::new_attr();
  attr.set_post_ops(ops);
  if (alpha != 1.0f) attr.set_output_scales(0, {alpha});
  memory::desc dst_md = plain_desc(dst_dims);
  memory::desc b_query = b_packed ? any_desc(b_md.dims()) : b_md;
  dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a_md, b_query, dst_md), attr, b.engine());
  memory::desc a_used = a_md, b_used = b_query;  // the operand descriptors `pd` was made with
  if (b_packed)
    if (auto transposed = transposed_weights_product(b, a_md, b_md.dims(), dst_md, attr, pd)) {
      pd = *transposed;
      b_used = pd.weights_desc();
    }
  // oneDNN's brgemm matmul reads batched operands only in plain layouts;
  // strided views (attention's Q, K and V, transposed heads) send it to the
  // jit gemm fallback, which generates its kernels on first use (about 20 ms
  // once per process, all of it in the time to first inference). Copying
  // such an activation to plain costs microseconds per run: done whenever
  // it lets brgemm take the product.
  if (rank > 2 && std::string(pd.impl_info_str()).rfind("brg", 0) != 0) {
    bool a_copy = !is_plain(a_md), b_copy = !b_packed && !b.is_source(b_entry) && !is_plain(b_md);
    memory::desc a_plain = a_copy ? plain_desc(a_md.dims()) : a_md;
    memory::desc b_plain = b_copy ? plain_desc(b_md.dims()) : b_query;
    if (a_copy || b_copy) {
      dnnl::matmul::primitive_desc plain_pd(dnnl::matmul::desc(a_plain, b_plain, dst_md), attr, b.engine(), true);
      if (plain_pd && std::string(plain_pd.impl_info_str()).rfind("brg", 0) == 0) {
        if (a_copy) {
          int copy = b.add_slot(a_plain);
          b.add_reorder(a_slot, copy, label);
          a_slot = copy;
        }
        if (b_copy) {
          int copy = b.add_slot(b_plain);
          b.add_reorder(b_slot, copy, label);
          b_slot = copy;
        }
        pd = plain_pd;
        a_used = a_plain;
        b_used = b_plain;
      }
    }
  }
  // The head merge written in place, where oneDNN runs the strided
  // destination with the implementation it picked for the plain one (on
  // AVX2 the jit gemm takes both; on AVX-512 brgemm takes only the plain
  // one, and the jit gemm's first-use kernel generation would cost more
  // than the copy saves).
  int transposed_root = -1;
  if (rank > 2 && dst_root < 0)
    if (auto transposed = transposed_destination(b, g, dst_dims)) {
      dnnl::matmul::primitive_desc strided_pd(dnnl::matmul::desc(a_used, b_used, transposed->first), attr, b.engine(),
                                              true);
      if (strided_pd && std::string(strided_pd.impl_info_str()) == pd.impl_info_str() &&
          !on_reference_code(strided_pd)) {
        pd = strided_pd;
        transposed_root = b.add_slot(plain_desc(transposed->second));
      }
    }
  if (b_packed) {
    Weight w;
    w.sources = {b.source_of(b_entry)};
    w.plain = b_md;
    w.desc = pd.weights_desc();
    w.label = node.name + ".B";
    b_slot = b.add_weight(std::move(w));
  }
  int dst = dst_root >= 0          ? b.view(dst_root, pd.dst_desc())
            : transposed_root >= 0 ? b.view(transposed_root, pd.dst_desc())
                                   : b.add_slot(pd.dst_desc());
  std::vector<std::pair<int, int>> args = {{DNNL_ARG_SRC, a_slot}, {DNNL_ARG_WEIGHTS, b_slot}, {DNNL_ARG_DST, dst}};
  for (auto& a : binary_args) args.push_back(a);
  b.add_step(dnnl::matmul(pd), pd, std::move(args), label);
  return dst_root >= 0 ? dst_root : dst;
}

}  // namespace graft::dnnl_backend
