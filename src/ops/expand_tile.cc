// Expand and Tile: repeating a tensor's elements into a larger shape.
// Expand broadcasts the input against a requested shape (numpy rules, in both
// directions); Tile repeats the whole input `repeats[d]` times along each
// dimension. Both walk the output row by row: a row is either a copy of one
// input row, repeated, or one input element filled across.
#include <algorithm>
#include <cstring>

#include "data_movement.h"
#include "graft/core/parallel.h"
#include "graft/ops/broadcast.h"
#include "graft/ops/gradient.h"
#include "graft/ops/infer_util.h"

namespace graft::ops {
namespace {

// ---- Expand -----------------------------------------------------------------

void expand_infer(InferContext& ctx) {
  const ir::ValueType& x = ctx.input_type(0);
  if (auto shape = constant_input_ints(ctx, 1)) {
    ir::ValueType target{x.dtype, true, {}};
    for (int64_t e : *shape) {
      if (e < 0) ctx.fail("shape has a negative entry ", e);
      target.dims.push_back(ir::Dim::known(e));
    }
    auto dims = broadcast_dims(ctx, {x, target});
    if (dims)
      ctx.set_output(0, ranked_type(x.dtype, std::move(*dims)));
    else
      set_output_dtype_only(ctx, 0, x.dtype);
    return;
  }
  auto length = known_length(ctx, 1);
  if (!x.has_rank || !length) {
    set_output_dtype_only(ctx, 0, x.dtype);
    return;
  }
  const size_t rank = std::max(x.dims.size(), static_cast<size_t>(*length));
  std::vector<ir::Dim> dims(rank);
  const size_t lead = rank - x.dims.size();
  for (size_t d = 0; d < x.dims.size(); ++d)
    if (x.dims[d].is_known() && x.dims[d].value != 1) dims[d + lead] = x.dims[d];  // broadcasting keeps it
  ctx.set_output(0, ranked_type(x.dtype, std::move(dims)));
}

void expand_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  std::vector<int64_t> request = input_ints(ctx, 1, "shape");
  for (int64_t e : request)
    if (e < 0) ctx.fail("shape has a negative entry ", e);
  const Shape out_shape = broadcast_shapes(x.shape(), request, ctx.node().describe());
  Tensor& y = ctx.allocate_output(0, x.dtype(), out_shape);
  const int64_t total = y.numel();
  if (total == 0) return;
  const size_t rank = out_shape.size();
  if (rank == 0) {
    std::memcpy(y.raw_data(), x.raw_data(), x.nbytes());
    return;
  }
  // Adjacent dimensions that are both broadcast, or both read in order, act
  // as one: [N,1,1,1] expanded to [N,256,7,7] is N rows of 12544 copies of
  // one value, not 1792 N rows of 7 (each one's source found by divisions).
  const std::vector<int64_t> full_strides = broadcast_strides(x.shape(), out_shape);
  Shape shape;
  std::vector<int64_t> strides;
  for (size_t d = 0; d < rank; ++d) {
    if (out_shape[d] == 1) continue;
    if (!shape.empty() && ((strides.back() == 0 && full_strides[d] == 0) ||
                           (full_strides[d] != 0 && strides.back() == full_strides[d] * out_shape[d]))) {
      shape.back() *= out_shape[d];
      strides.back() = full_strides[d];
      continue;
    }
    shape.push_back(out_shape[d]);
    strides.push_back(full_strides[d]);
  }
  if (shape.empty()) {
    shape.push_back(1);
    strides.push_back(0);
  }
  const size_t dims = shape.size();
  const int64_t row = shape[dims - 1], rows = total / row, inner_stride = strides[dims - 1];
  visit_element_type(x.dtype(), "Expand", [&]<typename U>() {
    const U* src = static_cast<const U*>(x.raw_data());
    U* dst = static_cast<U*>(y.raw_data());
    parallel_for(rows, std::max<int64_t>(1, 16384 / row), [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        int64_t rem = r, offset = 0;
        for (size_t d = dims - 1; d-- > 0;) {
          offset += (rem % shape[d]) * strides[d];
          rem /= shape[d];
        }
        U* o = dst + r * row;
        if (inner_stride == 0)
          std::fill(o, o + row, src[offset]);
        else
          std::memcpy(o, src + offset, static_cast<size_t>(row) * sizeof(U));
      }
    });
  });
}

// ---- Tile -------------------------------------------------------------------

// extent * repeats, an error naming the dimension when it overflows int64.
template <typename Context>
int64_t tiled_extent(const Context& ctx, int64_t extent, int64_t repeats, size_t d) {
  int64_t product;
  if (__builtin_mul_overflow(extent, repeats, &product))
    ctx.fail("dimension ", d, " of size ", extent, " repeated ", repeats, " times overflows int64");
  return product;
}

