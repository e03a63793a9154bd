// Exact scalar semantics of every kernel IR primitive, written as the
// reference kernels in src/ops compute them (wrapping integers, x/0 = 0 for
// integers, NaN-propagating max/min, graft's float-to-integer conversion).
// The interpreter evaluates these; the emitters render the same rules.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "graft/ir/kernel_ir.h"

namespace graft::codegen::scalar {

template <typename T>
inline constexpr bool is_int_v = std::is_integral_v<T> && !std::is_same_v<T, bool>;
template <typename T>
using wrap_t = std::make_unsigned_t<T>;

/// graft's float -> integer conversion: truncate, NaN -> 0, saturate at the
/// int64 range, then wrap to the target width.
template <typename I>
inline I float_to_integer(double value) {
  if (std::isnan(value)) return 0;
  value = std::trunc(value);
  if (value >= 9223372036854775808.0) return static_cast<I>(std::numeric_limits<int64_t>::max());
  if (value < -9223372036854775808.0) return static_cast<I>(std::numeric_limits<int64_t>::min());
  return static_cast<I>(static_cast<int64_t>(value));
}

template <typename To, typename From>
inline To convert(From v) {
  if constexpr (std::is_same_v<To, From>) {
    return v;
  } else if constexpr (std::is_same_v<To, bool>) {
    return v != From(0);
  } else if constexpr (std::is_floating_point_v<To>) {
    return static_cast<To>(v);
  } else if constexpr (std::is_floating_point_v<From>) {
    return float_to_integer<To>(static_cast<double>(v));
  } else {
    return static_cast<To>(v);
  }
}

template <typename T>
inline T integer_power(T base, T exponent) {
  if (exponent < 0) {
    if (base == 1) return 1;
    if (base == -1) return (exponent & 1) ? T(-1) : T(1);
    return 0;
  }
  using W = wrap_t<T>;
  W result = 1, factor = static_cast<W>(base);
  auto e = static_cast<W>(exponent);
  while (e != 0) {
    if (e & 1u) result = static_cast<W>(result * factor);
    factor = static_cast<W>(factor * factor);
    e = static_cast<W>(e >> 1);
  }
  return static_cast<T>(result);
}

template <typename T>
inline T unary(ir::ExprOp op, T x) {
  if constexpr (std::is_same_v<T, bool>) {
    return op == ir::ExprOp::logical_not ? !x : x;
  } else if constexpr (is_int_v<T>) {
    switch (op) {
      case ir::ExprOp::neg: return static_cast<T>(wrap_t<T>(0) - static_cast<wrap_t<T>>(x));
      case ir::ExprOp::abs: return x < 0 ? static_cast<T>(wrap_t<T>(0) - static_cast<wrap_t<T>>(x)) : x;
      case ir::ExprOp::sign: return static_cast<T>((x > 0) - (x < 0));
      default: return x;
    }
  } else {
    switch (op) {
      case ir::ExprOp::neg: return -x;
      case ir::ExprOp::abs: return std::abs(x);
      case ir::ExprOp::exp: return std::exp(x);
      case ir::ExprOp::expm1: return std::expm1(x);
      case ir::ExprOp::log: return std::log(x);
      case ir::ExprOp::log1p: return std::log1p(x);
      case ir::ExprOp::sqrt: return std::sqrt(x);
      case ir::ExprOp::tanh: return std::tanh(x);
      case ir::ExprOp::sigmoid: {
        if (x >= T(0)) return T(1) / (T(1) + std::exp(-x));
        T e = std::exp(x);
        return e / (T(1) + e);
      }
      case ir::ExprOp::erf: return std::erf(x);
      case ir::ExprOp::sin: return std::sin(x);
      case ir::ExprOp::cos: return std::cos(x);
      case ir::ExprOp::floor: return std::floor(x);
      case ir::ExprOp::ceil: return std::ceil(x);
      case ir::ExprOp::round: return std::nearbyint(x);
      case ir::ExprOp::sign:
        if (std::isnan(x)) return x;
        return x > T(0) ? T(1) : (x < T(0) ? T(-1) : T(0));
      default: return x;
    }
  }
}

template <typename T>
inline T binary(ir::ExprOp op, T a, T b) {
  if constexpr (std::is_same_v<T, bool>) {
    switch (op) {
      case ir::ExprOp::logical_and: return a && b;
      case ir::ExprOp::logical_or: return a || b;
      case ir::ExprOp::logical_xor: return a != b;
      default: return a;
    }
  } else if constexpr (is_int_v<T>) {
    using W = wrap_t<T>;
    switch (op) {
      case ir::ExprOp::add: return static_cast<T>(static_cast<W>(a) + static_cast<W>(b));
      case ir::ExprOp::sub: return static_cast<T>(static_cast<W>(a) - static_cast<W>(b));
      case ir::ExprOp::mul: return static_cast<T>(static_cast<W>(a) * static_cast<W>(b));
      case ir::ExprOp::div:
        if (b == 0) return 0;
        if (b == -1) return static_cast<T>(W(0) - static_cast<W>(a));
        return static_cast<T>(a / b);
      case ir::ExprOp::pow: return integer_power(a, b);
      case ir::ExprOp::max: return a > b ? a : b;
      case ir::ExprOp::min: return a < b ? a : b;
      default: return a;
    }
  } else {
    switch (op) {
      case ir::ExprOp::add: return a + b;
      case ir::ExprOp::sub: return a - b;
      case ir::ExprOp::mul: return a * b;
      case ir::ExprOp::div: return a / b;
      case ir::ExprOp::pow: return std::pow(a, b);
      case ir::ExprOp::max: return (a != a || a > b) ? a : b;
      case ir::ExprOp::min: return (a != a || a < b) ? a : b;
      default: return a;
    }
  }
}

template <typename T>
inline bool compare(ir::ExprOp op, T a, T b) {
  switch (op) {
    case ir::ExprOp::equal: return a == b;
    case ir::ExprOp::less: return a < b;
    case ir::ExprOp::less_equal: return a <= b;
    case ir::ExprOp::greater: return a > b;
    case ir::ExprOp::greater_equal: return a >= b;
    default: return false;
  }
}

}  // namespace graft::codegen::scalar
