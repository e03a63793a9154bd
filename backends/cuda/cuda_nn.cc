// Neural-network ops on the CUDA device, float32, in graft's own CUDA
// kernels (compiled by NVRTC like the rest; cuDNN is reported by `graft
// devices` but not used yet):
//
//   Softmax, LogSoftmax   both opset semantics (< 13: rows of dims[axis:];
//                         else one axis): a block per row when the axis is
//                         innermost, else a thread per (outer, inner) pair;
//   LayerNormalization    a block per row of dims[axis:] (two-pass mean and
//                         variance), scale and optional bias per element;
//   BatchNormalization    inference, a thread per element (the module folds
//                         one that follows a Conv into the Conv's weights);
//   ReduceMean/Sum/Max/Min  over axes that are consecutive dimensions: a
//                         thread per (outer, inner) pair;
//   MaxPool, AveragePool  2-D NCHW (pads, strides, dilations, ceil_mode
//                         through the output shape, count_include_pad);
//   GlobalAveragePool/GlobalMaxPool  a block per (n, c) plane;
//   Conv                  2-D NCHW, groups, pads (also auto_pad), strides,
//                         dilations: im2col of each group for the whole
//                         batch into scratch, then one strided batched cuBLAS
//                         product per group with the weights shared; the
//                         bias added by a kernel. 1x1 convolutions with
//                         stride 1 and no padding read the input directly.
//
// All sources take shapes as arguments: each compiles once per process.
#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "cuda_kernel.h"
#include "graft/codegen/cuda_libraries.h"
#include "graft/core/error.h"
#include "graft/core/shape.h"
#include "graft/ir/op_id.h"

