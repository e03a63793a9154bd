// ArgMax and ArgMin: the index of the largest / smallest element along an
// axis, as int64. Ties go to the first index, or to the last with
// select_last_index=1 (opset 12). NaN wins against numbers (numpy's rule).
#include <cmath>

#include "data_movement.h"
#include "graft/core/parallel.h"
#include "graft/ops/infer_util.h"

namespace graft::ops {
namespace {

void arg_reduce_infer(InferContext& ctx) {
  const ir::ValueType& x = ctx.input_type(0);
  if (!x.has_rank) {
    set_output_dtype_only(ctx, 0, DType::int64);
    return;
  }
  const int64_t rank = static_cast<int64_t>(x.dims.size());
  const size_t axis = static_cast<size_t>(checked_axis(ctx, ctx.attrs().get_int("axis", 0), rank));
  std::vector<ir::Dim> dims = x.dims;
  if (ctx.attrs().get_int("keepdims", 1) != 0)
    dims[axis] = ir::Dim::known(1);
  else
    dims.erase(dims.begin() + static_cast<std::ptrdiff_t>(axis));
  ctx.set_output(0, ranked_type(DType::int64, std::move(dims)));
}

template <bool kMax>
void arg_reduce_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.rank() == 0) ctx.fail("input must have rank >= 1");
  const int64_t axis = checked_axis(ctx, ctx.attrs().get_int("axis", 0), x.rank());
  const bool select_last = ctx.opset() >= 12 && ctx.attrs().get_int("select_last_index", 0) != 0;
  const int64_t n = x.dim(axis);
  if (n == 0) ctx.fail("cannot reduce an empty axis ", axis);
  Shape out_shape = x.shape();
  if (ctx.attrs().get_int("keepdims", 1) != 0)
    out_shape[static_cast<size_t>(axis)] = 1;
  else
    out_shape.erase(out_shape.begin() + axis);
  Tensor& y = ctx.allocate_output(0, DType::int64, out_shape);
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x.dim(d);
  for (int64_t d = axis + 1; d < x.rank(); ++d) inner *= x.dim(d);
  int64_t* out = y.data<int64_t>();
  visit_numeric_dtype(x.dtype(), kMax ? "ArgMax" : "ArgMin", [&]<typename T>() {
    using C = compute_t<T>;
    const T* in = x.data<T>();
    parallel_for(outer * inner, std::max<int64_t>(1, 4096 / n), [&](int64_t begin, int64_t end) {
      for (int64_t w = begin; w < end; ++w) {
        const int64_t o = w / inner, i = w % inner;
        const T* lane = in + o * n * inner + i;
        C best = static_cast<C>(lane[0]);
        int64_t best_index = 0;
        for (int64_t j = 1; j < n; ++j) {
          const C v = static_cast<C>(lane[j * inner]);
          bool take;
          if constexpr (std::is_floating_point_v<C>) {
            if (std::isnan(best))
              take = select_last && std::isnan(v);
            else if (std::isnan(v))
              take = true;
            else
              take = (kMax ? v > best : v < best) || (select_last && v == best);
          } else {
            take = (kMax ? v > best : v < best) || (select_last && v == best);
          }
          if (take) {
            best = v;
            best_index = j;
          }
        }
        out[w] = best_index;
      }
    });
  });
}

}  // namespace

GRAFT_REGISTER_OP("", "ArgMax", arg_reduce_infer, arg_reduce_kernel<true>);
GRAFT_REGISTER_OP("", "ArgMin", arg_reduce_infer, arg_reduce_kernel<false>);

}  // namespace graft::ops
