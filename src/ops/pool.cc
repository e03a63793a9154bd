// MaxPool (with its optional Indices output), AveragePool and LpPool (ONNX):
// sliding-window reductions over 1 to 3 spatial dimensions with strides,
// dilations, explicit or automatic padding and ceil_mode.
//
// Each (image, channel) plane is independent; planes run in parallel. Within
// a plane the loops run tap by tap: for one kernel tap, the output positions
// of a row whose input lies inside the image are one contiguous range, so the
// inner loop is a bounds-check-free (and for stride 1 vectorizable) sweep
// that folds one input row into one row of accumulators. Padding never takes
// part in a max or an Lp norm; AveragePool divides by the taps inside the
// input, or with count_include_pad by the taps inside the explicitly padded
// extent (taps that ceil_mode adds beyond the padding are never counted, as
// in PyTorch and ONNX Runtime).
//
// MaxPool's Indices are offsets into the flattened input tensor: row-major
// (storage_order 0) or with the spatial dimensions column-major (1).
#include <cmath>
#include <limits>
#include <vector>

#include "graft/core/kernel_interrupt.h"
#include "graft/core/parallel.h"
#include "graft/ops/conv_util.h"
#include "graft/ops/gradient.h"
#include "graft/ops/infer_util.h"
#include "graft/ops/op_context.h"
#include "math_common.h"

