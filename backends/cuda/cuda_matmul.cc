// MatMul and Gemm on the CUDA device, float32, through cuBLAS (opened at run
// time, codegen/cuda_libraries.h). TF32 is off (CUBLAS_DEFAULT_MATH: full
// float32 products, results within the CPU's rtol 1e-4); GRAFT_CUDA_TF32=1
// turns on TF32 tensor-core math.
//
// cuBLAS is column-major: the row-major product C = A B is computed as
// C^T = B^T A^T, which is the same bytes, with no transposition copied.
//
// MatMul follows numpy (1-D operands, broadcast batch dimensions). Per
// output matrix the plan holds A's and B's matrix index: a single product,
// the rows of a batch folded into one product (a shared 2-D B with a
// contiguous A: [B, S, K] x [K, N]), one strided batched call when both
// indices advance by fixed strides (also 0: a broadcast operand), or else
// one call per matrix.
//
// Gemm: Y = alpha op(A) op(B) + beta C. Y is first filled with C broadcast
// (a small kernel), then the product accumulates into it with beta.
#include <algorithm>
#include <cstdlib>
#include <map>
#include <mutex>

#include "cuda_kernel.h"
#include "graft/codegen/cuda_driver.h"
#include "graft/codegen/cuda_libraries.h"
#include "graft/core/error.h"
#include "graft/ir/op_id.h"

