// Pooling on the OpenCL device: MaxPool, AveragePool, GlobalMaxPool and
// GlobalAveragePool, float32.
//
// What: the window pools over 1 to 3 spatial dimensions (NCHW and its 1-D and
// 3-D relatives) with kernel_shape, strides, pads, auto_pad, dilations and
// ceil_mode, and AveragePool's count_include_pad; the global pools over any
// number of spatial dimensions.
// Why: CNN stems and heads (ResNet's 3x3/2 MaxPool, its GlobalAveragePool)
// would otherwise bounce to the host between the convolutions.
// How: the window geometry is resolved on the host by the same code as the
// reference kernels (ops/conv_util.h: conv::make_geometry), normalized to
// three spatial dimensions, and passed as a struct argument, so one program
// serves every shape. One work-item per output element loops over its
// window. Padding never takes part in a max; AveragePool divides by the taps
// inside the input, or with count_include_pad by the taps inside the
// explicitly padded extent (taps that ceil_mode adds past the padding never
// count), as the reference kernel does; an empty window gives NaN. The global
// pools run one work-item per (image, channel) plane, or one work-group of 64
// per plane (partial results combined in local memory) for large planes, as
// opencl_row_launch.h's group_per_row chooses for the device.
// Refused: other dtypes, MaxPool's Indices output (storage_order, which only
// orders the Indices, is accepted without them), LpPool (no kernel here).
#include "opencl_kernel.h"
#include "opencl_row_launch.h"

#ifdef GRAFT_HAVE_OPENCL_HEADERS

#include "graft/core/error.h"
#include "graft/ops/conv_util.h"