namespace graft::cuda {


namespace {

constexpr unsigned kThreads = 256;

const char* const kNnSource = GRAFT_CUDA_PRELUDE R"(
// A block-wide reduction of one float per thread (blockDim.x a power of two, <= 1024).
template <bool kMax>
__device__ __forceinline__ float graft_block_reduce(float v, float* shared) {
  for (int o = 16; o > 0; o >>= 1) {
    const float w = __shfl_xor_sync(0xffffffffu, v, o);
    v = kMax ? fmaxf(v, w) : v + w;
  }
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = (blockDim.x + 31) >> 5;
  __syncthreads();
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  v = threadIdx.x < warps ? shared[threadIdx.x] : (kMax ? -GRAFT_INF : 0.0f);
  if (warp == 0)
    for (int o = 16; o > 0; o >>= 1) {
      const float w = __shfl_xor_sync(0xffffffffu, v, o);
      v = kMax ? fmaxf(v, w) : v + w;
    }
  if (threadIdx.x == 0) shared[32] = v;
  __syncthreads();
  return shared[32];
}

// Softmax (or log-softmax) of each row of `cols` contiguous elements; a block per row.
extern "C" __global__ void graft_softmax_rows(float* y, const float* x, i64 rows, i64 cols, int log_output) {
  __shared__ float shared[33];
  const i64 row = graft_block();
  if (row >= rows) return;
  const float* in = x + row * cols;
  float* out = y + row * cols;
  float m = -GRAFT_INF;
  for (i64 c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, in[c]);
  m = graft_block_reduce<true>(m, shared);
  float s = 0.0f;
  for (i64 c = threadIdx.x; c < cols; c += blockDim.x) s += expf(in[c] - m);
  s = graft_block_reduce<false>(s, shared);
  if (log_output) {
    const float ls = logf(s);
    for (i64 c = threadIdx.x; c < cols; c += blockDim.x) out[c] = in[c] - m - ls;
  } else {
    const float r = 1.0f / s;
    for (i64 c = threadIdx.x; c < cols; c += blockDim.x) out[c] = expf(in[c] - m) * r;
  }
}

// Softmax along a middle axis: a thread per (outer, inner) pair.
extern "C" __global__ void graft_softmax_strided(float* y, const float* x, i64 outer, i64 axis_n, i64 inner,
                                                 int log_output) {
  const i64 i = graft_thread();
  if (i >= outer * inner) return;
  const i64 o = i / inner, k = i - o * inner;
  const float* in = x + o * axis_n * inner + k;
  float* out = y + o * axis_n * inner + k;
  float m = -GRAFT_INF;
  for (i64 a = 0; a < axis_n; ++a) m = fmaxf(m, in[a * inner]);
  float s = 0.0f;
  for (i64 a = 0; a < axis_n; ++a) s += expf(in[a * inner] - m);
  const float ls = logf(s), r = 1.0f / s;
  for (i64 a = 0; a < axis_n; ++a) out[a * inner] = log_output ? in[a * inner] - m - ls : expf(in[a * inner] - m) * r;
}

// LayerNormalization of each row of `cols` elements; a block per row.
extern "C" __global__ void graft_layer_norm(float* y, const float* x, const float* scale, const float* bias, i64 rows,
                                            i64 cols, float epsilon) {
  __shared__ float shared[33];
  const i64 row = graft_block();
  if (row >= rows) return;
  const float* in = x + row * cols;
  float* out = y + row * cols;
  float s = 0.0f;
  for (i64 c = threadIdx.x; c < cols; c += blockDim.x) s += in[c];
  const float mean = graft_block_reduce<false>(s, shared) / (float)cols;
  float v = 0.0f;
  for (i64 c = threadIdx.x; c < cols; c += blockDim.x) {
    const float d = in[c] - mean;
    v += d * d;
  }
  const float inv = rsqrtf(graft_block_reduce<false>(v, shared) / (float)cols + epsilon);
  for (i64 c = threadIdx.x; c < cols; c += blockDim.x)
    out[c] = (in[c] - mean) * inv * scale[c] + (bias ? bias[c] : 0.0f);
}

// Reductions over the middle of (outer, r, inner): a thread per (outer, inner).
// op: 0 sum, 1 mean, 2 max, 3 min.
extern "C" __global__ void graft_reduce(float* y, const float* x, i64 outer, i64 r, i64 inner, int op) {
  const i64 i = graft_thread();
  if (i >= outer * inner) return;
  const i64 o = i / inner, k = i - o * inner;
  const float* in = x + o * r * inner + k;
  float acc = op == 2 ? -GRAFT_INF : (op == 3 ? GRAFT_INF : 0.0f);
  for (i64 a = 0; a < r; ++a) {
    const float v = in[a * inner];
    if (op == 2) acc = (v > acc || v != v) ? v : acc;
    else if (op == 3) acc = (v < acc || v != v) ? v : acc;
    else acc += v;
  }
  y[i] = op == 1 ? acc / (float)r : acc;
}

// Global pooling of each (n, c) plane of hw elements; a block per plane. op: 0 average, 1 max.
extern "C" __global__ void graft_global_pool(float* y, const float* x, i64 planes, i64 hw, int op) {
  __shared__ float shared[33];
  const i64 p = graft_block();
  if (p >= planes) return;
  const float* in = x + p * hw;
  float acc = op ? -GRAFT_INF : 0.0f;
  for (i64 i = threadIdx.x; i < hw; i += blockDim.x) acc = op ? fmaxf(acc, in[i]) : acc + in[i];
  acc = op ? graft_block_reduce<true>(acc, shared) : graft_block_reduce<false>(acc, shared);
  if (threadIdx.x == 0) y[p] = op ? acc : acc / (float)hw;
}

struct GraftPool {
  i64 n_c, h, w, oh, ow;
  int kh, kw, sh, sw, ph, pw, dh, dw;
  int op;                  // 0 average, 1 max
  int count_include_pad;
};

// 2-D pooling, NCHW: a thread per output element.
extern "C" __global__ void graft_pool2d(float* y, const float* x, const GraftPool p) {
  const i64 i = graft_thread();
  if (i >= p.n_c * p.oh * p.ow) return;
  const i64 ox = i % p.ow, oy = (i / p.ow) % p.oh, plane = i / (p.ow * p.oh);
  const float* in = x + plane * p.h * p.w;
  float acc = p.op ? -GRAFT_INF : 0.0f;
  int count = 0;
  for (int ky = 0; ky < p.kh; ++ky) {
    const i64 iy = oy * p.sh - p.ph + (i64)ky * p.dh;
    for (int kx = 0; kx < p.kw; ++kx) {
      const i64 ix = ox * p.sw - p.pw + (i64)kx * p.dw;
      const bool inside = iy >= 0 && iy < p.h && ix >= 0 && ix < p.w;
      if (p.op) {
        if (inside) acc = fmaxf(acc, in[iy * p.w + ix]);
      } else {
        if (inside) acc += in[iy * p.w + ix];
        // Padding counts when asked, but never past the padded input's end.
        if (inside || (p.count_include_pad && iy < p.h + p.ph && ix < p.w + p.pw)) ++count;
      }
    }
  }
  y[i] = p.op ? acc : (count ? acc / (float)count : 0.0f);
}

struct GraftIm2col {
  i64 c, h, w, oh, ow;             // channels of the group, input and output planes
  i64 image_stride;                // elements between images of x
  int kh, kw, sh, sw, ph, pw, dh, dw;
};

// col[n][(ci * kh + ky) * kw + kx][oy * ow + ox] = x[n][ci][iy][ix] (0 in the padding), for every image.
extern "C" __global__ void graft_im2col(float* col, const float* x, i64 images, const GraftIm2col a) {
  const i64 per_image = a.c * a.kh * a.kw * a.oh * a.ow;
  const i64 i = graft_thread();
  if (i >= images * per_image) return;
  const i64 n = i / per_image, r = i - n * per_image;
  const i64 ox = r % a.ow, oy = (r / a.ow) % a.oh, row = r / (a.ow * a.oh);
  const i64 kx = row % a.kw, ky = (row / a.kw) % a.kh, ci = row / (a.kw * a.kh);
  const i64 iy = oy * a.sh - a.ph + ky * a.dh, ix = ox * a.sw - a.pw + kx * a.dw;
  col[i] = (iy >= 0 && iy < a.h && ix >= 0 && ix < a.w) ? x[n * a.image_stride + (ci * a.h + iy) * a.w + ix] : 0.0f;
}

// BatchNormalization (inference): y = (x - mean) / sqrt(var + eps) * scale + bias per channel.
extern "C" __global__ void graft_batch_norm(float* y, const float* x, const float* scale, const float* bias,
                                            const float* mean, const float* var, i64 n, i64 channels, i64 plane,
                                            float epsilon) {
  const i64 i = graft_thread();
  if (i >= n) return;
  const i64 c = (i / plane) % channels;
  y[i] = (x[i] - mean[c]) * rsqrtf(var[c] + epsilon) * scale[c] + bias[c];
}

// y[i] += bias[(i / plane) % channels].
extern "C" __global__ void graft_add_channel_bias(float* y, const float* bias, i64 n, i64 channels, i64 plane) {
  const i64 i = graft_thread();
  if (i >= n) return;
  y[i] += bias[(i / plane) % channels];
}
)";
GRAFT_REGISTER_CUDA_SOURCE(kNnSource);

std::string float_only(const KernelRequest& request) {
  for (const CuType& t : request.inputs)
    if (t.dtype != DType::undefined && t.dtype != DType::float32 && t.dtype != DType::int64)
      return std::string(dtype_name(t.dtype)) + " input (float32 only)";
  if (request.inputs.empty() || request.inputs[0].dtype != DType::float32) return "a data input other than float32";
  for (const CuType& t : request.outputs)
    if (t.dtype != DType::float32) return std::string(dtype_name(t.dtype)) + " output (float32 only)";
  return {};
}

int64_t product(const Shape& s, size_t from, size_t to) {
  int64_t n = 1;
  for (size_t d = from; d < to; ++d) n *= s[d];
  return n;
}

// ---- Softmax ----------------------------------------------------------------

class SoftmaxKernel final : public NodeKernel {
 public:
  SoftmaxKernel(int64_t outer, int64_t axis_n, int64_t inner, bool log)
      : outer_(outer), axis_n_(axis_n), inner_(inner), log_(log) {}
  void compile(int device) override {
    function_ = CudaFunction(kNnSource, inner_ == 1 ? "graft_softmax_rows" : "graft_softmax_strided", device);
  }
  void enqueue(CudaLaunchContext& context, std::span<const CuTensor> inputs,
               std::span<const CuTensor> outputs) const override {
    if (outer_ * axis_n_ * inner_ == 0) return;
    if (inner_ == 1)
      function_.launch(context.stream(), static_cast<uint64_t>(outer_), kThreads, outputs[0].address, inputs[0].address,
                       outer_, axis_n_, int32_t{log_});
    else
      function_.launch(context.stream(), blocks_for(outer_ * inner_, kThreads), kThreads, outputs[0].address,
                       inputs[0].address, outer_, axis_n_, inner_, int32_t{log_});
  }

