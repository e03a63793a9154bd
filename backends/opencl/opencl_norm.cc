// Normalizations on the OpenCL device, float32: LayerNormalization,
// BatchNormalization (inference) and InstanceNormalization.
//
// What: LayerNormalization normalizes each row of prod(X.shape[axis:])
// elements to zero mean and unit variance, then scales by Scale and shifts by
// the optional B; BatchNormalization (inference) applies the running
// statistics per channel; InstanceNormalization normalizes each (n, c) plane
// with its own statistics, then scales and shifts per channel.
// Why: transformer blocks (LayerNormalization) and CNNs (BatchNormalization
// left unfolded, InstanceNormalization in style and segmentation nets) would
// otherwise leave the device at every block.
// How: the statistics follow the reference kernels (ops/layer_norm.cc,
// batch_norm.cc, instance_norm.cc): two passes (the mean, then the mean
// squared deviation: the biased variance), inv_std = 1 / sqrt(var + epsilon).
// One work-item per row (LayerNormalization) or plane (InstanceNormalization)
// computes its statistics and writes its outputs; long rows and planes run
// one work-group of 64 each instead, the sums reduced in local memory, where
// opencl_row_launch.h's group_per_row says so for the device. BatchNormalization runs one work-item per element with
// y = x * a + b, a = scale / sqrt(var + epsilon), b = B - mean * a, as the
// reference folds them (spatial = 0 before opset 9 included). Shapes are
// kernel arguments; the three ops share one program.
// Refused: dtypes other than float32; LayerNormalization's Mean and
// InvStdDev outputs (more than one output), a stash_type other than float,
// Scale or B that are not the normalized shape or a single value;
// BatchNormalization in training mode or with its extra outputs.
#include "opencl_kernel.h"
#include "opencl_row_launch.h"

#ifdef GRAFT_HAVE_OPENCL_HEADERS

#include "graft/core/error.h"

