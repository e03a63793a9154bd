// ConvTranspose (ONNX): the gradient of Conv with respect to its input, used
// as a learned upsampling. y[o] += x[i] * w[k] for o = i * stride - pad_begin
// + k * dilation.
//
// Algorithm (col2im), per image and group: one gemm computes the columns
// W_g^T (Mg * kernel x Cg) times X_g (Cg x input pixels), then col2im adds
// every column entry into the output position it maps to. Long inputs are
// cut into chunks of rows to bound the column buffer.
//
// Output extents and padding, per spatial dimension, following the ONNX
// operator document (window = (kernel - 1) * dilation + 1):
//   output_shape given, or auto_pad SAME_UPPER / SAME_LOWER (then
//     out = in * stride): total padding stride * (in - 1) + output_padding +
//     window - out; SAME_UPPER pads floor(total / 2) at the beginning,
//     SAME_LOWER total - floor(total / 2) (the ONNX reference); otherwise the
//     explicit pads' beginning, or without pads max(0, total) / 2 (ONNX
//     Runtime), so that a negative total extends the end;
//   otherwise out = stride * (in - 1) + output_padding + window - pads.
#include <algorithm>
#include <vector>

#include "graft/core/kernel_interrupt.h"
#include "graft/core/parallel.h"
#include "graft/ops/conv_util.h"
#include "graft/ops/gradient.h"
#include "graft/ops/infer_util.h"
#include "graft/ops/op_context.h"