 private:
  int64_t outer_, axis_n_, inner_;
  bool log_;
  CudaFunction function_;
};

std::unique_ptr<NodeKernel> make_softmax_kernel(const KernelRequest& request) {
  const ir::Node& node = request.node;
  const Shape& s = request.inputs[0].shape;
  const int opset = node.opset_version;
  const size_t rank = s.size();
  const int64_t axis = rank == 0 ? 0
                                 : normalize_axis(node.attributes.get_int("axis", opset < 13 ? 1 : -1),
                                                  static_cast<int64_t>(rank), node.describe());
  const bool log = node.op() == ir::OpId::LogSoftmax;
  const size_t a = static_cast<size_t>(axis);
  if (opset < 13) return std::make_unique<SoftmaxKernel>(product(s, 0, a), product(s, a, rank), 1, log);
  return std::make_unique<SoftmaxKernel>(product(s, 0, a), rank ? s[a] : 1, product(s, std::min(a + 1, rank), rank), log);
}

std::string softmax_support(const KernelRequest& request) { return float_only(request); }

// ---- LayerNormalization -----------------------------------------------------

class LayerNormKernel final : public NodeKernel {
 public:
  LayerNormKernel(int64_t rows, int64_t cols, float epsilon) : rows_(rows), cols_(cols), epsilon_(epsilon) {}
  void compile(int device) override { function_ = CudaFunction(kNnSource, "graft_layer_norm", device); }
  void enqueue(CudaLaunchContext& context, std::span<const CuTensor> inputs,
               std::span<const CuTensor> outputs) const override {
    if (rows_ * cols_ == 0) return;
    const uint64_t bias = inputs.size() > 2 ? inputs[2].address : 0;
    function_.launch(context.stream(), static_cast<uint64_t>(rows_), kThreads, outputs[0].address, inputs[0].address,
                     inputs[1].address, bias, rows_, cols_, epsilon_);
  }

