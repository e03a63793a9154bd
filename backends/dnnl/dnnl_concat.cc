// Concat: the inputs placed in the destination, else oneDNN's concat primitive.
//
// With a batch of 1, the channels of a channel-blocked layout (nChw8c,
// nChw16c) or of a plain one are the outermost dimension that varies: a
// concatenation along them is the inputs' bytes one after the other. So
// instead of copying, the Concat's destination is made one buffer and each
// input's buffer becomes part of it (Builder::place_in), at the byte offset
// where the destination holds that input: the convolutions, pools, ... that
// computed the inputs (already emitted) then write straight into the
// destination, and the concat costs nothing. Readers of an input other than
// the Concat read the same bytes through the same descriptor.
//
// An input is placed when
//  - the destination's layout is such a concatenation along the axis (every
//    dimension outside the axis in memory has extent 1) and the input's
//    offset along the axis is a multiple of the axis' block;
//  - its descriptor is the destination's layout for its extents (same
//    blocks and strides), dense;
//  - its bytes are an arena buffer of this program (not a module input,
//    weight or output) that holds it whole, or a run of consecutive inputs
//    together hold that buffer whole: a nested Concat's destination (the
//    inputs of densenet's concat k are those of concat k - 1 plus one), which
//    is placed as a whole;
//  - no other input is already in that buffer at another offset.
// An input in another layout that an earlier Concat copied into its
// destination is read from that copy. Inputs that are not placed are copied
// into their part of the destination (a reorder each); when no input can be
// placed, or a copy would leave the destination's block padding unwritten,
// the concat primitive runs as before, unless oneDNN would run it on its
// reference code (inputs of different layouts): then each input is
// reordered into its part of a plain destination. A placed buffer is no longer a root
// slot, so no in-place sum overwrites it later (can_write_in_place).
#include <algorithm>
#include <map>
#include <string>

#include "dnnl_emitters.h"

