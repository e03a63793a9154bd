// Linear quantization: QuantizeLinear, DequantizeLinear and
// DynamicQuantizeLinear.
//   quantize:   y = saturate(round_half_to_even(x / scale) + zero_point)
//   dequantize: y = (x - zero_point) * scale
// scale and zero_point are scalars (per tensor) or 1-D along `axis` (per
// axis, opset 13; default axis 1). DynamicQuantizeLinear picks the uint8
// scale and zero point that map [min(x, 0), max(x, 0)] onto [0, 255].
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <type_traits>

#include "graft/core/parallel.h"
#include "graft/ops/op_context.h"
#include "math_common.h"

namespace graft::ops {
namespace {

/// For per-axis parameters: the [outer, channels, inner] view of x along axis.
struct AxisView {
  int64_t channels = 1, inner = 1;
};

/// Checks that `param` (scale or zero point) is a scalar or 1-D along axis.
AxisView parameter_view(const KernelContext& ctx, const Tensor& x, const Tensor& param, const char* what) {
  AxisView v;
  if (param.numel() == 1 && param.rank() <= 1) return v;
  if (param.rank() != 1) ctx.fail(what, " must be a scalar or 1-D, got ", param.type_string());
  const int64_t axis = normalize_axis(ctx.attrs().get_int("axis", 1), x.rank(), ctx.node().describe());
  if (param.dim(0) != x.dim(axis))
    ctx.fail(what, " ", param.type_string(), " must hold one value per index of axis ", axis, " of ", x.type_string());
  v.channels = x.dim(axis);
  for (int64_t d = axis + 1; d < x.rank(); ++d) v.inner *= x.dim(d);
  return v;
}

/// Index into a per-axis parameter for element i of x.
inline int64_t parameter_index(const AxisView& v, int64_t i) {
  return v.channels == 1 ? 0 : (i / v.inner) % v.channels;
}

/// The index into a per-axis parameter for consecutive elements of x,
/// starting at element `first`: parameter_index without a division each.
struct AxisCursor {
  AxisCursor(const AxisView& v, int64_t first)
      : channels(v.channels), inner(v.inner), index(parameter_index(v, first)), offset(first % v.inner) {}
  /// How many elements from the current one share its parameter.
  int64_t run_left() const { return channels == 1 ? std::numeric_limits<int64_t>::max() : inner - offset; }
  /// Moves on by n elements, at most run_left().
  void advance(int64_t n) {
    if (channels == 1) return;
    offset += n;
    if (offset < inner) return;
    offset = 0;
    if (++index == channels) index = 0;
  }
  int64_t channels, inner;
  int64_t index;   ///< parameter_index of the current element
  int64_t offset;  ///< the current element's position within its run of `inner`
};

/// Opset 21's blocked quantization (block_size > 0: one scale per block of
/// an axis) is refused by name; 0, the default, is per tensor or per axis.
template <typename Context>
void refuse_blocked(const Context& ctx) {
  const int64_t block_size = ctx.attrs().get_int("block_size", 0);
  if (block_size < 0) ctx.fail("block_size ", block_size, " is negative");
  if (block_size > 0) ctx.unsupported("blocked quantization (block_size ", block_size, ")");
}

/// QuantizeLinear's output dtype: the zero point's, else opset 21's
/// output_dtype attribute, else uint8.
template <typename Context>
DType quantized_dtype(const Context& ctx, std::optional<DType> zero_point) {
  const int64_t attribute = ctx.attrs().get_int("output_dtype", 0);
  // uint8, int8, uint16, int16: what the kernel writes (float8 and 4-bit types are not supported).
  if (attribute != 0 && (attribute < 2 || attribute > 5))
    ctx.fail("output_dtype ", attribute, " is not uint8 (2), int8 (3), uint16 (4) or int16 (5)");
  const DType requested = static_cast<DType>(attribute);
  if (zero_point) {
    if (attribute != 0 && requested != *zero_point)
      ctx.fail("output_dtype ", dtype_name(requested), " differs from y_zero_point's ", dtype_name(*zero_point));
    return *zero_point;
  }
  return attribute != 0 ? requested : DType::uint8;
}

void infer_quantize(InferContext& ctx) {
  const ir::ValueType& x = ctx.input_type(0);
  const DType out = quantized_dtype(ctx, ctx.has_input(2) ? std::optional(ctx.input_type(2).dtype) : std::nullopt);
  ctx.set_output(0, ir::ValueType{out, x.has_rank, x.dims});
}

void quantize_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& scale = ctx.input(1);
  const Tensor* zero_point = ctx.has_input(2) ? &ctx.input(2) : nullptr;
  refuse_blocked(ctx);
  const DType out_dtype = quantized_dtype(ctx, zero_point ? std::optional(zero_point->dtype()) : std::nullopt);
  if (!dtype_is_float(scale.dtype())) ctx.fail("y_scale must be a float tensor, got ", scale.type_string());
  const AxisView sv = parameter_view(ctx, x, scale, "y_scale");
  AxisView zv;
  if (zero_point) zv = parameter_view(ctx, x, *zero_point, "y_zero_point");
  const std::vector<float> scales = tensor_to_vector<float>(scale);
  const std::vector<float> zeros = zero_point ? tensor_to_vector<float>(*zero_point) : std::vector<float>{0.0f};
  Tensor& y = ctx.allocate_output(0, out_dtype, x.shape());
  const int64_t n = x.numel();
  const std::vector<float> values = tensor_to_vector<float>(x);
  visit_dtype(out_dtype, ctx.node().describe(), [&]<typename Q>() {
    if constexpr (std::is_same_v<Q, uint8_t> || std::is_same_v<Q, int8_t> || std::is_same_v<Q, uint16_t> ||
                  std::is_same_v<Q, int16_t>) {
      Q* out = y.data<Q>();
      const float lo = std::numeric_limits<Q>::min(), hi = std::numeric_limits<Q>::max();
      parallel_for(n, 16384, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
          const float s = scales[static_cast<size_t>(parameter_index(sv, i))];
          const float z = zeros[static_cast<size_t>(parameter_index(zv, i))];
          const float v = std::nearbyint(values[static_cast<size_t>(i)] / s) + z;
          out[i] = static_cast<Q>(std::clamp(std::isnan(v) ? 0.0f : v, lo, hi));
        }
      });
    } else {
      ctx.unsupported("output dtype ", dtype_name(out_dtype), " (expected int8 or uint8)");
    }
  });
}