 private:
  int64_t rows_, cols_;
  float epsilon_;
  CudaFunction function_;
};

size_t layer_norm_axis(const KernelRequest& request) {
  const Shape& s = request.inputs[0].shape;
  return static_cast<size_t>(normalize_axis(request.node.attributes.get_int("axis", -1),
                                            static_cast<int64_t>(s.size()), request.node.describe()));
}

std::string layer_norm_support(const KernelRequest& request) {
  std::string why = float_only(request);
  if (!why.empty()) return why;
  if (request.outputs.size() > 1) return "the Mean and InvStdDev outputs";
  if (request.inputs[0].shape.empty()) return "a 0-D input";
  const Shape& s = request.inputs[0].shape;
  const int64_t cols = product(s, layer_norm_axis(request), s.size());
  for (size_t i = 1; i < request.inputs.size() && i < 3; ++i)
    if (request.inputs[i].dtype != DType::undefined && request.inputs[i].numel() != cols)
      return "a scale or bias that is not one value per normalized element";
  return {};
}

std::unique_ptr<NodeKernel> make_layer_norm_kernel(const KernelRequest& request) {
  const Shape& s = request.inputs[0].shape;
  const size_t axis = layer_norm_axis(request);
  return std::make_unique<LayerNormKernel>(product(s, 0, axis), product(s, axis, s.size()),
                                           request.node.attributes.get_float("epsilon", 1e-5f));
}

// ---- reductions ---------------------------------------------------------------

/// The reduced axes (sorted, normalized), or false with a reason.
bool reduce_axes(const KernelRequest& request, std::vector<int64_t>& axes, std::string& why) {
  const ir::Node& node = request.node;
  const int64_t rank = static_cast<int64_t>(request.inputs[0].shape.size());
  const bool axes_input = (node.op() == ir::OpId::ReduceSum && node.opset_version >= 13) || node.opset_version >= 18;
  axes.clear();
  if (axes_input) {
    if (request.inputs.size() > 1 && request.inputs[1].dtype != DType::undefined) {
      const Tensor* t = request.constants[1];
      if (!t) {
        why = "axes not constant";
        return false;
      }
      for (int64_t k = 0; k < t->numel(); ++k) axes.push_back(t->data<int64_t>()[k]);
    }
  } else {
    axes = node.attributes.get_ints("axes", {});
  }
  if (axes.empty()) {
    if (node.attributes.get_int("noop_with_empty_axes", 0) != 0) {
      why = "noop_with_empty_axes";
      return false;
    }
    for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
  }
  for (int64_t& a : axes) a = normalize_axis(a, rank, node.describe());
  std::sort(axes.begin(), axes.end());
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  for (size_t i = 1; i < axes.size(); ++i)
    if (axes[i] != axes[i - 1] + 1) {
      why = "reduced axes that are not consecutive";
      return false;
    }
  return true;
}

class ReduceKernel final : public NodeKernel {
 public:
  ReduceKernel(int64_t outer, int64_t r, int64_t inner, int op) : outer_(outer), r_(r), inner_(inner), op_(op) {}
  void compile(int device) override { function_ = CudaFunction(kNnSource, "graft_reduce", device); }
  void enqueue(CudaLaunchContext& context, std::span<const CuTensor> inputs,
               std::span<const CuTensor> outputs) const override {
    if (outer_ * inner_ == 0) return;
    function_.launch(context.stream(), blocks_for(outer_ * inner_, kThreads), kThreads, outputs[0].address,
                     inputs[0].address, outer_, r_, inner_, int32_t{op_});
  }