namespace graft::cuda {

namespace {

constexpr int64_t kMaxInt = (int64_t{1} << 31) - 1;

const char* const kFillSource = GRAFT_CUDA_PRELUDE R"(
// y[r * cols + c] = src[r * row_stride + c * col_stride] for rows * cols items.
extern "C" __global__ void graft_fill_matrix(float* y, const float* src, i64 rows, i64 cols, i64 row_stride,
                                             i64 col_stride) {
  const i64 i = graft_thread();
  if (i >= rows * cols) return;
  const i64 r = i / cols, c = i - r * cols;
  y[i] = src[r * row_stride + c * col_stride];
}
)";
GRAFT_REGISTER_CUDA_SOURCE(kFillSource);

/// One cuBLAS handle per device, used under a lock (its stream is set per call).
struct CublasHandles {
  std::mutex mutex;
  std::map<int, void*> handles;
};

CublasHandles& handles() {
  static CublasHandles* h = new CublasHandles;  // kept for the process
  return *h;
}

void check_cublas(int status, const char* what) {
  if (status != 0) fail(ErrorKind::internal, what, " failed with cuBLAS status ", status);
}

/// GRAFT_CUDA_TF32: 0 (default, full float32 products) or 1 (TF32 tensor
/// cores); anything else is an error naming it.
bool use_tf32() {
  const char* value = std::getenv("GRAFT_CUDA_TF32");
  const std::string text = value ? value : "0";
  if (text != "0" && text != "1")
    fail(ErrorKind::invalid_argument, "GRAFT_CUDA_TF32='", text, "': expected 0 (full float32) or 1 (TF32)");
  return text == "1";
}

/// Workspace of each cuBLAS call: scratch of the launch, so that products
/// running at once on two streams never share one (a handle's own workspace
/// would be shared by every stream it is bound to).
constexpr size_t kWorkspaceBytes = kCublasWorkspaceBytes;

/// Runs `call(handle)` with device `device`'s handle bound to `stream` and to
/// `workspace` (kWorkspaceBytes of device memory ordered on that stream).
template <typename F>
void with_cublas(int device, void* stream, uint64_t workspace, F&& call) {
  const codegen::Cublas& lib = codegen::cublas();
  if (!lib.error.empty()) fail(ErrorKind::unsupported, "cuBLAS unavailable: ", lib.error);
  CublasHandles& h = handles();
  std::lock_guard lock(h.mutex);
  codegen::cuda_driver().make_current(device);
  void*& handle = h.handles[device];
  if (!handle) {
    const bool tf32 = use_tf32();
    check_cublas(lib.create(&handle), "cublasCreate");
    check_cublas(lib.set_math_mode(handle, tf32 ? codegen::kCublasTf32Math : codegen::kCublasDefaultMath),
                 "cublasSetMathMode");
  }
  check_cublas(lib.set_stream(handle, stream), "cublasSetStream");  // resets the workspace: set it after
  if (lib.set_workspace && workspace)
    check_cublas(lib.set_workspace(handle, reinterpret_cast<void*>(workspace), kWorkspaceBytes), "cublasSetWorkspace");
  call(lib, handle);
}

std::string float_support(const KernelRequest& request) {
  std::string why = codegen::cublas_unavailable_reason();
  if (!why.empty()) return "no cuBLAS: " + why;
  for (const CuType& t : request.inputs) {
    if (t.dtype == DType::undefined) continue;
    if (t.dtype != DType::float32) return std::string(dtype_name(t.dtype)) + " input (float32 only)";
  }
  for (const CuType& t : request.outputs)
    if (t.dtype != DType::float32) return std::string(dtype_name(t.dtype)) + " output (float32 only)";
  return {};
}

// ---- MatMul -----------------------------------------------------------------

struct MatMulPlan {
  int64_t M = 1, N = 1, K = 1;
  std::vector<int64_t> a_index, b_index;  ///< per output matrix: the matrix of A and of B
  enum class Kind { single, fold_rows, strided, loop } kind = Kind::single;
  int64_t stride_a = 0, stride_b = 0;     ///< strided: matrices between products
};

MatMulPlan plan_matmul(const Shape& a, const Shape& b, std::string& why) {
  MatMulPlan p;
  if (a.empty() || b.empty()) {
    why = "a 0-D operand";
    return p;
  }
  const bool a_vector = a.size() == 1, b_vector = b.size() == 1;
  p.M = a_vector ? 1 : a[a.size() - 2];
  p.K = a.back();
  p.N = b_vector ? 1 : b.back();
  if ((b_vector ? b[0] : b[b.size() - 2]) != p.K) {
    why = "inner dimensions differ";
    return p;
  }
  if (p.M > kMaxInt || p.N > kMaxInt || p.K > kMaxInt) {
    why = "a matrix dimension of 2^31 or more";
    return p;
  }
  Shape ab(a.begin(), a.end() - (a_vector ? 1 : 2)), bb(b.begin(), b.end() - (b_vector ? 1 : 2));
  const size_t rank = std::max(ab.size(), bb.size());
  ab.insert(ab.begin(), rank - ab.size(), 1);
  bb.insert(bb.begin(), rank - bb.size(), 1);
  Shape out(rank);
  for (size_t d = 0; d < rank; ++d) {
    if (ab[d] != bb[d] && ab[d] != 1 && bb[d] != 1) {
      why = "batch dimensions do not broadcast";
      return p;
    }
    out[d] = std::max(ab[d], bb[d]);
    if (ab[d] == 0 || bb[d] == 0) out[d] = 0;
  }
  int64_t batch = 1;
  for (int64_t e : out) batch *= e;
  std::vector<int64_t> index(rank, 0);
  for (int64_t i = 0; i < batch; ++i) {
    int64_t ia = 0, ib = 0;
    for (size_t d = 0; d < rank; ++d) {
      ia = ia * ab[d] + (ab[d] == 1 ? 0 : index[d]);
      ib = ib * bb[d] + (bb[d] == 1 ? 0 : index[d]);
    }
    p.a_index.push_back(ia);
    p.b_index.push_back(ib);
    for (size_t d = rank; d-- > 0;) {
      if (++index[d] < out[d]) break;
      index[d] = 0;
    }
  }
  if (batch <= 1) {
    p.kind = MatMulPlan::Kind::single;
    return p;
  }
  bool a_linear = true, b_shared = true, strided = true;
  p.stride_a = p.a_index[1] - p.a_index[0];
  p.stride_b = p.b_index[1] - p.b_index[0];
  for (int64_t i = 0; i < batch; ++i) {
    a_linear &= p.a_index[static_cast<size_t>(i)] == i;
    b_shared &= p.b_index[static_cast<size_t>(i)] == 0;
    strided &= p.a_index[static_cast<size_t>(i)] == i * p.stride_a && p.b_index[static_cast<size_t>(i)] == i * p.stride_b;
  }
  if (a_linear && b_shared && batch * p.M <= kMaxInt) p.kind = MatMulPlan::Kind::fold_rows;
  else if (strided && batch <= kMaxInt) p.kind = MatMulPlan::Kind::strided;
  else p.kind = MatMulPlan::Kind::loop;
  return p;
}

class MatMulKernel final : public NodeKernel {
 public:
  explicit MatMulKernel(MatMulPlan plan) : plan_(std::move(plan)) {}
  void compile(int device) override { device_ = device; }
  void enqueue(CudaLaunchContext& context, std::span<const CuTensor> inputs,
               std::span<const CuTensor> outputs) const override {
    const CuTensor& y = outputs[0];
    if (y.numel() == 0) return;
    const MatMulPlan& p = plan_;
    const codegen::CudaDriver& cu = codegen::cuda_driver();
    if (p.K == 0) {  // an empty sum: zeros
      cu.make_current(device_);
      cu.check(cu.memset_d8_async(y.address, 0, y.nbytes(), context.stream()), "cuMemsetD8Async");
      return;
    }
    const float one = 1.0f, zero = 0.0f;
    const int M = static_cast<int>(p.M), N = static_cast<int>(p.N), K = static_cast<int>(p.K);
    const float* A = reinterpret_cast<const float*>(inputs[0].address);
    const float* B = reinterpret_cast<const float*>(inputs[1].address);
    float* C = reinterpret_cast<float*>(y.address);
    const int64_t batch = static_cast<int64_t>(p.a_index.size());
    with_cublas(device_, context.stream(), context.scratch(kWorkspaceBytes),
                [&](const codegen::Cublas& lib, void* handle) {
      using codegen::kCublasOpN;
      switch (p.kind) {
        case MatMulPlan::Kind::single:
          check_cublas(lib.sgemm(handle, kCublasOpN, kCublasOpN, N, M, K, &one, B, N, A, K, &zero, C, N), "cublasSgemm");
          break;
        case MatMulPlan::Kind::fold_rows:
          check_cublas(lib.sgemm(handle, kCublasOpN, kCublasOpN, N, static_cast<int>(batch * p.M), K, &one, B, N, A, K,
                                 &zero, C, N),
                       "cublasSgemm");
          break;
        case MatMulPlan::Kind::strided:
          check_cublas(lib.sgemm_strided_batched(handle, kCublasOpN, kCublasOpN, N, M, K, &one, B, N,
                                                 p.stride_b * p.K * p.N, A, K, p.stride_a * p.M * p.K, &zero, C, N,
                                                 p.M * p.N, static_cast<int>(batch)),
                       "cublasSgemmStridedBatched");
          break;
        case MatMulPlan::Kind::loop:
          for (int64_t i = 0; i < batch; ++i)
            check_cublas(lib.sgemm(handle, kCublasOpN, kCublasOpN, N, M, K, &one,
                                   B + p.b_index[static_cast<size_t>(i)] * p.K * p.N, N,
                                   A + p.a_index[static_cast<size_t>(i)] * p.M * p.K, K, &zero, C + i * p.M * p.N, N),
                         "cublasSgemm");
          break;
      }
    });
  }

