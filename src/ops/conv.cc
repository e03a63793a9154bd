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

#include "graft/core/kernel_interrupt.h"
#include "graft/core/parallel.h"
#include "graft/ops/conv_util.h"
#include "graft/ops/gradient.h"
#include "graft/ops/op_context.h"
#include "math_common.h"

namespace graft::ops {
namespace {

using conv::ConvProblem;
using conv::Geometry3d;

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
  const int64_t chunk_rows = std::max<int64_t>(1, conv::kColumnBudget / std::max<int64_t>(1, reduce * row));
  const int64_t chunk = std::min(pixels, chunk_rows * row);
  std::vector<T> col(pointwise || pixels == 0 ? 0 : static_cast<size_t>(reduce * chunk));
  for (int64_t task = task_begin; task < task_end; ++task) {
    const int64_t n = task / p.group, grp = task % p.group;
    const T* input = x + (n * p.in_channels + grp * cg) * in_plane;
    const T* weights = w + grp * mg * reduce;
    T* output = y + (n * p.out_channels + grp * mg) * pixels;
    if (pointwise) {
      check_kernel_interrupt();
      conv::matmul<T>(false, mg, pixels, cg, weights, cg, input, in_plane, false, output, pixels);
      continue;
    }
    for (int64_t begin = 0; begin < pixels; begin += chunk) {
      check_kernel_interrupt();
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

// Backward ops and gradient builders (graft/ops/gradient.h), with the
// forward's attributes: graft.ConvInputGrad(d_y, w, x) -> d_x (x passed for
// its shape) and graft.ConvWeightGrad(d_y, x, w) -> d_w (w for its shape),
// direct loops over every tap; the bias gradient is dy summed over N and the
// spatial axes.
namespace {

void infer_conv_input_grad(InferContext& ctx) { ctx.set_output(0, ctx.input_type(2)); }

template <bool kWeight>
void conv_grad_kernel(KernelContext& ctx) {
  const Tensor& dy = ctx.input(0);
  const Tensor& x = kWeight ? ctx.input(1) : ctx.input(2);
  const Tensor& w = kWeight ? ctx.input(2) : ctx.input(1);
  const conv::ConvProblem p = conv::prepare_conv(ctx, x, w);
  if (dy.shape() != p.output_shape())
    ctx.fail("d_y ", dy.type_string(), " does not match the convolution's output ", shape_to_string(p.output_shape()));
  const Geometry3d& g = p.geometry;
  visit_float_dtype(x.dtype(), ctx.node().describe(), [&]<typename T>() {
    using W = std::conditional_t<std::is_same_v<T, double>, double, float>;
    const std::vector<W> xs = tensor_to_vector<W>(x), ws = tensor_to_vector<W>(w), dys = tensor_to_vector<W>(dy);
    std::vector<W> out(kWeight ? ws.size() : xs.size(), W(0));
    const int64_t cg = p.in_channels / p.group, mg = p.out_channels / p.group;
    // Parallel over output channels (d_w rows are disjoint) or images (d_x).
    const int64_t jobs = kWeight ? p.out_channels : p.batch;
    parallel_for(jobs, 1, [&](int64_t begin, int64_t end) {
      for (int64_t job = begin; job < end; ++job)
        for (int64_t n = kWeight ? 0 : job; n < (kWeight ? p.batch : job + 1); ++n)
          for (int64_t m = kWeight ? job : 0; m < (kWeight ? job + 1 : p.out_channels); ++m) {
            const int64_t group = m / mg;
            const W* dyp = dys.data() + (n * p.out_channels + m) * g.output_size();
            for (int64_t c = 0; c < cg; ++c) {
              const int64_t ic = group * cg + c;
              const W* xp = xs.data() + (n * p.in_channels + ic) * g.input_size();
              const W* wp = ws.data() + (m * cg + c) * g.kernel_size();
              W* dxp = out.data() + (n * p.in_channels + ic) * g.input_size();
              W* dwp = out.data() + (m * cg + c) * g.kernel_size();
              for (int64_t kd = 0; kd < g.kernel[0]; ++kd)
                for (int64_t kh = 0; kh < g.kernel[1]; ++kh)
                  for (int64_t kw = 0; kw < g.kernel[2]; ++kw) {
                    const int64_t k = (kd * g.kernel[1] + kh) * g.kernel[2] + kw;
                    W acc = 0;
                    for (int64_t od = 0; od < g.output[0]; ++od) {
                      const int64_t id = od * g.stride[0] - g.pad_begin[0] + kd * g.dilation[0];
                      if (id < 0 || id >= g.input[0]) continue;
                      for (int64_t oh = 0; oh < g.output[1]; ++oh) {
                        const int64_t ih = oh * g.stride[1] - g.pad_begin[1] + kh * g.dilation[1];
                        if (ih < 0 || ih >= g.input[1]) continue;
                        for (int64_t ow = 0; ow < g.output[2]; ++ow) {
                          const int64_t iw = ow * g.stride[2] - g.pad_begin[2] + kw * g.dilation[2];
                          if (iw < 0 || iw >= g.input[2]) continue;
                          const W d = dyp[(od * g.output[1] + oh) * g.output[2] + ow];
                          const int64_t at = (id * g.input[1] + ih) * g.input[2] + iw;
                          if constexpr (kWeight)
                            acc += d * xp[at];
                          else
                            dxp[at] += d * wp[k];
                        }
                      }
                    }
                    if constexpr (kWeight) dwp[k] += acc;
                  }
            }
          }
    });
    Tensor& result = ctx.allocate_output(0, x.dtype(), kWeight ? w.shape() : x.shape());
    T* o = result.data<T>();
    for (size_t i = 0; i < out.size(); ++i) o[i] = static_cast<T>(out[i]);
  });
}

void conv_gradient(GradientContext& g) {
  std::vector<std::pair<std::string, ir::AttributeValue>> attributes;
  for (const auto& [key, value] : g.attrs().all()) attributes.emplace_back(key, value);
  ir::Value dy = g.output_gradient(0);
  if (g.needs_input_gradient(0))
    g.set_input_gradient(0, g.add(ir::OpId::ConvInputGrad, {dy, g.input(1), g.input(0)}, attributes));
  if (g.needs_input_gradient(1))
    g.set_input_gradient(1, g.add(ir::OpId::ConvWeightGrad, {dy, g.input(0), g.input(1)}, attributes));
  if (g.needs_input_gradient(2)) {
    const ir::ValueType& y = g.output_type(0);
    if (!y.has_rank) g.unsupported("the output's rank is not known");
    std::vector<int64_t> axes{0};
    for (size_t d = 2; d < y.dims.size(); ++d) axes.push_back(static_cast<int64_t>(d));
    g.set_input_gradient(2, g.add(ir::OpId::ReduceSum, {dy, g.int64s(axes)}, {{"keepdims", int64_t{0}}}));
  }
}

}  // namespace

GRAFT_REGISTER_OP("graft", "ConvInputGrad", infer_conv_input_grad, conv_grad_kernel<false>);
GRAFT_REGISTER_OP("graft", "ConvWeightGrad", infer_conv_input_grad, conv_grad_kernel<true>);
GRAFT_REGISTER_GRADIENT(Conv, conv_gradient);

}  // namespace graft::ops