void tile_infer(InferContext& ctx) {
  const ir::ValueType& x = ctx.input_type(0);
  if (!x.has_rank) {
    set_output_dtype_only(ctx, 0, x.dtype);
    return;
  }
  std::vector<ir::Dim> dims = x.dims;
  if (auto repeats = constant_input_ints(ctx, 1)) {
    if (repeats->size() != dims.size())
      ctx.fail("repeats has ", repeats->size(), " entries for an input of rank ", dims.size());
    for (size_t d = 0; d < dims.size(); ++d) {
      const int64_t rep = (*repeats)[d];
      if (rep < 0) ctx.fail("repeats has a negative entry ", rep);
      if (dims[d].is_known())
        dims[d] = ir::Dim::known(tiled_extent(ctx, dims[d].value, rep, d));
      else if (rep == 0)
        dims[d] = ir::Dim::known(0);
      else if (rep != 1)
        dims[d] = ir::Dim{};
    }
  } else {
    dims = unknown_dims(dims.size());
  }
  ctx.set_output(0, ranked_type(x.dtype, std::move(dims)));
}

void tile_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  std::vector<int64_t> repeats = input_ints(ctx, 1, "repeats");
  if (static_cast<int64_t>(repeats.size()) != x.rank())
    ctx.fail("repeats has ", repeats.size(), " entries for an input of rank ", x.rank());
  Shape out_shape = x.shape();
  for (size_t d = 0; d < out_shape.size(); ++d) {
    if (repeats[d] < 0) ctx.fail("repeats has a negative entry ", repeats[d]);
    out_shape[d] = tiled_extent(ctx, out_shape[d], repeats[d], d);
  }
  shape_numel(out_shape, ctx.node().describe());  // overflow check
  Tensor& y = ctx.allocate_output(0, x.dtype(), out_shape);
  const int64_t total = y.numel();
  if (total == 0) return;
  const size_t rank = out_shape.size();
  if (rank == 0) {
    std::memcpy(y.raw_data(), x.raw_data(), x.nbytes());
    return;
  }
  const std::vector<int64_t> in_strides = shape_strides(x.shape());
  const int64_t in_row = x.shape()[rank - 1], row = out_shape[rank - 1], rows = total / row;
  visit_element_type(x.dtype(), "Tile", [&]<typename U>() {
    const U* src = static_cast<const U*>(x.raw_data());
    U* dst = static_cast<U*>(y.raw_data());
    parallel_for(rows, std::max<int64_t>(1, 16384 / row), [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        int64_t rem = r, offset = 0;
        for (size_t d = rank - 1; d-- > 0;) {
          offset += ((rem % out_shape[d]) % x.shape()[d]) * in_strides[d];
          rem /= out_shape[d];
        }
        U* o = dst + r * row;
        for (int64_t c = 0; c < row; c += in_row)
          std::memcpy(o + c, src + offset, static_cast<size_t>(in_row) * sizeof(U));
      }
    });
  });
}

}  // namespace

GRAFT_REGISTER_OP("", "Expand", expand_infer, expand_kernel);
GRAFT_REGISTER_OP("", "Tile", tile_infer, tile_kernel);

// Gradient builder (graft/ops/gradient.h): Expand is a broadcast, which
// autodiff sums back to the input's shape.
namespace {

void expand_gradient(GradientContext& g) { g.set_input_gradient(0, g.output_gradient(0)); }

}  // namespace

GRAFT_REGISTER_GRADIENT(Expand, expand_gradient);

// Tile: dy viewed as [r0, d0, r1, d1, ...] (repeats, input extents) and
// summed over the repeat axes.
namespace {

void tile_gradient(GradientContext& g) {
  std::vector<int64_t> dims = g.known_dims(g.input(0));
  std::optional<std::vector<int64_t>> repeats = g.constant_ints(1);
  if (!repeats || repeats->size() != dims.size()) g.unsupported("the repeats must be a constant, one per axis");
  std::vector<int64_t> split, axes;
  for (size_t d = 0; d < dims.size(); ++d) {
    split.push_back((*repeats)[d]);
    split.push_back(dims[d]);
    axes.push_back(static_cast<int64_t>(2 * d));
  }
  ir::Value view = g.add(ir::OpId::Reshape, {g.output_gradient(0), g.int64s(split)});
  g.set_input_gradient(0, g.add(ir::OpId::ReduceSum, {view, g.int64s(axes)}, {{"keepdims", int64_t{0}}}));
}

}  // namespace

GRAFT_REGISTER_GRADIENT(Tile, tile_gradient);

}  // namespace graft::ops
