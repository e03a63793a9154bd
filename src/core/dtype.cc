#include "graft/core/dtype.h"

#include <cmath>

namespace graft {

size_t dtype_size(DType t) {
  switch (t) {
    case DType::float32: case DType::int32: case DType::uint32: return 4;
    case DType::float64: case DType::int64: case DType::uint64: return 8;
    case DType::float16: case DType::bfloat16: case DType::int16: case DType::uint16: return 2;
    case DType::int8: case DType::uint8: case DType::boolean: return 1;
    default: return 0;
  }
}

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::undefined: return "undefined";
    case DType::float32: return "float32";
    case DType::uint8: return "uint8";
    case DType::int8: return "int8";
    case DType::uint16: return "uint16";
    case DType::int16: return "int16";
    case DType::int32: return "int32";
    case DType::int64: return "int64";
    case DType::string: return "string";
    case DType::boolean: return "bool";
    case DType::float16: return "float16";
    case DType::float64: return "float64";
    case DType::uint32: return "uint32";
    case DType::uint64: return "uint64";
    case DType::complex64: return "complex64";
    case DType::complex128: return "complex128";
    case DType::bfloat16: return "bfloat16";
  }
  return "invalid";
}

DType dtype_from_name(std::string_view name) {
  for (int i = 0; i <= 16; ++i) {
    auto t = static_cast<DType>(i);
    if (dtype_name(t) == name) return t;
  }
  if (name == "float") return DType::float32;
  if (name == "double") return DType::float64;
  fail(ErrorKind::invalid_argument, "unknown dtype '", name, "'");
}

bool dtype_is_storable(DType t) { return dtype_size(t) != 0; }

bool dtype_is_float(DType t) {
  return t == DType::float32 || t == DType::float64 || t == DType::float16 || t == DType::bfloat16;
}

bool dtype_is_integer(DType t) {
  switch (t) {
    case DType::int8: case DType::int16: case DType::int32: case DType::int64:
    case DType::uint8: case DType::uint16: case DType::uint32: case DType::uint64: return true;
    default: return false;
  }
}

DType dtype_from_onnx(int32_t onnx_type) {
  if (onnx_type < 0 || onnx_type > 16) fail(ErrorKind::invalid_model, "invalid tensor data type ", onnx_type);
  return static_cast<DType>(onnx_type);
}

float16_t::float16_t(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t mant = x & 0x7fffffu;
  int32_t exp = static_cast<int32_t>((x >> 23) & 0xff);
  if (exp == 0xff) {  // inf or nan
    bits = static_cast<uint16_t>(sign | 0x7c00u | (mant ? 0x200u | (mant >> 13) : 0u));
    return;
  }
  int32_t e = exp - 127 + 15;
  if (e >= 0x1f) {
    bits = static_cast<uint16_t>(sign | 0x7c00u);
    return;
  }
  if (e <= 0) {
    if (e < -10) {
      bits = static_cast<uint16_t>(sign);
      return;
    }
    mant |= 0x800000u;
    uint32_t shift = static_cast<uint32_t>(14 - e);
    uint32_t half = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1u);
    uint32_t halfway = 1u << (shift - 1);
    if (rem > halfway || (rem == halfway && (half & 1u))) ++half;
    bits = static_cast<uint16_t>(sign | half);
    return;
  }
  uint32_t half = sign | (static_cast<uint32_t>(e) << 10) | (mant >> 13);
  uint32_t rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (half & 1u))) ++half;  // may carry into exponent: correct
  bits = static_cast<uint16_t>(half);
}

float16_t::operator float() const {
  uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  uint32_t exp = (bits >> 10) & 0x1fu;
  uint32_t mant = bits & 0x3ffu;
  uint32_t out;
  if (exp == 0) {
    if (mant == 0) {
      out = sign;
    } else {
      int e = -1;
      do {
        ++e;
        mant <<= 1;
      } while ((mant & 0x400u) == 0);
      out = sign | (static_cast<uint32_t>(127 - 15 - e) << 23) | ((mant & 0x3ffu) << 13);
    }
  } else if (exp == 0x1f) {
    out = sign | 0x7f800000u | (mant << 13);
  } else {
    out = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  return std::bit_cast<float>(out);
}

bfloat16_t::bfloat16_t(float f) {
  uint32_t u = std::bit_cast<uint32_t>(f);
  if (std::isnan(f)) {
    bits = static_cast<uint16_t>((u >> 16) | 0x40u);
    return;
  }
  uint32_t rounding = 0x7fffu + ((u >> 16) & 1u);
  bits = static_cast<uint16_t>((u + rounding) >> 16);
}

}  // namespace graft
