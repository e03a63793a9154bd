// Ops that compute shapes or make tensors from shapes: Shape, Size,
// ConstantOfShape, Range and EyeLike.
#include <cmath>
#include <cstring>
#include <limits>

#include "data_movement.h"
#include "graft/ops/infer_util.h"

namespace graft::ops {
namespace {

// ---- Shape / Size -----------------------------------------------------------

// [start, end) of the dims Shape returns (opset 15 start/end, clamped).
template <typename Context>
std::pair<int64_t, int64_t> shape_range(const Context& ctx, int64_t rank) {
  int64_t start = 0, end = rank;
  if (ctx.opset() >= 15) {
    start = ctx.attrs().get_int("start", 0);
    end = ctx.attrs().get_int("end", rank);
  }
  if (start < 0) start += rank;
  if (end < 0) end += rank;
  start = std::clamp<int64_t>(start, 0, rank);
  end = std::clamp<int64_t>(end, 0, rank);
  return {start, std::max(start, end)};
}

void shape_infer(InferContext& ctx) {
  const ir::ValueType& x = ctx.input_type(0);
  if (!x.has_rank) {
    ctx.set_output(0, ranked_type(DType::int64, unknown_dims(1)));
    return;
  }
  auto [start, end] = shape_range(ctx, static_cast<int64_t>(x.dims.size()));
  ctx.set_output(0, ir::ValueType::of(DType::int64, {end - start}));
}

void shape_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  auto [start, end] = shape_range(ctx, x.rank());
  Tensor& y = ctx.allocate_output(0, DType::int64, {end - start});
  int64_t* out = y.data<int64_t>();
  for (int64_t d = start; d < end; ++d) out[d - start] = x.dim(d);
}

void size_infer(InferContext& ctx) { ctx.set_output(0, ir::ValueType::of(DType::int64, {})); }

void size_kernel(KernelContext& ctx) {
  Tensor& y = ctx.allocate_output(0, DType::int64, {});
  y.data<int64_t>()[0] = ctx.input(0).numel();
}

// ---- ConstantOfShape --------------------------------------------------------

// The fill value: attribute `value` (a one-element tensor), float32 0 if absent.
template <typename Context>
Tensor fill_value(const Context& ctx) {
  if (!ctx.attrs().has("value")) return Tensor::scalar(0.0f);
  const Tensor& v = ctx.attrs().get_tensor("value");
  if (v.numel() != 1) ctx.fail("attribute 'value' must hold one element, got ", v.type_string());
  return v;
}

void constant_of_shape_infer(InferContext& ctx) {
  const DType dtype = fill_value(ctx).dtype();
  if (auto shape = constant_input_ints(ctx, 0)) {
    for (int64_t e : *shape)
      if (e < 0) ctx.fail("shape has a negative entry ", e);
    ctx.set_output(0, ir::ValueType::of(dtype, *shape));
  } else if (auto length = known_length(ctx, 0)) {
    ctx.set_output(0, ranked_type(dtype, unknown_dims(static_cast<size_t>(*length))));
  } else {
    set_output_dtype_only(ctx, 0, dtype);
  }
}

void constant_of_shape_kernel(KernelContext& ctx) {
  Tensor value = fill_value(ctx);
  std::vector<int64_t> shape = input_ints(ctx, 0, "shape");
  for (int64_t e : shape)
    if (e < 0) ctx.fail("shape has a negative entry ", e);
  shape_numel(shape, ctx.node().describe());
  Tensor& y = ctx.allocate_output(0, value.dtype(), shape);
  visit_element_type(value.dtype(), "ConstantOfShape", [&]<typename U>() {
    U v;
    std::memcpy(&v, value.raw_data(), sizeof(U));
    std::fill_n(static_cast<U*>(y.raw_data()), y.numel(), v);
  });
}

// ---- Range ------------------------------------------------------------------

// Ranges longer than this are rejected rather than allocated.
constexpr double kMaxRangeLength = static_cast<double>(int64_t{1} << 36);

// Number of elements of [start, limit) by delta: ceil((limit - start) / delta)
// in the input's precision for floats (like numpy's arange on that dtype),
// exactly for integers.
template <typename T, typename Context>
int64_t range_length(const Context& ctx, T start, T limit, T delta) {
  using C = compute_t<T>;
  const C s = static_cast<C>(start), l = static_cast<C>(limit), d = static_cast<C>(delta);
  if (d == C(0)) ctx.fail("delta must not be 0");
  double n;
  if constexpr (std::is_floating_point_v<C>) {
    n = static_cast<double>(std::ceil(static_cast<C>((l - s) / d)));
  } else {
    const __int128 diff = static_cast<__int128>(l) - static_cast<__int128>(s);
    __int128 q = diff / d;
    if (q * d != diff && ((diff > 0) == (d > 0))) ++q;
    n = static_cast<double>(q);
  }
  if (!std::isfinite(n)) ctx.fail("the range [", s, ", ", l, ") by ", d, " is not finite");
  if (n <= 0) return 0;
  if (n > kMaxRangeLength) ctx.fail("the range [", s, ", ", l, ") by ", d, " has too many elements (", n, ")");
  return static_cast<int64_t>(n);
}

void range_infer(InferContext& ctx) {
  const DType dtype = ctx.input_type(0).dtype;
  for (size_t i = 1; i < 3; ++i)
    if (ctx.input_type(i).dtype != dtype && ctx.input_type(i).dtype != DType::undefined)
      ctx.fail("input ", i, " has dtype ", dtype_name(ctx.input_type(i).dtype), ", expected ", dtype_name(dtype));
  const Tensor* start = ctx.input_constant(0);
  const Tensor* limit = ctx.input_constant(1);
  const Tensor* delta = ctx.input_constant(2);
  if (start && limit && delta && start->numel() == 1 && limit->numel() == 1 && delta->numel() == 1 &&
      limit->dtype() == start->dtype() && delta->dtype() == start->dtype()) {
    const int64_t n = visit_numeric_dtype(start->dtype(), "Range", [&]<typename T>() {
      return range_length<T>(ctx, start->data<T>()[0], limit->data<T>()[0], delta->data<T>()[0]);
    });
    ctx.set_output(0, ir::ValueType::of(dtype, {n}));
    return;
  }
  ctx.set_output(0, ranked_type(dtype, unknown_dims(1)));
}

void range_kernel(KernelContext& ctx) {
  const Tensor& start = ctx.input(0);
  for (size_t i = 0; i < 3; ++i) {
    const Tensor& t = ctx.input(i);
    if (t.numel() != 1 || t.rank() > 1 || t.dtype() != start.dtype())
      ctx.fail("input ", i, " is ", t.type_string(), ", expected a scalar of dtype ", dtype_name(start.dtype()));
  }
  visit_numeric_dtype(start.dtype(), "Range", [&]<typename T>() {
    using C = compute_t<T>;
    const T s = start.data<T>()[0], d = ctx.input(2).data<T>()[0];
    const int64_t n = range_length<T>(ctx, s, ctx.input(1).data<T>()[0], d);
    Tensor& y = ctx.allocate_output(0, start.dtype(), {n});
    T* out = y.data<T>();
    for (int64_t i = 0; i < n; ++i)
      out[i] = static_cast<T>(static_cast<C>(static_cast<C>(s) + static_cast<C>(i) * static_cast<C>(d)));
  });
}

// ---- EyeLike ----------------------------------------------------------------

template <typename Context>
DType eye_like_dtype(const Context& ctx, DType input) {
  if (!ctx.attrs().has("dtype")) return input;
  return dtype_from_onnx(static_cast<int32_t>(ctx.attrs().get_int("dtype")));
}

void eye_like_infer(InferContext& ctx) {
  const ir::ValueType& x = ctx.input_type(0);
  if (x.has_rank && x.dims.size() != 2) ctx.fail("input must be 2-D, got ", x.to_string());
  ctx.set_output(0, ir::ValueType{eye_like_dtype(ctx, x.dtype), x.has_rank, x.dims});
}

void eye_like_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.rank() != 2) ctx.fail("input must be 2-D, got ", x.type_string());
  const DType dtype = eye_like_dtype(ctx, x.dtype());
  const int64_t k = ctx.attrs().get_int("k", 0);
  Tensor& y = ctx.allocate_output(0, dtype, x.shape());
  visit_dtype(dtype, "EyeLike", [&]<typename T>() {
    T* out = y.data<T>();
    std::memset(static_cast<void*>(out), 0, y.nbytes());
    const T one = static_cast<T>(static_cast<compute_t<T>>(1));
    for (int64_t i = 0; i < x.dim(0); ++i) {
      const int64_t j = i + k;
      if (j >= 0 && j < x.dim(1)) out[i * x.dim(1) + j] = one;
    }
  });
}

}  // namespace

GRAFT_REGISTER_OP("", "Shape", shape_infer, shape_kernel);
GRAFT_REGISTER_OP("", "Size", size_infer, size_kernel);
GRAFT_REGISTER_OP("", "ConstantOfShape", constant_of_shape_infer, constant_of_shape_kernel);
GRAFT_REGISTER_OP("", "Range", range_infer, range_kernel);
GRAFT_REGISTER_OP("", "EyeLike", eye_like_infer, eye_like_kernel);

}  // namespace graft::ops
