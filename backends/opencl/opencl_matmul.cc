// MatMul and Gemm on the OpenCL device, float32, through CLBlast's row-major
// SGEMM (clblast_loader.h).
//
// MatMul follows numpy: a 1-D operand is a row (A) or a column (B) that the
// output drops, and the batch dimensions broadcast. At plan time the batch is
// split into an inner run of dimensions along which both operands advance by
// one fixed stride each (0 for a broadcast operand), done by one strided
// batched GEMM, and the outer dimensions before it, looped on the host (one
// GEMM call per outer index, all queued without waiting). The transformer and
// CNN patterns ([B,H,S,D] x [B,H,D,S], [B,S,K] x [K,N]) are a single call; a
// shared 2-D B with a contiguous A folds the whole batch into the rows of one
// product.
//
// Gemm: Y = alpha * op(A) * op(B) + beta * C, C broadcast to [M, N] (any
// shape of rank <= 2 that broadcasts). Y is first filled with C by a small
// kernel, then the GEMM accumulates into it with beta; without C (or with
// beta = 0) the GEMM writes Y alone.
//
// The fill kernel (also the zeros of a product with K = 0) is one program for
// every shape: sizes and strides are kernel arguments.
#include "opencl_kernel.h"

#ifdef GRAFT_HAVE_OPENCL_HEADERS

#include <algorithm>
#include <exception>

#include "clblast_loader.h"
#include "graft/core/error.h"
#include "graft/ir/op_id.h"

namespace graft::opencl {

namespace {

/// Largest tensor the kernels index (int arguments, CLBlast's int offsets).
constexpr int64_t kMaxElements = (int64_t{1} << 31) - 1;

const char* const kFillSource = R"CL(
// y[r * cols + c] = scale * src[r * row_stride + c * col_stride], or 0 when
// has_src is 0 (src may then be null). Range: (cols, rows).
__kernel void graft_fill_matrix(__global float* y, __global const float* src, int has_src, float scale, int cols,
                                int row_stride, int col_stride) {
  const long c = get_global_id(0), r = get_global_id(1);
  y[r * cols + c] = has_src ? scale * src[r * row_stride + c * col_stride] : 0.0f;
}
)CL";

/// The fill kernel, built once per device by the program cache.
class FillKernel {
 public:
  void compile(ClDevice& device) { kernel_ = ClKernel(device, device.program(kFillSource), "graft_fill_matrix"); }
  /// y (rows x cols) = scale * src broadcast by the strides, or zeros when src is null.
  void fill(cl_command_queue queue, cl_mem y, int64_t rows, int64_t cols, cl_mem src, float scale, int64_t row_stride,
            int64_t col_stride) const {
    ClRange range;
    range.global = {static_cast<size_t>(cols), static_cast<size_t>(rows), 1};
    range.dims = 2;
    kernel_.launch(queue, range, y, src, int32_t{src != nullptr}, scale, static_cast<int32_t>(cols),
                   static_cast<int32_t>(row_stride), static_cast<int32_t>(col_stride));
  }

