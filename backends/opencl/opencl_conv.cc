// Conv on the OpenCL device: float32, NCHW, 1-D, 2-D and 3-D, any group,
// strides, dilations, explicit pads or auto_pad, optional bias.
//
// Two algorithms, chosen at plan time:
//   - one input channel per group (depthwise, also with a channel multiplier,
//     as in MobileNet): a direct kernel, one work item per output element
//     summing its window; no GEMM, no temporary;
//   - otherwise im2col + GEMM: a kernel writes each image's
//     (C * taps) x pixels column matrix (zeros where the window falls into
//     padding), then CLBlast multiplies the weight (M x C*taps per group) into
//     it: one strided batched GEMM over the images when group == 1, else one
//     over the groups per image. A 1x1 kernel with unit strides and no padding
//     skips im2col (the input planes are the column matrix). Images are taken
//     in chunks that bound the column buffer (ClLaunchContext::scratch).
// A bias is written into Y first (a broadcast kernel) and the GEMM adds onto
// it (beta = 1); the depthwise kernel starts its sums from it.
//
// The window geometry is resolved by the reference kernels' helpers
// (ops/conv_util.h: pads, auto_pad SAME_UPPER/SAME_LOWER/VALID, output
// extents) and normalized to three spatial dimensions, so one program of three
// kernels serves every shape and rank: the geometry is a kernel argument.
// CLBlast (clblast_loader.h) is needed only by the GEMM path.
//
// Why not CLBlast's own convolution: measured on PoCL (CPU) for a ResNet
// layer (64 -> 64 channels, 3x3, 56x56), CLBlastSconvgemm took 141 ms where
// this im2col + CLBlastSgemm takes 39 ms (the GEMM 37 of them), and it takes
// only symmetric pads. This im2col (one work item per pixel and channel,
// looping over the taps) took 1.8 ms there, CLBlastSim2col 3.7 ms.
#include "opencl_kernel.h"

#ifdef GRAFT_HAVE_OPENCL_HEADERS

#include <algorithm>
#include <exception>

#include "clblast_loader.h"
#include "graft/core/error.h"
#include "graft/ir/op_id.h"
#include "graft/ops/conv_util.h"

