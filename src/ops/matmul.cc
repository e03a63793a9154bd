// MatMul (numpy matmul: 1-D operands promoted, batch dimensions broadcast),
// Gemm (transposes, alpha, beta, C broadcast to M x N), and the integer
// products MatMulInteger and QLinearMatMul.
//
// Every float32 product ends in gemm_f32. A batch of products is run either
// as one tall product (when B has no batch and A's batch folds into M), in
// parallel over the batch (many products, each one thread), or one after the
// other with gemm_f32 threading inside each.
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "graft/core/kernel_interrupt.h"
#include "graft/core/parallel.h"
#include "graft/ops/broadcast.h"
#include "graft/ops/gemm.h"
#include "graft/ops/gradient.h"
#include "graft/ops/infer_util.h"
#include "graft/ops/op_context.h"
#include "math_common.h"

namespace graft::ops {

namespace {

/// C = op(A) * op(B) (M x N, dense) for types without a gemm: integers wrap
/// like the hardware does (the arithmetic runs unsigned).
template <typename T>
void naive_matmul(const T* A, const T* B, T* C, int64_t M, int64_t N, int64_t K, bool trans_a, bool trans_b) {
  using Acc = std::conditional_t<std::is_integral_v<T>, std::make_unsigned_t<T>, T>;
  std::vector<Acc> row(static_cast<size_t>(N));
  for (int64_t i = 0; i < M; ++i) {
    std::fill(row.begin(), row.end(), Acc(0));
    for (int64_t k = 0; k < K; ++k) {
      const Acc a = static_cast<Acc>(trans_a ? A[k * M + i] : A[i * K + k]);
      if (a == Acc(0)) continue;
      if (!trans_b) {
        const T* b = B + k * N;
        for (int64_t j = 0; j < N; ++j) row[static_cast<size_t>(j)] += a * static_cast<Acc>(b[j]);
      } else {
        for (int64_t j = 0; j < N; ++j) row[static_cast<size_t>(j)] += a * static_cast<Acc>(B[j * K + k]);
      }
    }
    for (int64_t j = 0; j < N; ++j) C[i * N + j] = static_cast<T>(row[static_cast<size_t>(j)]);
  }
}

template <typename T>
void matmul_one(const T* A, const T* B, T* C, int64_t M, int64_t N, int64_t K, bool trans_a, bool trans_b) {
  if constexpr (std::is_same_v<T, float>) {
    gemm_f32(trans_a, trans_b, M, N, K, 1.0f, A, trans_a ? std::max<int64_t>(M, 1) : std::max<int64_t>(K, 1), B,
             trans_b ? std::max<int64_t>(K, 1) : std::max<int64_t>(N, 1), 0.0f, C, std::max<int64_t>(N, 1));
  } else if constexpr (std::is_same_v<T, double>) {
    gemm_f64(trans_a, trans_b, M, N, K, 1.0, A, trans_a ? std::max<int64_t>(M, 1) : std::max<int64_t>(K, 1), B,
             trans_b ? std::max<int64_t>(K, 1) : std::max<int64_t>(N, 1), 0.0, C, std::max<int64_t>(N, 1));
  } else {
    naive_matmul(A, B, C, M, N, K, trans_a, trans_b);
  }
}

}  // namespace

template <typename T>
void batched_matmul(const T* A, const Shape& a_batch, const T* B, const Shape& b_batch, const Shape& out_batch,
                    int64_t M, int64_t N, int64_t K, bool trans_a, bool trans_b, T* C) {
  const int64_t batches = shape_numel(out_batch);
  if (batches == 0 || M == 0 || N == 0) return;
  const int64_t a_batches = shape_numel(a_batch), b_batches = shape_numel(b_batch);
  // One tall product: B shared by every batch, A's batches stacked along M.
  if (b_batches == 1 && a_batches == batches && !trans_a) {
    matmul_one(A, B, C, batches * M, N, K, false, trans_b);
    return;
  }
  if (batches == 1) {
    matmul_one(A, B, C, M, N, K, trans_a, trans_b);
    return;
  }
  const std::vector<int64_t> a_strides = broadcast_strides(a_batch, out_batch);
  const std::vector<int64_t> b_strides = broadcast_strides(b_batch, out_batch);
  const std::vector<int64_t> out_strides = shape_strides(out_batch);
  auto run = [&](int64_t begin, int64_t end) {
    for (int64_t index = begin; index < end; ++index) {
      int64_t a_index = 0, b_index = 0, rest = index;
      for (size_t d = 0; d < out_batch.size(); ++d) {
        const int64_t coordinate = rest / out_strides[d];
        rest %= out_strides[d];
        a_index += coordinate * a_strides[d];
        b_index += coordinate * b_strides[d];
      }
      check_kernel_interrupt();
      matmul_one(A + a_index * M * K, B + b_index * K * N, C + index * M * N, M, N, K, trans_a, trans_b);
    }
  };
  const int threads = current_num_threads();
  const double work = static_cast<double>(M) * static_cast<double>(N) * static_cast<double>(K);
  // Over the batch when it splits evenly or is long, or when each product is
  // too small to thread; otherwise each product threads itself.
  if (batches % threads == 0 || batches >= 4 * threads || work < 65536.0) {
    parallel_for(batches, 1, run);
  } else {
    run(0, batches);
  }
}

template void batched_matmul<float>(const float*, const Shape&, const float*, const Shape&, const Shape&, int64_t,
                                    int64_t, int64_t, bool, bool, float*);
template void batched_matmul<double>(const double*, const Shape&, const double*, const Shape&, const Shape&, int64_t,
                                     int64_t, int64_t, bool, bool, double*);
template void batched_matmul<int64_t>(const int64_t*, const Shape&, const int64_t*, const Shape&, const Shape&, int64_t,
                                      int64_t, int64_t, bool, bool, int64_t*);
template void batched_matmul<int32_t>(const int32_t*, const Shape&, const int32_t*, const Shape&, const Shape&, int64_t,
                                      int64_t, int64_t, bool, bool, int32_t*);
template void batched_matmul<uint32_t>(const uint32_t*, const Shape&, const uint32_t*, const Shape&, const Shape&,
                                       int64_t, int64_t, int64_t, bool, bool, uint32_t*);
template void batched_matmul<uint64_t>(const uint64_t*, const Shape&, const uint64_t*, const Shape&, const Shape&,
                                       int64_t, int64_t, int64_t, bool, bool, uint64_t*);

namespace {

// ---- shapes ----

/// The numpy-matmul view of two operand shapes.
struct MatmulShapes {
  Shape a_batch, b_batch, out_batch, out;
  int64_t M = 1, N = 1, K = 1;
};

MatmulShapes matmul_shapes(const KernelContext& ctx, const Shape& a, const Shape& b) {
  if (a.empty() || b.empty())
    ctx.fail("operands must have rank >= 1, got ", shape_to_string(a), " and ", shape_to_string(b));
  MatmulShapes s;
  const bool a_vector = a.size() == 1, b_vector = b.size() == 1;
  s.M = a_vector ? 1 : a[a.size() - 2];
  s.K = a.back();
  const int64_t kb = b_vector ? b[0] : b[b.size() - 2];
  s.N = b_vector ? 1 : b.back();
  if (s.K != kb)
    ctx.fail("inner dimensions differ: ", shape_to_string(a), " x ", shape_to_string(b), " (", s.K, " vs ", kb, ")");
  if (!a_vector) s.a_batch.assign(a.begin(), a.end() - 2);
  if (!b_vector) s.b_batch.assign(b.begin(), b.end() - 2);
  s.out_batch = broadcast_shapes(s.a_batch, s.b_batch, ctx.node().describe());
  s.out = s.out_batch;
  if (!a_vector) s.out.push_back(s.M);
  if (!b_vector) s.out.push_back(s.N);
  return s;
}

/// Output dims of numpy matmul over (possibly symbolic) types; nullopt when a
/// rank is unknown.
std::optional<std::vector<ir::Dim>> matmul_dims(const InferContext& ctx, const ir::ValueType& a,
                                                const ir::ValueType& b) {
  if (!a.has_rank || !b.has_rank) return std::nullopt;
  if (a.dims.empty() || b.dims.empty()) ctx.fail("operands must have rank >= 1");
  const bool a_vector = a.dims.size() == 1, b_vector = b.dims.size() == 1;
  const ir::Dim& ka = a.dims.back();
  const ir::Dim& kb = b_vector ? b.dims[0] : b.dims[b.dims.size() - 2];
  if (ka.is_known() && kb.is_known() && ka.value != kb.value)
    ctx.fail("inner dimensions differ (", ka.value, " vs ", kb.value, ")");
  ir::ValueType a_batch{a.dtype, true, {}}, b_batch{b.dtype, true, {}};
  if (!a_vector) a_batch.dims.assign(a.dims.begin(), a.dims.end() - 2);
  if (!b_vector) b_batch.dims.assign(b.dims.begin(), b.dims.end() - 2);
  auto dims = broadcast_dims(ctx, {a_batch, b_batch});
  if (!a_vector) dims->push_back(a.dims[a.dims.size() - 2]);
  if (!b_vector) dims->push_back(b.dims.back());
  return dims;
}

void infer_matmul_like(InferContext& ctx, size_t a_index, size_t b_index, DType out_dtype) {
  auto dims = matmul_dims(ctx, ctx.input_type(a_index), ctx.input_type(b_index));
  if (!dims) return set_output_dtype_only(ctx, 0, out_dtype);
  ctx.set_output(0, ir::ValueType{out_dtype, true, std::move(*dims)});
}

// ---- MatMul ----

void infer_matmul(InferContext& ctx) {
  const DType a = ctx.input_type(0).dtype, b = ctx.input_type(1).dtype;
  if (a != b && a != DType::undefined && b != DType::undefined)
    ctx.fail("operand dtypes differ: ", dtype_name(a), " and ", dtype_name(b));
  infer_matmul_like(ctx, 0, 1, a);
}

/// Runs a batched product of T in its compute type (float16 and bfloat16
/// through float).
template <typename T>
void matmul_typed(const Tensor& a, const Tensor& b, const MatmulShapes& s, Tensor& y) {
  if constexpr (std::is_same_v<T, float16_t> || std::is_same_v<T, bfloat16_t>) {
    std::vector<float> af = tensor_to_vector<float>(a), bf = tensor_to_vector<float>(b);
    std::vector<float> yf(static_cast<size_t>(y.numel()));
    batched_matmul<float>(af.data(), s.a_batch, bf.data(), s.b_batch, s.out_batch, s.M, s.N, s.K, false, false,
                          yf.data());
    T* out = y.data<T>();
    for (size_t i = 0; i < yf.size(); ++i) out[i] = T(yf[i]);
  } else {
    batched_matmul<T>(a.data<T>(), s.a_batch, b.data<T>(), s.b_batch, s.out_batch, s.M, s.N, s.K, false, false,
                      y.data<T>());
  }
}

void matmul_kernel(KernelContext& ctx) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  if (a.dtype() != b.dtype()) ctx.fail("operand dtypes differ: ", a.type_string(), " and ", b.type_string());
  MatmulShapes s = matmul_shapes(ctx, a.shape(), b.shape());
  Tensor& y = ctx.allocate_output(0, a.dtype(), s.out);
  if (y.numel() == 0) return;
  if (s.K == 0) {
    std::memset(y.raw_data(), 0, y.nbytes());
    return;
  }
  switch (a.dtype()) {
    case DType::float32:
      return matmul_typed<float>(a, b, s, y);
    case DType::float64:
      return matmul_typed<double>(a, b, s, y);
    case DType::float16:
      return matmul_typed<float16_t>(a, b, s, y);
    case DType::bfloat16:
      return matmul_typed<bfloat16_t>(a, b, s, y);
    case DType::int32:
      return matmul_typed<int32_t>(a, b, s, y);
    case DType::int64:
      return matmul_typed<int64_t>(a, b, s, y);
    case DType::uint32:
      return matmul_typed<uint32_t>(a, b, s, y);
    case DType::uint64:
      return matmul_typed<uint64_t>(a, b, s, y);
    default:
      ctx.unsupported("dtype ", dtype_name(a.dtype()), " is not supported");
  }
}

// ---- Gemm ----

void infer_gemm(InferContext& ctx) {
  const ir::ValueType& a = ctx.input_type(0);
  const ir::ValueType& b = ctx.input_type(1);
  const bool trans_a = ctx.attrs().get_int("transA", 0) != 0, trans_b = ctx.attrs().get_int("transB", 0) != 0;
  ir::ValueType out{a.dtype, true, {ir::Dim{}, ir::Dim{}}};
  if (a.has_rank) {
    if (a.dims.size() != 2) ctx.fail("A must have rank 2, got ", a.to_string());
    out.dims[0] = a.dims[trans_a ? 1 : 0];
  }
  if (b.has_rank) {
    if (b.dims.size() != 2) ctx.fail("B must have rank 2, got ", b.to_string());
    out.dims[1] = b.dims[trans_b ? 0 : 1];
  }
  if (a.has_rank && b.has_rank) {
    const ir::Dim& ka = a.dims[trans_a ? 0 : 1];
    const ir::Dim& kb = b.dims[trans_b ? 1 : 0];
    if (ka.is_known() && kb.is_known() && ka.value != kb.value)
      ctx.fail("inner dimensions differ (", ka.value, " vs ", kb.value, ")");
  }
  ctx.set_output(0, std::move(out));
}

/// Y = alpha * op(A) * op(B) + beta * C in the compute type W of T.
template <typename T>
void gemm_typed(const Tensor& a, const Tensor& b, const Tensor* c, bool trans_a, bool trans_b, int64_t M, int64_t N,
                int64_t K, float alpha, float beta, Tensor& y) {
  using W = compute_t<T>;
  const int64_t count = M * N;
  // Y starts as C broadcast to M x N (or is left unread when there is no C).
  std::vector<W> wide;
  W* out = nullptr;
  constexpr bool direct = std::is_same_v<T, float> || std::is_same_v<T, double>;
  if constexpr (direct) {
    out = y.data<T>();
  } else {
    wide.resize(static_cast<size_t>(count));
    out = wide.data();
  }
  if (c) {
    const std::vector<int64_t> strides = broadcast_strides(c->shape(), Shape{M, N});
    const T* cp = c->data<T>();
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) out[i * N + j] = static_cast<W>(cp[i * strides[0] + j * strides[1]]);
  }
  if constexpr (std::is_same_v<T, float>) {
    gemm_f32(trans_a, trans_b, M, N, K, alpha, a.data<float>(), std::max<int64_t>(1, trans_a ? M : K), b.data<float>(),
             std::max<int64_t>(1, trans_b ? K : N), c ? beta : 0.0f, out, std::max<int64_t>(1, N));
  } else if constexpr (std::is_same_v<T, double>) {
    gemm_f64(trans_a, trans_b, M, N, K, alpha, a.data<double>(), std::max<int64_t>(1, trans_a ? M : K),
             b.data<double>(), std::max<int64_t>(1, trans_b ? K : N), c ? beta : 0.0, out, std::max<int64_t>(1, N));
  } else if constexpr (std::is_same_v<W, float>) {
    std::vector<float> af = tensor_to_vector<float>(a), bf = tensor_to_vector<float>(b);
    gemm_f32(trans_a, trans_b, M, N, K, alpha, af.data(), std::max<int64_t>(1, trans_a ? M : K), bf.data(),
             std::max<int64_t>(1, trans_b ? K : N), c ? beta : 0.0f, out, std::max<int64_t>(1, N));
  } else {
    // Integers: exact product, then alpha and beta applied in double.
    std::vector<T> product(static_cast<size_t>(count));
    naive_matmul(a.data<T>(), b.data<T>(), product.data(), M, N, K, trans_a, trans_b);
    for (int64_t i = 0; i < count; ++i) {
      double v = static_cast<double>(alpha) * static_cast<double>(product[static_cast<size_t>(i)]);
      if (c) v += static_cast<double>(beta) * static_cast<double>(out[i]);
      out[i] = static_cast<W>(v);
    }
  }
  if constexpr (!direct) {
    T* yp = y.data<T>();
    for (int64_t i = 0; i < count; ++i) yp[i] = static_cast<T>(wide[static_cast<size_t>(i)]);
  }
}