 private:
  ClKernel kernel_;
};

/// Why the operands cannot run here: CLBlast missing, a dtype other than
/// float32, a tensor too large for the kernels' indices.
std::string common_support(const KernelRequest& request) {
  for (const ClType& t : request.inputs) {
    if (t.dtype == DType::undefined) continue;
    if (t.dtype != DType::float32) return std::string(dtype_name(t.dtype)) + " input (float32 only)";
    if (t.numel() > kMaxElements) return "an input of 2^31 or more elements";
  }
  for (const ClType& t : request.outputs) {
    if (t.dtype != DType::float32) return std::string(dtype_name(t.dtype)) + " output (float32 only)";
    if (t.numel() > kMaxElements) return "an output of 2^31 or more elements";
  }
  return clblast::unavailable_reason();
}

// ---- MatMul -----------------------------------------------------------------

/// How one MatMul runs: `outer` batch dimensions looped on the host, then one
/// (strided batched) GEMM over the inner run. Strides count matrices.
struct MatMulPlan {
  int64_t M = 1, N = 1, K = 1;
  Shape outer;  ///< outer batch extents (host loop)
  std::vector<int64_t> outer_a, outer_b, outer_c;
  int64_t inner = 1;                 ///< products per GEMM call
  int64_t inner_a = 0, inner_b = 0;  ///< their strides in A and B (C: 1)
  bool fold_rows = false;            ///< the inner run is one product of inner * M rows
};

/// The plan of a MatMul of shapes a x b, or a reason in `why`.
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
  const int64_t kb = b_vector ? b[0] : b[b.size() - 2];
  if (kb != p.K) {
    why = "inner dimensions differ";
    return p;
  }
  Shape a_batch, b_batch;
  if (!a_vector) a_batch.assign(a.begin(), a.end() - 2);
  if (!b_vector) b_batch.assign(b.begin(), b.end() - 2);
  const size_t rank = std::max(a_batch.size(), b_batch.size());
  // Batch dims aligned to the right, with matrix strides (0 where broadcast).
  Shape out(rank), ea(rank, 1), eb(rank, 1);
  for (size_t i = 0; i < a_batch.size(); ++i) ea[rank - a_batch.size() + i] = a_batch[i];
  for (size_t i = 0; i < b_batch.size(); ++i) eb[rank - b_batch.size() + i] = b_batch[i];
  std::vector<int64_t> sa(rank), sb(rank);
  int64_t ra = 1, rb = 1;
  for (size_t d = rank; d-- > 0;) {
    if (ea[d] != eb[d] && ea[d] != 1 && eb[d] != 1) {
      why = "batch dimensions do not broadcast";
      return p;
    }
    out[d] = ea[d] == 1 ? eb[d] : ea[d];
    sa[d] = ea[d] == 1 ? 0 : ra;
    sb[d] = eb[d] == 1 ? 0 : rb;
    ra *= ea[d];
    rb *= eb[d];
  }
  // Drop extents of 1; the output is contiguous.
  Shape dims;
  std::vector<int64_t> da, db, dc;
  for (size_t d = 0; d < rank; ++d) {
    if (out[d] == 1) continue;
    dims.push_back(out[d]);
    da.push_back(sa[d]);
    db.push_back(sb[d]);
  }
  dc.resize(dims.size());
  int64_t rc = 1;
  for (size_t d = dims.size(); d-- > 0;) {
    dc[d] = rc;
    rc *= dims[d];
  }
  // The longest inner run along which A and B advance by one stride each.
  size_t j = dims.size();
  while (j > 0) {
    const size_t d = j - 1;
    if (j < dims.size() && (da[d] != da[j] * dims[j] || db[d] != db[j] * dims[j])) break;
    j = d;
  }
  if (j < dims.size()) {
    p.inner_a = da.back();
    p.inner_b = db.back();
    for (size_t d = j; d < dims.size(); ++d) p.inner *= dims[d];
  }
  p.outer.assign(dims.begin(), dims.begin() + static_cast<std::ptrdiff_t>(j));
  p.outer_a.assign(da.begin(), da.begin() + static_cast<std::ptrdiff_t>(j));
  p.outer_b.assign(db.begin(), db.begin() + static_cast<std::ptrdiff_t>(j));
  p.outer_c.assign(dc.begin(), dc.begin() + static_cast<std::ptrdiff_t>(j));
  // B shared by the run and A contiguous along it: one product of inner * M rows.
  p.fold_rows = p.inner > 1 && p.inner_b == 0 && p.inner_a == 1;
  return p;
}

class MatMulKernel final : public NodeKernel {
 public:
  explicit MatMulKernel(MatMulPlan plan) : plan_(std::move(plan)) {}

  void compile(ClDevice& device) override {
    fill_.compile(device);
    clblast::prepare(device.index());
  }

  void enqueue(ClLaunchContext& context, std::span<const ClTensor> inputs,
               std::span<const ClTensor> outputs) const override {
    const ClTensor& y = outputs[0];
    if (y.numel() == 0) return;
    const MatMulPlan& p = plan_;
    if (p.K == 0) {  // an empty sum: zeros
      fill_.fill(context.queue(), y.buffer, y.numel() / p.N, p.N, nullptr, 0.0f, 0, 0);
      return;
    }
    const size_t M = static_cast<size_t>(p.M), N = static_cast<size_t>(p.N), K = static_cast<size_t>(p.K);
    clblast::SgemmArgs g;
    g.m = p.fold_rows ? M * static_cast<size_t>(p.inner) : M;
    g.n = N;
    g.k = K;
    g.a = inputs[0].buffer;
    g.a_ld = K;
    g.b = inputs[1].buffer;
    g.b_ld = N;
    g.c = y.buffer;
    g.c_ld = N;
    std::vector<int64_t> index(p.outer.size(), 0);
    int64_t outer_count = 1;
    for (int64_t e : p.outer) outer_count *= e;
    for (int64_t o = 0; o < outer_count; ++o) {
      int64_t ia = 0, ib = 0, ic = 0;
      for (size_t d = 0; d < index.size(); ++d) {
        ia += index[d] * p.outer_a[d];
        ib += index[d] * p.outer_b[d];
        ic += index[d] * p.outer_c[d];
      }
      g.a_offset = static_cast<size_t>(ia) * M * K;
      g.b_offset = static_cast<size_t>(ib) * K * N;
      g.c_offset = static_cast<size_t>(ic) * M * N;
      if (p.inner == 1 || p.fold_rows) {
        clblast::sgemm(context.queue(), g);
      } else {
        clblast::sgemm_strided_batched(context.queue(), g, static_cast<size_t>(p.inner_a) * M * K,
                                       static_cast<size_t>(p.inner_b) * K * N, M * N, static_cast<size_t>(p.inner));
      }
      for (size_t d = index.size(); d-- > 0;) {
        if (++index[d] < p.outer[d]) break;
        index[d] = 0;
      }
    }
  }

