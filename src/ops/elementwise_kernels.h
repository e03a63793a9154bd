// Building blocks shared by the elementwise and broadcast ops (private to
// src/ops): the dtype sets each op accepts, checks that name the node, exact
// value conversions, the map/zip loops and the choice of an in-place output.
//
// Loops. Every kernel runs one of three loop shapes: map (one input, same
// shape), zip (two or three inputs under numpy broadcasting, through
// broadcast_for_each) and their chunked parallel drivers. The innermost loop of
// each case the compiler can vectorize (same shape, or one side a broadcast
// scalar) is written out separately and marked `omp simd`: the output may alias
// an input (in-place execution), but only element k of the output ever aliases
// element k of an input, so iterations stay independent. Values of float16 and
// bfloat16 are converted to float (compute_t) for arithmetic.
#pragma once

#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <optional>
#include <string_view>
#include <type_traits>

#include "graft/core/dtype.h"
#include "graft/core/parallel.h"
#include "graft/ops/broadcast.h"
#include "graft/ops/infer_util.h"
#include "graft/ops/op_context.h"

#define GRAFT_SIMD_LOOP _Pragma("omp simd")

namespace graft::ops::elementwise {

// ---------------------------------------------------------------------------
// Dtype sets

/// The dtypes an op accepts for an input.
enum class DTypeSet {
  float_types,       ///< float16, bfloat16, float32, float64
  signed_numeric,    ///< float types and signed integers
  numeric,           ///< float types and all integers
  integer,           ///< signed and unsigned integers
  unsigned_integer,  ///< uint8 .. uint64
  boolean,           ///< bool
  numeric_or_bool,   ///< numeric and bool
  any,               ///< every storable dtype
};

/// The two sets most ops name.
inline constexpr DTypeSet kNumeric = DTypeSet::numeric;
inline constexpr DTypeSet kFloat = DTypeSet::float_types;

template <typename T>
inline constexpr bool is_float_type_v = std::is_same_v<T, float> || std::is_same_v<T, double> ||
                                        std::is_same_v<T, float16_t> || std::is_same_v<T, bfloat16_t>;
template <typename T>
inline constexpr bool is_integer_type_v = std::is_integral_v<T> && !std::is_same_v<T, bool>;
/// float16 and bfloat16: stored as bits, computed in float.
template <typename T>
inline constexpr bool is_half_type_v = std::is_same_v<T, float16_t> || std::is_same_v<T, bfloat16_t>;

/// True when the C++ storage type T belongs to `set`.
template <DTypeSet set, typename T>
constexpr bool type_in_set() {
  switch (set) {
    case DTypeSet::float_types:
      return is_float_type_v<T>;
    case DTypeSet::signed_numeric:
      return is_float_type_v<T> || (is_integer_type_v<T> && std::is_signed_v<T>);
    case DTypeSet::numeric:
      return is_float_type_v<T> || is_integer_type_v<T>;
    case DTypeSet::integer:
      return is_integer_type_v<T>;
    case DTypeSet::unsigned_integer:
      return is_integer_type_v<T> && std::is_unsigned_v<T>;
    case DTypeSet::boolean:
      return std::is_same_v<T, bool>;
    case DTypeSet::numeric_or_bool:
      return is_float_type_v<T> || std::is_integral_v<T>;
    case DTypeSet::any:
      return true;
  }
  return false;
}

/// True when the dtype belongs to `set` (storable dtypes only).
inline bool dtype_in_set(DType dtype, DTypeSet set) {
  if (!dtype_is_storable(dtype)) return false;
  bool is_signed_integer =
      dtype == DType::int8 || dtype == DType::int16 || dtype == DType::int32 || dtype == DType::int64;
  switch (set) {
    case DTypeSet::float_types:
      return dtype_is_float(dtype);
    case DTypeSet::signed_numeric:
      return dtype_is_float(dtype) || is_signed_integer;
    case DTypeSet::numeric:
      return dtype_is_float(dtype) || dtype_is_integer(dtype);
    case DTypeSet::integer:
      return dtype_is_integer(dtype);
    case DTypeSet::unsigned_integer:
      return dtype_is_integer(dtype) && !is_signed_integer;
    case DTypeSet::boolean:
      return dtype == DType::boolean;
    case DTypeSet::numeric_or_bool:
      return true;
    case DTypeSet::any:
      return true;
  }
  return false;
}

/// What a set holds, for messages ("a float type").
inline std::string_view describe_set(DTypeSet set) {
  switch (set) {
    case DTypeSet::float_types:
      return "a float type (float16, bfloat16, float32, float64)";
    case DTypeSet::signed_numeric:
      return "a float or signed integer type";
    case DTypeSet::numeric:
      return "a numeric type";
    case DTypeSet::integer:
      return "an integer type";
    case DTypeSet::unsigned_integer:
      return "an unsigned integer type";
    case DTypeSet::boolean:
      return "bool";
    case DTypeSet::numeric_or_bool:
      return "a numeric type or bool";
    case DTypeSet::any:
      return "a storable type";
  }
  return "?";
}

/// Fails (invalid_model, naming the node) when input i is present with a known
/// dtype outside `set`.
inline void require_input_dtype(const InferContext& ctx, size_t i, DTypeSet set) {
  if (!ctx.has_input(i)) return;
  DType dtype = ctx.input_type(i).dtype;
  if (dtype == DType::undefined || dtype_in_set(dtype, set)) return;
  if (dtype == DType::string || !dtype_is_storable(dtype))
    fail(ErrorKind::unsupported, ctx.node().describe(), ": input ", i, " has dtype ", dtype_name(dtype),
         ", which graft does not support here");
  ctx.fail("input ", i, " has dtype ", dtype_name(dtype), ", expected ", describe_set(set));
}

/// Fails naming both dtypes when present inputs i and j have different known dtypes.
inline void require_same_dtype(const InferContext& ctx, size_t i, size_t j) {
  if (!ctx.has_input(i) || !ctx.has_input(j)) return;
  DType a = ctx.input_type(i).dtype, b = ctx.input_type(j).dtype;
  if (a == DType::undefined || b == DType::undefined || a == b) return;
  ctx.fail("inputs ", i, " and ", j, " must have the same dtype, got ", dtype_name(a), " and ", dtype_name(b));
}

/// Kernel-side check that inputs i and j have the same dtype.
inline void require_same_dtype(const KernelContext& ctx, size_t i, size_t j) {
  DType a = ctx.input(i).dtype(), b = ctx.input(j).dtype();
  if (a != b)
    ctx.fail("inputs ", i, " and ", j, " must have the same dtype, got ", dtype_name(a), " and ", dtype_name(b));
}

/// Calls fn.template operator()<T>() for the storage type T of `dtype` when it
/// belongs to `set`; throws unsupported naming the node otherwise. Only the
/// types of `set` are instantiated.
template <DTypeSet set, typename Fn>
void visit_dtype_in(DType dtype, const KernelContext& ctx, Fn&& fn) {
  auto reject = [&] {
    ctx.unsupported("dtype ", dtype_name(dtype), " is not supported (expected ", describe_set(set), ")");
  };
  if (!dtype_is_storable(dtype)) reject();
  visit_dtype(dtype, ctx.node().describe(), [&]<typename T>() {
    if constexpr (type_in_set<set, T>()) {
      fn.template operator()<T>();
    } else {
      reject();
    }
  });
}

// ---------------------------------------------------------------------------
// Value conversions

/// A storage value in its compute type (float for float16 and bfloat16).
template <typename T>
inline compute_t<T> to_compute(T value) {
  return static_cast<compute_t<T>>(value);
}

/// Rounds a double to float toward zero and sets the last mantissa bit when
/// the result is inexact ("round to odd"). Rounding that float once more to a
/// format with at most 22 mantissa bits (float16, bfloat16) then gives the
/// correctly rounded result of the double: no double-rounding error.
inline float round_to_odd_float(double value) {
  float f = static_cast<float>(value);
  if (std::isnan(value) || static_cast<double>(f) == value) return f;
  if (std::abs(static_cast<double>(f)) > std::abs(value)) f = std::nextafter(f, 0.0f);
  return std::bit_cast<float>(std::bit_cast<uint32_t>(f) | 1u);
}

/// A float converted to integer type I: truncated toward zero; NaN gives 0;
/// values beyond int64 (uint64 for uint64) saturate; the rest wrap modulo 2^bits
/// like C++'s integer conversions (what numpy's astype gives on x86 for them).
template <typename I>
inline I float_to_integer(double value) {
  if (std::isnan(value)) return 0;
  value = std::trunc(value);
  if constexpr (std::is_same_v<I, uint64_t>) {
    if (value >= 18446744073709551616.0) return std::numeric_limits<uint64_t>::max();
    if (value >= 9223372036854775808.0) return static_cast<uint64_t>(value);
  }
  if (value >= 9223372036854775808.0) return static_cast<I>(std::numeric_limits<int64_t>::max());
  if (value < -9223372036854775808.0) return static_cast<I>(std::numeric_limits<int64_t>::min());
  return static_cast<I>(static_cast<int64_t>(value));
}

/// Exact conversion of any storable value to any storable type: float->int as
/// float_to_integer, ->bool is `!= 0`, ->float16/bfloat16 correctly rounded
/// (half to even) from every source, integers wrap modulo 2^bits.
template <typename To, typename From>
inline To convert_value(From value) {
  if constexpr (std::is_same_v<To, From>) {
    return value;
  } else if constexpr (std::is_same_v<To, bool>) {
    return to_compute(value) != 0;
  } else if constexpr (std::is_same_v<To, float> || std::is_same_v<To, double>) {
    return static_cast<To>(to_compute(value));
  } else if constexpr (is_half_type_v<To>) {
    // float holds these sources exactly; the others go through round-to-odd.
    if constexpr (std::is_same_v<From, float> || is_half_type_v<From> || std::is_same_v<From, bool> ||
                  (is_integer_type_v<From> && sizeof(From) <= 2)) {
      return To(static_cast<float>(to_compute(value)));
    } else {
      return To(round_to_odd_float(static_cast<double>(value)));
    }
  } else if constexpr (is_float_type_v<From>) {
    return float_to_integer<To>(static_cast<double>(to_compute(value)));
  } else {
    return static_cast<To>(value);  // integer or bool to integer: modular
  }
}

/// A double result stored as T (float results correctly rounded, integer
/// results as float_to_integer).
template <typename T>
inline T from_double(double value) {
  return convert_value<T, double>(value);
}

/// Unsigned type in which T's wrapping arithmetic is done (at least 32 bits so
/// that integer promotion cannot make it signed).
template <typename T>
using wrapping_t = std::conditional_t<(sizeof(T) < 4), uint32_t, std::make_unsigned_t<T>>;

// ---------------------------------------------------------------------------
// Loops

/// Elements per task for cheap operations (add, compare, convert).
inline constexpr int64_t kCheapGrain = 32768;
/// Elements per task for transcendental functions.
inline constexpr int64_t kCostlyGrain = 4096;

/// out[i] = fn(in[i]) for i in [0, n), in parallel. `out` may equal `in`.
template <typename In, typename Out, typename Fn>
void map(const In* in, Out* out, int64_t n, int64_t grain, const Fn& fn) {
  parallel_for(n, grain, [&](int64_t begin, int64_t end) {
    GRAFT_SIMD_LOOP
    for (int64_t i = begin; i < end; ++i) out[i] = fn(in[i]);
  });
}

/// out = fn(a, b) with numpy broadcasting of a and b to out's shape. A, B, Out
/// are the storage types; `out` may alias an input of its own shape.
template <typename A, typename B, typename Out, typename Fn>
void zip(const Tensor& a, const Tensor& b, Tensor& out, const Fn& fn) {
  const A* a_data = a.data<A>();
  const B* b_data = b.data<B>();
  Out* out_data = out.data<Out>();
  broadcast_for_each<2>(out.shape(), {&a.shape(), &b.shape()},
                        [&](int64_t out_offset, const std::array<int64_t, 2>& offsets, int64_t count,
                            const std::array<int64_t, 2>& strides) {
                          Out* y = out_data + out_offset;
                          const A* x0 = a_data + offsets[0];
                          const B* x1 = b_data + offsets[1];
                          if (strides[0] == 1 && strides[1] == 1) {
                            GRAFT_SIMD_LOOP
                            for (int64_t k = 0; k < count; ++k) y[k] = fn(x0[k], x1[k]);
                          } else if (strides[0] == 1 && strides[1] == 0) {
                            const B scalar = *x1;
                            GRAFT_SIMD_LOOP
                            for (int64_t k = 0; k < count; ++k) y[k] = fn(x0[k], scalar);
                          } else if (strides[0] == 0 && strides[1] == 1) {
                            const A scalar = *x0;
                            GRAFT_SIMD_LOOP
                            for (int64_t k = 0; k < count; ++k) y[k] = fn(scalar, x1[k]);
                          } else {
                            for (int64_t k = 0; k < count; ++k) y[k] = fn(x0[k * strides[0]], x1[k * strides[1]]);
                          }
                        });
}

/// out = fn(a, b, c) with numpy broadcasting of three inputs (Where).
template <typename A, typename B, typename C, typename Out, typename Fn>
void zip3(const Tensor& a, const Tensor& b, const Tensor& c, Tensor& out, const Fn& fn) {
  const A* a_data = a.data<A>();
  const B* b_data = b.data<B>();
  const C* c_data = c.data<C>();
  Out* out_data = out.data<Out>();
  broadcast_for_each<3>(out.shape(), {&a.shape(), &b.shape(), &c.shape()},
                        [&](int64_t out_offset, const std::array<int64_t, 3>& offsets, int64_t count,
                            const std::array<int64_t, 3>& strides) {
                          Out* y = out_data + out_offset;
                          const A* x0 = a_data + offsets[0];
                          const B* x1 = b_data + offsets[1];
                          const C* x2 = c_data + offsets[2];
                          if (strides[0] == 1 && strides[1] == 1 && strides[2] == 1) {
                            GRAFT_SIMD_LOOP
                            for (int64_t k = 0; k < count; ++k) y[k] = fn(x0[k], x1[k], x2[k]);
                          } else {
                            for (int64_t k = 0; k < count; ++k)
                              y[k] = fn(x0[k * strides[0]], x1[k * strides[1]], x2[k * strides[2]]);
                          }
                        });
}

// ---------------------------------------------------------------------------
// Outputs

/// Allocates output 0 with `dtype` and `shape`, reusing the buffer of the
/// first candidate input of the same dtype and shape when that input dies here.
inline Tensor& allocate_elementwise_output(KernelContext& ctx, DType dtype, const Shape& shape,
                                           std::initializer_list<size_t> candidates) {
  for (size_t i : candidates) {
    if (!ctx.has_input(i)) continue;
    const Tensor& in = ctx.input(i);
    if (in.dtype() == dtype && in.shape() == shape) return ctx.allocate_output_in_place(0, dtype, shape, i);
  }
  return ctx.allocate_output(0, dtype, shape);
}

/// The broadcast of the shapes of inputs [0, n) (all present), failing with
/// the node's name when they are incompatible.
inline Shape broadcast_input_shapes(const KernelContext& ctx, size_t n) {
  Shape shape = ctx.input(0).shape();
  for (size_t i = 1; i < n; ++i) shape = broadcast_shapes(shape, ctx.input(i).shape(), ctx.node().describe());
  return shape;
}

// ---------------------------------------------------------------------------
// Opsets 1-6: `broadcast` and `axis` attributes

/// For opsets before 7, binary ops broadcast B to A only with attribute
/// broadcast=1, aligning B's dimensions with A's starting at `axis` (default:
/// trailing alignment, which is numpy's). Returns the rank-`a_rank` extents B
/// is read with (B's extents then trailing 1s), or nullopt when numpy
/// broadcasting applies unchanged.
template <typename Context>
std::optional<size_t> legacy_broadcast_axis(const Context& ctx, size_t a_rank, size_t b_rank) {
  if (ctx.opset() >= 7 || ctx.attrs().get_int("broadcast", 0) == 0 || !ctx.attrs().has("axis")) return std::nullopt;
  int64_t axis = ctx.attrs().get_int("axis");
  if (axis < 0) axis += static_cast<int64_t>(a_rank);
  if (axis < 0 || static_cast<size_t>(axis) + b_rank > a_rank)
    ctx.fail("attribute 'axis' (", ctx.attrs().get_int("axis"), ") does not place B of rank ", b_rank,
             " inside A of rank ", a_rank);
  return static_cast<size_t>(axis);
}

/// Input B of a binary op reshaped for legacy axis broadcasting, or nullopt
/// when B is read as it is. (Not a copy of B in the common case: a copy would
/// hold B's buffer and prevent its in-place reuse.)
inline std::optional<Tensor> legacy_operand_b(const KernelContext& ctx) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  auto axis = legacy_broadcast_axis(ctx, static_cast<size_t>(a.rank()), static_cast<size_t>(b.rank()));
  if (!axis) return std::nullopt;
  Shape shape = b.shape();
  shape.resize(static_cast<size_t>(a.rank()) - *axis, 1);
  return b.reshaped(shape);
}