void gemm_kernel(KernelContext& ctx) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  if (a.rank() != 2 || b.rank() != 2)
    ctx.fail("A and B must have rank 2, got ", a.type_string(), " and ", b.type_string());
  if (a.dtype() != b.dtype()) ctx.fail("A and B dtypes differ: ", a.type_string(), " and ", b.type_string());
  const bool trans_a = ctx.attrs().get_int("transA", 0) != 0, trans_b = ctx.attrs().get_int("transB", 0) != 0;
  const float alpha = ctx.attrs().get_float("alpha", 1.0f), beta = ctx.attrs().get_float("beta", 1.0f);
  const int64_t M = a.dim(trans_a ? 1 : 0), K = a.dim(trans_a ? 0 : 1);
  const int64_t kb = b.dim(trans_b ? 1 : 0), N = b.dim(trans_b ? 0 : 1);
  if (K != kb) ctx.fail("inner dimensions differ: A ", a.type_string(), ", B ", b.type_string());
  const Tensor* c = ctx.has_input(2) ? &ctx.input(2) : nullptr;
  if (c) {
    if (c->dtype() != a.dtype()) ctx.fail("C dtype differs from A: ", c->type_string());
    if (c->rank() > 2 || broadcast_shapes(c->shape(), {M, N}, ctx.node().describe()) != Shape{M, N})
      ctx.fail("C ", c->type_string(), " does not broadcast to [", M, ",", N, "]");
  }
  Tensor& y = ctx.allocate_output(0, a.dtype(), {M, N});
  if (y.numel() == 0) return;
  switch (a.dtype()) {
    case DType::float32:
      return gemm_typed<float>(a, b, c, trans_a, trans_b, M, N, K, alpha, beta, y);
    case DType::float64:
      return gemm_typed<double>(a, b, c, trans_a, trans_b, M, N, K, alpha, beta, y);
    case DType::float16:
      return gemm_typed<float16_t>(a, b, c, trans_a, trans_b, M, N, K, alpha, beta, y);
    case DType::bfloat16:
      return gemm_typed<bfloat16_t>(a, b, c, trans_a, trans_b, M, N, K, alpha, beta, y);
    case DType::int32:
      return gemm_typed<int32_t>(a, b, c, trans_a, trans_b, M, N, K, alpha, beta, y);
    case DType::int64:
      return gemm_typed<int64_t>(a, b, c, trans_a, trans_b, M, N, K, alpha, beta, y);
    case DType::uint32:
      return gemm_typed<uint32_t>(a, b, c, trans_a, trans_b, M, N, K, alpha, beta, y);
    case DType::uint64:
      return gemm_typed<uint64_t>(a, b, c, trans_a, trans_b, M, N, K, alpha, beta, y);
    default:
      ctx.unsupported("dtype ", dtype_name(a.dtype()), " is not supported");
  }
}

