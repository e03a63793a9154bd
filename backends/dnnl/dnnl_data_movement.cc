// Data movement: Reshape, Flatten, Transpose, Slice, Split and Gather. All
// are views: another descriptor over the bytes of their input (a Transpose
// a strided view, a Reshape of one a strided view where its dimensions
// allow, a Slice, Split or Gather an offset one), so no data moves until a
// consumer needs another layout; a consumer that cannot read a view gets a
// plain copy (Builder::dense). Concat is in dnnl_concat.cc.
#include <algorithm>
#include <optional>

#include "dnnl_emitters.h"

namespace graft::dnnl_backend {

using dnnl::memory;

// A Reshape of a plain or strided layout is a view when its dimensions can
// be split and merged in place (attention's heads: a slice of the fused
// q/k/v projection split into [heads, head size]; the context merged back
// once its product wrote it transposed); otherwise it reads a plain copy.
int emit_reshape(Builder& b, const ir::Node& node) {
  int src = b.slot_of(b.input(node, 0));
  const Dims out = dims_of(node.output_types[0]);
  if (is_unblocked(b.desc(src))) {
    const memory::desc& from = b.desc(src);
    if (std::optional<Dims> strides = reshaped_strides(from.dims(), strides_of(from), out))
      return b.view(src, strided_desc(out, *strides));
  }
  return b.view(b.as_plain(src, node.name), plain_desc(out));
}

// A Transpose is a strided view: no data moves until a consumer needs another layout.
int emit_transpose(Builder& b, const ir::Node& node) {
  int src = b.slot_of(b.input(node, 0));
  if (!is_unblocked(b.desc(src))) src = b.as_plain(src, node.name);
  const memory::desc& from = b.desc(src);
  Dims d = from.dims();
  Dims st = strides_of(from);
  std::vector<int64_t> perm(d.size());
  for (size_t i = 0; i < perm.size(); ++i) perm[i] = static_cast<int64_t>(perm.size() - 1 - i);
  perm = node.attributes.get_ints("perm", perm);
  Dims out_dims, out_strides;
  for (int64_t p : perm) {
    out_dims.push_back(d[static_cast<size_t>(p)]);
    out_strides.push_back(st[static_cast<size_t>(p)]);
  }
  return b.view(src, strided_desc(out_dims, out_strides));
}

// A unit-step Slice is a view of part of a plain buffer (a descriptor with an offset).
int emit_slice(Builder& b, const ir::Node& node) {
  int src = b.as_plain(b.slot_of(b.input(node, 0)), node.name);
  Dims x = b.desc(src).dims();
  Dims out = dims_of(node.output_types[0]);
  std::vector<int64_t> starts, axes;
  if (node.opset_version < 10) {
    starts = node.attributes.get_ints("starts");
    axes = node.attributes.get_ints("axes", {});
  } else {
    starts = b.graph().node(b.input(node, 1).node_id).constant_value.to_int64_vector();
    if (b.has_input(node, 3)) axes = b.graph().node(b.input(node, 3).node_id).constant_value.to_int64_vector();
  }
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  Dims offsets(x.size(), 0);
  for (size_t i = 0; i < axes.size(); ++i) {
    int64_t axis = axes[i] < 0 ? axes[i] + static_cast<int64_t>(x.size()) : axes[i];
    int64_t extent = x[static_cast<size_t>(axis)];
    int64_t start = starts[i] < 0 ? starts[i] + extent : starts[i];
    offsets[static_cast<size_t>(axis)] = std::clamp<int64_t>(start, 0, extent);
  }
  return b.view(src, b.desc(src).submemory_desc(out, offsets));
}

// Split: each output is an offset view of the plain input.
int emit_split(Builder& b, uint32_t id) {
  const ir::Node& node = b.graph().node(id);
  int src = b.as_plain(b.slot_of(b.input(node, 0)), node.name);
  Dims x = b.desc(src).dims();
  int64_t axis = node.attributes.get_int("axis", 0);
  if (axis < 0) axis += static_cast<int64_t>(x.size());
  Dims offsets(x.size(), 0);
  int first = -1;
  for (int k = 0; k < node.num_outputs(); ++k) {
    Dims out = dims_of(node.output_types[k]);
    int v = b.view(src, b.desc(src).submemory_desc(out, offsets));
    offsets[static_cast<size_t>(axis)] += out[static_cast<size_t>(axis)];
    if (k == 0)
      first = v;
    else
      b.set_slot(id, static_cast<uint32_t>(k), v);
  }
  return first;
}

// Gather of one constant index: a view of that plane (the axis dropped for a scalar index).
int emit_gather(Builder& b, const ir::Node& node) {
  int src = b.as_plain(b.slot_of(b.input(node, 0)), node.name);
  const memory::desc& from = b.desc(src);
  Dims x = from.dims();
  Dims st = strides_of(from);
  const Tensor& indices = b.graph().node(b.input(node, 1).node_id).constant_value;
  int64_t axis = node.attributes.get_int("axis", 0);
  if (axis < 0) axis += static_cast<int64_t>(x.size());
  int64_t index = indices.value_as_int64(0);
  if (index < 0) index += x[static_cast<size_t>(axis)];
  if (index < 0 || index >= x[static_cast<size_t>(axis)])
    fail(ErrorKind::invalid_model, "dnnl backend: ", node.describe(), ": index ", indices.value_as_int64(0),
         " is out of range for extent ", x[static_cast<size_t>(axis)]);
  Dims dims, strides;
  for (size_t d = 0; d < x.size(); ++d) {
    if (static_cast<int64_t>(d) == axis && indices.rank() == 0) continue;
    dims.push_back(static_cast<int64_t>(d) == axis ? 1 : x[d]);
    strides.push_back(st[d]);
  }
  if (dims.empty()) {
    dims = {1};
    strides = {1};
  }
  memory::desc md = strided_desc(dims, strides);
  md.data.offset0 = from.data.offset0 + index * st[static_cast<size_t>(axis)];
  return b.view(src, md);
}

}  // namespace graft::dnnl_backend