namespace graft::opencl {

namespace {

const char* kPoolSource = R"CLC(
typedef struct {
  long input[3];
  long output[3];
  long window[3];
  long stride[3];
  long dilation[3];
  long pad_begin[3];
  long pad_end[3];
  long planes;
  long count_include_pad;
} PoolGeometry;

__kernel void max_pool(__global const float* x, __global float* y, PoolGeometry g) {
  const long i = get_global_id(0);
  const long out_size = g.output[0] * g.output[1] * g.output[2];
  if (i >= g.planes * out_size) return;
  const long plane = i / out_size;
  long rest = i % out_size;
  const long ow = rest % g.output[2];
  rest /= g.output[2];
  const long oh = rest % g.output[1];
  const long od = rest / g.output[1];
  __global const float* src = x + plane * g.input[0] * g.input[1] * g.input[2];
  float best = -INFINITY;
  for (long kd = 0; kd < g.window[0]; ++kd) {
    const long id = od * g.stride[0] - g.pad_begin[0] + kd * g.dilation[0];
    if (id < 0 || id >= g.input[0]) continue;
    for (long kh = 0; kh < g.window[1]; ++kh) {
      const long ih = oh * g.stride[1] - g.pad_begin[1] + kh * g.dilation[1];
      if (ih < 0 || ih >= g.input[1]) continue;
      __global const float* row = src + (id * g.input[1] + ih) * g.input[2];
      for (long kw = 0; kw < g.window[2]; ++kw) {
        const long iw = ow * g.stride[2] - g.pad_begin[2] + kw * g.dilation[2];
        if (iw < 0 || iw >= g.input[2]) continue;
        const float v = row[iw];
        best = best < v ? v : best;  /* std::max: a NaN tap never wins */
      }
    }
  }
  y[i] = best;
}

/* Taps k < taps whose position start + k * dilation lies in [lo, hi). */
long taps_inside(long start, long dilation, long taps, long lo, long hi) {
  long n = 0;
  for (long k = 0; k < taps; ++k) {
    const long p = start + k * dilation;
    if (p >= lo && p < hi) ++n;
  }
  return n;
}

__kernel void average_pool(__global const float* x, __global float* y, PoolGeometry g) {
  const long i = get_global_id(0);
  const long out_size = g.output[0] * g.output[1] * g.output[2];
  if (i >= g.planes * out_size) return;
  const long plane = i / out_size;
  long rest = i % out_size;
  const long o[3] = {rest / (g.output[1] * g.output[2]), (rest / g.output[2]) % g.output[1], rest % g.output[2]};
  __global const float* src = x + plane * g.input[0] * g.input[1] * g.input[2];
  float sum = 0.0f;
  for (long kd = 0; kd < g.window[0]; ++kd) {
    const long id = o[0] * g.stride[0] - g.pad_begin[0] + kd * g.dilation[0];
    if (id < 0 || id >= g.input[0]) continue;
    for (long kh = 0; kh < g.window[1]; ++kh) {
      const long ih = o[1] * g.stride[1] - g.pad_begin[1] + kh * g.dilation[1];
      if (ih < 0 || ih >= g.input[1]) continue;
      __global const float* row = src + (id * g.input[1] + ih) * g.input[2];
      for (long kw = 0; kw < g.window[2]; ++kw) {
        const long iw = o[2] * g.stride[2] - g.pad_begin[2] + kw * g.dilation[2];
        if (iw < 0 || iw >= g.input[2]) continue;
        sum += row[iw];
      }
    }
  }
  long count = 1;
  for (int d = 0; d < 3; ++d) {
    const long start = o[d] * g.stride[d] - g.pad_begin[d];
    count *= g.count_include_pad ? taps_inside(start, g.dilation[d], g.window[d], -g.pad_begin[d], g.input[d] + g.pad_end[d])
                                 : taps_inside(start, g.dilation[d], g.window[d], 0, g.input[d]);
  }
  y[i] = count > 0 ? sum / (float)count : NAN;
}

__kernel void global_max_pool(__global const float* x, __global float* y, long planes, long size) {
  const long p = get_global_id(0);
  if (p >= planes) return;
  __global const float* src = x + p * size;
  float best = -INFINITY;
  for (long i = 0; i < size; ++i) best = best < src[i] ? src[i] : best;
  y[p] = best;
}

__kernel void global_average_pool(__global const float* x, __global float* y, long planes, long size) {
  const long p = get_global_id(0);
  if (p >= planes) return;
  __global const float* src = x + p * size;
  float sum = 0.0f;
  for (long i = 0; i < size; ++i) sum += src[i];
  y[p] = size > 0 ? sum / (float)size : NAN;
}

/* Large planes: one work-group of 64 per plane, the partial results combined in local memory. */
__kernel __attribute__((reqd_work_group_size(64, 1, 1)))
void group_global_max_pool(__global const float* x, __global float* y, long planes, long size) {
  __local float partial[64];
  const long p = get_group_id(0);
  const int l = (int)get_local_id(0);
  __global const float* src = x + p * size;
  float best = -INFINITY;
  for (long i = l; i < size; i += 64) best = best < src[i] ? src[i] : best;
  partial[l] = best;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int step = 32; step > 0; step >>= 1) {
    if (l < step) partial[l] = partial[l] < partial[l + step] ? partial[l + step] : partial[l];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (l == 0) y[p] = partial[0];
}

__kernel __attribute__((reqd_work_group_size(64, 1, 1)))
void group_global_average_pool(__global const float* x, __global float* y, long planes, long size) {
  __local float partial[64];
  const long p = get_group_id(0);
  const int l = (int)get_local_id(0);
  __global const float* src = x + p * size;
  float sum = 0.0f;
  for (long i = l; i < size; i += 64) sum += src[i];
  partial[l] = sum;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int step = 32; step > 0; step >>= 1) {
    if (l < step) partial[l] += partial[l + step];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (l == 0) y[p] = partial[0] / (float)size;
}
)CLC";

/// The kernel's PoolGeometry (all longs: one layout on host and device).
struct PoolGeometry {
  int64_t input[3];
  int64_t output[3];
  int64_t window[3];  ///< the kernel extents (`kernel` is a keyword in OpenCL C)
  int64_t stride[3];
  int64_t dilation[3];
  int64_t pad_begin[3];
  int64_t pad_end[3];
  int64_t planes;
  int64_t count_include_pad;
};
static_assert(sizeof(PoolGeometry) == 23 * sizeof(int64_t));

class WindowPoolKernel final : public NodeKernel {
 public:
  WindowPoolKernel(const char* name, PoolGeometry geometry) : name_(name), geometry_(geometry) {}

  void compile(ClDevice& device) override { kernel_ = ClKernel(device, device.program(kPoolSource), name_); }

  void enqueue(ClLaunchContext& context, std::span<const ClTensor> inputs,
               std::span<const ClTensor> outputs) const override {
    const ClRange range = items(outputs[0].numel());
    kernel_.launch(context.queue(), range, inputs[0], outputs[0], geometry_);
  }

 private:
  const char* name_;
  PoolGeometry geometry_;
  ClKernel kernel_;
};

class GlobalPoolKernel final : public NodeKernel {
 public:
  GlobalPoolKernel(const char* name, int64_t planes, int64_t size) : name_(name), planes_(planes), size_(size) {}

  void compile(ClDevice& device) override {
    grouped_ = group_per_row(device, planes_, size_);
    kernel_ = ClKernel(device, device.program(kPoolSource), grouped_ ? std::string("group_") + name_ : name_);
  }

