// Gather, GatherElements and GatherND: reading elements or slices of the data
// at positions given by an index tensor. Indices may be negative (counted from
// the end); every index is bounds-checked before any read, and an index out
// of range fails naming the node. Elements are copied as raw bytes, so one
// instantiation per element size serves every dtype.
#include <algorithm>
#include <cstring>

#include "data_movement.h"
#include "graft/core/parallel.h"
#include "graft/ops/gradient.h"
#include "graft/ops/infer_util.h"
#include "math_common.h"

namespace graft::ops {
namespace {

template <typename Context>
void check_index_dtype(const Context& ctx, DType dtype) {
  if (dtype != DType::int32 && dtype != DType::int64 && dtype != DType::undefined)
    ctx.fail("indices must be int32 or int64, got ", dtype_name(dtype));
}

// Reads the indices and normalizes each against `extent`.
std::vector<int64_t> checked_indices(const KernelContext& ctx, const Tensor& indices, int64_t extent) {
  check_index_dtype(ctx, indices.dtype());
  std::vector<int64_t> values = read_indices(ctx, indices, "indices");
  for (int64_t& v : values) v = checked_index(ctx, v, extent);
  return values;
}

// ---- Gather -----------------------------------------------------------------

void gather_infer(InferContext& ctx) {
  const ir::ValueType& data = ctx.input_type(0);
  const ir::ValueType& indices = ctx.input_type(1);
  check_index_dtype(ctx, indices.dtype);
  if (!data.has_rank || !indices.has_rank) {
    set_output_dtype_only(ctx, 0, data.dtype);
    return;
  }
  const int64_t rank = static_cast<int64_t>(data.dims.size());
  if (rank == 0) ctx.fail("data must have rank >= 1");
  const size_t axis = static_cast<size_t>(checked_axis(ctx, ctx.attrs().get_int("axis", 0), rank));
  std::vector<ir::Dim> dims(data.dims.begin(), data.dims.begin() + static_cast<std::ptrdiff_t>(axis));
  dims.insert(dims.end(), indices.dims.begin(), indices.dims.end());
  dims.insert(dims.end(), data.dims.begin() + static_cast<std::ptrdiff_t>(axis) + 1, data.dims.end());
  ctx.set_output(0, ranked_type(data.dtype, std::move(dims)));
}

void gather_kernel(KernelContext& ctx) {
  const Tensor& data = ctx.input(0);
  const Tensor& indices = ctx.input(1);
  if (data.rank() == 0) ctx.fail("data must have rank >= 1");
  const int64_t axis = checked_axis(ctx, ctx.attrs().get_int("axis", 0), data.rank());
  const int64_t extent = data.dim(axis);
  std::vector<int64_t> index = checked_indices(ctx, indices, extent);
  Shape out_shape(data.shape().begin(), data.shape().begin() + axis);
  out_shape.insert(out_shape.end(), indices.shape().begin(), indices.shape().end());
  out_shape.insert(out_shape.end(), data.shape().begin() + axis + 1, data.shape().end());
  Tensor& y = ctx.allocate_output(0, data.dtype(), out_shape);
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= data.dim(d);
  for (int64_t d = axis + 1; d < data.rank(); ++d) inner *= data.dim(d);
  const int64_t count = static_cast<int64_t>(index.size());
  if (outer * count * inner == 0) return;
  visit_element_type(data.dtype(), "Gather", [&]<typename U>() {
    const U* src = static_cast<const U*>(data.raw_data());
    U* dst = static_cast<U*>(y.raw_data());
    parallel_for(outer * count, std::max<int64_t>(1, 16384 / inner), [&](int64_t begin, int64_t end) {
      for (int64_t w = begin; w < end; ++w) {
        const int64_t o = w / count, i = w % count;
        const U* s = src + (o * extent + index[static_cast<size_t>(i)]) * inner;
        U* t = dst + w * inner;
        if (inner == 1)
          *t = *s;
        else
          std::memcpy(t, s, static_cast<size_t>(inner) * sizeof(U));
      }
    });
  });
}

// ---- GatherElements ---------------------------------------------------------

void gather_elements_infer(InferContext& ctx) {
  const ir::ValueType& data = ctx.input_type(0);
  const ir::ValueType& indices = ctx.input_type(1);
  check_index_dtype(ctx, indices.dtype);
  if (data.has_rank && indices.has_rank && data.dims.size() != indices.dims.size())
    ctx.fail("indices have rank ", indices.dims.size(), " but data has rank ", data.dims.size());
  if (data.has_rank) checked_axis(ctx, ctx.attrs().get_int("axis", 0), static_cast<int64_t>(data.dims.size()));
  ctx.set_output(0, ir::ValueType{data.dtype, indices.has_rank, indices.dims});
}

void gather_elements_kernel(KernelContext& ctx) {
  const Tensor& data = ctx.input(0);
  const Tensor& indices = ctx.input(1);
  const int64_t rank = data.rank();
  if (indices.rank() != rank)
    ctx.fail("indices ", indices.type_string(), " must have the rank of data ", data.type_string());
  if (rank == 0) ctx.fail("data must have rank >= 1");
  const int64_t axis = checked_axis(ctx, ctx.attrs().get_int("axis", 0), rank);
  for (int64_t d = 0; d < rank; ++d)
    if (d != axis && indices.dim(d) > data.dim(d))
      ctx.fail("indices ", indices.type_string(), " exceed data ", data.type_string(), " in dimension ", d);
  std::vector<int64_t> index = checked_indices(ctx, indices, data.dim(axis));
  Tensor& y = ctx.allocate_output(0, data.dtype(), indices.shape());
  const int64_t total = indices.numel();
  if (total == 0) return;
  const std::vector<int64_t> strides = shape_strides(data.shape());
  const Shape& shape = indices.shape();
  const int64_t row = shape.back(), rows = total / row;
  visit_element_type(data.dtype(), "GatherElements", [&]<typename U>() {
    const U* src = static_cast<const U*>(data.raw_data());
    U* dst = static_cast<U*>(y.raw_data());
    parallel_for(rows, std::max<int64_t>(1, 16384 / row), [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        int64_t rem = r, base = 0;
        for (int64_t d = rank - 2; d >= 0; --d) {
          const int64_t coordinate = rem % shape[static_cast<size_t>(d)];
          rem /= shape[static_cast<size_t>(d)];
          if (d != axis) base += coordinate * strides[static_cast<size_t>(d)];
        }
        const int64_t* idx = index.data() + r * row;
        U* out = dst + r * row;
        if (axis == rank - 1) {
          for (int64_t c = 0; c < row; ++c) out[c] = src[base + idx[c]];
        } else {
          const int64_t axis_stride = strides[static_cast<size_t>(axis)];
          for (int64_t c = 0; c < row; ++c) out[c] = src[base + c + idx[c] * axis_stride];
        }
      }
    });
  });
}

// ---- GatherND ---------------------------------------------------------------

void gather_nd_infer(InferContext& ctx) {
  const ir::ValueType& data = ctx.input_type(0);
  const ir::ValueType& indices = ctx.input_type(1);
  if (indices.dtype != DType::int64 && indices.dtype != DType::undefined)
    ctx.fail("indices must be int64, got ", dtype_name(indices.dtype));
  const int64_t batch_dims = ctx.attrs().get_int("batch_dims", 0);
  if (!data.has_rank || !indices.has_rank || indices.dims.empty() || !indices.dims.back().is_known()) {
    set_output_dtype_only(ctx, 0, data.dtype);
    return;
  }
  const int64_t r = static_cast<int64_t>(data.dims.size()), q = static_cast<int64_t>(indices.dims.size());
  const int64_t k = indices.dims.back().value;
  if (batch_dims < 0 || batch_dims >= std::min(r, q)) ctx.fail("batch_dims ", batch_dims, " is out of range");
  if (k < 1 || k > r - batch_dims) ctx.fail("the last dimension of indices is ", k, ", expected 1..", r - batch_dims);
  std::vector<ir::Dim> dims(indices.dims.begin(), indices.dims.end() - 1);
  dims.insert(dims.end(), data.dims.begin() + batch_dims + k, data.dims.end());
  ctx.set_output(0, ranked_type(data.dtype, std::move(dims)));
}

void gather_nd_kernel(KernelContext& ctx) {
  const Tensor& data = ctx.input(0);
  const Tensor& indices = ctx.input(1);
  if (indices.dtype() != DType::int64) ctx.fail("indices must be int64, got ", indices.type_string());
  const int64_t r = data.rank(), q = indices.rank();
  const int64_t batch_dims = ctx.attrs().get_int("batch_dims", 0);
  if (r < 1 || q < 1) ctx.fail("data and indices must have rank >= 1");
  if (batch_dims < 0 || batch_dims >= std::min(r, q)) ctx.fail("batch_dims ", batch_dims, " is out of range");
  const int64_t k = indices.dim(q - 1);
  if (k < 1 || k > r - batch_dims) ctx.fail("the last dimension of indices is ", k, ", expected 1..", r - batch_dims);
  for (int64_t d = 0; d < batch_dims; ++d)
    if (data.dim(d) != indices.dim(d))
      ctx.fail("batch dimension ", d, " differs: data ", data.type_string(), ", indices ", indices.type_string());
  Shape out_shape(indices.shape().begin(), indices.shape().end() - 1);
  out_shape.insert(out_shape.end(), data.shape().begin() + batch_dims + k, data.shape().end());
  Tensor& y = ctx.allocate_output(0, data.dtype(), out_shape);
  const std::vector<int64_t> strides = shape_strides(data.shape());
  int64_t slice = 1, batch_size = 1, per_batch = 1;
  for (int64_t d = batch_dims + k; d < r; ++d) slice *= data.dim(d);
  for (int64_t d = batch_dims; d < r; ++d) batch_size *= data.dim(d);
  for (int64_t d = batch_dims; d < q - 1; ++d) per_batch *= indices.dim(d);
  const int64_t tuples = indices.numel() / k;
  // Data offsets of every index tuple, checked before any copy.
  const int64_t* idx = indices.data<int64_t>();
  std::vector<int64_t> offsets(static_cast<size_t>(tuples));
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t offset = (t / per_batch) * batch_size;
    for (int64_t j = 0; j < k; ++j) {
      const int64_t d = batch_dims + j;
      offset += checked_index(ctx, idx[t * k + j], data.dim(d)) * strides[static_cast<size_t>(d)];
    }
    offsets[static_cast<size_t>(t)] = offset;
  }
  if (slice == 0) return;
  visit_element_type(data.dtype(), "GatherND", [&]<typename U>() {
    const U* src = static_cast<const U*>(data.raw_data());
    U* dst = static_cast<U*>(y.raw_data());
    parallel_for(tuples, std::max<int64_t>(1, 16384 / slice), [&](int64_t begin, int64_t end) {
      for (int64_t t = begin; t < end; ++t)
        std::memcpy(dst + t * slice, src + offsets[static_cast<size_t>(t)], static_cast<size_t>(slice) * sizeof(U));
    });
  });
}

}  // namespace