namespace graft::dnnl_backend {
namespace {

using dnnl::memory;

int64_t inner_block_of(const memory::desc& d, int axis) {
  const auto& blocking = d.data.format_desc.blocking;
  int64_t block = 1;
  for (int i = 0; i < blocking.inner_nblks; ++i)
    if (blocking.inner_idxs[i] == axis) block *= blocking.inner_blks[i];
  return block;
}

// Whether `d` (blocked format, no offset) spans exactly the bytes of its padded extents.
bool is_dense(const memory::desc& d) {
  if (d.data.format_kind != dnnl_blocked || d.data.offset0 != 0) return false;
  int64_t elements = 1;
  for (int i = 0; i < d.data.ndims; ++i) elements *= d.data.padded_dims[i];
  return d.get_size() == static_cast<size_t>(elements) * sizeof(float);
}

// Whether the layout `d` holds a concatenation along `axis` as consecutive
// bytes: every dimension whose stride exceeds the axis' has extent 1.
bool concatenates_along(const memory::desc& d, int axis) {
  if (!is_dense(d)) return false;
  const Dims strides = strides_of(d);
  for (int i = 0; i < d.data.ndims; ++i)
    if (i != axis && d.data.padded_dims[i] > 1 && strides[i] > strides[axis]) return false;
  return true;
}

// Whether the input layout `in` is `dst`'s layout for the input's extents:
// the same inner blocks, and the same strides over every dimension it has.
bool same_layout(const memory::desc& in, const memory::desc& dst, int axis) {
  if (!is_dense(in) || in.data.ndims != dst.data.ndims) return false;
  const auto& a = in.data.format_desc.blocking;
  const auto& b = dst.data.format_desc.blocking;
  if (a.inner_nblks != b.inner_nblks) return false;
  for (int i = 0; i < a.inner_nblks; ++i)
    if (a.inner_blks[i] != b.inner_blks[i] || a.inner_idxs[i] != b.inner_idxs[i]) return false;
  for (int i = 0; i < in.data.ndims; ++i) {
    if (i != axis && in.data.padded_dims[i] != dst.data.padded_dims[i]) return false;
    if (in.data.padded_dims[i] > 1 && a.strides[i] != b.strides[i]) return false;
  }
  return true;
}

// One input of the Concat: its slot, the root buffer holding it, where in
// that buffer, and where the destination holds it ([begin, end) in bytes).
struct Part {
  int slot = -1;
  int root = -1;
  size_t offset_in_root = 0;
  size_t begin = 0, end = 0;
  bool placed = false;
};

// The destination slot with the inputs placed in it, or -1 (nothing placed:
// the caller runs the concat primitive).
int concat_in_place(Builder& b, const ir::Node& node, int axis, const std::vector<int>& slots) {
  std::vector<memory::desc> descs;
  for (int s : slots) descs.push_back(b.desc(s));
  memory::desc dst;
  try {
    dst = dnnl::concat::primitive_desc(axis, descs, b.engine(), Builder::new_attr()).dst_desc();
  } catch (const dnnl::error&) {
    return -1;  // views the primitive cannot read: the caller copies them first
  }
  if (!concatenates_along(dst, axis)) return -1;
  const int64_t block = inner_block_of(dst, axis);
  const size_t axis_stride_bytes = static_cast<size_t>(strides_of(dst)[static_cast<size_t>(axis)]) * sizeof(float);

  // Where the destination holds each input. An input in another layout
  // that an earlier Concat copied into its destination is read from that
  // copy (densenet's first input, a pool's channels-last output, is copied
  // into the blocked buffer of its block once; the nested concats after it
  // then place that buffer whole).
  std::vector<Part> parts(slots.size());
  int64_t position = 0;
  for (size_t i = 0; i < slots.size(); ++i) {
    if (position % block != 0) return -1;
    Part& p = parts[i];
    p.slot = slots[i];
    if (!same_layout(descs[i], dst, axis))
      for (int copy : b.conversions_of(slots[i]))
        if (b.slot(copy).root >= 0 && same_layout(b.desc(copy), dst, axis)) {
          p.slot = copy;
          descs[i] = b.desc(copy);
          break;
        }
    p.begin = static_cast<size_t>(position / block) * axis_stride_bytes;
    position += descs[i].dims()[static_cast<size_t>(axis)];
    if (i > 0) parts[i - 1].end = p.begin;
    const Slot& s = b.slot(p.slot);
    p.root = s.root >= 0 ? s.root : p.slot;
    p.offset_in_root = s.byte_offset;
  }
  parts.back().end = dst.get_size();

  // Each root buffer goes where its first input lies in the destination;
  // it is placed if every input it holds lies where that puts it, and it
  // covers no other input's part.
  std::map<int, size_t> placement;  // root -> byte offset in the destination
  for (const Part& p : parts) {
    const Slot& root = b.slot(p.root);
    if (root.kind != SlotKind::arena || placement.count(p.root) || p.offset_in_root > p.begin) continue;
    placement[p.root] = p.begin - p.offset_in_root;
  }
  for (auto it = placement.begin(); it != placement.end();) {
    const auto [root, at] = *it;
    const size_t root_end = at + b.desc(root).get_size();
    bool ok = root_end <= dst.get_size();
    for (size_t i = 0; i < parts.size() && ok; ++i) {
      const Part& p = parts[i];
      const bool inside = p.root == root && p.begin == at + p.offset_in_root;
      if (inside && !same_layout(descs[i], dst, axis)) ok = false;
      if (inside && p.end - p.begin != descs[i].get_size()) ok = false;
      if (!inside && p.begin < root_end && at < p.end) ok = false;  // would overlap another input
    }
    it = ok ? std::next(it) : placement.erase(it);
  }
  if (placement.empty()) return -1;
  for (Part& p : parts) p.placed = placement.count(p.root) && p.begin == placement[p.root] + p.offset_in_root;

  // A copied input writes its elements only: the block padding at the end of
  // the destination must then come from a placed input.
  const Dims dst_dims = dst.dims();
  const Part& last = parts.back();
  if (!last.placed && dst.data.padded_dims[axis] != dst_dims[static_cast<size_t>(axis)]) return -1;

  const int result = b.add_slot(dst);
  for (const auto& [root, at] : placement) b.place_in(root, result, at);
  Dims offsets(dst_dims.size(), 0);
  for (size_t i = 0; i < parts.size(); ++i) {
    if (!parts[i].placed) {
      const memory::desc part = dst.submemory_desc(descs[i].dims(), offsets);
      const int copy = b.view(result, part);
      b.add_reorder(parts[i].slot, copy, node.name);
      b.record_conversion(parts[i].slot, copy);
    }
    offsets[static_cast<size_t>(axis)] += descs[i].dims()[static_cast<size_t>(axis)];
  }
  return result;
}

}  // namespace

int emit_concat(Builder& b, const ir::Node& node) {
  int64_t rank = static_cast<int64_t>(dims_of(node.output_types[0]).size());
  int64_t axis = node.attributes.get_int("axis");
  if (axis < 0) axis += rank;
  std::vector<int> srcs;
  for (size_t i = 0; i < node.inputs.size(); ++i) srcs.push_back(b.slot_of(b.input(node, i)));
  if (srcs.size() == 1) return srcs[0];  // a concatenation of one: the value itself
  if (int dst = concat_in_place(b, node, static_cast<int>(axis), srcs); dst >= 0) return dst;
  std::vector<memory::desc> descs;
  for (int& s : srcs) {
    s = b.dense(s, node.name);
    descs.push_back(b.desc(s));
  }
  dnnl::concat::primitive_desc pd(static_cast<int>(axis), descs, b.engine(), Builder::new_attr());
  // Inputs in different layouts (a transposed product's result beside plain
  // ones: a transformer's Q, K and V gradients) send oneDNN 2.6's concat to
  // its reference code; a jit reorder of each input into its part of a plain
  // destination does the same copy several times faster.
  if (std::string(pd.impl_info_str()).rfind("ref", 0) == 0) {
    const memory::desc plain = plain_desc(dims_of(node.output_types[0]));
    const int dst = b.add_slot(plain);
    Dims offsets(plain.dims().size(), 0);
    for (size_t i = 0; i < srcs.size(); ++i) {
      b.add_reorder(srcs[i], b.view(dst, plain.submemory_desc(descs[i].dims(), offsets)), node.name);
      offsets[static_cast<size_t>(axis)] += descs[i].dims()[static_cast<size_t>(axis)];
    }
    return dst;
  }
  int dst = b.add_slot(pd.dst_desc());
  std::vector<std::pair<int, int>> args = {{DNNL_ARG_DST, dst}};
  for (size_t i = 0; i < srcs.size(); ++i) args.push_back({DNNL_ARG_MULTIPLE_SRC + static_cast<int>(i), srcs[i]});
  b.add_step(dnnl::concat(pd), pd, std::move(args), node.name);
  return dst;
}

}  // namespace graft::dnnl_backend