 private:
  MatMulPlan plan_;
  int device_ = 0;
};

std::string matmul_support(const KernelRequest& request) {
  std::string why = float_support(request);
  if (!why.empty()) return why;
  if (request.inputs.size() != 2) return "MatMul without two inputs";
  plan_matmul(request.inputs[0].shape, request.inputs[1].shape, why);
  return why;
}

std::unique_ptr<NodeKernel> make_matmul_kernel(const KernelRequest& request) {
  use_tf32();  // a bad GRAFT_CUDA_TF32 is an error at plan time
  std::string why;
  MatMulPlan plan = plan_matmul(request.inputs[0].shape, request.inputs[1].shape, why);
  GRAFT_CHECK(why.empty(), why);
  return std::make_unique<MatMulKernel>(std::move(plan));
}

// ---- Gemm -------------------------------------------------------------------

struct GemmPlan {
  bool trans_a = false, trans_b = false;
  int64_t M = 0, N = 0, K = 0;
  float alpha = 1.0f, beta = 1.0f;
  bool has_c = false;
  int64_t c_row_stride = 0, c_col_stride = 0;  ///< C's strides over Y's [M, N]
};

GemmPlan plan_gemm(const KernelRequest& request, std::string& why) {
  GemmPlan p;
  const ir::Node& node = request.node;
  const Shape& a = request.inputs[0].shape;
  const Shape& b = request.inputs[1].shape;
  if (a.size() != 2 || b.size() != 2) {
    why = "A or B not of rank 2";
    return p;
  }
  p.trans_a = node.attributes.get_int("transA", 0) != 0;
  p.trans_b = node.attributes.get_int("transB", 0) != 0;
  p.alpha = node.attributes.get_float("alpha", 1.0f);
  p.beta = node.attributes.get_float("beta", 1.0f);
  p.M = a[p.trans_a ? 1 : 0];
  p.K = a[p.trans_a ? 0 : 1];
  p.N = b[p.trans_b ? 0 : 1];
  if (b[p.trans_b ? 1 : 0] != p.K) {
    why = "inner dimensions differ";
    return p;
  }
  if (p.M > kMaxInt || p.N > kMaxInt || p.K > kMaxInt) {
    why = "a matrix dimension of 2^31 or more";
    return p;
  }
  if (request.inputs.size() > 2 && request.inputs[2].dtype != DType::undefined && p.beta != 0.0f) {
    const Shape& c = request.inputs[2].shape;
    if (c.size() > 2) {
      why = "C of rank above 2";
      return p;
    }
    Shape c2(c);
    c2.insert(c2.begin(), 2 - c2.size(), 1);
    if ((c2[0] != 1 && c2[0] != p.M) || (c2[1] != 1 && c2[1] != p.N)) {
      why = "C does not broadcast to [M, N]";
      return p;
    }
    p.has_c = true;
    p.c_col_stride = c2[1] == 1 ? 0 : 1;
    p.c_row_stride = c2[0] == 1 ? 0 : c2[1];
  }
  return p;
}

class GemmKernel final : public NodeKernel {
 public:
  explicit GemmKernel(GemmPlan plan) : plan_(plan) {}
  void compile(int device) override {
    device_ = device;
    fill_ = CudaFunction(kFillSource, "graft_fill_matrix", device);
  }
  void enqueue(CudaLaunchContext& context, std::span<const CuTensor> inputs,
               std::span<const CuTensor> outputs) const override {
    const CuTensor& y = outputs[0];
    if (y.numel() == 0) return;
    const GemmPlan& p = plan_;
    float beta = 0.0f;
    if (p.has_c) {
      const int64_t n = p.M * p.N;
      fill_.launch(context.stream(), blocks_for(n, 256), 256, y.address, inputs[2].address, p.M, p.N, p.c_row_stride,
                   p.c_col_stride);
      beta = p.beta;
    }
    const float alpha = p.K == 0 ? 0.0f : p.alpha;
    if (p.K == 0 && !p.has_c) {
      const codegen::CudaDriver& cu = codegen::cuda_driver();
      cu.make_current(device_);
      cu.check(cu.memset_d8_async(y.address, 0, y.nbytes(), context.stream()), "cuMemsetD8Async");
      return;
    }
    if (p.K == 0) {
      if (beta == 1.0f) return;  // Y = C
    }
    const int M = static_cast<int>(p.M), N = static_cast<int>(p.N), K = static_cast<int>(std::max<int64_t>(p.K, 1));
    const float* A = reinterpret_cast<const float*>(inputs[0].address);
    const float* B = reinterpret_cast<const float*>(inputs[1].address);
    float* C = reinterpret_cast<float*>(y.address);
    with_cublas(device_, context.stream(), context.scratch(kWorkspaceBytes),
                [&](const codegen::Cublas& lib, void* handle) {
      // Row-major Y = op(A) op(B) as column-major Y^T = op(B)^T op(A)^T.
      check_cublas(lib.sgemm(handle, p.trans_b ? codegen::kCublasOpT : codegen::kCublasOpN,
                             p.trans_a ? codegen::kCublasOpT : codegen::kCublasOpN, N, M, p.K == 0 ? 0 : K, &alpha, B,
                             p.trans_b ? K : N, A, p.trans_a ? M : K, &beta, C, N),
                   "cublasSgemm");
    });
  }