GRAFT_REGISTER_OP("", "Gather", gather_infer, gather_kernel);
GRAFT_REGISTER_OP("", "GatherElements", gather_elements_infer, gather_elements_kernel);
GRAFT_REGISTER_OP("", "GatherND", gather_nd_infer, gather_nd_kernel);

// Backward op and gradient builder (graft/ops/gradient.h):
// graft.GatherGrad(d_y, indices, data) -> d_data with the forward's axis:
// zeros of data's shape with every d_y[a, i, b] added into row indices[i]
// (repeated indices accumulate: embedding gradients).
namespace {

void infer_gather_grad(InferContext& ctx) { ctx.set_output(0, ctx.input_type(2)); }

void gather_grad_kernel(KernelContext& ctx) {
  const Tensor& dy = ctx.input(0);
  const Tensor& indices = ctx.input(1);
  const Tensor& data = ctx.input(2);
  const int64_t axis = normalize_axis(ctx.attrs().get_int("axis", 0), data.rank(), ctx.node().describe());
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= data.dim(d);
  for (int64_t d = axis + 1; d < data.rank(); ++d) inner *= data.dim(d);
  const int64_t extent = data.dim(axis), count = indices.numel();
  if (dy.numel() != outer * count * inner)
    ctx.fail("d_y ", dy.type_string(), " does not match gathering ", indices.type_string(), " from ",
             data.type_string());
  const std::vector<int64_t> idx = indices.to_int64_vector();
  visit_float_dtype(data.dtype(), ctx.node().describe(), [&]<typename T>() {
    using W = std::conditional_t<std::is_same_v<T, double>, double, float>;
    const std::vector<W> dys = tensor_to_vector<W>(dy);
    std::vector<W> out(static_cast<size_t>(data.numel()), W(0));
    for (int64_t a = 0; a < outer; ++a)
      for (int64_t i = 0; i < count; ++i) {
        int64_t row = idx[static_cast<size_t>(i)];
        if (row < 0) row += extent;
        if (row < 0 || row >= extent) ctx.fail("index ", idx[static_cast<size_t>(i)], " is out of range for ", extent);
        const W* source = dys.data() + (a * count + i) * inner;
        W* target = out.data() + (a * extent + row) * inner;
        for (int64_t b = 0; b < inner; ++b) target[b] += source[b];
      }
    T* o = ctx.allocate_output(0, data.dtype(), data.shape()).template data<T>();
    for (size_t k = 0; k < out.size(); ++k) o[k] = static_cast<T>(out[k]);
  });
}

void gather_gradient(GradientContext& g) {
  g.set_input_gradient(0, g.add(ir::OpId::GatherGrad, {g.output_gradient(0), g.input(1), g.input(0)},
                                {{"axis", g.attrs().get_int("axis", 0)}}));
}

}  // namespace