void infer_dequantize(InferContext& ctx) {
  const ir::ValueType& x = ctx.input_type(0);
  ctx.set_output(0, ir::ValueType{ctx.input_type(1).dtype, x.has_rank, x.dims});
}

void dequantize_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& scale = ctx.input(1);
  const Tensor* zero_point = ctx.has_input(2) ? &ctx.input(2) : nullptr;
  refuse_blocked(ctx);
  if (!dtype_is_float(scale.dtype())) ctx.fail("x_scale must be a float tensor, got ", scale.type_string());
  if (!dtype_is_integer(x.dtype())) ctx.fail("x must be an integer tensor, got ", x.type_string());
  if (zero_point && zero_point->dtype() != x.dtype())
    ctx.fail("x_zero_point dtype ", dtype_name(zero_point->dtype()), " differs from x ", dtype_name(x.dtype()));
  const AxisView sv = parameter_view(ctx, x, scale, "x_scale");
  AxisView zv;
  if (zero_point) zv = parameter_view(ctx, x, *zero_point, "x_zero_point");
  const std::vector<double> scales = tensor_to_vector<double>(scale);
  const std::vector<double> zeros = zero_point ? tensor_to_vector<double>(*zero_point) : std::vector<double>{0.0};
  Tensor& y = ctx.allocate_output(0, scale.dtype(), x.shape());
  // x is read in its own type, and the values sharing a scale and zero
  // point are done as one run: a weight tensor's dequantization, which
  // fold-constants evaluates, is one vectorized pass. For 8- and 16-bit x
  // and a float32 (or narrower) scale the arithmetic is float32: x - z is
  // exact there, and the product, exact in double, is rounded once either
  // way, so the result is the double formula's.
  visit_dtype(x.dtype(), ctx.node().describe(), [&]<typename X>() {
    if constexpr (std::is_integral_v<X>) {
      const X* in = x.data<X>();
      visit_float_dtype(y.dtype(), ctx.node().describe(), [&]<typename T>() {
        constexpr bool in_float = sizeof(X) <= 2 && !std::is_same_v<T, double>;
        using Compute = std::conditional_t<in_float, float, double>;
        const std::vector<Compute> s_values(scales.begin(), scales.end()), z_values(zeros.begin(), zeros.end());
        T* out = y.data<T>();
        parallel_for(x.numel(), 16384, [&](int64_t begin, int64_t end) {
          AxisCursor s(sv, begin), z(zv, begin);
          for (int64_t i = begin; i < end;) {
            const int64_t n = std::min({end - i, s.run_left(), z.run_left()});
            const Compute scale = s_values[static_cast<size_t>(s.index)];
            const Compute zero = z_values[static_cast<size_t>(z.index)];
#pragma omp simd
            for (int64_t k = i; k < i + n; ++k)
              out[k] = static_cast<T>(static_cast<compute_t<T>>((static_cast<Compute>(in[k]) - zero) * scale));
            i += n;
            s.advance(n);
            z.advance(n);
          }
        });
      });
    }
  });
}

void infer_dynamic_quantize(InferContext& ctx) {
  const ir::ValueType& x = ctx.input_type(0);
  ctx.set_output(0, ir::ValueType{DType::uint8, x.has_rank, x.dims});
  ctx.set_output(1, ir::ValueType::of(DType::float32, {}));
  ctx.set_output(2, ir::ValueType::of(DType::uint8, {}));
}

void dynamic_quantize_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.dtype() != DType::float32) ctx.unsupported("x must be float32, got ", x.type_string());
  const float* in = x.data<float>();
  const int64_t n = x.numel();
  float lo = 0.0f, hi = 0.0f;
  for (int64_t i = 0; i < n; ++i) {
    lo = std::min(lo, in[i]);
    hi = std::max(hi, in[i]);
  }
  const float scale = (hi - lo) / 255.0f;
  const float zero = scale == 0.0f ? 0.0f : std::clamp(std::nearbyint(-lo / scale), 0.0f, 255.0f);
  Tensor& y = ctx.allocate_output(0, DType::uint8, x.shape());
  ctx.allocate_output(1, DType::float32, {}).data<float>()[0] = scale;
  ctx.allocate_output(2, DType::uint8, {}).data<uint8_t>()[0] = static_cast<uint8_t>(zero);
  uint8_t* out = y.data<uint8_t>();
  parallel_for(n, 16384, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const float v = scale == 0.0f ? 0.0f : std::nearbyint(in[i] / scale) + zero;
      out[i] = static_cast<uint8_t>(std::clamp(std::isnan(v) ? 0.0f : v, 0.0f, 255.0f));
    }
  });
}

}  // namespace

GRAFT_REGISTER_OP("", "QuantizeLinear", infer_quantize, quantize_kernel);
GRAFT_REGISTER_OP("", "DequantizeLinear", infer_dequantize, dequantize_kernel);
GRAFT_REGISTER_OP("", "DynamicQuantizeLinear", infer_dynamic_quantize, dynamic_quantize_kernel);

}  // namespace graft::ops