 private:
  int64_t outer_, r_, inner_;
  int op_;
  CudaFunction function_;
};

std::string reduce_support(const KernelRequest& request) {
  std::string why = float_only(request);
  if (!why.empty()) return why;
  std::vector<int64_t> axes;
  reduce_axes(request, axes, why);
  if (why.empty() && request.inputs[0].numel() == 0) return "an empty input";
  return why;
}

std::unique_ptr<NodeKernel> make_reduce_kernel(const KernelRequest& request) {
  std::vector<int64_t> axes;
  std::string why;
  GRAFT_CHECK(reduce_axes(request, axes, why), why);
  const Shape& s = request.inputs[0].shape;
  int op = 0;
  switch (request.node.op()) {
    case ir::OpId::ReduceMean: op = 1; break;
    case ir::OpId::ReduceMax: op = 2; break;
    case ir::OpId::ReduceMin: op = 3; break;
    default: op = 0; break;
  }
  if (axes.empty()) return std::make_unique<ReduceKernel>(product(s, 0, s.size()), 1, 1, op);
  const size_t first = static_cast<size_t>(axes.front()), last = static_cast<size_t>(axes.back()) + 1;
  return std::make_unique<ReduceKernel>(product(s, 0, first), product(s, first, last), product(s, last, s.size()), op);
}

// ---- pooling ------------------------------------------------------------------

/// The kernel argument block of graft_pool2d.
struct Pool {
  int64_t n_c, h, w, oh, ow;
  int32_t kh, kw, sh, sw, ph, pw, dh, dw;
  int32_t op;
  int32_t count_include_pad;
};

/// Begin pads of a 2-D window op (NOTSET pads, VALID, or SAME_* from the output shape).
bool window_pads(const ir::Node& node, const Shape& in, const Shape& out, const std::vector<int64_t>& kernel,
                 const std::vector<int64_t>& strides, const std::vector<int64_t>& dilations, int64_t pads[2],
                 std::string& why) {
  std::string auto_pad = node.attributes.get_string("auto_pad", "NOTSET");
  if (auto_pad == "NOTSET") {
    std::vector<int64_t> p = node.attributes.get_ints("pads", {0, 0, 0, 0});
    if (p.size() != 4) {
      why = "pads not of length 4";
      return false;
    }
    pads[0] = p[0];
    pads[1] = p[1];
    return true;
  }
  for (int d = 0; d < 2; ++d) {
    if (auto_pad == "VALID") {
      pads[d] = 0;
      continue;
    }
    const int64_t total = std::max<int64_t>(
        0, (out[2 + d] - 1) * strides[d] + (kernel[d] - 1) * dilations[d] + 1 - in[2 + d]);
    if (auto_pad == "SAME_UPPER") pads[d] = total / 2;
    else if (auto_pad == "SAME_LOWER") pads[d] = total - total / 2;
    else {
      why = "auto_pad " + auto_pad;
      return false;
    }
  }
  return true;
}

bool plan_pool(const KernelRequest& request, Pool& p, std::string& why) {
  const ir::Node& node = request.node;
  const Shape& in = request.inputs[0].shape;
  const Shape& out = request.outputs[0].shape;
  if (in.size() != 4 || out.size() != 4) {
    why = "not a 2-D pooling of NCHW";
    return false;
  }
  if (request.outputs.size() > 1) {
    why = "the Indices output";
    return false;
  }
  if (node.attributes.get_int("storage_order", 0) != 0) {
    why = "storage_order 1";
    return false;
  }
  std::vector<int64_t> kernel = node.attributes.get_ints("kernel_shape", {});
  std::vector<int64_t> strides = node.attributes.get_ints("strides", {1, 1});
  std::vector<int64_t> dilations = node.attributes.get_ints("dilations", {1, 1});
  if (kernel.size() != 2 || strides.size() != 2 || dilations.size() != 2) {
    why = "kernel_shape, strides or dilations not of length 2";
    return false;
  }
  int64_t pads[2] = {0, 0};
  if (!window_pads(node, in, out, kernel, strides, dilations, pads, why)) return false;
  p.n_c = in[0] * in[1];
  p.h = in[2];
  p.w = in[3];
  p.oh = out[2];
  p.ow = out[3];
  p.kh = static_cast<int32_t>(kernel[0]);
  p.kw = static_cast<int32_t>(kernel[1]);
  p.sh = static_cast<int32_t>(strides[0]);
  p.sw = static_cast<int32_t>(strides[1]);
  p.ph = static_cast<int32_t>(pads[0]);
  p.pw = static_cast<int32_t>(pads[1]);
  p.dh = static_cast<int32_t>(dilations[0]);
  p.dw = static_cast<int32_t>(dilations[1]);
  p.op = node.op() == ir::OpId::MaxPool ? 1 : 0;
  p.count_include_pad = static_cast<int32_t>(node.attributes.get_int("count_include_pad", 0));
  return true;
}

class PoolKernel final : public NodeKernel {
 public:
  explicit PoolKernel(Pool p) : p_(p) {}
  void compile(int device) override { function_ = CudaFunction(kNnSource, "graft_pool2d", device); }
  void enqueue(CudaLaunchContext& context, std::span<const CuTensor> inputs,
               std::span<const CuTensor> outputs) const override {
    const int64_t n = p_.n_c * p_.oh * p_.ow;
    if (n == 0) return;
    function_.launch(context.stream(), blocks_for(n, kThreads), kThreads, outputs[0].address, inputs[0].address, p_);
  }