/// Output 0 of a two-input op: `dtype` and the broadcast of A and B (with
/// legacy axis alignment before opset 7).
inline void infer_binary_broadcast(InferContext& ctx, DType dtype) {
  ir::ValueType a = ctx.input_type(0);
  ir::ValueType b = ctx.input_type(1);
  if (a.has_rank && b.has_rank) {
    if (auto axis = legacy_broadcast_axis(ctx, a.dims.size(), b.dims.size()))
      b.dims.resize(a.dims.size() - *axis, ir::Dim::known(1));
  }
  auto dims = broadcast_dims(ctx, {a, b});
  ctx.set_output(0, ir::ValueType{dtype, dims.has_value(), dims.value_or(std::vector<ir::Dim>{})});
}

// ---------------------------------------------------------------------------
// Inference

/// Output 0: input 0's type; input 0 must be in `set`.
template <DTypeSet set>
void infer_unary(InferContext& ctx) {
  require_input_dtype(ctx, 0, set);
  infer_same_as_input(ctx);
}

/// Output 0: bool with input 0's shape; input 0 must be in `set`.
template <DTypeSet set>
void infer_unary_to_bool(InferContext& ctx) {
  require_input_dtype(ctx, 0, set);
  ir::ValueType type = ctx.input_type(0);
  type.dtype = DType::boolean;
  ctx.set_output(0, std::move(type));
}