 private:
  MatMulPlan plan_;
  FillKernel fill_;
};

std::string matmul_support(const KernelRequest& request) {
  std::string why = common_support(request);
  if (!why.empty()) return why;
  if (request.inputs.size() != 2) return "MatMul without two inputs";
  plan_matmul(request.inputs[0].shape, request.inputs[1].shape, why);
  return why;
}

std::unique_ptr<NodeKernel> make_matmul_kernel(const KernelRequest& request) {
  std::string why;
  MatMulPlan plan = plan_matmul(request.inputs[0].shape, request.inputs[1].shape, why);
  GRAFT_CHECK(why.empty(), why);
  return std::make_unique<MatMulKernel>(std::move(plan));
}

// ---- Gemm -------------------------------------------------------------------

struct GemmPlan {
  bool trans_a = false, trans_b = false;
  int64_t M = 0, N = 0, K = 0;
  int64_t lda = 1, ldb = 1;
  float alpha = 1.0f, beta = 1.0f;
  bool has_c = false;
  int64_t c_row_stride = 0, c_col_stride = 0;  ///< C's strides in Y's [M, N] index space
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
  p.lda = std::max<int64_t>(1, a[1]);
  p.ldb = std::max<int64_t>(1, b[1]);
  if (request.inputs.size() > 2 && request.inputs[2].dtype != DType::undefined) {
    const Shape& c = request.inputs[2].shape;
    if (c.size() > 2) {
      why = "C of rank above 2";
      return p;
    }
    // Right-aligned against [M, N]; an extent of 1 broadcasts.
    const int64_t rows = c.size() == 2 ? c[0] : 1, cols = c.empty() ? 1 : c.back();
    if ((rows != 1 && rows != p.M) || (cols != 1 && cols != p.N)) {
      why = "C does not broadcast to [M, N]";
      return p;
    }
    p.has_c = true;
    p.c_row_stride = rows == 1 ? 0 : cols;
    p.c_col_stride = cols == 1 ? 0 : 1;
  }
  return p;
}

class GemmKernel final : public NodeKernel {
 public:
  explicit GemmKernel(GemmPlan plan) : plan_(plan) {}

  void compile(ClDevice& device) override {
    fill_.compile(device);
    clblast::prepare(device.index());
  }

  void enqueue(ClLaunchContext& context, std::span<const ClTensor> inputs,
               std::span<const ClTensor> outputs) const override {
    const ClTensor& y = outputs[0];
    if (y.numel() == 0) return;
    const GemmPlan& p = plan_;
    const bool use_c = p.has_c && p.beta != 0.0f;
    if (p.K == 0) {  // Y = beta * C, or zeros
      fill_.fill(context.queue(), y.buffer, p.M, p.N, use_c ? inputs[2].buffer : nullptr, p.beta, p.c_row_stride,
                 p.c_col_stride);
      return;
    }
    if (use_c) fill_.fill(context.queue(), y.buffer, p.M, p.N, inputs[2].buffer, 1.0f, p.c_row_stride, p.c_col_stride);
    clblast::SgemmArgs g;
    g.trans_a = p.trans_a;
    g.trans_b = p.trans_b;
    g.m = static_cast<size_t>(p.M);
    g.n = static_cast<size_t>(p.N);
    g.k = static_cast<size_t>(p.K);
    g.alpha = p.alpha;
    g.a = inputs[0].buffer;
    g.a_ld = static_cast<size_t>(p.lda);
    g.b = inputs[1].buffer;
    g.b_ld = static_cast<size_t>(p.ldb);
    g.beta = use_c ? p.beta : 0.0f;
    g.c = y.buffer;
    g.c_ld = static_cast<size_t>(p.N);
    clblast::sgemm(context.queue(), g);
  }

 private:
  GemmPlan plan_;
  FillKernel fill_;
};

std::string gemm_support(const KernelRequest& request) {
  std::string why = common_support(request);
  if (!why.empty()) return why;
  if (request.inputs.size() < 2) return "Gemm without A and B";
  try {
    plan_gemm(request, why);
  } catch (const std::exception& e) {  // a malformed attribute
    return e.what();
  }
  return why;
}

std::unique_ptr<NodeKernel> make_gemm_kernel(const KernelRequest& request) {
  std::string why;
  GemmPlan plan = plan_gemm(request, why);
  GRAFT_CHECK(why.empty(), why);
  return std::make_unique<GemmKernel>(plan);
}

}  // namespace

GRAFT_REGISTER_OPENCL_KERNEL(MatMul, matmul_support, make_matmul_kernel);
GRAFT_REGISTER_OPENCL_KERNEL(Gemm, gemm_support, make_gemm_kernel);

}  // namespace graft::opencl

#endif  // GRAFT_HAVE_OPENCL_HEADERS
