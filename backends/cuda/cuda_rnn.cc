// GRU on the CUDA device, float32, forward, one direction (as the zoo's
// residual GRU and PyTorch's exports of one-layer GRUs): the input
// projections of every step at once (one cuBLAS product X W^T), then per
// step the recurrent product H R^T (cuBLAS) and a gate kernel. With
// linear_before_reset = 0 (ONNX's default) the reset gate applies before the
// hidden projection, so a step takes two gate kernels around a second
// product (r . H) Rh^T. Gates in ONNX's order z, r, h; sigmoid and tanh.
// Y (when it is an output) is written step by step; Y_h is the last step.
#include <algorithm>

#include "cuda_kernel.h"
#include "graft/codegen/cuda_driver.h"
#include "graft/codegen/cuda_libraries.h"
#include "graft/core/error.h"
#include "graft/ir/op_id.h"

namespace graft::cuda {

namespace {

constexpr unsigned kThreads = 256;

const char* const kRnnSource = GRAFT_CUDA_PRELUDE R"(
__device__ __forceinline__ float graft_sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }
__device__ __forceinline__ float graft_at(const float* p, i64 i) { return p ? p[i] : 0.0f; }

// One step with linear_before_reset = 1. xw: this step's [batch, 3H] input
// projections; rh: [batch, 3H] recurrent projections; wb, rb: [3H] biases
// (null: none); h_prev, h_out: [batch, H].
extern "C" __global__ void graft_gru_step_lbr(float* h_out, const float* xw, const float* rh, const float* wb,
                                              const float* rb, const float* h_prev, i64 batch, i64 hidden) {
  const i64 i = graft_thread();
  if (i >= batch * hidden) return;
  const i64 b = i / hidden, j = i - b * hidden;
  const float* x = xw + b * 3 * hidden;
  const float* r = rh + b * 3 * hidden;
  const float z = graft_sigmoid(x[j] + r[j] + graft_at(wb, j) + graft_at(rb, j));
  const float reset = graft_sigmoid(x[hidden + j] + r[hidden + j] + graft_at(wb, hidden + j) + graft_at(rb, hidden + j));
  const float n = tanhf(x[2 * hidden + j] + graft_at(wb, 2 * hidden + j) +
                        reset * (r[2 * hidden + j] + graft_at(rb, 2 * hidden + j)));
  h_out[i] = (1.0f - z) * n + z * h_prev[i];
}

// linear_before_reset = 0, first half of a step: z into z_out, r . h_prev into rh_prev.
extern "C" __global__ void graft_gru_step_zr(float* z_out, float* rh_prev, const float* xw, const float* rh,
                                             const float* wb, const float* rb, const float* h_prev, i64 batch,
                                             i64 hidden) {
  const i64 i = graft_thread();
  if (i >= batch * hidden) return;
  const i64 b = i / hidden, j = i - b * hidden;
  const float* x = xw + b * 3 * hidden;
  const float* r = rh + b * 3 * hidden;
  z_out[i] = graft_sigmoid(x[j] + r[j] + graft_at(wb, j) + graft_at(rb, j));
  const float reset = graft_sigmoid(x[hidden + j] + r[hidden + j] + graft_at(wb, hidden + j) + graft_at(rb, hidden + j));
  rh_prev[i] = reset * h_prev[i];
}

// Second half: hr = (r . h_prev) Rh^T, [batch, H].
extern "C" __global__ void graft_gru_step_n(float* h_out, const float* xw, const float* hr, const float* z,
                                            const float* wb, const float* rb, const float* h_prev, i64 batch,
                                            i64 hidden) {
  const i64 i = graft_thread();
  if (i >= batch * hidden) return;
  const i64 b = i / hidden, j = i - b * hidden;
  const float n = tanhf(xw[b * 3 * hidden + 2 * hidden + j] + graft_at(wb, 2 * hidden + j) + hr[i] +
                        graft_at(rb, 2 * hidden + j));
  h_out[i] = (1.0f - z[i]) * n + z[i] * h_prev[i];
}
)";
GRAFT_REGISTER_CUDA_SOURCE(kRnnSource);

struct GruPlan {
  int64_t seq = 0, batch = 0, input = 0, hidden = 0;
  bool linear_before_reset = false;
};

