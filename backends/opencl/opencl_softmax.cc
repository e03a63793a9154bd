// Softmax and LogSoftmax on the OpenCL device, float32, any axis.
//
// What: both opset semantics. Opset < 13 coerces the input to 2-D at `axis`
// (default 1) and normalizes each row of prod(dims[axis:]) elements; opset
// >= 13 normalizes along the single dimension `axis` (default -1).
// Why: attention and classifier heads end in a Softmax; running it on the
// device keeps the logits there.
// How: as the reference kernel (ops/softmax.cc), the input is viewed as
// [outer, n, inner] and normalized along n. One work-item per (outer, inner)
// vector walks its n values (`inner` apart) three times: the maximum, the sum
// of exp(x - max), then the outputs, so every exponent is at most 0
// (numerically stable); Softmax keeps each exp(x - max) in the output and
// scales it in place. Long contiguous rows (inner 1) run one work-group of 64
// per row instead where opencl_row_launch.h's group_per_row says so for the
// device, the maximum and the sum reduced in local memory. Softmax multiplies by 1 / sum; LogSoftmax writes
// (x - max) - log(sum), in two steps as the reference does. Shapes are kernel
// arguments: one program for both ops and every shape.
// Refused: dtypes other than float32.
#include "opencl_kernel.h"
#include "opencl_row_launch.h"

#ifdef GRAFT_HAVE_OPENCL_HEADERS

#include "graft/core/error.h"

namespace graft::opencl {

namespace {

const char* kSoftmaxSource = R"CLC(
__kernel void softmax(__global const float* x, __global float* y, long outer, long n, long inner) {
  const long w = get_global_id(0);
  if (w >= outer * inner) return;
  const long base = (w / inner) * n * inner + w % inner;
  __global const float* src = x + base;
  __global float* dst = y + base;
  float m = -INFINITY;
  for (long k = 0; k < n; ++k) m = fmax(m, src[k * inner]);
  float sum = 0.0f;
  for (long k = 0; k < n; ++k) {
    const float e = exp(src[k * inner] - m);
    dst[k * inner] = e;  /* kept for the scaling pass: one exp per element */
    sum += e;
  }
  const float scale = 1.0f / sum;
  for (long k = 0; k < n; ++k) dst[k * inner] *= scale;
}

__kernel void log_softmax(__global const float* x, __global float* y, long outer, long n, long inner) {
  const long w = get_global_id(0);
  if (w >= outer * inner) return;
  const long base = (w / inner) * n * inner + w % inner;
  __global const float* src = x + base;
  __global float* dst = y + base;
  float m = -INFINITY;
  for (long k = 0; k < n; ++k) m = fmax(m, src[k * inner]);
  float sum = 0.0f;
  for (long k = 0; k < n; ++k) sum += exp(src[k * inner] - m);
  const float log_sum = log(sum);
  for (long k = 0; k < n; ++k) dst[k * inner] = (src[k * inner] - m) - log_sum;
}

/* The maximum (fmax) or the sum of v over the work-group of 64; every item gets it. */
float group_max(float v, __local float* partial) {
  const int l = (int)get_local_id(0);
  partial[l] = v;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int step = 32; step > 0; step >>= 1) {
    if (l < step) partial[l] = fmax(partial[l], partial[l + step]);
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  const float result = partial[0];
  barrier(CLK_LOCAL_MEM_FENCE);
  return result;
}

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

/* Long contiguous rows (inner == 1): one work-group of 64 per row. */
__kernel __attribute__((reqd_work_group_size(64, 1, 1)))
void group_softmax(__global const float* x, __global float* y, long n, int log_softmax) {
  __local float partial[64];
  const long row = get_group_id(0);
  const long l = get_local_id(0);
  __global const float* src = x + row * n;
  __global float* dst = y + row * n;
  float m = -INFINITY;
  for (long k = l; k < n; k += 64) m = fmax(m, src[k]);
  m = group_max(m, partial);
  float sum = 0.0f;
  if (log_softmax) {
    for (long k = l; k < n; k += 64) sum += exp(src[k] - m);
    const float log_sum = log(group_sum(sum, partial));
    for (long k = l; k < n; k += 64) dst[k] = (src[k] - m) - log_sum;
  } else {
    for (long k = l; k < n; k += 64) {
      const float e = exp(src[k] - m);
      dst[k] = e;  /* each item scales the elements it wrote: no exp twice, no barrier needed */
      sum += e;
    }
    const float scale = 1.0f / group_sum(sum, partial);
    for (long k = l; k < n; k += 64) dst[k] *= scale;
  }
}
)CLC";

struct SoftmaxView {
  int64_t outer = 1, n = 1, inner = 1;
};

/// The [outer, n, inner] view of the node's input (throws on a bad axis).
SoftmaxView softmax_view(const KernelRequest& request) {
  const ir::Node& node = request.node;
  const Shape& shape = request.inputs[0].shape;
  const int opset = node.opset_version;
  const int64_t rank = static_cast<int64_t>(shape.size());
  const int64_t axis = normalize_axis(node.attributes.get_int("axis", opset < 13 ? 1 : -1), rank, node.describe());
  SoftmaxView v;
  for (int64_t d = 0; d < axis; ++d) v.outer *= shape[static_cast<size_t>(d)];
  if (opset < 13) {
    for (int64_t d = axis; d < rank; ++d) v.n *= shape[static_cast<size_t>(d)];
  } else {
    v.n = rank == 0 ? 1 : shape[static_cast<size_t>(axis)];
    for (int64_t d = axis + 1; d < rank; ++d) v.inner *= shape[static_cast<size_t>(d)];
  }
  return v;
}

class SoftmaxKernel final : public NodeKernel {
 public:
  SoftmaxKernel(bool log_softmax, SoftmaxView view) : log_(log_softmax), view_(view) {}