 private:
  Pool p_;
  CudaFunction function_;
};

std::string pool_support(const KernelRequest& request) {
  std::string why = float_only(request);
  if (!why.empty()) return why;
  Pool p{};
  plan_pool(request, p, why);
  return why;
}

std::unique_ptr<NodeKernel> make_pool_kernel(const KernelRequest& request) {
  Pool p{};
  std::string why;
  GRAFT_CHECK(plan_pool(request, p, why), why);
  return std::make_unique<PoolKernel>(p);
}

class GlobalPoolKernel final : public NodeKernel {
 public:
  GlobalPoolKernel(int64_t planes, int64_t hw, int op) : planes_(planes), hw_(hw), op_(op) {}
  void compile(int device) override { function_ = CudaFunction(kNnSource, "graft_global_pool", device); }
  void enqueue(CudaLaunchContext& context, std::span<const CuTensor> inputs,
               std::span<const CuTensor> outputs) const override {
    if (planes_ == 0) return;
    function_.launch(context.stream(), static_cast<uint64_t>(planes_), kThreads, outputs[0].address, inputs[0].address,
                     planes_, hw_, int32_t{op_});
  }

 private:
  int64_t planes_, hw_;
  int op_;
  CudaFunction function_;
};

std::string global_pool_support(const KernelRequest& request) {
  std::string why = float_only(request);
  if (!why.empty()) return why;
  if (request.inputs[0].shape.size() < 3) return "an input of rank below 3";
  if (request.inputs[0].numel() == 0) return "an empty input";
  return {};
}

std::unique_ptr<NodeKernel> make_global_pool_kernel(const KernelRequest& request) {
  const Shape& s = request.inputs[0].shape;
  return std::make_unique<GlobalPoolKernel>(s[0] * s[1], product(s, 2, s.size()),
                                            request.node.op() == ir::OpId::GlobalMaxPool ? 1 : 0);
}

// ---- BatchNormalization ---------------------------------------------------

class BatchNormKernel final : public NodeKernel {
 public:
  BatchNormKernel(int64_t n, int64_t channels, int64_t plane, float epsilon)
      : n_(n), channels_(channels), plane_(plane), epsilon_(epsilon) {}
  void compile(int device) override { function_ = CudaFunction(kNnSource, "graft_batch_norm", device); }
  void enqueue(CudaLaunchContext& context, std::span<const CuTensor> inputs,
               std::span<const CuTensor> outputs) const override {
    if (n_ == 0) return;
    function_.launch(context.stream(), blocks_for(n_, kThreads), kThreads, outputs[0].address, inputs[0].address,
                     inputs[1].address, inputs[2].address, inputs[3].address, inputs[4].address, n_, channels_, plane_,
                     epsilon_);
  }