namespace graft::opencl {

namespace {

/// Largest tensor the kernels index (int arguments, CLBlast's int offsets).
constexpr int64_t kMaxElements = (int64_t{1} << 31) - 1;
/// Bound on the im2col buffer (floats) of one chunk of images: 128 MiB.
constexpr int64_t kColumnBudget = int64_t{1} << 25;

/// The geometry as the kernels take it: a by-value struct argument, declared
/// alike in the OpenCL C source below (ints only, so one layout on both
/// sides; `kernel` is an OpenCL C keyword, hence `win`).
struct ConvGeometry {
  int32_t channels;      // C, input channels
  int32_t out_channels;  // M, output channels
  int32_t multiplier;    // M / C (depthwise: output channels per input channel)
  int32_t src[3];        // input extents: depth, height, width
  int32_t dst[3];        // output extents
  int32_t win[3];        // kernel extents
  int32_t stride[3];
  int32_t dilation[3];
  int32_t pad[3];  // padding before the input
};

const char* const kConvSource = R"CL(
typedef struct {
  int channels;
  int out_channels;
  int multiplier;
  int src[3];
  int dst[3];
  int win[3];
  int stride[3];
  int dilation[3];
  int pad[3];
} ConvGeometry;

// col[i][c * taps + t][p] = x[first_image + i][c] at output pixel p's tap t,
// 0 in padding: one work item per (pixel, channel, image) writes its taps.
// Range: (pixels, C, images).
__kernel void graft_conv_im2col(__global const float* x, __global float* col, ConvGeometry g, int first_image) {
  const int p = get_global_id(0), c = get_global_id(1), i = get_global_id(2);
  const int pixels = g.dst[0] * g.dst[1] * g.dst[2];
  const int taps = g.win[0] * g.win[1] * g.win[2];
  const int ow = p % g.dst[2], oh = (p / g.dst[2]) % g.dst[1], od = p / (g.dst[2] * g.dst[1]);
  const long plane = (long)(first_image + i) * g.channels + c;
  __global const float* in = x + plane * g.src[0] * g.src[1] * g.src[2];
  __global float* out = col + ((long)i * g.channels + c) * taps * pixels + p;
  const int d0 = od * g.stride[0] - g.pad[0], h0 = oh * g.stride[1] - g.pad[1], w0 = ow * g.stride[2] - g.pad[2];
  for (int kd = 0; kd < g.win[0]; ++kd) {
    const int id = d0 + kd * g.dilation[0];
    const bool d_in = id >= 0 && id < g.src[0];
    for (int kh = 0; kh < g.win[1]; ++kh) {
      const int ih = h0 + kh * g.dilation[1];
      const bool dh_in = d_in && ih >= 0 && ih < g.src[1];
      __global const float* row = in + (dh_in ? ((long)id * g.src[1] + ih) * g.src[2] : 0);
      for (int kw = 0; kw < g.win[2]; ++kw) {
        const int iw = w0 + kw * g.dilation[2];
        *out = dh_in && iw >= 0 && iw < g.src[2] ? row[iw] : 0.0f;
        out += pixels;
      }
    }
  }
}

// One input channel per group: y[n][m][p] = bias[m] + sum over the window of
// x[n][m / multiplier] * w[m]. Range: (pixels, M, N).
__kernel void graft_conv_depthwise(__global const float* x, __global const float* w, __global const float* bias,
                                   __global float* y, ConvGeometry g, int has_bias) {
  const int p = get_global_id(0), m = get_global_id(1), n = get_global_id(2);
  const int pixels = g.dst[0] * g.dst[1] * g.dst[2];
  const int ow = p % g.dst[2], oh = (p / g.dst[2]) % g.dst[1], od = p / (g.dst[2] * g.dst[1]);
  const long plane = (long)n * g.channels + m / g.multiplier;
  __global const float* in = x + plane * g.src[0] * g.src[1] * g.src[2];
  __global const float* taps = w + (long)m * g.win[0] * g.win[1] * g.win[2];
  float acc = has_bias ? bias[m] : 0.0f;
  for (int kd = 0; kd < g.win[0]; ++kd) {
    const int id = od * g.stride[0] - g.pad[0] + kd * g.dilation[0];
    if (id < 0 || id >= g.src[0]) continue;
    for (int kh = 0; kh < g.win[1]; ++kh) {
      const int ih = oh * g.stride[1] - g.pad[1] + kh * g.dilation[1];
      if (ih < 0 || ih >= g.src[1]) continue;
      __global const float* row = in + (id * g.src[1] + ih) * g.src[2];
      __global const float* trow = taps + (kd * g.win[1] + kh) * g.win[2];
      for (int kw = 0; kw < g.win[2]; ++kw) {
        const int iw = ow * g.stride[2] - g.pad[2] + kw * g.dilation[2];
        if (iw >= 0 && iw < g.src[2]) acc += trow[kw] * row[iw];
      }
    }
  }
  y[((long)n * g.out_channels + m) * pixels + p] = acc;
}

// y[n][m][p] = bias[m]. Range: (pixels, M, N).
__kernel void graft_conv_bias(__global float* y, __global const float* bias, int pixels, int out_channels) {
  const int p = get_global_id(0), m = get_global_id(1), n = get_global_id(2);
  y[((long)n * out_channels + m) * pixels + p] = bias[m];
}
)CL";

/// A Conv node resolved at plan time.
struct ConvPlan {
  int64_t batch = 0, channels = 0, out_channels = 0, group = 1;
  ops::conv::Geometry3d geometry;
  bool has_bias = false;
  bool depthwise = false;  ///< one input channel per group: the direct kernel
  bool pointwise = false;  ///< 1x1, unit strides, no padding: no im2col

