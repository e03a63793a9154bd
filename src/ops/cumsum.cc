// CumSum: running sums along an axis (given as a scalar input), inclusive or
// exclusive (each output excludes its own element), forward or reversed.
// Sums accumulate in the input type (float for float16/bfloat16).
#include "data_movement.h"
#include "graft/core/parallel.h"
#include "graft/ops/gradient.h"
#include "graft/ops/infer_util.h"

namespace graft::ops {
namespace {

void cumsum_infer(InferContext& ctx) {
  const ir::ValueType& axis = ctx.input_type(1);
  if (axis.dtype != DType::int32 && axis.dtype != DType::int64 && axis.dtype != DType::undefined)
    ctx.fail("axis must be int32 or int64, got ", axis.to_string());
  infer_same_as_input(ctx);
}

void cumsum_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& axis_tensor = ctx.input(1);
  if (axis_tensor.numel() != 1 || axis_tensor.rank() > 1)
    ctx.fail("axis must be a scalar, got ", axis_tensor.type_string());
  if (x.rank() == 0) ctx.fail("input must have rank >= 1");
  const int64_t axis = checked_axis(ctx, read_indices(ctx, axis_tensor, "axis")[0], x.rank());
  const bool exclusive = ctx.attrs().get_int("exclusive", 0) != 0;
  const bool reverse = ctx.attrs().get_int("reverse", 0) != 0;
  const int64_t n = x.dim(axis);
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x.dim(d);
  for (int64_t d = axis + 1; d < x.rank(); ++d) inner *= x.dim(d);
  Tensor& y = ctx.allocate_output_in_place(0, x.dtype(), x.shape(), 0);
  visit_numeric_dtype(x.dtype(), "CumSum", [&]<typename T>() {
    using C = compute_t<T>;
    const T* in = x.data<T>();
    T* out = y.data<T>();
    parallel_for(outer * inner, std::max<int64_t>(1, 4096 / std::max<int64_t>(n, 1)), [&](int64_t begin, int64_t end) {
      for (int64_t w = begin; w < end; ++w) {
        const int64_t base = (w / inner) * n * inner + w % inner;
        C sum = C(0);
        for (int64_t k = 0; k < n; ++k) {
          const int64_t j = reverse ? n - 1 - k : k;
          const C v = static_cast<C>(in[base + j * inner]);  // read before a possible in-place write
          if (exclusive) {
            out[base + j * inner] = static_cast<T>(sum);
            sum = static_cast<C>(sum + v);
          } else {
            sum = static_cast<C>(sum + v);
            out[base + j * inner] = static_cast<T>(sum);
          }
        }
      }
    });
  });
}

}  // namespace

GRAFT_REGISTER_OP("", "CumSum", cumsum_infer, cumsum_kernel);

// Gradient builder (graft/ops/gradient.h): each input element reaches the
// outputs after it (before it, reversed), so d_x is the cumulative sum of d_y
// in the other direction, exclusive when the forward is.
namespace {

void cumsum_gradient(GradientContext& g) {
  g.set_input_gradient(0, g.add(ir::OpId::CumSum, {g.output_gradient(0), g.input(1)},
                                {{"exclusive", g.attrs().get_int("exclusive", 0)},
                                 {"reverse", int64_t{g.attrs().get_int("reverse", 0) == 0}}}));
}

}  // namespace

GRAFT_REGISTER_GRADIENT(CumSum, cumsum_gradient);

}  // namespace graft::ops