 private:
  int64_t n_, channels_, plane_;
  float epsilon_;
  CudaFunction function_;
};

std::string batch_norm_support(const KernelRequest& request) {
  std::string why = float_only(request);
  if (!why.empty()) return why;
  if (request.inputs.size() != 5) return "not the five inputs of inference";
  if (request.outputs.size() != 1 || request.node.attributes.get_int("training_mode", 0) != 0)
    return "training mode (running statistics as outputs)";
  const Shape& s = request.inputs[0].shape;
  if (s.size() < 2) return "an input of rank below 2";
  for (size_t i = 1; i < 5; ++i)
    if (request.inputs[i].dtype != DType::float32 || request.inputs[i].numel() != s[1])
      return "scale, bias, mean or var not one float32 per channel";
  return {};
}

std::unique_ptr<NodeKernel> make_batch_norm_kernel(const KernelRequest& request) {
  const Shape& s = request.inputs[0].shape;
  return std::make_unique<BatchNormKernel>(product(s, 0, s.size()), s[1], product(s, 2, s.size()),
                                           request.node.attributes.get_float("epsilon", 1e-5f));
}

// ---- Conv -------------------------------------------------------------------

/// The kernel argument block of graft_im2col.
struct Im2col {
  int64_t c, h, w, oh, ow;
  int64_t image_stride;
  int32_t kh, kw, sh, sw, ph, pw, dh, dw;
};

struct ConvPlan {
  int64_t n = 0, m = 0, groups = 1;
  Im2col a{};
  bool direct = false;  ///< a 1x1 convolution, stride 1, no padding: the input is its own im2col
};

bool plan_conv(const KernelRequest& request, ConvPlan& p, std::string& why) {
  const ir::Node& node = request.node;
  const Shape& x = request.inputs[0].shape;
  const Shape& w = request.inputs[1].shape;
  const Shape& y = request.outputs[0].shape;
  if (x.size() != 4 || w.size() != 4 || y.size() != 4) {
    why = "not a 2-D convolution of NCHW";
    return false;
  }
  p.groups = node.attributes.get_int("group", 1);
  if (p.groups < 1 || x[1] % p.groups != 0 || w[0] % p.groups != 0 || w[1] * p.groups != x[1]) {
    why = "groups that do not divide the channels";
    return false;
  }
  std::vector<int64_t> kernel = {w[2], w[3]};
  std::vector<int64_t> strides = node.attributes.get_ints("strides", {1, 1});
  std::vector<int64_t> dilations = node.attributes.get_ints("dilations", {1, 1});
  if (strides.size() != 2 || dilations.size() != 2) {
    why = "strides or dilations not of length 2";
    return false;
  }
  int64_t pads[2] = {0, 0};
  if (!window_pads(node, x, y, kernel, strides, dilations, pads, why)) return false;
  p.n = x[0];
  p.m = w[0];
  p.a.c = w[1];
  p.a.h = x[2];
  p.a.w = x[3];
  p.a.oh = y[2];
  p.a.ow = y[3];
  p.a.image_stride = x[1] * x[2] * x[3];
  p.a.kh = static_cast<int32_t>(w[2]);
  p.a.kw = static_cast<int32_t>(w[3]);
  p.a.sh = static_cast<int32_t>(strides[0]);
  p.a.sw = static_cast<int32_t>(strides[1]);
  p.a.ph = static_cast<int32_t>(pads[0]);
  p.a.pw = static_cast<int32_t>(pads[1]);
  p.a.dh = static_cast<int32_t>(dilations[0]);
  p.a.dw = static_cast<int32_t>(dilations[1]);
  p.direct = p.a.kh == 1 && p.a.kw == 1 && p.a.sh == 1 && p.a.sw == 1 && p.a.ph == 0 && p.a.pw == 0;
  const int64_t ckk = p.a.c * p.a.kh * p.a.kw, plane = p.a.oh * p.a.ow;
  if (ckk >= (int64_t{1} << 31) || plane >= (int64_t{1} << 31) || p.n >= (int64_t{1} << 31)) {
    why = "a product dimension of 2^31 or more";
    return false;
  }
  return true;
}

class ConvKernel final : public NodeKernel {
 public:
  explicit ConvKernel(ConvPlan p) : p_(p) {}
  void compile(int device) override {
    device_ = device;
    im2col_ = CudaFunction(kNnSource, "graft_im2col", device);
    bias_ = CudaFunction(kNnSource, "graft_add_channel_bias", device);
  }
  void enqueue(CudaLaunchContext& context, std::span<const CuTensor> inputs,
               std::span<const CuTensor> outputs) const override {
    const CuTensor& y = outputs[0];
    if (y.numel() == 0) return;
    const Im2col& a = p_.a;
    const int64_t ckk = a.c * a.kh * a.kw, plane = a.oh * a.ow, mg = p_.m / p_.groups;
    const float* x = reinterpret_cast<const float*>(inputs[0].address);
    const float* w = reinterpret_cast<const float*>(inputs[1].address);
    float* out = reinterpret_cast<float*>(y.address);
    const uint64_t workspace = context.scratch(kCublasWorkspaceBytes);
    uint64_t col = 0;
    if (!p_.direct) col = context.scratch(static_cast<size_t>(p_.n * ckk * plane) * sizeof(float));
    for (int64_t g = 0; g < p_.groups; ++g) {
      const float* source = x + g * a.c * a.h * a.w;
      long long source_stride = a.image_stride;
      if (!p_.direct) {
        im2col_.launch(context.stream(), blocks_for(p_.n * ckk * plane, kThreads), kThreads, col,
                       reinterpret_cast<uint64_t>(source), p_.n, a);
        source = reinterpret_cast<const float*>(col);
        source_stride = ckk * plane;
      }
      // Row-major Y_n[mg, plane] = W_g[mg, ckk] x col_n[ckk, plane], per image n.
      cublas_sgemm_strided(device_, context.stream(), workspace, static_cast<int>(plane), static_cast<int>(mg),
                           static_cast<int>(ckk), source, static_cast<int>(plane), source_stride, w + g * mg * ckk,
                           static_cast<int>(ckk), 0, out + g * mg * plane, static_cast<int>(plane), p_.m * plane,
                           static_cast<int>(p_.n));
    }
    if (inputs.size() > 2 && inputs[2].address)
      bias_.launch(context.stream(), blocks_for(y.numel(), kThreads), kThreads, y.address, inputs[2].address,
                   y.numel(), p_.m, plane);
  }