  int64_t taps() const { return geometry.kernel_size(); }
  int64_t pixels() const { return geometry.output_size(); }
  /// Floats of one image's column matrix.
  int64_t column_size() const { return channels * taps() * pixels(); }
};

ConvPlan plan_conv(const KernelRequest& request, std::string& why) {
  ConvPlan p;
  const ir::Node& node = request.node;
  const Shape& x = request.inputs[0].shape;
  const Shape& w = request.inputs[1].shape;
  if (x.size() < 3 || x.size() > 5) {
    why = "X of rank " + std::to_string(x.size()) + " (1-D to 3-D convolutions only)";
    return p;
  }
  if (w.size() != x.size()) {
    why = "W's rank differs from X's";
    return p;
  }
  p.batch = x[0];
  p.channels = x[1];
  p.out_channels = w[0];
  p.group = node.attributes.get_int("group", 1);
  if (p.group < 1 || p.channels % p.group != 0 || w[1] != p.channels / p.group || p.out_channels % p.group != 0) {
    why = "channels do not match the group";
    return p;
  }
  if (p.channels == 0) {
    why = "no input channels";
    return p;
  }
  try {
    const size_t spatial = x.size() - 2;
    std::vector<int64_t> kernel(w.begin() + 2, w.end());
    ops::conv::WindowAttributes attrs = ops::conv::read_window_attributes(node, spatial, kernel, false);
    p.geometry = ops::conv::make_geometry(node, attrs, Shape(x.begin() + 2, x.end()));
  } catch (const std::exception& e) {
    why = e.what();
    return p;
  }
  const ops::conv::Geometry3d& g = p.geometry;
  for (int d = 0; d < 3; ++d) {
    for (int64_t v : {g.input[d], g.output[d], g.kernel[d], g.stride[d], g.dilation[d], g.pad_begin[d]})
      if (v > kMaxElements) {
        why = "a window extent of 2^31 or more";
        return p;
      }
  }
  if (request.inputs.size() > 2 && request.inputs[2].dtype != DType::undefined) {
    if (request.inputs[2].shape != Shape{p.out_channels}) {
      why = "B is not of shape [M]";
      return p;
    }
    p.has_bias = true;
  }
  p.depthwise = p.channels == p.group;
  p.pointwise = p.taps() == 1;
  for (int d = 0; d < 3; ++d) p.pointwise = p.pointwise && g.stride[d] == 1 && g.pad_begin[d] == 0 && g.pad_end[d] == 0;
  if (!p.depthwise && !p.pointwise && p.column_size() > kMaxElements) {
    why = "an im2col matrix of 2^31 or more elements";
    return p;
  }
  return p;
}

ConvGeometry kernel_geometry(const ConvPlan& p) {
  ConvGeometry k{};
  k.channels = static_cast<int32_t>(p.channels);
  k.out_channels = static_cast<int32_t>(p.out_channels);
  k.multiplier = static_cast<int32_t>(p.out_channels / p.group);
  for (int d = 0; d < 3; ++d) {
    k.src[d] = static_cast<int32_t>(p.geometry.input[d]);
    k.dst[d] = static_cast<int32_t>(p.geometry.output[d]);
    k.win[d] = static_cast<int32_t>(p.geometry.kernel[d]);
    k.stride[d] = static_cast<int32_t>(p.geometry.stride[d]);
    k.dilation[d] = static_cast<int32_t>(p.geometry.dilation[d]);
    k.pad[d] = static_cast<int32_t>(p.geometry.pad_begin[d]);
  }
  return k;
}

class ConvKernel final : public NodeKernel {
 public:
  explicit ConvKernel(ConvPlan plan) : plan_(plan), geometry_(kernel_geometry(plan)) {}

  void compile(ClDevice& device) override {
    cl_program program = device.program(kConvSource);
    if (plan_.depthwise) {
      depthwise_ = ClKernel(device, program, "graft_conv_depthwise");
      return;
    }
    if (!plan_.pointwise) im2col_ = ClKernel(device, program, "graft_conv_im2col");
    if (plan_.has_bias) bias_ = ClKernel(device, program, "graft_conv_bias");
    clblast::prepare(device.index());
  }