// ---- MatMulInteger and QLinearMatMul ----

/// Integer operand minus its zero point, widened to int32. The zero point is
/// a scalar, per row of A / per column of B as a 1-D tensor (length M or N),
/// or per matrix row/column with the operand's shape and 1 in the last
/// (A) / second-to-last (B) dimension.
std::vector<int32_t> widen_minus_zero_point(const KernelContext& ctx, const Tensor& x, const Tensor* zero_point,
                                            bool is_a, const char* what) {
  const int64_t n = x.numel();
  std::vector<int32_t> out(static_cast<size_t>(n));
  const Shape& s = x.shape();
  // Strides of x's element index into the zero point.
  std::vector<int32_t> zp_values;
  std::vector<int64_t> zp_strides(s.size(), 0);
  if (zero_point) {
    if (zero_point->dtype() != x.dtype())
      ctx.fail(what, " zero point dtype ", dtype_name(zero_point->dtype()), " differs from ", dtype_name(x.dtype()));
    zp_values = tensor_to_vector<int32_t>(*zero_point);
    const Shape& z = zero_point->shape();
    const size_t rank = s.size();
    if (zero_point->numel() == 1) {
      // scalar: all strides 0
    } else if (z.size() == 1 && rank >= 1) {
      // per row of A (dimension rank-2, or the only dimension of a vector A... which has one row) /
      // per column of B (last dimension).
      const size_t dim = is_a ? (rank >= 2 ? rank - 2 : rank) : rank - 1;
      if (dim >= rank || s[dim] != z[0])
        ctx.fail(what, " zero point ", zero_point->type_string(), " does not match operand ", x.type_string());
      zp_strides[dim] = 1;
    } else {
      Shape expected = s;
      if (is_a)
        expected.back() = 1;
      else if (rank >= 2)
        expected[rank - 2] = 1;
      if (z != expected)
        ctx.fail(what, " zero point ", zero_point->type_string(), " does not match operand ", x.type_string());
      zp_strides = broadcast_strides(z, s);
    }
  }
  visit_dtype(x.dtype(), "MatMulInteger", [&]<typename T>() {
    if constexpr (std::is_same_v<T, int8_t> || std::is_same_v<T, uint8_t>) {
      const T* p = x.data<T>();
      if (!zero_point) {
        for (int64_t i = 0; i < n; ++i) out[static_cast<size_t>(i)] = p[i];
        return;
      }
      const std::vector<int64_t> strides = shape_strides(s);
      for (int64_t i = 0; i < n; ++i) {
        int64_t zi = 0, rest = i;
        for (size_t d = 0; d < s.size(); ++d) {
          zi += rest / strides[d] * zp_strides[d];
          rest %= strides[d];
        }
        out[static_cast<size_t>(i)] = static_cast<int32_t>(p[i]) - zp_values[static_cast<size_t>(zi)];
      }
    }
  });
  return out;
}

