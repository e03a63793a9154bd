/// \file
/// Element types. The numbering follows onnx::TensorProto::DataType so that the
/// importer and the artifact format can store a DType as its integer.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "graft/core/error.h"

namespace graft {

/// Element type of a tensor (values equal ONNX's TensorProto.DataType).
enum class DType : int32_t {
  undefined = 0,
  float32 = 1,
  uint8 = 2,
  int8 = 3,
  uint16 = 4,
  int16 = 5,
  int32 = 6,
  int64 = 7,
  string = 8,
  boolean = 9,
  float16 = 10,
  float64 = 11,
  uint32 = 12,
  uint64 = 13,
  complex64 = 14,
  complex128 = 15,
  bfloat16 = 16,
};

/// Bytes per element; 0 for undefined, string and complex types (which graft
/// does not store).
size_t dtype_size(DType t);
/// Lowercase name ("float32", "int64", "bool", ...).
std::string_view dtype_name(DType t);
/// Parses a name produced by dtype_name; throws invalid_argument otherwise.
DType dtype_from_name(std::string_view name);
/// True for a DType graft can hold in a Tensor.
bool dtype_is_storable(DType t);
/// True for float16, bfloat16, float32, float64.
bool dtype_is_float(DType t);
/// True for the signed and unsigned integer types (not bool).
bool dtype_is_integer(DType t);
/// DType from an ONNX integer, validating the range; throws invalid_model.
DType dtype_from_onnx(int32_t onnx_type);

/// IEEE half precision stored as its bits. Both conversions are inline and
/// branchless, so that loops over float16 values vectorize.
struct float16_t {
  uint16_t bits = 0;
  float16_t() = default;
  /// `f` rounded to the nearest float16, ties to even (from 65520 on:
  /// infinity); a NaN keeps its sign and the top of its payload, made quiet.
  explicit float16_t(float f) {
    const uint32_t x = std::bit_cast<uint32_t>(f);
    const uint32_t magnitude = x & 0x7fffffffu;
    const uint32_t sign = (x >> 16) & 0x8000u;
    // Normal range: the mantissa rounded to 10 bits (a carry may reach the
    // exponent, correctly), the exponent rebiased.
    const uint32_t rounded = (magnitude + 0xfffu + ((magnitude >> 13) & 1u)) & ~0x1fffu;
    const uint32_t normal = (rounded >> 13) - ((127u - 15u) << 10);
    // Below 2^-14 float16's step is 2^-24: adding 0.5 makes it float32's,
    // whose own rounding (to even) then rounds.
    const float tiny = std::bit_cast<float>(magnitude) + 0.5f;
    const uint32_t subnormal = std::bit_cast<uint32_t>(tiny) - std::bit_cast<uint32_t>(0.5f);
    uint32_t h = magnitude < 0x38800000u ? subnormal : normal;
    h = magnitude >= 0x477ff000u ? 0x7c00u : h;                                       // 65520 and up
    h = magnitude > 0x7f800000u ? 0x7e00u | ((magnitude >> 13) & 0x3ffu) : h;         // NaN
    bits = static_cast<uint16_t>(h | sign);
  }
  /// The exact float32 value.
  operator float() const {
    const uint32_t magnitude = bits & 0x7fffu;
    const uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
    uint32_t normal = (magnitude << 13) + ((127u - 15u) << 23);
    normal = magnitude >= 0x7c00u ? normal + ((128u - 16u) << 23) : normal;  // infinities, NaNs
    const uint32_t subnormal = std::bit_cast<uint32_t>(static_cast<float>(magnitude) * 0x1p-24f);
    return std::bit_cast<float>((magnitude < 0x400u ? subnormal : normal) | sign);
  }
};

/// bfloat16 stored as its bits (the top half of a float32).
struct bfloat16_t {
  uint16_t bits = 0;
  bfloat16_t() = default;
  explicit bfloat16_t(float f);
  operator float() const {
    uint32_t u = static_cast<uint32_t>(bits) << 16;
    return std::bit_cast<float>(u);
  }
};

/// Maps a C++ type to its DType.
template <typename T> struct dtype_of;
template <> struct dtype_of<float> { static constexpr DType value = DType::float32; };
template <> struct dtype_of<double> { static constexpr DType value = DType::float64; };
template <> struct dtype_of<float16_t> { static constexpr DType value = DType::float16; };
template <> struct dtype_of<bfloat16_t> { static constexpr DType value = DType::bfloat16; };
template <> struct dtype_of<int8_t> { static constexpr DType value = DType::int8; };
template <> struct dtype_of<int16_t> { static constexpr DType value = DType::int16; };
template <> struct dtype_of<int32_t> { static constexpr DType value = DType::int32; };
template <> struct dtype_of<int64_t> { static constexpr DType value = DType::int64; };
template <> struct dtype_of<uint8_t> { static constexpr DType value = DType::uint8; };
template <> struct dtype_of<uint16_t> { static constexpr DType value = DType::uint16; };
template <> struct dtype_of<uint32_t> { static constexpr DType value = DType::uint32; };
template <> struct dtype_of<uint64_t> { static constexpr DType value = DType::uint64; };
template <> struct dtype_of<bool> { static constexpr DType value = DType::boolean; };
template <typename T> inline constexpr DType dtype_v = dtype_of<T>::value;

/// Calls fn.template operator()<T>() with the C++ type T of `t`, for every
/// storable dtype. Throws unsupported (naming `what`) for others.
/// Usage: visit_dtype(t, "Relu", [&]<typename T>() { ... });
template <typename Fn>
decltype(auto) visit_dtype(DType t, std::string_view what, Fn&& fn) {
  switch (t) {
    case DType::float32: return fn.template operator()<float>();
    case DType::float64: return fn.template operator()<double>();
    case DType::float16: return fn.template operator()<float16_t>();
    case DType::bfloat16: return fn.template operator()<bfloat16_t>();
    case DType::int8: return fn.template operator()<int8_t>();
    case DType::int16: return fn.template operator()<int16_t>();
    case DType::int32: return fn.template operator()<int32_t>();
    case DType::int64: return fn.template operator()<int64_t>();
    case DType::uint8: return fn.template operator()<uint8_t>();
    case DType::uint16: return fn.template operator()<uint16_t>();
    case DType::uint32: return fn.template operator()<uint32_t>();
    case DType::uint64: return fn.template operator()<uint64_t>();
    case DType::boolean: return fn.template operator()<bool>();
    default: break;
  }
  fail(ErrorKind::unsupported, what, ": dtype ", dtype_name(t), " is not supported");
}

/// Like visit_dtype but only for float32, float64, float16 and bfloat16.
template <typename Fn>
decltype(auto) visit_float_dtype(DType t, std::string_view what, Fn&& fn) {
  switch (t) {
    case DType::float32: return fn.template operator()<float>();
    case DType::float64: return fn.template operator()<double>();
    case DType::float16: return fn.template operator()<float16_t>();
    case DType::bfloat16: return fn.template operator()<bfloat16_t>();
    default: break;
  }
  fail(ErrorKind::unsupported, what, ": dtype ", dtype_name(t), " is not supported (expected a float type)");
}

/// Like visit_dtype but for numeric types only (no bool).
template <typename Fn>
decltype(auto) visit_numeric_dtype(DType t, std::string_view what, Fn&& fn) {
  if (t == DType::boolean)
    fail(ErrorKind::unsupported, what, ": dtype bool is not supported (expected a numeric type)");
  return visit_dtype(t, what, std::forward<Fn>(fn));
}

/// The type arithmetic on T is done in: float for float16/bfloat16, T otherwise.
template <typename T> struct compute_type { using type = T; };
template <> struct compute_type<float16_t> { using type = float; };
template <> struct compute_type<bfloat16_t> { using type = float; };
template <typename T> using compute_t = typename compute_type<T>::type;

}  // namespace graft