  void enqueue(ClLaunchContext& context, std::span<const ClTensor> inputs,
               std::span<const ClTensor> outputs) const override {
    kernel_.launch(context.queue(), grouped_ ? groups(planes_) : items(planes_), inputs[0], outputs[0], planes_, size_);
  }

 private:
  std::string name_;
  int64_t planes_, size_;
  bool grouped_ = false;  ///< one work-group per plane (group_per_row), else one work-item
  ClKernel kernel_;
};

std::string float32_only(const KernelRequest& request) {
  if (request.inputs.empty() || request.inputs[0].dtype != DType::float32)
    return std::string(request.inputs.empty() ? "no input" : dtype_name(request.inputs[0].dtype)) +
           " input (the OpenCL pools are float32 only)";
  return {};
}

/// The resolved geometry of a window pool node (throws like the reference kernel on bad attributes).
PoolGeometry window_geometry(const KernelRequest& request) {
  const ir::Node& node = request.node;
  const Shape& x = request.inputs[0].shape;
  if (x.size() < 3) fail(ErrorKind::invalid_model, "input X has rank ", x.size(), ", expected at least 3");
  if (!node.attributes.has("kernel_shape")) fail(ErrorKind::invalid_model, "attribute 'kernel_shape' is required");
  const size_t spatial = x.size() - 2;
  ops::conv::WindowAttributes attrs = ops::conv::read_window_attributes(node, spatial, {}, true);
  ops::conv::Geometry3d g = ops::conv::make_geometry(node, attrs, Shape(x.begin() + 2, x.end()));
  PoolGeometry p{};
  for (int d = 0; d < 3; ++d) {
    p.input[d] = g.input[d];
    p.output[d] = g.output[d];
    p.window[d] = g.kernel[d];
    p.stride[d] = g.stride[d];
    p.dilation[d] = g.dilation[d];
    p.pad_begin[d] = g.pad_begin[d];
    p.pad_end[d] = g.pad_end[d];
  }
  p.planes = x[0] * x[1];
  p.count_include_pad = node.attributes.get_int("count_include_pad", 0) != 0;
  Shape expected = {x[0], x[1]};
  for (int64_t e : ops::conv::geometry_output_shape(g, spatial)) expected.push_back(e);
  if (request.outputs.empty() || request.outputs[0].shape != expected)
    fail(ErrorKind::invalid_model, "output shape is not ", shape_to_string(expected));
  return p;
}

std::string window_pool_support(const KernelRequest& request) {
  std::string why = float32_only(request);
  if (!why.empty()) return why;
  if (request.node.num_outputs() > 1) return "MaxPool's Indices output";
  window_geometry(request);  // throws on bad attributes: guarded<> makes it the reason
  return {};
}

std::unique_ptr<NodeKernel> make_max_pool_kernel(const KernelRequest& request) {
  return std::make_unique<WindowPoolKernel>("max_pool", window_geometry(request));
}

std::unique_ptr<NodeKernel> make_average_pool_kernel(const KernelRequest& request) {
  return std::make_unique<WindowPoolKernel>("average_pool", window_geometry(request));
}

std::string global_pool_support(const KernelRequest& request) {
  std::string why = float32_only(request);
  if (!why.empty()) return why;
  if (request.inputs[0].shape.size() < 2) return "input rank below 2";
  return {};
}

std::unique_ptr<NodeKernel> make_global_pool_kernel(const KernelRequest& request, const char* name) {
  const Shape& x = request.inputs[0].shape;
  const int64_t planes = x[0] * x[1];
  const int64_t size = planes == 0 ? 0 : request.inputs[0].numel() / planes;
  return std::make_unique<GlobalPoolKernel>(name, planes, size);
}

std::unique_ptr<NodeKernel> make_global_max_pool_kernel(const KernelRequest& request) {
  return make_global_pool_kernel(request, "global_max_pool");
}

std::unique_ptr<NodeKernel> make_global_average_pool_kernel(const KernelRequest& request) {
  return make_global_pool_kernel(request, "global_average_pool");
}

}  // namespace

GRAFT_REGISTER_OPENCL_KERNEL(MaxPool, guarded<window_pool_support>, make_max_pool_kernel);
GRAFT_REGISTER_OPENCL_KERNEL(AveragePool, guarded<window_pool_support>, make_average_pool_kernel);
GRAFT_REGISTER_OPENCL_KERNEL(GlobalMaxPool, guarded<global_pool_support>, make_global_max_pool_kernel);
GRAFT_REGISTER_OPENCL_KERNEL(GlobalAveragePool, guarded<global_pool_support>, make_global_average_pool_kernel);

}  // namespace graft::opencl

#endif  // GRAFT_HAVE_OPENCL_HEADERS