/// The int32 product of two 8-bit operands after removing their zero points.
std::vector<int32_t> integer_product(const KernelContext& ctx, const Tensor& a, const Tensor* a_zero_point,
                                     const Tensor& b, const Tensor* b_zero_point, const MatmulShapes& s) {
  if (!is_8bit(a.dtype()) || !is_8bit(b.dtype()))
    ctx.unsupported("operands must be int8 or uint8, got ", a.type_string(), " and ", b.type_string());
  std::vector<int32_t> aw = widen_minus_zero_point(ctx, a, a_zero_point, true, "A");
  std::vector<int32_t> bw = widen_minus_zero_point(ctx, b, b_zero_point, false, "B");
  std::vector<int32_t> product(static_cast<size_t>(shape_numel(s.out)));
  if (!product.empty())
    batched_matmul<int32_t>(aw.data(), s.a_batch, bw.data(), s.b_batch, s.out_batch, s.M, s.N, s.K, false, false,
                            product.data());
  return product;
}

void infer_matmul_integer(InferContext& ctx) { infer_matmul_like(ctx, 0, 1, DType::int32); }

void matmul_integer_kernel(KernelContext& ctx) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  MatmulShapes s = matmul_shapes(ctx, a.shape(), b.shape());
  std::vector<int32_t> product = integer_product(ctx, a, ctx.has_input(2) ? &ctx.input(2) : nullptr, b,
                                                 ctx.has_input(3) ? &ctx.input(3) : nullptr, s);
  Tensor& y = ctx.allocate_output(0, DType::int32, s.out);
  std::copy(product.begin(), product.end(), y.data<int32_t>());
}