  void compile(ClDevice& device) override {
    grouped_ = view_.inner == 1 && group_per_row(device, view_.outer, view_.n);
    kernel_ = ClKernel(device, device.program(kSoftmaxSource),
                       grouped_ ? "group_softmax"
                       : log_   ? "log_softmax"
                                : "softmax");
  }

  void enqueue(ClLaunchContext& context, std::span<const ClTensor> inputs,
               std::span<const ClTensor> outputs) const override {
    if (outputs[0].numel() == 0) return;
    if (grouped_) {
      kernel_.launch(context.queue(), groups(view_.outer), inputs[0], outputs[0], view_.n, static_cast<int32_t>(log_));
      return;
    }
    const ClRange range = items(view_.outer * view_.inner);
    kernel_.launch(context.queue(), range, inputs[0], outputs[0], view_.outer, view_.n, view_.inner);
  }

 private:
  bool log_;
  SoftmaxView view_;
  bool grouped_ = false;  ///< one work-group per contiguous row (group_per_row), else one work-item per vector
  ClKernel kernel_;
};

std::string softmax_support(const KernelRequest& request) {
  if (request.inputs.empty() || request.inputs[0].dtype != DType::float32)
    return std::string(request.inputs.empty() ? "no input" : dtype_name(request.inputs[0].dtype)) +
           " input (the OpenCL Softmax is float32 only)";
  softmax_view(request);  // throws on a bad axis: guarded<> makes it the reason
  return {};
}

std::unique_ptr<NodeKernel> make_softmax_kernel(const KernelRequest& request) {
  return std::make_unique<SoftmaxKernel>(false, softmax_view(request));
}

std::unique_ptr<NodeKernel> make_log_softmax_kernel(const KernelRequest& request) {
  return std::make_unique<SoftmaxKernel>(true, softmax_view(request));
}

}  // namespace

GRAFT_REGISTER_OPENCL_KERNEL(Softmax, guarded<softmax_support>, make_softmax_kernel);
GRAFT_REGISTER_OPENCL_KERNEL(LogSoftmax, guarded<softmax_support>, make_log_softmax_kernel);

}  // namespace graft::opencl

#endif  // GRAFT_HAVE_OPENCL_HEADERS