namespace graft::opencl {

namespace {

const char* kNormSource = R"CLC(
/* scale_step / bias_step: 1 for a parameter of the row's shape, 0 for a single value; no bias: has_bias 0. */
__kernel void layer_norm(__global const float* x, __global const float* scale, __global const float* bias,
                         __global float* y, long rows, long width, long scale_step, long bias_step, int has_bias,
                         float epsilon) {
  const long r = get_global_id(0);
  if (r >= rows) return;
  __global const float* src = x + r * width;
  __global float* dst = y + r * width;
  float sum = 0.0f;
  for (long i = 0; i < width; ++i) sum += src[i];
  const float mean = sum / (float)width;
  float squares = 0.0f;
  for (long i = 0; i < width; ++i) {
    const float d = src[i] - mean;
    squares += d * d;
  }
  const float inv_std = 1.0f / sqrt(squares / (float)width + epsilon);
  for (long i = 0; i < width; ++i) {
    float v = (src[i] - mean) * inv_std * scale[i * scale_step];
    if (has_bias) v += bias[i * bias_step];
    dst[i] = v;
  }
}

__kernel void batch_norm(__global const float* x, __global const float* scale, __global const float* bias,
                         __global const float* mean, __global const float* var, __global float* y, long count,
                         long channels, long plane, float epsilon) {
  const long i = get_global_id(0);
  if (i >= count) return;
  const long c = (i / plane) % channels;
  const float a = scale[c] / sqrt(var[c] + epsilon);
  const float b = bias[c] - mean[c] * a;
  y[i] = x[i] * a + b;
}

__kernel void instance_norm(__global const float* x, __global const float* scale, __global const float* bias,
                            __global float* y, long planes, long channels, long plane, float epsilon) {
  const long p = get_global_id(0);
  if (p >= planes) return;
  __global const float* src = x + p * plane;
  __global float* dst = y + p * plane;
  float sum = 0.0f;
  for (long i = 0; i < plane; ++i) sum += src[i];
  const float mean = plane > 0 ? sum / (float)plane : 0.0f;
  float squares = 0.0f;
  for (long i = 0; i < plane; ++i) {
    const float d = src[i] - mean;
    squares += d * d;
  }
  const float inv_std = 1.0f / sqrt((plane > 0 ? squares / (float)plane : 0.0f) + epsilon);
  const long c = p % channels;
  const float a = scale[c] * inv_std;
  const float b = bias[c] - mean * a;
  for (long i = 0; i < plane; ++i) dst[i] = src[i] * a + b;
}

/* The sum of v over the work-group of 64; every item gets it. */
float group_sum(float v, __local float* partial) {
  const int l = (int)get_local_id(0);
  partial[l] = v;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int step = 32; step > 0; step >>= 1) {
    if (l < step) partial[l] += partial[l + step];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  const float result = partial[0];
  barrier(CLK_LOCAL_MEM_FENCE);
  return result;
}

/* Long rows and planes: one work-group of 64 per row (arguments as layer_norm's). */
__kernel __attribute__((reqd_work_group_size(64, 1, 1)))
void group_layer_norm(__global const float* x, __global const float* scale, __global const float* bias,
                      __global float* y, long rows, long width, long scale_step, long bias_step, int has_bias,
                      float epsilon) {
  __local float partial[64];
  const long r = get_group_id(0);
  const long l = get_local_id(0);
  __global const float* src = x + r * width;
  __global float* dst = y + r * width;
  float sum = 0.0f;
  for (long i = l; i < width; i += 64) sum += src[i];
  const float mean = group_sum(sum, partial) / (float)width;
  float squares = 0.0f;
  for (long i = l; i < width; i += 64) {
    const float d = src[i] - mean;
    squares += d * d;
  }
  const float inv_std = 1.0f / sqrt(group_sum(squares, partial) / (float)width + epsilon);
  for (long i = l; i < width; i += 64) {
    float v = (src[i] - mean) * inv_std * scale[i * scale_step];
    if (has_bias) v += bias[i * bias_step];
    dst[i] = v;
  }
}

/* One work-group of 64 per (n, c) plane (arguments as instance_norm's). */
__kernel __attribute__((reqd_work_group_size(64, 1, 1)))
void group_instance_norm(__global const float* x, __global const float* scale, __global const float* bias,
                         __global float* y, long planes, long channels, long plane, float epsilon) {
  __local float partial[64];
  const long p = get_group_id(0);
  const long l = get_local_id(0);
  __global const float* src = x + p * plane;
  __global float* dst = y + p * plane;
  float sum = 0.0f;
  for (long i = l; i < plane; i += 64) sum += src[i];
  const float mean = group_sum(sum, partial) / (float)plane;
  float squares = 0.0f;
  for (long i = l; i < plane; i += 64) {
    const float d = src[i] - mean;
    squares += d * d;
  }
  const float inv_std = 1.0f / sqrt(group_sum(squares, partial) / (float)plane + epsilon);
  const long c = p % channels;
  const float a = scale[c] * inv_std;
  const float b = bias[c] - mean * a;
  for (long i = l; i < plane; i += 64) dst[i] = src[i] * a + b;
}
)CLC";

/// Why the node's tensors are not all float32 (input `i` of request, or an output), or empty.
std::string float32_only(const KernelRequest& request, const char* op) {
  for (size_t i = 0; i < request.inputs.size(); ++i) {
    DType t = request.inputs[i].dtype;
    if (t != DType::undefined && t != DType::float32)
      return std::string(dtype_name(t)) + " input " + std::to_string(i) + " (the OpenCL " + op + " is float32 only)";
  }
  for (const ClType& t : request.outputs)
    if (t.dtype != DType::float32) return std::string(dtype_name(t.dtype)) + " output";
  return {};
}

// ---- LayerNormalization ------------------------------------------------------

struct LayerNormPlan {
  int64_t rows = 0, width = 1, scale_step = 1, bias_step = 0;
  int32_t has_bias = 0;
  float epsilon = 1e-5f;
};

/// The step (1: one value per normalized element, 0: one value) of a Scale or
/// B of `p`'s shape against `normalized`, or -1 when it is another broadcast.
int64_t parameter_step(const Shape& p, const Shape& normalized) {
  int64_t numel = 1;
  for (int64_t d : p) numel *= d;
  if (p.size() > normalized.size()) return -1;
  if (numel == 1) return 0;
  // As many values as the row, and its extents the trailing ones of `normalized` (so the
  // leading extents left out are 1): element i of the row reads value i.
  int64_t width = 1;
  for (int64_t d : normalized) width *= d;
  if (numel != width) return -1;
  for (size_t i = 0; i < p.size(); ++i)
    if (p[p.size() - 1 - i] != normalized[normalized.size() - 1 - i]) return -1;
  return 1;
}

LayerNormPlan layer_norm_plan(const KernelRequest& request, std::string* why) {
  const ir::Node& node = request.node;
  LayerNormPlan plan;
  const Shape& x = request.inputs[0].shape;
  const int64_t rank = static_cast<int64_t>(x.size());
  const int64_t axis = normalize_axis(node.attributes.get_int("axis", -1), rank, node.describe());
  Shape normalized(x.begin() + axis, x.end());
  for (int64_t d : normalized) plan.width *= d;
  plan.rows = plan.width == 0 ? 0 : request.inputs[0].numel() / plan.width;
  plan.epsilon = node.attributes.get_float("epsilon", 1e-5f);
  plan.scale_step = parameter_step(request.inputs[1].shape, normalized);
  if (plan.scale_step < 0 && why)
    *why = "Scale " + shape_to_string(request.inputs[1].shape) + " broadcast to " + shape_to_string(normalized) +
           " (only the full shape or one value)";
  plan.has_bias = request.inputs.size() > 2 && request.inputs[2].dtype != DType::undefined;
  if (plan.has_bias) {
    plan.bias_step = parameter_step(request.inputs[2].shape, normalized);
    if (plan.bias_step < 0 && why && why->empty())
      *why = "B " + shape_to_string(request.inputs[2].shape) + " broadcast to " + shape_to_string(normalized) +
             " (only the full shape or one value)";
  }
  return plan;
}

class LayerNormKernel final : public NodeKernel {
 public:
  explicit LayerNormKernel(LayerNormPlan plan) : plan_(plan) {}