namespace graft::ops {
namespace {

using conv::Geometry3d;

// Attributes beyond the shared window ones.
struct TransposeAttributes {
  conv::WindowAttributes window;
  std::vector<int64_t> output_padding;
  std::vector<int64_t> output_shape;  // spatial extents, empty when not given
  bool explicit_pads = false;         // the pads attribute is present
};

TransposeAttributes read_transpose_attributes(const ir::Node& node, size_t spatial,
                                              const std::vector<int64_t>& kernel) {
  TransposeAttributes a;
  a.window = conv::read_window_attributes(node, spatial, kernel, false);
  a.output_padding = node.attributes.get_ints("output_padding", std::vector<int64_t>(spatial, 0));
  if (a.output_padding.size() != spatial)
    graft::fail(ErrorKind::invalid_model, node.describe(), ": attribute 'output_padding' has ", a.output_padding.size(),
                " values, expected ", spatial);
  for (int64_t v : a.output_padding)
    if (v < 0 || v > (int64_t{1} << 31))
      graft::fail(ErrorKind::invalid_model, node.describe(), ": output_padding ", v, " is out of range");
  a.explicit_pads = node.attributes.has("pads");
  a.output_shape = node.attributes.get_ints("output_shape", {});
  if (a.output_shape.size() == spatial + 2) a.output_shape.erase(a.output_shape.begin(), a.output_shape.begin() + 2);
  if (!a.output_shape.empty() && a.output_shape.size() != spatial)
    graft::fail(ErrorKind::invalid_model, node.describe(), ": attribute 'output_shape' has ", a.output_shape.size(),
                " values, expected ", spatial);
  return a;
}

// Floor division (the padding split rounds toward minus infinity for
// negative totals): an arithmetic shift, defined for every int64 in C++20.
int64_t floor_half(int64_t v) { return v >> 1; }

// Output extent and begin padding of spatial dimension d for input extent
// `in`; every step is checked (a model's attributes may hold any int64).
void transpose_dim(const ir::Node& node, const TransposeAttributes& a, size_t d, int64_t in, int64_t& out,
                   int64_t& pad_begin) {
  const conv::WindowAttributes& w = a.window;
  const size_t rank = w.kernel.size();
  auto overflow = [&] {
    graft::fail(ErrorKind::invalid_model, node.describe(), ": output extent overflows in spatial dimension ", d);
  };
  int64_t window = 0, natural = 0;
  if (__builtin_mul_overflow(w.kernel[d] - 1, w.dilations[d], &window) || __builtin_add_overflow(window, 1, &window) ||
      __builtin_mul_overflow(w.strides[d], in - 1, &natural) ||
      __builtin_add_overflow(natural, a.output_padding[d], &natural) || __builtin_add_overflow(natural, window, &natural))
    overflow();
  const bool same = w.auto_pad == conv::AutoPad::same_upper || w.auto_pad == conv::AutoPad::same_lower;
  if (!a.output_shape.empty() || same) {
    if (!a.output_shape.empty()) {
      out = a.output_shape[d];
      if (out < 0)
        graft::fail(ErrorKind::invalid_model, node.describe(), ": output_shape ", out, " in spatial dimension ", d,
                    " is negative");
    } else if (__builtin_mul_overflow(in, w.strides[d], &out)) {
      overflow();
    }
    int64_t total = 0;
    if (__builtin_sub_overflow(natural, out, &total)) overflow();
    if (w.auto_pad == conv::AutoPad::same_upper) {
      pad_begin = floor_half(total);
    } else if (w.auto_pad == conv::AutoPad::same_lower) {
      pad_begin = total - floor_half(total);
    } else if (a.explicit_pads) {
      pad_begin = w.pads[d];
    } else {
      pad_begin = std::max<int64_t>(0, total) / 2;
    }
  } else if (w.auto_pad == conv::AutoPad::valid) {
    out = natural;
    pad_begin = 0;
  } else {
    if (__builtin_sub_overflow(natural, w.pads[d], &out) || __builtin_sub_overflow(out, w.pads[d + rank], &out))
      overflow();
    pad_begin = w.pads[d];
  }
  if (out < 0)
    graft::fail(ErrorKind::invalid_model, node.describe(), ": output extent ", out, " in spatial dimension ", d,
                " is negative");
}

void conv_transpose_infer(InferContext& ctx) {
  const ir::ValueType& x = ctx.input_type(0);
  const ir::ValueType& w = ctx.input_type(1);
  if (!x.has_rank) {
    set_output_dtype_only(ctx, 0, x.dtype);
    return;
  }
  if (x.dims.size() < 3) ctx.fail("input X has rank ", x.dims.size(), ", expected at least 3 (N, C, spatial...)");
  const size_t spatial = x.dims.size() - 2;
  const int64_t group = ctx.attrs().get_int("group", 1);
  if (group < 1) ctx.fail("attribute 'group' is ", group, ", expected at least 1");
  std::vector<int64_t> kernel;
  ir::Dim out_channels;
  if (w.has_rank) {
    if (w.dims.size() != x.dims.size())
      ctx.fail("weight W has rank ", w.dims.size(), ", expected ", x.dims.size(), " like X");
    if (w.dims[1].is_known() && x.dims[1].is_known() && group <= std::max<int64_t>(1, x.dims[1].value))
      out_channels = ir::Dim::known(w.dims[1].value * group);
    for (size_t d = 2; d < w.dims.size(); ++d) {
      if (!w.dims[d].is_known()) {
        kernel.clear();
        break;
      }
      kernel.push_back(w.dims[d].value);
    }
  }
  TransposeAttributes a = read_transpose_attributes(ctx.node(), spatial, kernel);
  std::vector<ir::Dim> dims = {x.dims[0], out_channels};
  for (size_t d = 0; d < spatial; ++d) {
    const ir::Dim& in = x.dims[d + 2];
    if (a.window.kernel.size() != spatial || !in.is_known()) {
      dims.push_back(ir::Dim{});
      continue;
    }
    int64_t out = 0, pad = 0;
    transpose_dim(ctx.node(), a, d, in.value, out, pad);
    dims.push_back(ir::Dim::known(out));
  }
  ctx.set_output(0, ir::ValueType{x.dtype, true, std::move(dims)});
}

struct TransposeProblem {
  int64_t batch = 0, in_channels = 0, out_channels = 0, group = 1;
  Geometry3d geometry;  // of the forward convolution: input = our output, output = our input
  Shape output_shape;
};

template <typename T>
void transpose_tasks(const TransposeProblem& p, const T* x, const T* w, T* y, int64_t task_begin, int64_t task_end) {
  const Geometry3d& g = p.geometry;
  const int64_t cg = p.in_channels / p.group, mg = p.out_channels / p.group;
  const int64_t rows = mg * g.kernel_size();
  const int64_t in_pixels = g.output_size(), out_plane = g.input_size();
  const int64_t row = g.output[2];
  const int64_t chunk =
      std::min(in_pixels, std::max<int64_t>(1, conv::kColumnBudget / std::max<int64_t>(1, rows * row)) * row);
  std::vector<T> col(static_cast<size_t>(rows * chunk));
  for (int64_t task = task_begin; task < task_end; ++task) {
    const int64_t n = task / p.group, grp = task % p.group;
    const T* input = x + (n * p.in_channels + grp * cg) * in_pixels;
    const T* weights = w + grp * cg * rows;
    T* output = y + (n * p.out_channels + grp * mg) * out_plane;
    for (int64_t begin = 0; begin < in_pixels; begin += chunk) {
      check_kernel_interrupt();
      const int64_t end = std::min(in_pixels, begin + chunk);
      conv::matmul<T>(true, rows, end - begin, cg, weights, rows, input + begin, in_pixels, false, col.data(),
                      end - begin);
      conv::col2im_add<T>(col.data(), mg, g, begin, end, end - begin, output);
    }
  }
}

template <typename T>
void conv_transpose_compute(const TransposeProblem& p, const T* x, const T* w, const T* bias, T* y) {
  const int64_t out_plane = p.geometry.input_size();
  const int64_t total = p.batch * p.out_channels * out_plane;
  std::fill(y, y + total, T(0));
  if (total == 0) return;
  if (p.in_channels > 0 && p.geometry.output_size() > 0) {
    const int64_t tasks = p.batch * p.group;
    if (tasks >= current_num_threads() && tasks > 1) {
      parallel_for(tasks, 1, [&](int64_t begin, int64_t end) { transpose_tasks<T>(p, x, w, y, begin, end); });
    } else {
      transpose_tasks<T>(p, x, w, y, 0, tasks);
    }
  }
  if (bias) {
    for (int64_t plane = 0; plane < p.batch * p.out_channels; ++plane) {
      const T b = bias[plane % p.out_channels];
      T* out = y + plane * out_plane;
      for (int64_t i = 0; i < out_plane; ++i) out[i] += b;
    }
  }
}

void conv_transpose_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& w = ctx.input(1);
  const Tensor* bias = ctx.has_input(2) ? &ctx.input(2) : nullptr;
  if (!dtype_is_float(x.dtype())) ctx.unsupported("input X is ", dtype_name(x.dtype()), ", expected a float type");
  if (x.rank() < 3) ctx.fail("input X has rank ", x.rank(), ", expected at least 3 (N, C, spatial...)");
  if (w.rank() != x.rank()) ctx.fail("weight W has rank ", w.rank(), ", expected ", x.rank(), " like X");
  if (w.dtype() != x.dtype())
    ctx.fail("weight W is ", dtype_name(w.dtype()), ", expected ", dtype_name(x.dtype()), " like X");
  TransposeProblem p;
  p.batch = x.dim(0);
  p.in_channels = x.dim(1);
  p.group = ctx.attrs().get_int("group", 1);
  if (p.group < 1) ctx.fail("attribute 'group' is ", p.group, ", expected at least 1");
  if (w.dim(0) != p.in_channels) ctx.fail("W has ", w.dim(0), " input channels, X has ", p.in_channels);
  if (p.in_channels % p.group != 0 || p.group > std::max<int64_t>(1, p.in_channels))
    ctx.fail("X has ", p.in_channels, " channels, not a multiple of group ", p.group);
  p.out_channels = w.dim(1) * p.group;
  if (bias && (bias->rank() != 1 || bias->dim(0) != p.out_channels || bias->dtype() != x.dtype()))
    ctx.fail("bias B is ", bias->type_string(), ", expected ", dtype_name(x.dtype()), "[", p.out_channels, "]");
  const size_t spatial = static_cast<size_t>(x.rank() - 2);
  if (spatial > 3) ctx.unsupported(spatial, " spatial dimensions are not supported (at most 3)");
  Shape kernel(w.shape().begin() + 2, w.shape().end());
  TransposeAttributes a = read_transpose_attributes(ctx.node(), spatial, kernel);
  p.output_shape = {p.batch, p.out_channels};
  const size_t lead = 3 - spatial;
  Geometry3d& g = p.geometry;
  for (size_t d = 0; d < spatial; ++d) {
    int64_t out = 0, pad = 0;
    transpose_dim(ctx.node(), a, d, x.dim(static_cast<int64_t>(d) + 2), out, pad);
    p.output_shape.push_back(out);
    g.input[lead + d] = out;
    g.output[lead + d] = x.dim(static_cast<int64_t>(d) + 2);
    g.kernel[lead + d] = a.window.kernel[d];
    g.stride[lead + d] = a.window.strides[d];
    g.dilation[lead + d] = a.window.dilations[d];
    g.pad_begin[lead + d] = pad;
  }
  Tensor& y = ctx.allocate_output(0, x.dtype(), p.output_shape);
  if (x.dtype() == DType::float32) {
    conv_transpose_compute<float>(p, x.data<float>(), w.data<float>(), bias ? bias->data<float>() : nullptr,
                                  y.data<float>());
  } else if (x.dtype() == DType::float64) {
    conv_transpose_compute<double>(p, x.data<double>(), w.data<double>(), bias ? bias->data<double>() : nullptr,
                                   y.data<double>());
  } else {
    Tensor xf = conv::to_float32(x), wf = conv::to_float32(w);
    Tensor bf = bias ? conv::to_float32(*bias) : Tensor();
    Tensor yf(DType::float32, p.output_shape);
    conv_transpose_compute<float>(p, xf.data<float>(), wf.data<float>(), bias ? bf.data<float>() : nullptr,
                                  yf.data<float>());
    conv::from_float32(yf, y);
  }
}

}  // namespace