namespace graft::ops {
namespace {

using conv::Geometry3d;

enum class PoolKind { max, average, lp };

void pool_infer(InferContext& ctx) {
  const ir::ValueType& x = ctx.input_type(0);
  if (!x.has_rank) {
    set_output_dtype_only(ctx, 0, x.dtype);
    if (ctx.num_outputs() > 1) set_output_dtype_only(ctx, 1, DType::int64);
    return;
  }
  if (x.dims.size() < 3) ctx.fail("input X has rank ", x.dims.size(), ", expected at least 3 (N, C, spatial...)");
  if (!ctx.attrs().has("kernel_shape")) ctx.fail("attribute 'kernel_shape' is required");
  const size_t spatial = x.dims.size() - 2;
  conv::WindowAttributes attrs = conv::read_window_attributes(ctx.node(), spatial, {}, true);
  std::vector<ir::Dim> dims = {x.dims[0], x.dims[1]};
  std::vector<ir::Dim> input_spatial(x.dims.begin() + 2, x.dims.end());
  for (const ir::Dim& d : conv::infer_spatial_dims(ctx.node(), attrs, input_spatial)) dims.push_back(d);
  ctx.set_output(0, ir::ValueType{x.dtype, true, dims});
  if (ctx.num_outputs() > 1) ctx.set_output(1, ir::ValueType{DType::int64, true, dims});
}

// Kernel indices [lo, hi) whose input index start + k * dilation lies in [low_bound, high_bound).
inline void tap_range(int64_t start, int64_t dilation, int64_t kernel, int64_t low_bound, int64_t high_bound,
                      int64_t& lo, int64_t& hi) {
  auto first_at_least = [&](int64_t bound) {
    int64_t need = bound - start;
    return need <= 0 ? int64_t{0} : (need + dilation - 1) / dilation;
  };
  lo = std::min(first_at_least(low_bound), kernel);
  hi = std::max(lo, std::min(first_at_least(high_bound), kernel));
}

// Kernel indices [first, last) along dimension d that land inside the input
// for at least one output position: a window far wider than its input (a
// kernel of 2^31 with SAME padding) then costs its useful taps, not its size.
inline void useful_taps(const Geometry3d& g, int d, int64_t& first, int64_t& last) {
  int64_t unused;
  tap_range((g.output[d] - 1) * g.stride[d] - g.pad_begin[d], g.dilation[d], g.kernel[d], 0, g.input[d], first, unused);
  tap_range(-g.pad_begin[d], g.dilation[d], g.kernel[d], 0, g.input[d], unused, last);
  if (g.output[d] <= 0 || first > last) first = last = 0;
}

struct PoolOptions {
  PoolKind kind = PoolKind::max;
  bool count_include_pad = false;
  int64_t p = 2;                      // LpPool
  bool column_major_indices = false;  // MaxPool storage_order 1
};

// Visits every kernel tap of one plane: fn(input row, output row, lo, hi, stride, id, ih, w_offset) for
// each output row (od, oh) whose tap row lies inside the input, with [lo, hi) the output columns whose
// tap column does; output column ow reads input row[ow * stride].
template <typename T, typename Fn>
void for_each_tap(const Geometry3d& g, const T* plane, Fn&& fn) {
  int64_t first[3], last[3];
  for (int d = 0; d < 3; ++d) useful_taps(g, d, first[d], last[d]);
  for (int64_t kd = first[0]; kd < last[0]; ++kd)
    for (int64_t kh = first[1]; kh < last[1]; ++kh)
      for (int64_t kw = first[2]; kw < last[2]; ++kw) {
        const int64_t w_offset = kw * g.dilation[2] - g.pad_begin[2];
        int64_t lo, hi;
        conv::valid_range(w_offset, g.stride[2], g.input[2], g.output[2], lo, hi);
        if (lo >= hi) continue;
        for (int64_t od = 0; od < g.output[0]; ++od) {
          const int64_t id = od * g.stride[0] - g.pad_begin[0] + kd * g.dilation[0];
          if (id < 0 || id >= g.input[0]) continue;
          for (int64_t oh = 0; oh < g.output[1]; ++oh) {
            const int64_t ih = oh * g.stride[1] - g.pad_begin[1] + kh * g.dilation[1];
            if (ih < 0 || ih >= g.input[1]) continue;
            fn(plane + (id * g.input[1] + ih) * g.input[2] + w_offset, (od * g.output[1] + oh) * g.output[2], lo, hi,
               id, ih, w_offset);
          }
        }
      }
}

int64_t plane_grain(const Geometry3d& g) {
  // Work per plane: outputs times the taps that can land inside the input,
  // saturating at 2^40 (one plane per chunk long before that).
  constexpr int64_t kLots = int64_t{1} << 40;
  int64_t work = std::min(g.output_size(), kLots);
  for (int d = 0; d < 3; ++d) {
    int64_t first, last;
    useful_taps(g, d, first, last);
    const int64_t taps = std::max<int64_t>(1, last - first);
    work = taps > kLots / std::max<int64_t>(1, work) ? kLots : work * taps;
  }
  return std::max<int64_t>(1, 16384 / std::max<int64_t>(1, work));
}

template <typename T>
void max_pool(const Geometry3d& g, int64_t planes, const PoolOptions& options, const T* x, T* y, int64_t* indices) {
  using C = compute_t<T>;
  const int64_t in_size = g.input_size(), out_size = g.output_size(), stride = g.stride[2];
  const C lowest =
      std::numeric_limits<C>::has_infinity ? -std::numeric_limits<C>::infinity() : std::numeric_limits<C>::lowest();
  parallel_for(planes, plane_grain(g), [&](int64_t begin, int64_t end) {
    std::vector<C> best(static_cast<size_t>(out_size));
    std::vector<int64_t> where(indices ? static_cast<size_t>(out_size) : 0);
    for (int64_t plane = begin; plane < end; ++plane) {
      check_kernel_interrupt();
      std::fill(best.begin(), best.end(), lowest);
      std::fill(where.begin(), where.end(), int64_t{-1});
      for_each_tap(
          g, x + plane * in_size,
          [&](const T* row, int64_t out_row, int64_t lo, int64_t hi, int64_t id, int64_t ih, int64_t w_offset) {
            C* b = best.data() + out_row;
            if (!indices) {
              for (int64_t ow = lo; ow < hi; ++ow) b[ow] = std::max(b[ow], static_cast<C>(row[ow * stride]));
              return;
            }
            int64_t* at = where.data() + out_row;
            for (int64_t ow = lo; ow < hi; ++ow) {
              const C v = static_cast<C>(row[ow * stride]);
              if (v > b[ow] || at[ow] < 0) {
                const int64_t iw = ow * stride + w_offset;
                b[ow] = v;
                at[ow] = options.column_major_indices ? id + g.input[0] * (ih + g.input[1] * iw)
                                                      : (id * g.input[1] + ih) * g.input[2] + iw;
              }
            }
          });
      T* out = y + plane * out_size;
      for (int64_t i = 0; i < out_size; ++i) out[i] = static_cast<T>(best[static_cast<size_t>(i)]);
      if (indices)
        for (int64_t i = 0; i < out_size; ++i) {
          const int64_t at = where[static_cast<size_t>(i)];
          indices[plane * out_size + i] = at < 0 ? -1 : plane * in_size + at;
        }
    }
  });
}

// Per output position along one dimension: the number of taps inside the input (or the padded extent).
std::vector<int64_t> tap_counts(const Geometry3d& g, int d, bool include_pad) {
  std::vector<int64_t> counts(static_cast<size_t>(g.output[d]));
  for (int64_t o = 0; o < g.output[d]; ++o) {
    int64_t lo, hi;
    const int64_t start = o * g.stride[d] - g.pad_begin[d];
    if (include_pad)
      tap_range(start, g.dilation[d], g.kernel[d], -g.pad_begin[d], g.input[d] + g.pad_end[d], lo, hi);
    else
      tap_range(start, g.dilation[d], g.kernel[d], 0, g.input[d], lo, hi);
    counts[static_cast<size_t>(o)] = hi - lo;
  }
  return counts;
}

template <typename T>
void average_or_lp_pool(const Geometry3d& g, int64_t planes, const PoolOptions& options, const T* x, T* y) {
  using C = compute_t<T>;
  const int64_t in_size = g.input_size(), out_size = g.output_size(), stride = g.stride[2];
  const C p = static_cast<C>(options.p);
  const bool average = options.kind == PoolKind::average;
  std::vector<C> divisor;
  if (average) {
    const auto cd = tap_counts(g, 0, options.count_include_pad), ch = tap_counts(g, 1, options.count_include_pad),
               cw = tap_counts(g, 2, options.count_include_pad);
    for (int64_t c0 : cd)
      for (int64_t c1 : ch)
        for (int64_t c2 : cw) divisor.push_back(static_cast<C>(c0 * c1 * c2));
  }
  parallel_for(planes, plane_grain(g), [&](int64_t begin, int64_t end) {
    std::vector<C> sum(static_cast<size_t>(out_size));
    for (int64_t plane = begin; plane < end; ++plane) {
      check_kernel_interrupt();
      std::fill(sum.begin(), sum.end(), C(0));
      for_each_tap(g, x + plane * in_size,
                   [&](const T* row, int64_t out_row, int64_t lo, int64_t hi, int64_t, int64_t, int64_t) {
                     C* acc = sum.data() + out_row;
                     if (average) {
                       for (int64_t ow = lo; ow < hi; ++ow) acc[ow] += static_cast<C>(row[ow * stride]);
                     } else if (options.p == 1) {
                       for (int64_t ow = lo; ow < hi; ++ow) acc[ow] += std::abs(static_cast<C>(row[ow * stride]));
                     } else if (options.p == 2) {
                       for (int64_t ow = lo; ow < hi; ++ow) {
                         const C v = static_cast<C>(row[ow * stride]);
                         acc[ow] += v * v;
                       }
                     } else {
                       for (int64_t ow = lo; ow < hi; ++ow)
                         acc[ow] += std::pow(std::abs(static_cast<C>(row[ow * stride])), p);
                     }
                   });
      T* out = y + plane * out_size;
      for (int64_t i = 0; i < out_size; ++i) {
        const C v = sum[static_cast<size_t>(i)];
        C result;
        if (average) {
          const C count = divisor[static_cast<size_t>(i)];
          result = count > 0 ? v / count : std::numeric_limits<C>::quiet_NaN();
        } else {
          result = options.p == 1 ? v : options.p == 2 ? std::sqrt(v) : std::pow(v, C(1) / p);
        }
        out[i] = static_cast<T>(result);
      }
    }
  });
}

void pool_kernel(KernelContext& ctx, PoolKind kind) {
  const Tensor& x = ctx.input(0);
  if (x.rank() < 3) ctx.fail("input X has rank ", x.rank(), ", expected at least 3 (N, C, spatial...)");
  if (!ctx.attrs().has("kernel_shape")) ctx.fail("attribute 'kernel_shape' is required");
  const size_t spatial = static_cast<size_t>(x.rank() - 2);
  conv::WindowAttributes attrs = conv::read_window_attributes(ctx.node(), spatial, {}, true);
  Shape input_spatial(x.shape().begin() + 2, x.shape().end());
  Geometry3d g = conv::make_geometry(ctx.node(), attrs, input_spatial);
  Shape out_shape = {x.dim(0), x.dim(1)};
  for (int64_t e : conv::geometry_output_shape(g, spatial)) out_shape.push_back(e);
  PoolOptions options;
  options.kind = kind;
  options.count_include_pad = ctx.attrs().get_int("count_include_pad", 0) != 0;
  if (kind == PoolKind::lp) options.p = conv::read_lp_order(ctx.node());
  const int64_t storage_order = ctx.attrs().get_int("storage_order", 0);
  if (storage_order != 0 && storage_order != 1)
    ctx.fail("attribute 'storage_order' is ", storage_order, ", expected 0 or 1");
  options.column_major_indices = storage_order == 1;
  const int64_t planes = x.dim(0) * x.dim(1);
  Tensor& y = ctx.allocate_output(0, x.dtype(), out_shape);
  if (kind == PoolKind::max) {
    int64_t* indices = nullptr;
    if (ctx.num_outputs() > 1) indices = ctx.allocate_output(1, DType::int64, out_shape).data<int64_t>();
    auto run = [&]<typename T>() { max_pool<T>(g, planes, options, x.data<T>(), y.data<T>(), indices); };
    switch (x.dtype()) {
      case DType::float32:
        return run.operator()<float>();
      case DType::float64:
        return run.operator()<double>();
      case DType::float16:
        return run.operator()<float16_t>();
      case DType::bfloat16:
        return run.operator()<bfloat16_t>();
      case DType::int8:
        return run.operator()<int8_t>();
      case DType::uint8:
        return run.operator()<uint8_t>();
      default:
        ctx.unsupported("input X is ", dtype_name(x.dtype()), ", expected a float type, int8 or uint8");
    }
  }
  visit_float_dtype(x.dtype(), ctx.node().describe(),
                    [&]<typename T>() { average_or_lp_pool<T>(g, planes, options, x.data<T>(), y.data<T>()); });
}

void max_pool_kernel(KernelContext& ctx) { pool_kernel(ctx, PoolKind::max); }
void average_pool_kernel(KernelContext& ctx) { pool_kernel(ctx, PoolKind::average); }
void lp_pool_kernel(KernelContext& ctx) { pool_kernel(ctx, PoolKind::lp); }

}  // namespace

GRAFT_REGISTER_OP("", "MaxPool", pool_infer, max_pool_kernel);
GRAFT_REGISTER_OP("", "AveragePool", pool_infer, average_pool_kernel);
GRAFT_REGISTER_OP("", "LpPool", pool_infer, lp_pool_kernel);

// Backward ops and gradient builders (graft/ops/gradient.h):
// graft.MaxPoolGrad(d_y, x) sends each output's gradient to the first maximum
// of its window (as the forward's indices output would name it);
// graft.AveragePoolGrad(d_y, x) spreads it evenly over the taps the forward
// divided by. Both carry the forward's window attributes and infer d_x = x's
// type.
namespace {

void infer_pool_grad(InferContext& ctx) { ctx.set_output(0, ctx.input_type(1)); }

template <bool kMax>
void pool_grad_kernel(KernelContext& ctx) {
  const Tensor& dy = ctx.input(0);
  const Tensor& x = ctx.input(1);
  if (x.rank() < 3) ctx.fail("input X has rank ", x.rank(), ", expected at least 3 (N, C, spatial...)");
  const size_t spatial = static_cast<size_t>(x.rank() - 2);
  conv::WindowAttributes attrs = conv::read_window_attributes(ctx.node(), spatial, {}, true);
  Geometry3d g = conv::make_geometry(ctx.node(), attrs, Shape(x.shape().begin() + 2, x.shape().end()));
  Shape out_shape = {x.dim(0), x.dim(1)};
  for (int64_t e : conv::geometry_output_shape(g, spatial)) out_shape.push_back(e);
  if (dy.shape() != out_shape)
    ctx.fail("d_y ", dy.type_string(), " does not match the pooled shape ", shape_to_string(out_shape));
  const bool include_pad = ctx.attrs().get_int("count_include_pad", 0) != 0;
  visit_float_dtype(x.dtype(), ctx.node().describe(), [&]<typename T>() {
    using W = std::conditional_t<std::is_same_v<T, double>, double, float>;
    const std::vector<W> xs = tensor_to_vector<W>(x), dys = tensor_to_vector<W>(dy);
    std::vector<W> dx(xs.size(), W(0));
    const int64_t planes = x.dim(0) * x.dim(1);
    std::vector<int64_t> counts[3];
    for (int d = 0; d < 3; ++d) counts[d] = tap_counts(g, d, include_pad);
    parallel_for(planes, 1, [&](int64_t begin, int64_t end) {
      for (int64_t p = begin; p < end; ++p) {
        check_kernel_interrupt();
        const W* xp = xs.data() + p * g.input_size();
        const W* dyp = dys.data() + p * g.output_size();
        W* dxp = dx.data() + p * g.input_size();
        for (int64_t od = 0; od < g.output[0]; ++od)
          for (int64_t oh = 0; oh < g.output[1]; ++oh)
            for (int64_t ow = 0; ow < g.output[2]; ++ow) {
              const W d = dyp[(od * g.output[1] + oh) * g.output[2] + ow];
              const W share =
                  kMax ? W(1)
                       : W(1) / static_cast<W>(counts[0][static_cast<size_t>(od)] * counts[1][static_cast<size_t>(oh)] *
                                               counts[2][static_cast<size_t>(ow)]);
              int64_t best = -1;
              W best_value = 0;
              // Only the taps inside the input: a window far wider than
              // the input costs what it covers, not its size.
              int64_t d_lo, d_hi, h_lo, h_hi, w_lo, w_hi;
              tap_range(od * g.stride[0] - g.pad_begin[0], g.dilation[0], g.kernel[0], 0, g.input[0], d_lo, d_hi);
              tap_range(oh * g.stride[1] - g.pad_begin[1], g.dilation[1], g.kernel[1], 0, g.input[1], h_lo, h_hi);
              tap_range(ow * g.stride[2] - g.pad_begin[2], g.dilation[2], g.kernel[2], 0, g.input[2], w_lo, w_hi);
              for (int64_t kd = d_lo; kd < d_hi; ++kd) {
                const int64_t id = od * g.stride[0] - g.pad_begin[0] + kd * g.dilation[0];
                for (int64_t kh = h_lo; kh < h_hi; ++kh) {
                  const int64_t ih = oh * g.stride[1] - g.pad_begin[1] + kh * g.dilation[1];
                  for (int64_t kw = w_lo; kw < w_hi; ++kw) {
                    const int64_t iw = ow * g.stride[2] - g.pad_begin[2] + kw * g.dilation[2];
                    const int64_t at = (id * g.input[1] + ih) * g.input[2] + iw;
                    if constexpr (kMax) {
                      if (best < 0 || xp[at] > best_value) best = at, best_value = xp[at];
                    } else {
                      dxp[at] += d * share;
                    }
                  }
                }
              }
              if (kMax && best >= 0) dxp[best] += d;
            }
      }
    });
    Tensor& out = ctx.allocate_output(0, x.dtype(), x.shape());
    T* o = out.data<T>();
    for (size_t i = 0; i < dx.size(); ++i) o[i] = static_cast<T>(dx[i]);
  });
}

/// The forward's window attributes, for its backward op.
std::vector<std::pair<std::string, ir::AttributeValue>> window_attributes(const GradientContext& g) {
  std::vector<std::pair<std::string, ir::AttributeValue>> out;
  for (const auto& [key, value] : g.attrs().all()) out.emplace_back(key, value);
  return out;
}

void max_pool_gradient(GradientContext& g) {
  if (g.num_outputs() > 1 && g.output_gradient(1)) g.unsupported("a gradient through the indices output");
  g.set_input_gradient(0, g.add(ir::OpId::MaxPoolGrad, {g.output_gradient(0), g.input(0)}, window_attributes(g)));
}

void average_pool_gradient(GradientContext& g) {
  g.set_input_gradient(0, g.add(ir::OpId::AveragePoolGrad, {g.output_gradient(0), g.input(0)}, window_attributes(g)));
}

}  // namespace

GRAFT_REGISTER_OP("graft", "MaxPoolGrad", infer_pool_grad, pool_grad_kernel<true>);
GRAFT_REGISTER_OP("graft", "AveragePoolGrad", infer_pool_grad, pool_grad_kernel<false>);
GRAFT_REGISTER_GRADIENT(MaxPool, max_pool_gradient);
GRAFT_REGISTER_GRADIENT(AveragePool, average_pool_gradient);

}  // namespace graft::ops