 private:
  GemmPlan plan_;
  int device_ = 0;
  CudaFunction fill_;
};

std::string gemm_support(const KernelRequest& request) {
  std::string why = float_support(request);
  if (!why.empty()) return why;
  plan_gemm(request, why);
  return why;
}

std::unique_ptr<NodeKernel> make_gemm_kernel(const KernelRequest& request) {
  use_tf32();
  std::string why;
  GemmPlan plan = plan_gemm(request, why);
  GRAFT_CHECK(why.empty(), why);
  return std::make_unique<GemmKernel>(plan);
}

}  // namespace

void cublas_sgemm(int device, void* stream, uint64_t workspace, bool trans_a, bool trans_b, int m, int n, int k,
                  const float* a, int lda, const float* b, int ldb, float* c, int ldc) {
  const float one = 1.0f, zero = 0.0f;
  with_cublas(device, stream, workspace, [&](const codegen::Cublas& lib, void* handle) {
    check_cublas(lib.sgemm(handle, trans_a ? codegen::kCublasOpT : codegen::kCublasOpN,
                           trans_b ? codegen::kCublasOpT : codegen::kCublasOpN, m, n, k, &one, a, lda, b, ldb, &zero,
                           c, ldc),
                 "cublasSgemm");
  });
}

void cublas_sgemm_strided(int device, void* stream, uint64_t workspace, int m, int n, int k, const float* a, int lda, long long stride_a,
                          const float* b, int ldb, long long stride_b, float* c, int ldc, long long stride_c,
                          int batch) {
  const float one = 1.0f, zero = 0.0f;
  with_cublas(device, stream, workspace, [&](const codegen::Cublas& lib, void* handle) {
    check_cublas(lib.sgemm_strided_batched(handle, codegen::kCublasOpN, codegen::kCublasOpN, m, n, k, &one, a, lda,
                                           stride_a, b, ldb, stride_b, &zero, c, ldc, stride_c, batch),
                 "cublasSgemmStridedBatched");
  });
}

GRAFT_REGISTER_CUDA_KERNEL(MatMul, matmul_support, make_matmul_kernel);
GRAFT_REGISTER_CUDA_KERNEL(Gemm, gemm_support, make_gemm_kernel);

}  // namespace graft::cuda