void infer_qlinear_matmul(InferContext& ctx) { infer_matmul_like(ctx, 0, 3, ctx.input_type(7).dtype); }

/// A scale that is a scalar or one value per row (A) / column (B).
std::vector<float> scale_values(const KernelContext& ctx, const Tensor& scale, int64_t length, const char* what) {
  if (!dtype_is_float(scale.dtype())) ctx.fail(what, " scale must be a float tensor, got ", scale.type_string());
  if (scale.numel() != 1 && !(scale.rank() == 1 && scale.numel() == length))
    ctx.fail(what, " scale ", scale.type_string(), " must be a scalar or hold ", length, " values");
  return tensor_to_vector<float>(scale);
}

void qlinear_matmul_kernel(KernelContext& ctx) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(3);
  const Tensor& y_zero_point = ctx.input(7);
  MatmulShapes s = matmul_shapes(ctx, a.shape(), b.shape());
  if (!is_8bit(y_zero_point.dtype()) || y_zero_point.numel() != 1)
    ctx.fail("y_zero_point must be an int8 or uint8 scalar, got ", y_zero_point.type_string());
  std::vector<float> a_scale = scale_values(ctx, ctx.input(1), s.M, "a");
  std::vector<float> b_scale = scale_values(ctx, ctx.input(4), s.N, "b");
  std::vector<float> y_scale = scale_values(ctx, ctx.input(6), 1, "y");
  std::vector<int32_t> product = integer_product(ctx, a, &ctx.input(2), b, &ctx.input(5), s);
  const float y_zero = static_cast<float>(y_zero_point.value_as_double(0));
  Tensor& y = ctx.allocate_output(0, y_zero_point.dtype(), s.out);
  visit_dtype(y.dtype(), "QLinearMatMul", [&]<typename T>() {
    if constexpr (std::is_same_v<T, int8_t> || std::is_same_v<T, uint8_t>) {
      T* out = y.data<T>();
      const float lo = std::numeric_limits<T>::min(), hi = std::numeric_limits<T>::max();
      const int64_t MN = s.M * s.N;
      for (size_t i = 0; i < product.size(); ++i) {
        const int64_t within = static_cast<int64_t>(i) % MN;
        const int64_t row = within / s.N, col = within % s.N;
        const float multiplier = a_scale[a_scale.size() == 1 ? 0 : static_cast<size_t>(row)] *
                                 b_scale[b_scale.size() == 1 ? 0 : static_cast<size_t>(col)] / y_scale[0];
        const float v = std::nearbyint(static_cast<float>(product[i]) * multiplier) + y_zero;
        out[i] = static_cast<T>(std::clamp(v, lo, hi));
      }
    }
  });
}

}  // namespace