bool plan_gru(const KernelRequest& request, GruPlan& p, std::string& why) {
  const ir::Node& node = request.node;
  for (const CuType& t : request.inputs)
    if (t.dtype != DType::undefined && t.dtype != DType::float32) {
      why = std::string(dtype_name(t.dtype)) + " input (float32 only)";
      return false;
    }
  if (request.inputs.size() > 4 && request.inputs[4].dtype != DType::undefined) {
    why = "sequence_lens";
    return false;
  }
  if (node.attributes.get_string("direction", "forward") != "forward") {
    why = "direction " + node.attributes.get_string("direction", "forward") + " (forward only)";
    return false;
  }
  if (node.attributes.has("clip")) {
    why = "clip";
    return false;
  }
  if (node.attributes.get_int("layout", 0) != 0) {
    why = "layout 1";
    return false;
  }
  if (node.attributes.has("activations")) {
    const std::vector<std::string>& a = node.attributes.get_strings("activations");
    // The activation functions' names (attribute values, not ops): the defaults only.
    if (a.size() != 2 || a[0] + "," + a[1] != "Sigmoid,Tanh") {
      why = "activations other than Sigmoid, Tanh";
      return false;
    }
  }
  const Shape& x = request.inputs[0].shape;
  const Shape& w = request.inputs[1].shape;
  const Shape& r = request.inputs[2].shape;
  if (x.size() != 3 || w.size() != 3 || r.size() != 3 || w[0] != 1 || r[0] != 1) {
    why = "shapes other than X [seq, batch, input], W and R of one direction";
    return false;
  }
  p.seq = x[0];
  p.batch = x[1];
  p.input = x[2];
  p.hidden = r[2];
  p.linear_before_reset = node.attributes.get_int("linear_before_reset", 0) != 0;
  if (w[1] != 3 * p.hidden || r[1] != 3 * p.hidden || w[2] != p.input) {
    why = "W or R not of 3 * hidden_size rows";
    return false;
  }
  if (request.inputs.size() > 3 && request.inputs[3].dtype != DType::undefined &&
      request.inputs[3].numel() != 6 * p.hidden) {
    why = "B not of 6 * hidden_size values";
    return false;
  }
  if (request.inputs.size() > 5 && request.inputs[5].dtype != DType::undefined &&
      request.inputs[5].numel() != p.batch * p.hidden) {
    why = "initial_h not [1, batch, hidden_size]";
    return false;
  }
  const int64_t limit = (int64_t{1} << 31) - 1;
  if (p.seq * p.batch > limit || 3 * p.hidden > limit || p.input > limit) {
    why = "a product dimension of 2^31 or more";
    return false;
  }
  return true;
}

