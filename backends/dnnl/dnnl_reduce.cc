// ReduceSum on oneDNN's reduction primitive: the bias gradients of a
// backward graph (d_y summed over every axis but the features') and the sums
// autodiff makes over broadcast axes. oneDNN 2.6 has jit reduction kernels
// only for axes that are innermost in memory; others run on its reference
// code (44 ms for BERT's [128, 8, 2304] -> [2304], 10x graft's own kernel).
// So the input is first laid out with the kept axes outer and the reduced
// ones inner (one reorder, skipped when they are already innermost), and
// the reduction sums the inner block. Its output, the kept axes in their
// order, is the node's output viewed with or without the reduced ones.
// dnnl_support.cc takes constant axes only; a sum over leading axes only
// runs on the reference kernel inside the program instead, which streams
// the tensor once (sums_leading_axes_only).
#include "dnnl_emitters.h"

namespace graft::dnnl_backend {
namespace {

// The node's axes (constant), non-negative; every axis when it names none.
std::vector<int64_t> reduced_axes(const ir::Node& node, size_t rank) {
  std::vector<int64_t> axes;
  if (node.opset_version >= 13) {
    if (node.inputs.size() > 1 && node.inputs[1]) axes = node.inputs[1].node->constant_value.to_int64_vector();
  } else {
    axes = node.attributes.get_ints("axes", {});
  }
  if (axes.empty())
    for (size_t d = 0; d < rank; ++d) axes.push_back(static_cast<int64_t>(d));
  for (int64_t& a : axes)
    if (a < 0) a += static_cast<int64_t>(rank);
  return axes;
}

}  // namespace

int emit_reduce_sum(Builder& b, const ir::Node& node) {
  int src = b.as_plain(b.slot_of(b.input(node, 0)), node.name);
  const Dims x = b.desc(src).dims();
  std::vector<bool> reduced(x.size(), false);
  for (int64_t a : reduced_axes(node, x.size())) reduced[static_cast<size_t>(a)] = true;
  std::vector<size_t> order;  // kept axes, then reduced ones
  for (size_t d = 0; d < x.size(); ++d)
    if (!reduced[d]) order.push_back(d);
  for (size_t d = 0; d < x.size(); ++d)
    if (reduced[d]) order.push_back(d);
  Dims inner_last, summed;
  for (size_t d : order) {
    inner_last.push_back(x[d]);
    summed.push_back(reduced[d] ? 1 : x[d]);
  }
  bool already_inner = true;
  for (size_t i = 0; i < order.size(); ++i) already_inner = already_inner && (order[i] == i || x[order[i]] == 1);
  if (!already_inner) {
    const Dims packed = row_major_strides(inner_last);
    Dims strides(x.size());
    for (size_t i = 0; i < order.size(); ++i) strides[order[i]] = packed[i];
    int moved = b.add_slot(dnnl::memory::desc(x, dnnl::memory::data_type::f32, strides));
    b.add_reorder(src, moved, node.name);
    src = moved;
  }
  src = b.view(src, plain_desc(inner_last));
  dnnl::reduction::primitive_desc pd(
      dnnl::reduction::desc(dnnl::algorithm::reduction_sum, b.desc(src), plain_desc(summed), 0.0f, 0.0f),
      Builder::new_attr(), b.engine());
  int dst = b.add_slot(pd.dst_desc());
  b.add_step(dnnl::reduction(pd), pd, {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}}, node.name);
  return b.view(dst, plain_desc(dims_of(node.output_types[0])));
}

}  // namespace graft::dnnl_backend
