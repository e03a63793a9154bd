#include "math_common.h"

#include <algorithm>

namespace graft::ops {

std::optional<std::vector<int64_t>> constant_ints(const InferContext& ctx, size_t i) {
  if (!ctx.has_input(i)) return std::nullopt;
  const Tensor* t = ctx.input_constant(i);
  if (!t) return std::nullopt;
  if (!dtype_is_integer(t->dtype())) ctx.fail("input ", i, " must hold integers, got ", t->type_string());
  return t->to_int64_vector();
}

std::vector<ir::Dim> reduced_dims(const std::vector<ir::Dim>& input, const std::vector<int64_t>& axes, bool keepdims) {
  std::vector<ir::Dim> out;
  for (size_t d = 0; d < input.size(); ++d) {
    bool reduced = std::binary_search(axes.begin(), axes.end(), static_cast<int64_t>(d));
    if (!reduced)
      out.push_back(input[d]);
    else if (keepdims)
      out.push_back(ir::Dim::known(1));
  }
  return out;
}

std::vector<int64_t> normalize_axes(std::vector<int64_t> axes, int64_t rank, const std::string& node_description) {
  for (int64_t& a : axes) a = normalize_axis(a, rank, node_description);
  std::sort(axes.begin(), axes.end());
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end())
    fail(ErrorKind::invalid_model, node_description, ": axes contain a duplicate");
  return axes;
}

ReductionLayout make_reduction_layout(const Shape& shape, const std::vector<int64_t>& axes) {
  // Merge neighbouring dimensions of the same kind; extents of 1 are dropped.
  struct Run {
    int64_t extent;
    bool reduced;
  };
  std::vector<Run> runs;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    const bool reduced = std::binary_search(axes.begin(), axes.end(), static_cast<int64_t>(d));
    if (!runs.empty() && runs.back().reduced == reduced)
      runs.back().extent *= shape[d];
    else
      runs.push_back({shape[d], reduced});
  }
  ReductionLayout layout;
  using Kind = ReductionLayout::Kind;
  // Patterns (K kept, R reduced): [], [K], [R], [K R] are rows; [R K], [K R K] are columns.
  if (runs.empty()) return layout;
  const size_t first_reduced = runs[0].reduced ? 0 : 1;
  if (runs.size() <= 2 && !(runs.size() == 2 && runs[0].reduced)) {
    if (runs.size() == 1)
      (runs[0].reduced ? layout.reduced : layout.outer) = runs[0].extent;
    else {
      layout.outer = runs[0].extent;
      layout.reduced = runs[1].extent;
    }
    return layout;
  }
  if (runs.size() == first_reduced + 2) {
    layout.kind = Kind::columns;
    layout.outer = first_reduced == 1 ? runs[0].extent : 1;
    layout.reduced = runs[first_reduced].extent;
    layout.inner = runs[first_reduced + 1].extent;
    return layout;
  }
  // General: offset tables over the kept and the reduced runs.
  layout.kind = Kind::general;
  std::vector<int64_t> strides(runs.size());
  int64_t stride = 1;
  for (size_t i = runs.size(); i-- > 0;) {
    strides[i] = stride;
    stride *= runs[i].extent;
  }
  for (int pass = 0; pass < 2; ++pass) {
    const bool reduced = pass == 1;
    std::vector<int64_t>& offsets = reduced ? layout.reduced_offsets : layout.kept_offsets;
    offsets.assign(1, 0);
    for (size_t i = 0; i < runs.size(); ++i) {
      if (runs[i].reduced != reduced) continue;
      std::vector<int64_t> next;
      next.reserve(offsets.size() * static_cast<size_t>(runs[i].extent));
      for (int64_t base : offsets)
        for (int64_t e = 0; e < runs[i].extent; ++e) next.push_back(base + e * strides[i]);
      offsets = std::move(next);
    }
  }
  return layout;
}

}  // namespace graft::ops