/// Output 0: the broadcast of all inputs with input 0's dtype; every input in
/// `set` and of one dtype.
template <DTypeSet set>
void infer_broadcast_same_dtype(InferContext& ctx) {
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    if (!ctx.has_input(i)) ctx.fail("input ", i, " is required");
    require_input_dtype(ctx, i, set);
    require_same_dtype(ctx, 0, i);
  }
  if (ctx.num_inputs() == 2)
    infer_binary_broadcast(ctx, ctx.input_type(0).dtype);
  else
    infer_broadcast(ctx);
}

/// Like infer_broadcast_same_dtype but the output is bool (comparisons, logic).
template <DTypeSet set>
void infer_broadcast_same_dtype_to_bool(InferContext& ctx) {
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    if (!ctx.has_input(i)) ctx.fail("input ", i, " is required");
    require_input_dtype(ctx, i, set);
    require_same_dtype(ctx, 0, i);
  }
  if (ctx.num_inputs() == 2)
    infer_binary_broadcast(ctx, DType::boolean);
  else
    infer_broadcast_bool(ctx);
}

// ---------------------------------------------------------------------------
// Kernels

/// Unary kernel over the types of `set`: y = op(x), computed in compute_t<T>,
/// in place when x dies. `Op` is constructed from the KernelContext (to read
/// attributes) and has `template <typename C> C operator()(C) const`; its
/// `static constexpr int64_t grain` sets the parallel chunk size.
template <DTypeSet set, typename Op>
void unary_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Op op(ctx);
  visit_dtype_in<set>(x.dtype(), ctx, [&]<typename T>() {
    const T* in = x.data<T>();
    Tensor& y = allocate_elementwise_output(ctx, x.dtype(), x.shape(), {0});
    map(in, y.data<T>(), x.numel(), Op::grain, [&](T value) { return static_cast<T>(op(to_compute(value))); });
  });
}

/// Binary kernel over two inputs of one dtype in `set`, with broadcasting.
/// `Op` (constructed from the KernelContext) has `template <typename C> R
/// operator()(C, C) const`; `Out` is bool for predicates, else the input type.
template <DTypeSet set, typename Op, bool to_bool = false>
void binary_kernel(KernelContext& ctx) {
  const Tensor& a = ctx.input(0);
  const std::optional<Tensor> legacy_b = legacy_operand_b(ctx);
  const Tensor& b = legacy_b ? *legacy_b : ctx.input(1);
  require_same_dtype(ctx, 0, 1);
  Shape shape = broadcast_shapes(a.shape(), b.shape(), ctx.node().describe());
  const Op op(ctx);
  visit_dtype_in<set>(a.dtype(), ctx, [&]<typename T>() {
    using Out = std::conditional_t<to_bool, bool, T>;
    Tensor& y = allocate_elementwise_output(ctx, dtype_v<Out>, shape, {0, 1});
    zip<T, T, Out>(a, b, y, [&](T u, T v) { return static_cast<Out>(op(to_compute(u), to_compute(v))); });
  });
}

}  // namespace graft::ops::elementwise
