// ConvInteger and QLinearConv (ONNX): convolutions of 8-bit integers with
// zero points, accumulated exactly in int32.
//
// Both subtract the zero points first (per tensor for the data, per tensor or
// per output channel for the weight), so padding contributes zero, then run
// im2col and an integer matrix product per image, group and chunk of output
// pixels (the scratch stays small whatever the shapes). ConvInteger
// returns the int32 sums; QLinearConv adds its int32 bias and requantizes:
//   y = saturate(round_half_even(sum * x_scale * w_scale[m] / y_scale) + y_zero_point).
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "graft/core/kernel_interrupt.h"
#include "graft/core/parallel.h"
#include "graft/ops/conv_util.h"
#include "graft/ops/op_context.h"
#include "math_common.h"

namespace graft::ops {
namespace {

using conv::ConvProblem;

// A zero point (or scale) that is a scalar or a 1-element tensor.
const Tensor& scalar_input(const KernelContext& ctx, size_t index, const char* name, DType dtype) {
  const Tensor& t = ctx.input(index);
  if (t.dtype() != dtype || t.numel() != 1 || t.rank() > 1)
    ctx.fail("input ", name, " is ", t.type_string(), ", expected a ", dtype_name(dtype), " scalar");
  return t;
}

// Per-output-channel values of a weight zero point or scale: a scalar, or one per channel.
std::vector<double> per_channel(const KernelContext& ctx, size_t index, const char* name, DType dtype,
                                int64_t channels) {
  const Tensor& t = ctx.input(index);
  if (t.dtype() != dtype || (!(t.numel() == 1 && t.rank() <= 1) && !(t.rank() == 1 && t.dim(0) == channels)))
    ctx.fail("input ", name, " is ", t.type_string(), ", expected a ", dtype_name(dtype), " scalar or [", channels,
             "]");
  std::vector<double> values(static_cast<size_t>(channels));
  for (int64_t m = 0; m < channels; ++m) values[static_cast<size_t>(m)] = t.value_as_double(t.numel() == 1 ? 0 : m);
  return values;
}

// Bound on the scratch (elements) of one chunk of output pixels: its im2col
// columns and its sums. Problems larger than that run chunk by chunk, so the
// only large allocation is the output (which the memory limit judges).
constexpr int64_t kScratchBudget = int64_t{1} << 21;

// The integer sums of (x - x_zero) * (w - w_zero[m]), handed out row by row:
// emit_row(n, m, p0, p1, sums) for image n, output channel m and the output
// pixels [p0, p1) of one chunk, sums[j] being pixel p0 + j's. Rows of one
// chunk are emitted from several threads at once.
template <typename EmitRow>
void for_each_sum_row(const ConvProblem& p, const Tensor& x, int32_t x_zero, const Tensor& w,
                      const std::vector<double>& w_zero, EmitRow&& emit_row) {
  const conv::Geometry3d& g = p.geometry;
  const int64_t cg = p.in_channels / p.group, mg = p.out_channels / p.group;
  const int64_t reduce = cg * g.kernel_size(), pixels = g.output_size(), in_plane = g.input_size();
  if (pixels == 0 || mg == 0) return;
  std::vector<int32_t> xs(static_cast<size_t>(x.numel())), ws(static_cast<size_t>(w.numel()));
  for (int64_t i = 0; i < x.numel(); ++i)
    xs[static_cast<size_t>(i)] = static_cast<int32_t>(x.value_as_int64(i)) - x_zero;
  for (int64_t i = 0; i < w.numel(); ++i)
    ws[static_cast<size_t>(i)] = static_cast<int32_t>(w.value_as_int64(i)) -
                                 static_cast<int32_t>(w_zero[static_cast<size_t>(reduce == 0 ? 0 : i / reduce)]);
  // Whole output rows per chunk (im2col fills rows).
  const int64_t row = std::max<int64_t>(1, g.output[2]);
  const int64_t chunk_rows = std::max<int64_t>(1, kScratchBudget / std::max<int64_t>({1, reduce * row, mg * row}));
  const int64_t chunk = std::min(pixels, chunk_rows * row);
  std::vector<int32_t> col(static_cast<size_t>(reduce * chunk));
  std::vector<int32_t> sums(static_cast<size_t>(mg * chunk));
  for (int64_t task = 0; task < p.batch * p.group; ++task) {
    const int64_t n = task / p.group, grp = task % p.group;
    const int32_t* weights = ws.data() + grp * mg * reduce;
    for (int64_t p0 = 0; p0 < pixels; p0 += chunk) {
      check_kernel_interrupt();
      const int64_t p1 = std::min(pixels, p0 + chunk), width = p1 - p0;
      if (reduce > 0)
        conv::im2col<int32_t>(xs.data() + (n * p.in_channels + grp * cg) * in_plane, cg, g, p0, p1, col.data(), width);
      parallel_for(mg, std::max<int64_t>(1, 65536 / std::max<int64_t>(1, reduce * width)), [&](int64_t m0, int64_t m1) {
        for (int64_t m = m0; m < m1; ++m) {
          int32_t* row = sums.data() + m * width;
          std::fill(row, row + width, 0);
          for (int64_t k = 0; k < reduce; ++k) {
            const int32_t a = weights[m * reduce + k];
            if (a == 0) continue;
            const int32_t* b = col.data() + k * width;
            for (int64_t j = 0; j < width; ++j) row[j] += a * b[j];
          }
          emit_row(n, grp * mg + m, p0, p1, static_cast<const int32_t*>(row));
        }
      });
    }
  }
}

void conv_integer_infer(InferContext& ctx) { conv::infer_conv_output(ctx, 0, 1, DType::int32); }

void conv_integer_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& w = ctx.input(1);
  if (!is_8bit(x.dtype()) || !is_8bit(w.dtype()))
    ctx.unsupported("inputs are ", dtype_name(x.dtype()), " and ", dtype_name(w.dtype()), ", expected int8 or uint8");
  ConvProblem p = conv::prepare_conv(ctx, x, w);
  int32_t x_zero = 0;
  if (ctx.has_input(2))
    x_zero = static_cast<int32_t>(scalar_input(ctx, 2, "x_zero_point", x.dtype()).value_as_int64(0));
  std::vector<double> w_zero(static_cast<size_t>(p.out_channels), 0.0);
  if (ctx.has_input(3)) w_zero = per_channel(ctx, 3, "w_zero_point", w.dtype(), p.out_channels);
  Tensor& y = ctx.allocate_output(0, DType::int32, p.output_shape());
  int32_t* out = y.data<int32_t>();
  const int64_t pixels = p.geometry.output_size();
  for_each_sum_row(p, x, x_zero, w, w_zero, [&](int64_t n, int64_t m, int64_t p0, int64_t p1, const int32_t* sums) {
    std::copy(sums, sums + (p1 - p0), out + (n * p.out_channels + m) * pixels + p0);
  });
}

void qlinear_conv_infer(InferContext& ctx) {
  DType out = ctx.has_input(7) ? ctx.input_type(7).dtype : ctx.input_type(0).dtype;
  conv::infer_conv_output(ctx, 0, 3, out);
}

void qlinear_conv_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& w = ctx.input(3);
  if (!is_8bit(x.dtype()) || !is_8bit(w.dtype()))
    ctx.unsupported("inputs are ", dtype_name(x.dtype()), " and ", dtype_name(w.dtype()), ", expected int8 or uint8");
  ConvProblem p = conv::prepare_conv(ctx, x, w);
  const double x_scale = scalar_input(ctx, 1, "x_scale", DType::float32).value_as_double(0);
  const int32_t x_zero = static_cast<int32_t>(scalar_input(ctx, 2, "x_zero_point", x.dtype()).value_as_int64(0));
  const std::vector<double> w_scale = per_channel(ctx, 4, "w_scale", DType::float32, p.out_channels);
  const std::vector<double> w_zero = per_channel(ctx, 5, "w_zero_point", w.dtype(), p.out_channels);
  const double y_scale = scalar_input(ctx, 6, "y_scale", DType::float32).value_as_double(0);
  const Tensor& y_zero_tensor = ctx.input(7);
  if (!is_8bit(y_zero_tensor.dtype()))
    ctx.fail("input y_zero_point is ", y_zero_tensor.type_string(), ", expected int8 or uint8");
  const DType out_dtype = y_zero_tensor.dtype();
  const int64_t y_zero = scalar_input(ctx, 7, "y_zero_point", out_dtype).value_as_int64(0);
  std::vector<int32_t> bias;
  if (ctx.has_input(8)) {
    const Tensor& b = ctx.input(8);
    if (b.dtype() != DType::int32 || b.shape() != Shape{p.out_channels})
      ctx.fail("bias B is ", b.type_string(), ", expected int32[", p.out_channels, "]");
    bias.assign(b.data<int32_t>(), b.data<int32_t>() + p.out_channels);
  }
  if (!(y_scale > 0)) ctx.fail("y_scale is ", y_scale, ", expected a positive value");
  Tensor& y = ctx.allocate_output(0, out_dtype, p.output_shape());
  const int64_t pixels = p.geometry.output_size();
  const int64_t low = out_dtype == DType::uint8 ? 0 : -128, high = out_dtype == DType::uint8 ? 255 : 127;
  auto requantize = [&](int64_t m, int32_t sum) {
    const float multiplier = static_cast<float>(x_scale * w_scale[static_cast<size_t>(m)] / y_scale);
    float real = static_cast<float>(sum + (bias.empty() ? 0 : bias[static_cast<size_t>(m)])) * multiplier;
    real = std::isnan(real) ? 0.0f : std::clamp(real, -1e9f, 1e9f);  // keeps the conversion below defined
    return std::clamp(static_cast<int64_t>(std::nearbyint(real)) + y_zero, low, high);
  };
  auto store = [&](int64_t at, int64_t q) {
    if (out_dtype == DType::uint8)
      y.data<uint8_t>()[at] = static_cast<uint8_t>(q);
    else
      y.data<int8_t>()[at] = static_cast<int8_t>(q);
  };
  for_each_sum_row(p, x, x_zero, w, w_zero, [&](int64_t n, int64_t m, int64_t p0, int64_t p1, const int32_t* sums) {
    const int64_t base = (n * p.out_channels + m) * pixels;
    for (int64_t j = p0; j < p1; ++j) store(base + j, requantize(m, sums[j - p0]));
  });
}

}  // namespace

GRAFT_REGISTER_OP("", "ConvInteger", conv_integer_infer, conv_integer_kernel);
GRAFT_REGISTER_OP("", "QLinearConv", qlinear_conv_infer, qlinear_conv_kernel);

}  // namespace graft::ops
