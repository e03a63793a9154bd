// Shared helpers of the data-movement op families: reading integer inputs
// (shapes, axes, indices) at run time and from constants at inference time.
#include "data_movement.h"

#include <cstring>

#include "graft/core/parallel.h"

namespace graft::ops {

std::vector<int64_t> read_indices(const KernelContext& ctx, const Tensor& t, std::string_view name) {
  std::vector<int64_t> out(static_cast<size_t>(t.numel()));
  auto copy = [&]<typename T>() {
    const T* p = static_cast<const T*>(t.raw_data());
    for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<int64_t>(p[i]);
  };
  switch (t.dtype()) {
    case DType::int64:
      copy.template operator()<int64_t>();
      break;
    case DType::int32:
      copy.template operator()<int32_t>();
      break;
    case DType::int16:
      copy.template operator()<int16_t>();
      break;
    case DType::int8:
      copy.template operator()<int8_t>();
      break;
    case DType::uint8:
      copy.template operator()<uint8_t>();
      break;
    case DType::uint16:
      copy.template operator()<uint16_t>();
      break;
    case DType::uint32:
      copy.template operator()<uint32_t>();
      break;
    case DType::uint64:
      copy.template operator()<uint64_t>();
      break;
    case DType::boolean:
      copy.template operator()<uint8_t>();
      break;
    default:
      ctx.fail(name, " must be an integer tensor, got ", t.type_string());
  }
  return out;
}

std::vector<int64_t> input_ints(const KernelContext& ctx, size_t i, std::string_view name) {
  const Tensor& t = ctx.input(i);
  if (t.rank() > 1) ctx.fail(name, " must be a scalar or 1-D tensor, got ", t.type_string());
  return read_indices(ctx, t, name);
}

std::optional<std::vector<int64_t>> constant_input_ints(const InferContext& ctx, size_t i) {
  if (!ctx.has_input(i)) return std::nullopt;
  const Tensor* t = ctx.input_constant(i);
  if (!t) return std::nullopt;
  if (!dtype_is_integer(t->dtype())) ctx.fail("input ", i, " must hold integers, got ", t->type_string());
  return t->to_int64_vector();
}

std::optional<std::vector<double>> constant_input_doubles(const InferContext& ctx, size_t i) {
  if (!ctx.has_input(i)) return std::nullopt;
  const Tensor* t = ctx.input_constant(i);
  if (!t) return std::nullopt;
  if (!dtype_is_integer(t->dtype()) && !dtype_is_float(t->dtype()))
    ctx.fail("input ", i, " must be numeric, got ", t->type_string());
  std::vector<double> out(static_cast<size_t>(t->numel()));
  for (int64_t k = 0; k < t->numel(); ++k) out[static_cast<size_t>(k)] = t->value_as_double(k);
  return out;
}

std::optional<int64_t> known_length(const InferContext& ctx, size_t i) {
  // A declared length past this is left unknown: callers make it a rank
  // (Reshape, Expand, Unsqueeze, ConstantOfShape: one Dim each), and a model
  // may declare a shape input of 2^31 elements that no run could feed.
  constexpr int64_t kMaxDeclaredLength = 1024;
  if (!ctx.has_input(i)) return std::nullopt;
  if (const Tensor* t = ctx.input_constant(i)) return t->numel();
  const ir::ValueType& type = ctx.input_type(i);
  if (!type.has_rank) return std::nullopt;
  if (type.dims.empty()) return 1;
  if (type.dims.size() == 1 && type.dims[0].is_known() && type.dims[0].value <= kMaxDeclaredLength)
    return type.dims[0].value;
  return std::nullopt;
}

std::optional<Shape> known_shape(const ir::ValueType& type) {
  if (!type.has_rank) return std::nullopt;
  Shape shape;
  for (const ir::Dim& d : type.dims) {
    if (!d.is_known()) return std::nullopt;
    shape.push_back(d.value);
  }
  return shape;
}

ir::Dim dims_product(const std::vector<ir::Dim>& dims, size_t begin, size_t end) {
  int64_t product = 1;
  const ir::Dim* unknown = nullptr;
  int unknown_count = 0;
  for (size_t d = begin; d < end; ++d) {
    if (dims[d].is_known()) {
      // A product past 2^63 is no tensor's size: left unknown, for the
      // kernel's shape check to name.
      if (__builtin_mul_overflow(product, dims[d].value, &product)) return ir::Dim{};
    } else {
      unknown = &dims[d];
      ++unknown_count;
    }
  }
  if (unknown_count == 0) return ir::Dim::known(product);
  if (product == 0) return ir::Dim::known(0);
  if (unknown_count == 1 && product == 1) return *unknown;
  return ir::Dim{};
}

void parallel_copy(void* dst, const void* src, size_t nbytes) {
  constexpr int64_t kChunk = 1 << 16;
  if (nbytes == 0) return;
  if (nbytes <= static_cast<size_t>(kChunk)) {
    std::memcpy(dst, src, nbytes);
    return;
  }
  int64_t chunks = static_cast<int64_t>((nbytes + kChunk - 1) / kChunk);
  parallel_for(chunks, 4, [&](int64_t b, int64_t e) {
    size_t begin = static_cast<size_t>(b) * kChunk;
    size_t end = std::min(nbytes, static_cast<size_t>(e) * kChunk);
    std::memcpy(static_cast<char*>(dst) + begin, static_cast<const char*>(src) + begin, end - begin);
  });
}

}  // namespace graft::ops
