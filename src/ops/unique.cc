// Unique: the distinct elements (or, with `axis`, the distinct slices along
// that axis), with the index of each one's first occurrence, the inverse map
// from every input element/slice to its unique entry, and the counts.
//
// The input is viewed as [outer, n, inner] (n items along the axis; without
// an axis, the flattened input with outer = inner = 1). Item j is the
// elements x[o, j, i] in row-major (o, i) order, and items compare
// lexicographically, as numpy.unique does after moving the axis to the front.
// A stable sort of the item numbers groups equal items with the first
// occurrence leading each group; sorted=1 emits the groups in sort order,
// sorted=0 in order of first occurrence.
#include <algorithm>
#include <cstring>
#include <numeric>

#include "data_movement.h"
#include "graft/ops/infer_util.h"

namespace graft::ops {
namespace {

void unique_infer(InferContext& ctx) {
  const ir::ValueType& x = ctx.input_type(0);
  if (ctx.attrs().has("axis") && x.has_rank) {
    std::vector<ir::Dim> dims = x.dims;
    const int64_t axis = checked_axis(ctx, ctx.attrs().get_int("axis"), static_cast<int64_t>(dims.size()));
    dims[static_cast<size_t>(axis)] = ir::Dim{};
    ctx.set_output(0, ranked_type(x.dtype, std::move(dims)));
  } else if (ctx.attrs().has("axis")) {
    set_output_dtype_only(ctx, 0, x.dtype);
  } else {
    ctx.set_output(0, ranked_type(x.dtype, unknown_dims(1)));
  }
  for (size_t i = 1; i < ctx.num_outputs(); ++i) ctx.set_output(i, ranked_type(DType::int64, unknown_dims(1)));
}

void unique_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const bool has_axis = ctx.attrs().has("axis");
  const bool sorted = ctx.attrs().get_int("sorted", 1) != 0;
  int64_t outer = 1, n = x.numel(), inner = 1, axis = 0;
  if (has_axis) {
    axis = checked_axis(ctx, ctx.attrs().get_int("axis"), x.rank());
    n = x.dim(axis);
    for (int64_t d = 0; d < axis; ++d) outer *= x.dim(d);
    for (int64_t d = axis + 1; d < x.rank(); ++d) inner *= x.dim(d);
  }
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  // Comparison of items a and b: <0, 0, >0.
  auto compare_items = [&](auto less, int64_t a, int64_t b) {
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        const int64_t pa = (o * n + a) * inner + i, pb = (o * n + b) * inner + i;
        if (less(pa, pb)) return -1;
        if (less(pb, pa)) return 1;
      }
    return 0;
  };
  std::vector<int64_t> group_of_rank(static_cast<size_t>(n));  // group id of order[k]
  visit_dtype(x.dtype(), "Unique", [&]<typename T>() {
    const T* p = x.data<T>();
    auto less = [p](int64_t a, int64_t b) { return static_cast<compute_t<T>>(p[a]) < static_cast<compute_t<T>>(p[b]); };
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return compare_items(less, a, b) < 0; });
    for (size_t k = 0; k < order.size(); ++k)
      group_of_rank[k] = k == 0 ? 0 : group_of_rank[k - 1] + (compare_items(less, order[k - 1], order[k]) != 0 ? 1 : 0);
  });
  const int64_t groups = n == 0 ? 0 : group_of_rank.back() + 1;
  // First occurrence, count and inverse per group (in sort order).
  std::vector<int64_t> first(static_cast<size_t>(groups), -1), counts(static_cast<size_t>(groups), 0),
      inverse_group(static_cast<size_t>(n));
  for (size_t k = 0; k < order.size(); ++k) {
    const size_t g = static_cast<size_t>(group_of_rank[k]);
    if (first[g] < 0) first[g] = order[k];
    ++counts[g];
    inverse_group[static_cast<size_t>(order[k])] = static_cast<int64_t>(g);
  }
  // Output position of each group.
  std::vector<int64_t> output_order(static_cast<size_t>(groups));
  std::iota(output_order.begin(), output_order.end(), 0);
  if (!sorted)
    std::sort(output_order.begin(), output_order.end(),
              [&](int64_t a, int64_t b) { return first[static_cast<size_t>(a)] < first[static_cast<size_t>(b)]; });
  std::vector<int64_t> position_of_group(static_cast<size_t>(groups));
  for (int64_t k = 0; k < groups; ++k) position_of_group[static_cast<size_t>(output_order[static_cast<size_t>(k)])] = k;

  Shape y_shape{groups};
  if (has_axis) {
    y_shape = x.shape();
    y_shape[static_cast<size_t>(axis)] = groups;
  }
  Tensor& y = ctx.allocate_output(0, x.dtype(), y_shape);
  const size_t block = static_cast<size_t>(inner) * dtype_size(x.dtype());
  const char* src = static_cast<const char*>(x.raw_data());
  char* dst = static_cast<char*>(y.raw_data());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t k = 0; k < groups; ++k) {
      const int64_t item = first[static_cast<size_t>(output_order[static_cast<size_t>(k)])];
      std::memcpy(dst + (o * groups + k) * static_cast<int64_t>(block),
                  src + (o * n + item) * static_cast<int64_t>(block), block);
    }
  auto write = [&](size_t output, int64_t length, auto value_at) {
    if (ctx.num_outputs() <= output) return;
    Tensor& t = ctx.allocate_output(output, DType::int64, {length});
    for (int64_t k = 0; k < length; ++k) t.data<int64_t>()[k] = value_at(k);
  };
  write(1, groups, [&](int64_t k) { return first[static_cast<size_t>(output_order[static_cast<size_t>(k)])]; });
  write(2, n, [&](int64_t j) { return position_of_group[static_cast<size_t>(inverse_group[static_cast<size_t>(j)])]; });
  write(3, groups, [&](int64_t k) { return counts[static_cast<size_t>(output_order[static_cast<size_t>(k)])]; });
}

}  // namespace

GRAFT_REGISTER_OP("", "Unique", unique_infer, unique_kernel);

}  // namespace graft::ops