 private:
  ConvPlan p_;
  int device_ = 0;
  CudaFunction im2col_, bias_;
};

std::string conv_support(const KernelRequest& request) {
  std::string why = float_only(request);
  if (!why.empty()) return why;
  why = codegen::cublas_unavailable_reason();
  if (!why.empty()) return "no cuBLAS: " + why;
  if (request.inputs.size() < 2) return "Conv without weights";
  ConvPlan p;
  plan_conv(request, p, why);
  return why;
}

std::unique_ptr<NodeKernel> make_conv_kernel(const KernelRequest& request) {
  ConvPlan p;
  std::string why;
  GRAFT_CHECK(plan_conv(request, p, why), why);
  return std::make_unique<ConvKernel>(p);
}

}  // namespace

GRAFT_REGISTER_CUDA_KERNEL(Softmax, softmax_support, make_softmax_kernel);
GRAFT_REGISTER_CUDA_KERNEL(LogSoftmax, softmax_support, make_softmax_kernel);
GRAFT_REGISTER_CUDA_KERNEL(LayerNormalization, layer_norm_support, make_layer_norm_kernel);
GRAFT_REGISTER_CUDA_KERNEL(ReduceSum, reduce_support, make_reduce_kernel);
GRAFT_REGISTER_CUDA_KERNEL(ReduceMean, reduce_support, make_reduce_kernel);
GRAFT_REGISTER_CUDA_KERNEL(ReduceMax, reduce_support, make_reduce_kernel);
GRAFT_REGISTER_CUDA_KERNEL(ReduceMin, reduce_support, make_reduce_kernel);
GRAFT_REGISTER_CUDA_KERNEL(MaxPool, pool_support, make_pool_kernel);
GRAFT_REGISTER_CUDA_KERNEL(AveragePool, pool_support, make_pool_kernel);
GRAFT_REGISTER_CUDA_KERNEL(GlobalAveragePool, global_pool_support, make_global_pool_kernel);
GRAFT_REGISTER_CUDA_KERNEL(GlobalMaxPool, global_pool_support, make_global_pool_kernel);
GRAFT_REGISTER_CUDA_KERNEL(Conv, conv_support, make_conv_kernel);
GRAFT_REGISTER_CUDA_KERNEL(BatchNormalization, batch_norm_support, make_batch_norm_kernel);

}  // namespace graft::cuda