GRAFT_REGISTER_OP("", "MatMul", infer_matmul, matmul_kernel);
GRAFT_REGISTER_OP("", "Gemm", infer_gemm, gemm_kernel);
GRAFT_REGISTER_OP("", "MatMulInteger", infer_matmul_integer, matmul_integer_kernel);
GRAFT_REGISTER_OP("", "QLinearMatMul", infer_qlinear_matmul, qlinear_matmul_kernel);

// Gradient builders (graft/ops/gradient.h). MatMul: dA = dY B^T and dB = A^T
// dY over the last two axes (a 1-D operand is made a matrix first and its
// gradient reshaped back); broadcast batch axes are summed by autodiff. A
// matrix B applied to every matrix of a batched A (a linear layer on
// [batch, seq, features]) gets dB as one product over all rows, A and dY
// viewed as [rows, K] and [rows, N]: a batched A^T dY would write a [batch,
// K, N] product for autodiff to sum (BERT's attention input projection: 900
// MB and a reduction slower than the product). Gemm: other Gemms with the
// transpositions swapped, and beta dY for C.
namespace {

/// `v` with its last two axes swapped (rank >= 2).
ir::Value swap_last_two(GradientContext& g, ir::Value v) {
  using enum ir::OpId;
  const ir::ValueType& t = g.type_of(v);
  if (!t.has_rank) g.unsupported("MatMul operands need a known rank");
  const int64_t rank = static_cast<int64_t>(t.dims.size());
  std::vector<int64_t> perm;
  for (int64_t d = 0; d < rank; ++d) perm.push_back(d);
  std::swap(perm[static_cast<size_t>(rank - 1)], perm[static_cast<size_t>(rank - 2)]);
  return g.add(Transpose, {v}, {{"perm", perm}});
}

void matmul_gradient(GradientContext& g) {
  using enum ir::OpId;
  ir::Value a = g.input(0), b = g.input(1), dy = g.output_gradient(0);
  const ir::ValueType &at = g.input_type(0), &bt = g.input_type(1);
  if (!at.has_rank || !bt.has_rank) g.unsupported("MatMul operands need a known rank");
  const size_t ra = at.dims.size(), rb = bt.dims.size();
  if (ra == 1 && rb == 1) {  // a dot product
    if (g.needs_input_gradient(0)) g.set_input_gradient(0, g.add(Mul, {dy, b}));
    if (g.needs_input_gradient(1)) g.set_input_gradient(1, g.add(Mul, {dy, a}));
    return;
  }
  ir::Value a2 = ra == 1 ? g.add(Unsqueeze, {a, g.int64s({0})}) : a;
  ir::Value b2 = rb == 1 ? g.add(Unsqueeze, {b, g.int64s({1})}) : b;
  ir::Value dy2 = dy;
  if (ra == 1) dy2 = g.add(Unsqueeze, {dy2, g.int64s({-2})});
  if (rb == 1) dy2 = g.add(Unsqueeze, {dy2, g.int64s({-1})});
  if (g.needs_input_gradient(0)) {
    ir::Value da = g.add(MatMul, {dy2, swap_last_two(g, b2)});
    if (ra == 1) {
      // [..., 1, K]: sum every axis but the last, giving [K].
      std::vector<int64_t> dims = g.known_dims(da), axes;
      for (size_t d = 0; d + 1 < dims.size(); ++d) axes.push_back(static_cast<int64_t>(d));
      da = g.add(ReduceSum, {da, g.int64s(axes)}, {{"keepdims", int64_t{0}}});
    }
    g.set_input_gradient(0, da);
  }
  if (g.needs_input_gradient(1) && rb == 2 && ra > 2) {
    const std::vector<int64_t> a_dims = g.known_dims(a), dy_dims = g.known_dims(dy);
    ir::Value rows_a = g.add(Reshape, {a, g.int64s({-1, a_dims.back()})});
    ir::Value rows_dy = g.add(Reshape, {dy, g.int64s({-1, dy_dims.back()})});
    g.set_input_gradient(1, g.add(Gemm, {rows_a, rows_dy}, {{"transA", int64_t{1}}}));
  } else if (g.needs_input_gradient(1)) {
    ir::Value db = g.add(MatMul, {swap_last_two(g, a2), dy2});
    if (rb == 1) {
      // [..., K, 1]: sum every axis but the second last, then [K].
      std::vector<int64_t> dims = g.known_dims(db), axes;
      for (size_t d = 0; d < dims.size(); ++d)
        if (d + 2 != dims.size()) axes.push_back(static_cast<int64_t>(d));
      db = g.add(ReduceSum, {db, g.int64s(axes)}, {{"keepdims", int64_t{0}}});
    }
    g.set_input_gradient(1, db);
  }
}

void gemm_gradient(GradientContext& g) {
  using enum ir::OpId;
  const bool trans_a = g.attrs().get_int("transA", 0) != 0, trans_b = g.attrs().get_int("transB", 0) != 0;
  const float alpha = g.attrs().get_float("alpha", 1.0f), beta = g.attrs().get_float("beta", 1.0f);
  ir::Value a = g.input(0), b = g.input(1), dy = g.output_gradient(0);
  auto gemm = [&](ir::Value x, ir::Value y, bool tx, bool ty) {
    return g.add(Gemm, {x, y}, {{"transA", int64_t{tx}}, {"transB", int64_t{ty}}, {"alpha", alpha}, {"beta", 0.0f}});
  };
  if (g.needs_input_gradient(0))
    g.set_input_gradient(0, trans_a ? gemm(b, dy, trans_b, true) : gemm(dy, b, false, !trans_b));
  if (g.needs_input_gradient(1))
    g.set_input_gradient(1, trans_b ? gemm(dy, a, true, trans_a) : gemm(a, dy, !trans_a, false));
  if (g.needs_input_gradient(2))
    g.set_input_gradient(2, beta == 1.0f ? dy : g.add(Mul, {dy, g.scalar(beta, g.output_type(0).dtype)}));
}

}  // namespace

GRAFT_REGISTER_GRADIENT(MatMul, matmul_gradient);
GRAFT_REGISTER_GRADIENT(Gemm, gemm_gradient);

}  // namespace graft::ops
