// Compress and NonZero: ops whose output size depends on the data.
// Compress keeps the slices along `axis` (or the elements of the flattened
// input when there is no axis) whose condition entry is true; a condition
// shorter than the axis drops the rest. NonZero lists the coordinates of the
// non-zero elements, one column per element in row-major order.
#include <cstring>

#include "data_movement.h"
#include "graft/ops/infer_util.h"

namespace graft::ops {
namespace {

void compress_infer(InferContext& ctx) {
  const ir::ValueType& x = ctx.input_type(0);
  const ir::ValueType& condition = ctx.input_type(1);
  if (condition.dtype != DType::boolean && condition.dtype != DType::undefined)
    ctx.fail("condition must be bool, got ", condition.to_string());
  if (!ctx.attrs().has("axis")) {
    ctx.set_output(0, ranked_type(x.dtype, unknown_dims(1)));
    return;
  }
  if (!x.has_rank) {
    set_output_dtype_only(ctx, 0, x.dtype);
    return;
  }
  std::vector<ir::Dim> dims = x.dims;
  const int64_t axis = checked_axis(ctx, ctx.attrs().get_int("axis"), static_cast<int64_t>(dims.size()));
  dims[static_cast<size_t>(axis)] = ir::Dim{};
  ctx.set_output(0, ranked_type(x.dtype, std::move(dims)));
}

void compress_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& condition = ctx.input(1);
  if (condition.dtype() != DType::boolean || condition.rank() != 1)
    ctx.fail("condition must be a 1-D bool tensor, got ", condition.type_string());
  const bool has_axis = ctx.attrs().has("axis");
  const int64_t axis = has_axis ? checked_axis(ctx, ctx.attrs().get_int("axis"), x.rank()) : 0;
  const int64_t extent = has_axis ? x.dim(axis) : x.numel();
  std::vector<int64_t> kept;
  const bool* cond = condition.data<bool>();
  for (int64_t i = 0; i < condition.numel(); ++i) {
    if (!cond[i]) continue;
    if (i >= extent) ctx.fail("condition selects index ", i, " beyond the axis extent ", extent);
    kept.push_back(i);
  }
  int64_t outer = 1, inner = 1;
  Shape out_shape{static_cast<int64_t>(kept.size())};
  if (has_axis) {
    out_shape = x.shape();
    out_shape[static_cast<size_t>(axis)] = static_cast<int64_t>(kept.size());
    for (int64_t d = 0; d < axis; ++d) outer *= x.dim(d);
    for (int64_t d = axis + 1; d < x.rank(); ++d) inner *= x.dim(d);
  }
  Tensor& y = ctx.allocate_output(0, x.dtype(), out_shape);
  const size_t block = static_cast<size_t>(inner) * dtype_size(x.dtype());
  const char* src = static_cast<const char*>(x.raw_data());
  char* dst = static_cast<char*>(y.raw_data());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t k : kept) {
      std::memcpy(dst, src + (o * extent + k) * static_cast<int64_t>(block), block);
      dst += block;
    }
}

void nonzero_infer(InferContext& ctx) {
  const ir::ValueType& x = ctx.input_type(0);
  std::vector<ir::Dim> dims(2);
  if (x.has_rank) dims[0] = ir::Dim::known(static_cast<int64_t>(x.dims.size()));
  ctx.set_output(0, ranked_type(DType::int64, std::move(dims)));
}

void nonzero_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t rank = x.rank();
  std::vector<int64_t> positions;
  visit_dtype(x.dtype(), "NonZero", [&]<typename T>() {
    const T* p = x.data<T>();
    for (int64_t i = 0; i < x.numel(); ++i)
      if (static_cast<compute_t<T>>(p[i]) != compute_t<T>(0)) positions.push_back(i);
  });
  const int64_t count = static_cast<int64_t>(positions.size());
  Tensor& y = ctx.allocate_output(0, DType::int64, {rank, count});
  int64_t* out = y.data<int64_t>();
  for (int64_t n = 0; n < count; ++n) {
    int64_t rem = positions[static_cast<size_t>(n)];
    for (int64_t d = rank - 1; d >= 0; --d) {
      out[d * count + n] = rem % x.dim(d);
      rem /= x.dim(d);
    }
  }
}

}  // namespace

GRAFT_REGISTER_OP("", "Compress", compress_infer, compress_kernel);
GRAFT_REGISTER_OP("", "NonZero", nonzero_infer, nonzero_kernel);

}  // namespace graft::ops