GRAFT_REGISTER_OP("", "ConvTranspose", conv_transpose_infer, conv_transpose_kernel);

// Gradient builder (graft/ops/gradient.h), explicit pads only (no auto_pad,
// no output_shape): ConvTranspose is the input gradient of a Conv, so its own
// input gradient is that Conv, Conv(d_y, w), and its weight gradient is
// graft.ConvWeightGrad with the roles of d_y and x exchanged; the bias
// gradient is d_y summed over N and the spatial axes.
namespace {

void conv_transpose_gradient(GradientContext& g) {
  if (g.attrs().has("output_shape") || g.attrs().get_string("auto_pad", "NOTSET") != "NOTSET")
    g.unsupported("output_shape or auto_pad");
  std::vector<std::pair<std::string, ir::AttributeValue>> attributes;
  for (const char* key : {"strides", "pads", "dilations", "group", "kernel_shape"})
    if (g.attrs().has(key)) attributes.emplace_back(key, g.attrs().all().at(key));
  ir::Value dy = g.output_gradient(0);
  if (g.needs_input_gradient(0)) g.set_input_gradient(0, g.add(ir::OpId::Conv, {dy, g.input(1)}, attributes));
  if (g.needs_input_gradient(1))
    g.set_input_gradient(1, g.add(ir::OpId::ConvWeightGrad, {g.input(0), dy, g.input(1)}, attributes));
  if (g.needs_input_gradient(2)) {
    const ir::ValueType& y = g.output_type(0);
    if (!y.has_rank) g.unsupported("the output's rank is not known");
    std::vector<int64_t> axes{0};
    for (size_t d = 2; d < y.dims.size(); ++d) axes.push_back(static_cast<int64_t>(d));
    g.set_input_gradient(2, g.add(ir::OpId::ReduceSum, {dy, g.int64s(axes)}, {{"keepdims", int64_t{0}}}));
  }
}

}  // namespace

GRAFT_REGISTER_GRADIENT(ConvTranspose, conv_transpose_gradient);

}  // namespace graft::ops