GRAFT_REGISTER_OP("graft", "GatherGrad", infer_gather_grad, gather_grad_kernel);
GRAFT_REGISTER_GRADIENT(Gather, gather_gradient);

// GatherElements and GatherND: dy added into zeros of data's shape at the
// gathered positions (ScatterElements / ScatterND with reduction "add").
namespace {

ir::Value zeros_like(GradientContext& g, ir::Value v) {
  std::vector<int64_t> dims = g.known_dims(v);
  return g.constant(Tensor(g.type_of(v).dtype, Shape(dims.begin(), dims.end())));
}

void gather_elements_gradient(GradientContext& g) {
  g.set_input_gradient(0,
                       g.add(ir::OpId::ScatterElements, {zeros_like(g, g.input(0)), g.input(1), g.output_gradient(0)},
                             {{"axis", g.attrs().get_int("axis", 0)}, {"reduction", std::string("add")}}));
}

void gather_nd_gradient(GradientContext& g) {
  if (g.attrs().get_int("batch_dims", 0) != 0) g.unsupported("batch_dims other than 0");
  g.set_input_gradient(0, g.add(ir::OpId::ScatterND, {zeros_like(g, g.input(0)), g.input(1), g.output_gradient(0)},
                                {{"reduction", std::string("add")}}));
}

}  // namespace

GRAFT_REGISTER_GRADIENT(GatherElements, gather_elements_gradient);
GRAFT_REGISTER_GRADIENT(GatherND, gather_nd_gradient);

}  // namespace graft::ops
