// Conv (ONNX): N-dimensional grouped convolution with strides, dilations,
// explicit or automatic padding and an optional bias.
//
// Algorithm, per image and group:
//   - a 1x1 kernel with unit strides and no padding is a matrix product of the
//     weight (Mg x Cg) with the input planes (Cg x pixels), straight to gemm;
//   - one input channel per group (depthwise, also with a channel multiplier)
//     is computed directly, one output plane at a time, accumulating one
//     kernel tap over a whole output row so that the inner loop vectorizes;
//   - otherwise im2col builds the (Cg * kernel) x pixels matrix, in chunks of
//     output rows that bound its memory, and gemm multiplies the weight into it.
// Work is parallel over images and groups when there are enough of them for
// every thread, else inside im2col and gemm. float16/bfloat16 compute in
// float32; float64 goes through gemm_f64.
#include <algorithm>
#include <vector>

#include "graft/core/parallel.h"
#include "graft/ops/conv_util.h"
#include "graft/ops/op_context.h"

namespace graft::ops {
namespace {

using conv::ConvProblem;
using conv::Geometry3d;

// Bound on the im2col buffer (elements) per image and group; larger problems are cut into row chunks.
constexpr int64_t kColumnBudget = int64_t{1} << 21;

void conv_infer(InferContext& ctx) { conv::infer_conv_output(ctx, 0, 1, ctx.input_type(0).dtype); }

// One input channel per group: each output plane is a sum of shifted, scaled input rows.
template <typename T>
void conv_depthwise(const ConvProblem& p, const T* x, const T* w, const T* bias, T* y) {
  const Geometry3d& g = p.geometry;
  const int64_t multiplier = p.out_channels / p.group;
  const int64_t in_plane = g.input_size(), out_plane = g.output_size(), kernel_size = g.kernel_size();
  const int64_t planes = p.batch * p.out_channels;
  parallel_for(planes, 1, [&](int64_t begin, int64_t end) {
    for (int64_t plane = begin; plane < end; ++plane) {
      const int64_t n = plane / p.out_channels, m = plane % p.out_channels;
      const T* source = x + (n * p.in_channels + m / multiplier) * in_plane;
      const T* weights = w + m * kernel_size;
      T* target = y + plane * out_plane;
      const T start = bias ? bias[m] : T(0);
      std::fill(target, target + out_plane, start);
      for (int64_t kw = 0; kw < g.kernel[2]; ++kw) {
        const int64_t w_offset = kw * g.dilation[2] - g.pad_begin[2];
        int64_t lo, hi;
        conv::valid_range(w_offset, g.stride[2], g.input[2], g.output[2], lo, hi);
        for (int64_t od = 0; od < g.output[0]; ++od) {
          for (int64_t oh = 0; oh < g.output[1]; ++oh) {
            T* row = target + (od * g.output[1] + oh) * g.output[2];
            for (int64_t kd = 0; kd < g.kernel[0]; ++kd) {
              const int64_t id = od * g.stride[0] - g.pad_begin[0] + kd * g.dilation[0];
              if (id < 0 || id >= g.input[0]) continue;
              for (int64_t kh = 0; kh < g.kernel[1]; ++kh) {
                const int64_t ih = oh * g.stride[1] - g.pad_begin[1] + kh * g.dilation[1];
                if (ih < 0 || ih >= g.input[1]) continue;
                const T tap = weights[(kd * g.kernel[1] + kh) * g.kernel[2] + kw];
                const T* in_row = source + (id * g.input[1] + ih) * g.input[2] + w_offset;
                if (g.stride[2] == 1) {
                  for (int64_t ow = lo; ow < hi; ++ow) row[ow] += tap * in_row[ow];
                } else {
                  const int64_t s = g.stride[2];
                  for (int64_t ow = lo; ow < hi; ++ow) row[ow] += tap * in_row[ow * s];
                }
              }
            }
          }
        }
      }
    }
  });
}

// Computes groups [task_begin, task_end) of (image, group) pairs by im2col + gemm.
template <typename T>
void conv_tasks(const ConvProblem& p, const T* x, const T* w, T* y, int64_t task_begin, int64_t task_end) {
  const Geometry3d& g = p.geometry;
  const int64_t cg = p.in_channels / p.group, mg = p.out_channels / p.group;
  const int64_t kernel_size = g.kernel_size(), reduce = cg * kernel_size;
  const int64_t in_plane = g.input_size(), pixels = g.output_size();
  bool pointwise = kernel_size == 1;
  for (int d = 0; d < 3; ++d) pointwise = pointwise && g.stride[d] == 1 && g.pad_begin[d] == 0 && g.pad_end[d] == 0;
  const int64_t row = g.output[2];
  const int64_t chunk_rows = std::max<int64_t>(1, kColumnBudget / std::max<int64_t>(1, reduce * row));
  const int64_t chunk = std::min(pixels, chunk_rows * row);
  std::vector<T> col(pointwise || pixels == 0 ? 0 : static_cast<size_t>(reduce * chunk));
  for (int64_t task = task_begin; task < task_end; ++task) {
    const int64_t n = task / p.group, grp = task % p.group;
    const T* input = x + (n * p.in_channels + grp * cg) * in_plane;
    const T* weights = w + grp * mg * reduce;
    T* output = y + (n * p.out_channels + grp * mg) * pixels;
    if (pointwise) {
      conv::matmul<T>(false, mg, pixels, cg, weights, cg, input, in_plane, false, output, pixels);
      continue;
    }
    for (int64_t begin = 0; begin < pixels; begin += chunk) {
      const int64_t end = std::min(pixels, begin + chunk);
      conv::im2col<T>(input, cg, g, begin, end, col.data(), end - begin);
      conv::matmul<T>(false, mg, end - begin, reduce, weights, reduce, col.data(), end - begin, false, output + begin,
                      pixels);
    }
  }
}

template <typename T>
void conv_compute(const ConvProblem& p, const T* x, const T* w, const T* bias, T* y) {
  const Geometry3d& g = p.geometry;
  const int64_t pixels = g.output_size();
  if (pixels == 0 || p.batch == 0 || p.out_channels == 0) return;
  if (p.in_channels == 0) {
    for (int64_t plane = 0; plane < p.batch * p.out_channels; ++plane)
      std::fill(y + plane * pixels, y + (plane + 1) * pixels, bias ? bias[plane % p.out_channels] : T(0));
    return;
  }
  if (p.in_channels / p.group == 1) {
    conv_depthwise<T>(p, x, w, bias, y);
    return;
  }
  const int64_t tasks = p.batch * p.group;
  if (tasks >= current_num_threads() && tasks > 1) {
    parallel_for(tasks, 1, [&](int64_t begin, int64_t end) { conv_tasks<T>(p, x, w, y, begin, end); });
  } else {
    conv_tasks<T>(p, x, w, y, 0, tasks);
  }
  if (bias) {
    parallel_for(p.batch * p.out_channels, std::max<int64_t>(1, 16384 / pixels), [&](int64_t begin, int64_t end) {
      for (int64_t plane = begin; plane < end; ++plane) {
        const T b = bias[plane % p.out_channels];
        T* out = y + plane * pixels;
        for (int64_t i = 0; i < pixels; ++i) out[i] += b;
      }
    });
  }
}

void conv_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& w = ctx.input(1);
  const Tensor* bias = ctx.has_input(2) ? &ctx.input(2) : nullptr;
  if (!dtype_is_float(x.dtype())) ctx.unsupported("input X is ", dtype_name(x.dtype()), ", expected a float type");
  if (w.dtype() != x.dtype())
    ctx.fail("weight W is ", dtype_name(w.dtype()), ", expected ", dtype_name(x.dtype()), " like X");
  ConvProblem p = conv::prepare_conv(ctx, x, w);
  if (bias && (bias->rank() != 1 || bias->dim(0) != p.out_channels || bias->dtype() != x.dtype()))
    ctx.fail("bias B is ", bias->type_string(), ", expected ", dtype_name(x.dtype()), "[", p.out_channels, "]");
  const Shape out_shape = p.output_shape();
  Tensor& y = ctx.allocate_output(0, x.dtype(), out_shape);
  if (x.dtype() == DType::float32) {
    conv_compute<float>(p, x.data<float>(), w.data<float>(), bias ? bias->data<float>() : nullptr, y.data<float>());
  } else if (x.dtype() == DType::float64) {
    conv_compute<double>(p, x.data<double>(), w.data<double>(), bias ? bias->data<double>() : nullptr,
                         y.data<double>());
  } else {
    Tensor xf = conv::to_float32(x), wf = conv::to_float32(w);
    Tensor bf = bias ? conv::to_float32(*bias) : Tensor();
    Tensor yf(DType::float32, out_shape);
    conv_compute<float>(p, xf.data<float>(), wf.data<float>(), bias ? bf.data<float>() : nullptr, yf.data<float>());
    conv::from_float32(yf, y);
  }
}

}  // namespace

GRAFT_REGISTER_OP("", "Conv", conv_infer, conv_kernel);

}  // namespace graft::ops
