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
