// Scatter (opset 9-10), ScatterElements and ScatterND: the output is a copy of
// the data with elements (or slices, for ScatterND) at the indexed positions
// replaced by, or combined (reduction add/mul/max/min, opsets 16 and 18) with,
// the updates. Updates are applied one by one in index order, so with
// duplicate indices and no reduction the last update wins, as in the ONNX
// reference. The copy is skipped when the data's buffer can be reused.
#include <algorithm>
#include <cstring>

#include "data_movement.h"
#include "graft/ops/infer_util.h"

namespace graft::ops {
namespace {

enum class ScatterReduction { none, add, mul, max, min };

template <typename Context>
ScatterReduction read_reduction(const Context& ctx) {
  const std::string mode = ctx.attrs().get_string("reduction", "none");
  if (mode == "none") return ScatterReduction::none;
  if (ctx.opset() >= 16 && mode == "add") return ScatterReduction::add;
  if (ctx.opset() >= 16 && mode == "mul") return ScatterReduction::mul;
  if (ctx.opset() >= 18 && mode == "max") return ScatterReduction::max;
  if (ctx.opset() >= 18 && mode == "min") return ScatterReduction::min;
  ctx.fail("reduction '", mode, "' is not valid at opset ", ctx.opset());
}

void scatter_infer(InferContext& ctx) {
  const ir::ValueType& data = ctx.input_type(0);
  const ir::ValueType& updates = ctx.input_type(2);
  if (updates.dtype != DType::undefined && data.dtype != DType::undefined && updates.dtype != data.dtype)
    ctx.fail("updates have dtype ", dtype_name(updates.dtype), ", expected ", dtype_name(data.dtype));
  read_reduction(ctx);
  infer_same_as_input(ctx);
}

// The output tensor holding a copy of the data (reusing its buffer if it dies).
Tensor& output_copy_of_data(KernelContext& ctx) {
  const Tensor& data = ctx.input(0);
  Tensor& y = ctx.allocate_output_in_place(0, data.dtype(), data.shape(), 0);
  if (y.raw_data() != data.raw_data()) parallel_copy(y.raw_data(), data.raw_data(), data.nbytes());
  return y;
}

// Calls apply(destination_offset, update_offset[, count]) for every update
// (in order); the caller combines `count` (by default 1) contiguous elements.
template <typename Apply>
void combine(KernelContext& ctx, Tensor& y, const Tensor& updates, ScatterReduction reduction, const char* what,
             const Apply& for_each_update) {
  if (reduction == ScatterReduction::none) {
    visit_element_type(y.dtype(), what, [&]<typename U>() {
      U* out = static_cast<U*>(y.raw_data());
      const U* upd = static_cast<const U*>(updates.raw_data());
      for_each_update([&](int64_t dst, int64_t src, int64_t count = 1) {
        if (count == 1)
          out[dst] = upd[src];
        else
          std::memcpy(out + dst, upd + src, static_cast<size_t>(count) * sizeof(U));
      });
    });
    return;
  }
  if (y.dtype() == DType::boolean) ctx.unsupported("reductions on bool are not supported");
  visit_numeric_dtype(y.dtype(), what, [&]<typename T>() {
    using C = compute_t<T>;
    T* out = y.data<T>();
    const T* upd = updates.data<T>();
    for_each_update([&](int64_t dst, int64_t src, int64_t count = 1) {
      for (int64_t i = 0; i < count; ++i) {
        C a = static_cast<C>(out[dst + i]), b = static_cast<C>(upd[src + i]);
        C r = reduction == ScatterReduction::add   ? static_cast<C>(a + b)
              : reduction == ScatterReduction::mul ? static_cast<C>(a * b)
              : reduction == ScatterReduction::max ? std::max(a, b)
                                                   : std::min(a, b);
        out[dst + i] = static_cast<T>(r);
      }
    });
  });
}

// ---- ScatterElements / Scatter ------------------------------------------------

void scatter_elements_kernel(KernelContext& ctx) {
  const Tensor& data = ctx.input(0);
  const Tensor& indices = ctx.input(1);
  const Tensor& updates = ctx.input(2);
  const ScatterReduction reduction = read_reduction(ctx);
  const int64_t rank = data.rank();
  if (rank == 0) ctx.fail("data must have rank >= 1");
  if (indices.dtype() != DType::int32 && indices.dtype() != DType::int64)
    ctx.fail("indices must be int32 or int64, got ", indices.type_string());
  if (indices.rank() != rank || updates.shape() != indices.shape() || updates.dtype() != data.dtype())
    ctx.fail("indices ", indices.type_string(), " and updates ", updates.type_string(),
             " must have one shape, of the rank of data ", data.type_string());
  const int64_t axis = checked_axis(ctx, ctx.attrs().get_int("axis", 0), rank);
  for (int64_t d = 0; d < rank; ++d)
    if (d != axis && indices.dim(d) > data.dim(d))
      ctx.fail("indices ", indices.type_string(), " exceed data ", data.type_string(), " in dimension ", d);
  const int64_t extent = data.dim(axis);
  Tensor& y = output_copy_of_data(ctx);
  const std::vector<int64_t> strides = shape_strides(data.shape());
  const Shape& shape = indices.shape();
  // Row by row over the indices' last dimension: a row's elements lie at
  // consecutive positions of the output, except along the axis, where each
  // element's own index places it. Indices are read and checked in place.
  const int64_t row_length = shape[static_cast<size_t>(rank - 1)];
  const int64_t rows = row_length == 0 ? 0 : indices.numel() / row_length;
  const int64_t axis_stride = strides[static_cast<size_t>(axis)];
  const int64_t element_stride = axis == rank - 1 ? 0 : 1;
  auto scatter = [&]<typename I>(const I* index) {
    combine(ctx, y, updates, reduction, "ScatterElements", [&](const auto& apply) {
      std::vector<int64_t> coordinate(static_cast<size_t>(rank), 0);  // of the row; the axis's is ignored
      for (int64_t row = 0; row < rows; ++row) {
        int64_t base = 0;
        for (int64_t d = 0; d + 1 < rank; ++d)
          if (d != axis) base += coordinate[static_cast<size_t>(d)] * strides[static_cast<size_t>(d)];
        const int64_t first = row * row_length;
        for (int64_t j = 0; j < row_length; ++j) {
          int64_t at = static_cast<int64_t>(index[first + j]);
          if (at < 0) at += extent;
          if (at < 0 || at >= extent) checked_index(ctx, static_cast<int64_t>(index[first + j]), extent, "indices");
          apply(base + at * axis_stride + j * element_stride, first + j);
        }
        for (int64_t d = rank - 2; d >= 0; --d) {
          if (++coordinate[static_cast<size_t>(d)] < shape[static_cast<size_t>(d)]) break;
          coordinate[static_cast<size_t>(d)] = 0;
        }
      }
    });
  };
  if (indices.dtype() == DType::int32)
    scatter(indices.data<int32_t>());
  else
    scatter(indices.data<int64_t>());
}

// ---- ScatterND ----------------------------------------------------------------

void scatter_nd_kernel(KernelContext& ctx) {
  const Tensor& data = ctx.input(0);
  const Tensor& indices = ctx.input(1);
  const Tensor& updates = ctx.input(2);
  const ScatterReduction reduction = read_reduction(ctx);
  if (indices.dtype() != DType::int64) ctx.fail("indices must be int64, got ", indices.type_string());
  const int64_t r = data.rank(), q = indices.rank();
  if (r < 1 || q < 1) ctx.fail("data and indices must have rank >= 1");
  const int64_t k = indices.dim(q - 1);
  if (k < 1 || k > r) ctx.fail("the last dimension of indices is ", k, ", expected 1..", r);
  Shape expected(indices.shape().begin(), indices.shape().end() - 1);
  expected.insert(expected.end(), data.shape().begin() + k, data.shape().end());
  if (updates.shape() != expected || updates.dtype() != data.dtype())
    ctx.fail("updates are ", updates.type_string(), ", expected ", dtype_name(data.dtype()), shape_to_string(expected));
  const std::vector<int64_t> strides = shape_strides(data.shape());
  int64_t slice = 1;
  for (int64_t d = k; d < r; ++d) slice *= data.dim(d);
  const int64_t tuples = indices.numel() / k;
  const int64_t* idx = indices.data<int64_t>();
  std::vector<int64_t> offsets(static_cast<size_t>(tuples));
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t offset = 0;
    for (int64_t j = 0; j < k; ++j)
      offset += checked_index(ctx, idx[t * k + j], data.dim(j)) * strides[static_cast<size_t>(j)];
    offsets[static_cast<size_t>(t)] = offset;
  }
  Tensor& y = output_copy_of_data(ctx);
  if (slice == 0) return;
  combine(ctx, y, updates, reduction, "ScatterND", [&](const auto& apply) {
    for (int64_t t = 0; t < tuples; ++t) apply(offsets[static_cast<size_t>(t)], t * slice, slice);
  });
}

}  // namespace

GRAFT_REGISTER_OP("", "Scatter", scatter_infer, scatter_elements_kernel);
GRAFT_REGISTER_OP("", "ScatterElements", scatter_infer, scatter_elements_kernel);
GRAFT_REGISTER_OP("", "ScatterND", scatter_infer, scatter_nd_kernel);

}  // namespace graft::ops