  void compile(ClDevice& device) override {
    grouped_ = group_per_row(device, plan_.rows, plan_.width);
    kernel_ = ClKernel(device, device.program(kNormSource), grouped_ ? "group_layer_norm" : "layer_norm");
  }

  void enqueue(ClLaunchContext& context, std::span<const ClTensor> inputs,
               std::span<const ClTensor> outputs) const override {
    if (plan_.rows == 0 || plan_.width == 0) return;
    const ClRange range = grouped_ ? groups(plan_.rows) : items(plan_.rows);
    // Without B the scale buffer stands in for it (never read).
    cl_mem bias = plan_.has_bias ? inputs[2].buffer : inputs[1].buffer;
    kernel_.launch(context.queue(), range, inputs[0], inputs[1], bias, outputs[0], plan_.rows, plan_.width,
                   plan_.scale_step, plan_.bias_step, plan_.has_bias, plan_.epsilon);
  }

 private:
  LayerNormPlan plan_;
  bool grouped_ = false;  ///< one work-group per row (group_per_row), else one work-item
  ClKernel kernel_;
};

std::string layer_norm_support(const KernelRequest& request) {
  if (request.node.num_outputs() > 1) return "LayerNormalization's Mean and InvStdDev outputs";
  std::string why = float32_only(request, "LayerNormalization");
  if (!why.empty()) return why;
  if (request.inputs.size() < 2 || request.inputs[1].dtype == DType::undefined) return "no Scale input";
  if (request.node.attributes.get_int("stash_type", 1) != static_cast<int64_t>(DType::float32))
    return "stash_type other than float";
  layer_norm_plan(request, &why);  // throws on a bad axis: guarded<> makes it the reason
  return why;
}

std::unique_ptr<NodeKernel> make_layer_norm_kernel(const KernelRequest& request) {
  return std::make_unique<LayerNormKernel>(layer_norm_plan(request, nullptr));
}

// ---- BatchNormalization ------------------------------------------------------

struct ChannelPlan {
  int64_t count = 0, batch = 1, channels = 1, plane = 1;
  float epsilon = 1e-5f;
};

/// The (N, channels, plane) view of X, as the reference kernel takes it
/// (spatial = 0 before opset 9: every (C, D1, ...) position is a channel).
ChannelPlan batch_norm_plan(const KernelRequest& request) {
  const ir::Node& node = request.node;
  const Shape& x = request.inputs[0].shape;
  ChannelPlan plan;
  plan.count = request.inputs[0].numel();
  plan.batch = x[0];
  plan.channels = x[1];
  const bool spatial = node.opset_version >= 9 || node.attributes.get_int("spatial", 1) != 0;
  for (size_t d = 2; d < x.size(); ++d) (spatial ? plan.plane : plan.channels) *= x[d];
  plan.epsilon = node.attributes.get_float("epsilon", 1e-5f);
  return plan;
}

class BatchNormKernel final : public NodeKernel {
 public:
  explicit BatchNormKernel(ChannelPlan plan) : plan_(plan) {}

  void compile(ClDevice& device) override { kernel_ = ClKernel(device, device.program(kNormSource), "batch_norm"); }

