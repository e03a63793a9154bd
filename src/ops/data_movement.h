/// \file
/// Helpers shared by the data-movement, shape and index op families (reshape,
/// transpose, slice, gather, scatter, pad, resize, ...). Private to src/ops.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "graft/core/tensor.h"
#include "graft/ops/op_context.h"

namespace graft::ops {

/// Calls fn.template operator()<U>() with the unsigned integer type U that has
/// `element_size` bytes: kernels that only copy elements are written once per
/// element size instead of once per dtype. Throws unsupported otherwise.
template <typename Fn>
decltype(auto) visit_element_size(size_t element_size, std::string_view what, Fn&& fn) {
  switch (element_size) {
    case 1:
      return fn.template operator()<uint8_t>();
    case 2:
      return fn.template operator()<uint16_t>();
    case 4:
      return fn.template operator()<uint32_t>();
    case 8:
      return fn.template operator()<uint64_t>();
    default:
      break;
  }
  fail(ErrorKind::unsupported, what, ": elements of ", element_size, " bytes are not supported");
}

/// Same as visit_element_size for the dtype of a tensor (string, complex and
/// undefined are rejected with a message naming `what`).
template <typename Fn>
decltype(auto) visit_element_type(DType dtype, std::string_view what, Fn&& fn) {
  if (!dtype_is_storable(dtype)) fail(ErrorKind::unsupported, what, ": dtype ", dtype_name(dtype), " is not supported");
  return visit_element_size(dtype_size(dtype), what, std::forward<Fn>(fn));
}

/// Normalizes `axis` (negative counts from the end) against `rank`, failing
/// through the context (naming the node) when it is outside [-rank, rank).
template <typename Context>
int64_t checked_axis(const Context& ctx, int64_t axis, int64_t rank, std::string_view what = "axis") {
  if (axis < -rank || axis >= rank)
    ctx.fail(what, " ", axis, " is out of range for rank ", rank, " (expected [", -rank, ", ", rank - 1, "])");
  return axis < 0 ? axis + rank : axis;
}

/// Normalizes a list of axes and fails on duplicates; keeps the given order.
template <typename Context>
std::vector<int64_t> checked_axes(const Context& ctx, const std::vector<int64_t>& axes, int64_t rank,
                                  std::string_view what = "axes") {
  std::vector<int64_t> out;
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  for (int64_t a : axes) {
    int64_t n = checked_axis(ctx, a, rank, what);
    if (seen[static_cast<size_t>(n)]) ctx.fail(what, " lists axis ", a, " more than once");
    seen[static_cast<size_t>(n)] = true;
    out.push_back(n);
  }
  return out;
}

/// Normalizes an index read from data (negative counts from the end) and fails
/// naming the node when it is outside [-extent, extent).
template <typename Context>
int64_t checked_index(const Context& ctx, int64_t index, int64_t extent, std::string_view what = "index") {
  if (index < -extent || index >= extent)
    ctx.fail(what, " ", index, " is out of range for a dimension of size ", extent, " (expected [", -extent, ", ",
             extent - 1, "])");
  return index < 0 ? index + extent : index;
}

/// Every element of an integer tensor (int8..uint64, bool) as int64; fails
/// naming the node and `name` when the dtype is not an integer type.
std::vector<int64_t> read_indices(const KernelContext& ctx, const Tensor& t, std::string_view name);

/// The elements of input `i`, an integer tensor (a shape, axes, pads, ...).
std::vector<int64_t> input_ints(const KernelContext& ctx, size_t i, std::string_view name);

/// The constant integer list held by input `i`; nullopt when the input is
/// absent or not a constant. Fails when the constant is not integer.
std::optional<std::vector<int64_t>> constant_input_ints(const InferContext& ctx, size_t i);

/// The constant float list held by input `i` (any numeric dtype); nullopt when
/// absent or not constant.
std::optional<std::vector<double>> constant_input_doubles(const InferContext& ctx, size_t i);

/// Known number of elements of a 1-D input (its only dimension), or nullopt.
std::optional<int64_t> known_length(const InferContext& ctx, size_t i);

/// `n` unknown dimensions.
inline std::vector<ir::Dim> unknown_dims(size_t n) { return std::vector<ir::Dim>(n); }

/// A ranked value type.
inline ir::ValueType ranked_type(DType dtype, std::vector<ir::Dim> dims) {
  return ir::ValueType{dtype, true, std::move(dims)};
}

/// Concrete dimensions of a ValueType as a Shape, or nullopt if any is unknown.
std::optional<Shape> known_shape(const ir::ValueType& type);

/// Product of the dims in [begin, end): a known Dim when all are known, a copy
/// of the only dim when it is the single one (keeps a symbol), else unknown.
ir::Dim dims_product(const std::vector<ir::Dim>& dims, size_t begin, size_t end);

/// memcpy of `nbytes`, split over threads when large.
void parallel_copy(void* dst, const void* src, size_t nbytes);

}  // namespace graft::ops
