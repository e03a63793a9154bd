// TopK: the k largest (or smallest) elements along an axis and their indices.
// Each lane is partially sorted by value with ties broken by the lower index
// first (the ONNX reference's stable order); NaN ranks above every number.
// k is an attribute before opset 10 and an input from 10 on.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "data_movement.h"
#include "graft/core/parallel.h"
#include "graft/ops/infer_util.h"

namespace graft::ops {
namespace {

void topk_infer(InferContext& ctx) {
  const ir::ValueType& x = ctx.input_type(0);
  if (!x.has_rank) {
    set_output_dtype_only(ctx, 0, x.dtype);
    set_output_dtype_only(ctx, 1, DType::int64);
    return;
  }
  const int64_t rank = static_cast<int64_t>(x.dims.size());
  const size_t axis = static_cast<size_t>(checked_axis(ctx, ctx.attrs().get_int("axis", -1), rank));
  std::optional<int64_t> k;
  if (ctx.opset() < 10) {
    k = ctx.attrs().get_int("k");
  } else if (auto ks = constant_input_ints(ctx, 1)) {
    if (ks->size() != 1) ctx.fail("K must hold one value, got ", ks->size());
    k = (*ks)[0];
  }
  std::vector<ir::Dim> dims = x.dims;
  if (k) {
    if (*k < 0) ctx.fail("K must be non-negative, got ", *k);
    if (dims[axis].is_known() && *k > dims[axis].value)
      ctx.fail("K = ", *k, " exceeds the axis extent ", dims[axis].value);
    dims[axis] = ir::Dim::known(*k);
  } else {
    dims[axis] = ir::Dim{};
  }
  ctx.set_output(0, ranked_type(x.dtype, dims));
  ctx.set_output(1, ranked_type(DType::int64, dims));
}

void topk_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.rank() == 0) ctx.fail("input must have rank >= 1");
  const int64_t axis = checked_axis(ctx, ctx.attrs().get_int("axis", -1), x.rank());
  int64_t k;
  if (ctx.opset() < 10) {
    k = ctx.attrs().get_int("k");
  } else {
    std::vector<int64_t> ks = input_ints(ctx, 1, "K");
    if (ks.size() != 1) ctx.fail("K must hold one value, got ", ks.size());
    k = ks[0];
  }
  const int64_t n = x.dim(axis);
  if (k < 0 || k > n) ctx.fail("K = ", k, " is outside [0, ", n, "] (the axis extent)");
  const bool largest = ctx.opset() < 11 || ctx.attrs().get_int("largest", 1) != 0;
  Shape out_shape = x.shape();
  out_shape[static_cast<size_t>(axis)] = k;
  Tensor& values = ctx.allocate_output(0, x.dtype(), out_shape);
  Tensor& indices = ctx.allocate_output(1, DType::int64, out_shape);
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x.dim(d);
  for (int64_t d = axis + 1; d < x.rank(); ++d) inner *= x.dim(d);
  if (k == 0) return;
  visit_numeric_dtype(x.dtype(), "TopK", [&]<typename T>() {
    using C = compute_t<T>;
    const T* in = x.data<T>();
    T* out_values = values.data<T>();
    int64_t* out_indices = indices.data<int64_t>();
    parallel_for(outer * inner, std::max<int64_t>(1, 1024 / std::max<int64_t>(n, 1)), [&](int64_t begin, int64_t end) {
      std::vector<int64_t> order(static_cast<size_t>(n));
      std::vector<C> lane(static_cast<size_t>(n));
      for (int64_t w = begin; w < end; ++w) {
        const int64_t o = w / inner, i = w % inner;
        for (int64_t j = 0; j < n; ++j) lane[static_cast<size_t>(j)] = static_cast<C>(in[(o * n + j) * inner + i]);
        std::iota(order.begin(), order.end(), 0);
        auto before = [&](int64_t a, int64_t b) {
          const C va = lane[static_cast<size_t>(a)], vb = lane[static_cast<size_t>(b)];
          if constexpr (std::is_floating_point_v<C>) {
            const bool na = std::isnan(va), nb = std::isnan(vb);
            if (na || nb) {
              if (na && nb) return a < b;
              return largest ? na : nb;  // NaN counts as the largest value
            }
          }
          if (va != vb) return largest ? va > vb : va < vb;
          return a < b;
        };
        std::partial_sort(order.begin(), order.begin() + k, order.end(), before);
        for (int64_t j = 0; j < k; ++j) {
          const int64_t at = (o * k + j) * inner + i;
          out_values[at] = in[(o * n + order[static_cast<size_t>(j)]) * inner + i];
          out_indices[at] = order[static_cast<size_t>(j)];
        }
      }
    });
  });
}

}  // namespace

GRAFT_REGISTER_OP("", "TopK", topk_infer, topk_kernel);

}  // namespace graft::ops
