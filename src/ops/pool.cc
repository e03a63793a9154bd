// MaxPool (with its optional Indices output), AveragePool and LpPool (ONNX):
// sliding-window reductions over 1 to 3 spatial dimensions with strides,
// dilations, explicit or automatic padding and ceil_mode.
//
// Each (image, channel) plane is independent; planes run in parallel. For an
// output position, the taps of the window that fall inside the input are a
// contiguous range of kernel indices per dimension, computed once per
// position, so the inner loops carry no bounds checks. Padding never takes
// part in a max or an Lp norm; AveragePool divides by the taps inside the
// input, or with count_include_pad by the taps inside the explicitly padded
// extent (taps that ceil_mode adds beyond the padding are never counted, as
// in PyTorch and ONNX Runtime).
//
// MaxPool's Indices are offsets into the flattened input tensor: row-major
// (storage_order 0) or with the spatial dimensions column-major (1).
#include <cmath>
#include <limits>

#include "conv_util.h"
#include "graft/core/parallel.h"
#include "graft/ops/infer_util.h"
#include "graft/ops/op_context.h"

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

struct PoolOptions {
  PoolKind kind = PoolKind::max;
  bool count_include_pad = false;
  int64_t p = 2;                      // LpPool
  bool column_major_indices = false;  // MaxPool storage_order 1
};

// Runs fn(plane, od, oh, ow, ranges[3][2], output offset) for every output position, planes in parallel.
template <typename Fn>
void for_each_window(const Geometry3d& g, int64_t planes, Fn&& fn) {
  const int64_t out_size = g.output_size();
  parallel_for(planes, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, out_size * g.kernel_size())),
               [&](int64_t begin, int64_t end) {
                 for (int64_t plane = begin; plane < end; ++plane) {
                   int64_t position = plane * out_size;
                   for (int64_t od = 0; od < g.output[0]; ++od)
                     for (int64_t oh = 0; oh < g.output[1]; ++oh)
                       for (int64_t ow = 0; ow < g.output[2]; ++ow) {
                         const int64_t o[3] = {od, oh, ow};
                         int64_t start[3], lo[3], hi[3];
                         for (int d = 0; d < 3; ++d) {
                           start[d] = o[d] * g.stride[d] - g.pad_begin[d];
                           tap_range(start[d], g.dilation[d], g.kernel[d], 0, g.input[d], lo[d], hi[d]);
                         }
                         fn(plane, start, lo, hi, position++);
                       }
                 }
               });
}

template <typename T>
void max_pool(const Geometry3d& g, int64_t planes, const PoolOptions& options, const T* x, T* y, int64_t* indices) {
  using C = compute_t<T>;
  const int64_t in_size = g.input_size();
  for_each_window(g, planes,
                  [&](int64_t plane, const int64_t* start, const int64_t* lo, const int64_t* hi, int64_t position) {
                    const T* source = x + plane * in_size;
                    C best = std::numeric_limits<C>::lowest();
                    int64_t best_d = -1, best_h = 0, best_w = 0;
                    if constexpr (std::numeric_limits<C>::has_infinity) best = -std::numeric_limits<C>::infinity();
                    for (int64_t kd = lo[0]; kd < hi[0]; ++kd) {
                      const int64_t id = start[0] + kd * g.dilation[0];
                      for (int64_t kh = lo[1]; kh < hi[1]; ++kh) {
                        const int64_t ih = start[1] + kh * g.dilation[1];
                        const T* row = source + (id * g.input[1] + ih) * g.input[2];
                        for (int64_t kw = lo[2]; kw < hi[2]; ++kw) {
                          const int64_t iw = start[2] + kw * g.dilation[2];
                          const C v = static_cast<C>(row[iw]);
                          if (v > best || best_d < 0) {
                            best = v;
                            best_d = id;
                            best_h = ih;
                            best_w = iw;
                          }
                        }
                      }
                    }
                    y[position] = static_cast<T>(best);
                    if (indices) {
                      if (best_d < 0) {
                        indices[position] = -1;
                      } else if (options.column_major_indices) {
                        indices[position] = plane * in_size + best_d + g.input[0] * (best_h + g.input[1] * best_w);
                      } else {
                        indices[position] = plane * in_size + (best_d * g.input[1] + best_h) * g.input[2] + best_w;
                      }
                    }
                  });
}

template <typename T>
void average_or_lp_pool(const Geometry3d& g, int64_t planes, const PoolOptions& options, const T* x, T* y) {
  using C = compute_t<T>;
  const int64_t in_size = g.input_size();
  const C p = static_cast<C>(options.p);
  for_each_window(
      g, planes, [&](int64_t plane, const int64_t* start, const int64_t* lo, const int64_t* hi, int64_t position) {
        const T* source = x + plane * in_size;
        C sum = 0;
        for (int64_t kd = lo[0]; kd < hi[0]; ++kd) {
          const int64_t id = start[0] + kd * g.dilation[0];
          for (int64_t kh = lo[1]; kh < hi[1]; ++kh) {
            const int64_t ih = start[1] + kh * g.dilation[1];
            const T* row = source + (id * g.input[1] + ih) * g.input[2];
            for (int64_t kw = lo[2]; kw < hi[2]; ++kw) {
              const C v = static_cast<C>(row[start[2] + kw * g.dilation[2]]);
              if (options.kind == PoolKind::average) {
                sum += v;
              } else if (options.p == 1) {
                sum += std::abs(v);
              } else if (options.p == 2) {
                sum += v * v;
              } else {
                sum += std::pow(std::abs(v), p);
              }
            }
          }
        }
        C result;
        if (options.kind == PoolKind::average) {
          int64_t count = 1;
          for (int d = 0; d < 3; ++d) {
            if (options.count_include_pad) {
              int64_t a, b;
              tap_range(start[d], g.dilation[d], g.kernel[d], -g.pad_begin[d], g.input[d] + g.pad_end[d], a, b);
              count *= b - a;
            } else {
              count *= hi[d] - lo[d];
            }
          }
          result = count > 0 ? sum / static_cast<C>(count) : std::numeric_limits<C>::quiet_NaN();
        } else if (options.p == 1) {
          result = sum;
        } else if (options.p == 2) {
          result = std::sqrt(sum);
        } else {
          result = std::pow(sum, C(1) / p);
        }
        y[position] = static_cast<T>(result);
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

}  // namespace graft::ops