  void enqueue(ClLaunchContext& context, std::span<const ClTensor> inputs,
               std::span<const ClTensor> outputs) const override {
    const ClRange range = items(plan_.count);
    kernel_.launch(context.queue(), range, inputs[0], inputs[1], inputs[2], inputs[3], inputs[4], outputs[0],
                   plan_.count, plan_.channels, plan_.plane, plan_.epsilon);
  }

 private:
  ChannelPlan plan_;
  ClKernel kernel_;
};

std::string batch_norm_support(const KernelRequest& request) {
  const ir::Node& node = request.node;
  if (node.num_outputs() > 1) return "BatchNormalization's running-statistics outputs (training)";
  if (node.opset_version >= 14 && node.attributes.get_int("training_mode", 0) != 0) return "training_mode";
  std::string why = float32_only(request, "BatchNormalization");
  if (!why.empty()) return why;
  if (request.inputs.size() != 5) return "not 5 inputs";
  for (const ClType& t : request.inputs)
    if (t.dtype == DType::undefined) return "an absent input";
  if (request.inputs[0].shape.size() < 2) return "X of rank below 2";
  const ChannelPlan plan = batch_norm_plan(request);
  for (size_t i = 1; i <= 4; ++i)
    if (request.inputs[i].numel() != plan.channels)
      return "input " + std::to_string(i) + " does not hold one value per channel";
  return {};
}

std::unique_ptr<NodeKernel> make_batch_norm_kernel(const KernelRequest& request) {
  return std::make_unique<BatchNormKernel>(batch_norm_plan(request));
}

// ---- InstanceNormalization ---------------------------------------------------

class InstanceNormKernel final : public NodeKernel {
 public:
  explicit InstanceNormKernel(ChannelPlan plan) : plan_(plan) {}

  void compile(ClDevice& device) override {
    grouped_ = group_per_row(device, plan_.batch * plan_.channels, plan_.plane);
    kernel_ = ClKernel(device, device.program(kNormSource), grouped_ ? "group_instance_norm" : "instance_norm");
  }

  void enqueue(ClLaunchContext& context, std::span<const ClTensor> inputs,
               std::span<const ClTensor> outputs) const override {
    const ClRange range = grouped_ ? groups(plan_.batch * plan_.channels) : items(plan_.batch * plan_.channels);
    kernel_.launch(context.queue(), range, inputs[0], inputs[1], inputs[2], outputs[0], plan_.batch * plan_.channels,
                   plan_.channels, plan_.plane, plan_.epsilon);
  }

 private:
  ChannelPlan plan_;
  bool grouped_ = false;  ///< one work-group per plane (group_per_row), else one work-item
  ClKernel kernel_;
};

ChannelPlan instance_norm_plan(const KernelRequest& request) {
  const Shape& x = request.inputs[0].shape;
  ChannelPlan plan;
  plan.count = request.inputs[0].numel();
  plan.batch = x[0];
  plan.channels = x[1];
  plan.plane = plan.batch == 0 || plan.channels == 0 ? 0 : plan.count / (plan.batch * plan.channels);
  plan.epsilon = request.node.attributes.get_float("epsilon", 1e-5f);
  return plan;
}

std::string instance_norm_support(const KernelRequest& request) {
  std::string why = float32_only(request, "InstanceNormalization");
  if (!why.empty()) return why;
  if (request.inputs.size() != 3) return "not 3 inputs";
  for (const ClType& t : request.inputs)
    if (t.dtype == DType::undefined) return "an absent input";
  if (request.inputs[0].shape.size() < 2) return "input of rank below 2";
  const int64_t channels = request.inputs[0].shape[1];
  for (size_t i = 1; i <= 2; ++i)
    if (request.inputs[i].numel() != channels)
      return "input " + std::to_string(i) + " does not hold one value per channel";
  return {};
}

std::unique_ptr<NodeKernel> make_instance_norm_kernel(const KernelRequest& request) {
  return std::make_unique<InstanceNormKernel>(instance_norm_plan(request));
}

}  // namespace

GRAFT_REGISTER_OPENCL_KERNEL(LayerNormalization, guarded<layer_norm_support>, make_layer_norm_kernel);
GRAFT_REGISTER_OPENCL_KERNEL(BatchNormalization, guarded<batch_norm_support>, make_batch_norm_kernel);
GRAFT_REGISTER_OPENCL_KERNEL(InstanceNormalization, guarded<instance_norm_support>, make_instance_norm_kernel);

}  // namespace graft::opencl

#endif  // GRAFT_HAVE_OPENCL_HEADERS