class GruKernel final : public NodeKernel {
 public:
  explicit GruKernel(GruPlan p) : p_(p) {}
  void compile(int device) override {
    device_ = device;
    if (p_.linear_before_reset) {
      step_ = CudaFunction(kRnnSource, "graft_gru_step_lbr", device);
    } else {
      zr_ = CudaFunction(kRnnSource, "graft_gru_step_zr", device);
      n_ = CudaFunction(kRnnSource, "graft_gru_step_n", device);
    }
  }
  void enqueue(CudaLaunchContext& context, std::span<const CuTensor> inputs,
               std::span<const CuTensor> outputs) const override {
    const int64_t S = p_.seq, N = p_.batch, I = p_.input, H = p_.hidden, step = N * H;
    if (S == 0 || step == 0) return;
    const codegen::CudaDriver& cu = codegen::cuda_driver();
    void* stream = context.stream();
    const uint64_t workspace = context.scratch(kCublasWorkspaceBytes);
    auto f = [](uint64_t a) { return reinterpret_cast<float*>(a); };
    const uint64_t x = inputs[0].address, w = inputs[1].address, r = inputs[2].address;
    const uint64_t wb = inputs.size() > 3 ? inputs[3].address : 0;
    const uint64_t rb = wb ? wb + 3 * H * sizeof(float) : 0;
    // The hidden states: Y's steps when Y is an output, else scratch.
    const bool has_y = !outputs.empty() && outputs[0].address != 0;
    const uint64_t states = has_y ? outputs[0].address : context.scratch(static_cast<size_t>(S * step) * sizeof(float));
    uint64_t h0 = inputs.size() > 5 ? inputs[5].address : 0;
    if (!h0) {
      h0 = context.scratch(static_cast<size_t>(step) * sizeof(float));
      cu.make_current(device_);
      cu.check(cu.memset_d8_async(h0, 0, static_cast<size_t>(step) * sizeof(float), stream), "cuMemsetD8Async");
    }
    // XW [S * N, 3H] = X [S * N, I] W^T: column-major XW^T = W X^T.
    const uint64_t xw = context.scratch(static_cast<size_t>(S * N * 3 * H) * sizeof(float));
    cublas_sgemm(device_, stream, workspace, true, false, static_cast<int>(3 * H), static_cast<int>(S * N),
                 static_cast<int>(I), f(w), static_cast<int>(I), f(x), static_cast<int>(I), f(xw),
                 static_cast<int>(3 * H));
    const uint64_t rh = context.scratch(static_cast<size_t>(N * 3 * H) * sizeof(float));
    uint64_t z = 0, r_h = 0, hr = 0;
    if (!p_.linear_before_reset) {
      z = context.scratch(static_cast<size_t>(step) * sizeof(float));
      r_h = context.scratch(static_cast<size_t>(step) * sizeof(float));
      hr = context.scratch(static_cast<size_t>(step) * sizeof(float));
    }
    const uint64_t blocks = blocks_for(step, kThreads);
    for (int64_t t = 0; t < S; ++t) {
      const uint64_t h_prev = t == 0 ? h0 : states + static_cast<uint64_t>((t - 1) * step) * sizeof(float);
      const uint64_t h_out = states + static_cast<uint64_t>(t * step) * sizeof(float);
      const uint64_t xw_t = xw + static_cast<uint64_t>(t * N * 3 * H) * sizeof(float);
      // RH [N, 3H] = H_prev [N, H] R^T.
      cublas_sgemm(device_, stream, workspace, true, false, static_cast<int>(3 * H), static_cast<int>(N),
                   static_cast<int>(H), f(r), static_cast<int>(H), f(h_prev), static_cast<int>(H), f(rh),
                   static_cast<int>(3 * H));
      if (p_.linear_before_reset) {
        step_.launch(stream, blocks, kThreads, h_out, xw_t, rh, wb, rb, h_prev, N, H);
        continue;
      }
      zr_.launch(stream, blocks, kThreads, z, r_h, xw_t, rh, wb, rb, h_prev, N, H);
      // HR [N, H] = (r . H_prev) [N, H] Rh^T, Rh the last H rows of R.
      cublas_sgemm(device_, stream, workspace, true, false, static_cast<int>(H), static_cast<int>(N),
                   static_cast<int>(H), f(r + static_cast<uint64_t>(2 * H * H) * sizeof(float)),
                   static_cast<int>(H), f(r_h), static_cast<int>(H), f(hr), static_cast<int>(H));
      n_.launch(stream, blocks, kThreads, h_out, xw_t, hr, z, wb, rb, h_prev, N, H);
    }
    if (outputs.size() > 1 && outputs[1].address) {
      cu.make_current(device_);
      cu.check(cu.memcpy_dtod_async(outputs[1].address, states + static_cast<uint64_t>((S - 1) * step) * sizeof(float),
                                    static_cast<size_t>(step) * sizeof(float), stream),
               "cuMemcpyDtoDAsync");
    }
  }

 private:
  GruPlan p_;
  int device_ = 0;
  CudaFunction step_, zr_, n_;
};

std::string gru_support(const KernelRequest& request) {
  std::string why = codegen::cublas_unavailable_reason();
  if (!why.empty()) return "no cuBLAS: " + why;
  GruPlan p;
  plan_gru(request, p, why);
  return why;
}

std::unique_ptr<NodeKernel> make_gru_kernel(const KernelRequest& request) {
  GruPlan p;
  std::string why;
  GRAFT_CHECK(plan_gru(request, p, why), why);
  return std::make_unique<GruKernel>(p);
}

}  // namespace

GRAFT_REGISTER_CUDA_KERNEL(GRU, gru_support, make_gru_kernel);

}  // namespace graft::cuda