  void enqueue(ClLaunchContext& context, std::span<const ClTensor> inputs,
               std::span<const ClTensor> outputs) const override {
    const ClTensor& y = outputs[0];
    if (y.numel() == 0) return;
    const ConvPlan& p = plan_;
    const size_t pixels = static_cast<size_t>(p.pixels()), M = static_cast<size_t>(p.out_channels);
    const size_t N = static_cast<size_t>(p.batch);
    cl_mem bias = p.has_bias ? inputs[2].buffer : nullptr;
    ClRange output_range;
    output_range.global = {pixels, M, N};
    output_range.dims = 3;
    if (p.depthwise) {
      depthwise_.launch(context.queue(), output_range, inputs[0], inputs[1], bias, y, geometry_, int32_t{p.has_bias});
      return;
    }
    if (p.has_bias)
      bias_.launch(context.queue(), output_range, y, bias, static_cast<int32_t>(pixels), static_cast<int32_t>(M));

    const size_t G = static_cast<size_t>(p.group);
    const size_t mg = M / G;
    const size_t kg = static_cast<size_t>(p.channels / p.group * p.taps());  // reduction per group
    const size_t column = static_cast<size_t>(p.column_size());              // floats per image
    clblast::SgemmArgs g;
    g.m = mg;
    g.n = pixels;
    g.k = kg;
    g.a = inputs[1].buffer;
    g.a_ld = kg;
    g.b_ld = pixels;
    g.beta = p.has_bias ? 1.0f : 0.0f;
    g.c = y.buffer;
    g.c_ld = pixels;

    const size_t chunk =
        p.pointwise ? N
                    : static_cast<size_t>(std::max<int64_t>(1, kColumnBudget / std::max<int64_t>(1, p.column_size())));
    cl_mem col = p.pointwise ? inputs[0].buffer : context.scratch(std::min(chunk, N) * column * sizeof(float));
    for (size_t first = 0; first < N; first += chunk) {
      const size_t images = std::min(chunk, N - first);
      size_t col_base = 0;  // offset of image `first` in col
      if (p.pointwise) {
        col_base = first * column;
      } else {
        ClRange range;
        range.global = {pixels, static_cast<size_t>(p.channels), images};
        range.dims = 3;
        im2col_.launch(context.queue(), range, inputs[0], col, geometry_, static_cast<int32_t>(first));
      }
      g.b = col;
      if (G == 1) {
        g.a_offset = 0;
        g.b_offset = col_base;
        g.c_offset = first * M * pixels;
        if (images == 1) {
          clblast::sgemm(context.queue(), g);
        } else {
          clblast::sgemm_strided_batched(context.queue(), g, 0, column, M * pixels, images);
        }
        continue;
      }
      for (size_t i = 0; i < images; ++i) {
        g.a_offset = 0;
        g.b_offset = col_base + i * column;
        g.c_offset = (first + i) * M * pixels;
        clblast::sgemm_strided_batched(context.queue(), g, mg * kg, kg * pixels, mg * pixels, G);
      }
    }
  }

 private:
  ConvPlan plan_;
  ConvGeometry geometry_;
  ClKernel depthwise_, im2col_, bias_;
};

std::string conv_support(const KernelRequest& request) {
  if (request.inputs.size() < 2) return "Conv without X and W";
  for (const ClType& t : request.inputs) {
    if (t.dtype == DType::undefined) continue;
    if (t.dtype != DType::float32) return std::string(dtype_name(t.dtype)) + " input (float32 only)";
    if (t.numel() > kMaxElements) return "an input of 2^31 or more elements";
  }
  for (const ClType& t : request.outputs) {
    if (t.dtype != DType::float32) return std::string(dtype_name(t.dtype)) + " output (float32 only)";
    if (t.numel() > kMaxElements) return "an output of 2^31 or more elements";
  }
  std::string why;
  ConvPlan plan;
  try {
    plan = plan_conv(request, why);
  } catch (const std::exception& e) {  // a malformed attribute
    return e.what();
  }
  if (!why.empty()) return why;
  if (plan.batch * plan.out_channels * plan.pixels() != request.outputs[0].numel())
    return "the output shape differs from the resolved geometry";
  if (!plan.depthwise) return clblast::unavailable_reason();
  return {};
}

std::unique_ptr<NodeKernel> make_conv_kernel(const KernelRequest& request) {
  std::string why;
  ConvPlan plan = plan_conv(request, why);
  GRAFT_CHECK(why.empty(), why);
  return std::make_unique<ConvKernel>(plan);
}

}  // namespace

GRAFT_REGISTER_OPENCL_KERNEL(Conv, conv_support, make_conv_kernel);

}  // namespace graft::opencl

#endif  // GRAFT_HAVE_OPENCL_HEADERS
