// Single- and double-precision matrix multiply: C = alpha * op(A) * op(B) + beta * C.
//
// gemm_f32 follows the Goto/BLIS layering. The N dimension is cut into blocks
// of kNc columns, K into blocks of kKc, M into blocks of kMc rows. For each
// (N block, K block) the slice of op(B) is packed into column strips of NR
// floats per k ("B panels", zero-padded to a multiple of NR); for each M block
// the slice of op(A) is packed into row strips of MR floats per k ("A panels").
// A register-blocked micro-kernel then multiplies one MR x kc A panel by one
// kc x NR B panel, keeping the MR x NR accumulator tile in vector registers,
// and merges it into C (alpha * acc + beta * C on the first K block, adding
// afterwards). Packing makes every load in the micro-kernel contiguous and
// lets any transpose and leading dimension be handled in the packing alone.
//
// The micro-kernel is plain C++ on GCC/Clang vector types; the same template
// is compiled three times on x86-64 (AVX-512, AVX2+FMA, baseline SSE2) with
// per-function target attributes, and the widest one the CPU supports is
// chosen once at run time, so the library stays runnable on any x86-64.
//
// Threads: the output is cut into a grid of tm x tn rectangles (tm * tn equals
// the thread count, the factorization chosen to balance whole micro-tiles and
// keep rectangles square-ish); each thread runs the layered loop above on its
// rectangle with its own packing buffers. Single rows or columns (M == 1 or
// N == 1), and up to 4 rows (a recurrent step's batch), take a matrix-vector
// path instead, since packing would cost as much as the product.
#include "graft/ops/gemm.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <new>
#include <vector>

#include "gemm_internal.h"
#include "graft/core/error.h"
#include "graft/core/kernel_interrupt.h"
#include "graft/core/parallel.h"

#if defined(__GNUC__)
#define GRAFT_ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define GRAFT_ALWAYS_INLINE inline
#endif

#if defined(__x86_64__) && defined(__GNUC__)
#define GRAFT_GEMM_X86_DISPATCH 1
#endif

namespace graft::ops {
namespace {

// Vector types of 4, 8 and 16 floats (GCC/Clang vector extensions).
typedef float Float4 __attribute__((vector_size(16)));
typedef float Float8 __attribute__((vector_size(32)));
typedef float Float16 __attribute__((vector_size(64)));

/// The problem as given by the caller; element accessors apply the transposes.
struct GemmProblem {
  bool trans_a, trans_b;
  int64_t M, N, K;
  float alpha;
  const float* A;
  int64_t lda;
  const float* B;
  int64_t ldb;
  float beta;
  float* C;
  int64_t ldc;
};

constexpr int64_t kKc = 256;   // K block: one B panel (kKc x NR) stays in L1
constexpr int64_t kNc = 4096;  // N block: the packed B block stays in L2/L3

/// Per-thread packing buffers, grown on demand and kept for the thread's life
/// so that repeated small products do not allocate.
struct PackBuffers {
  struct AlignedFree {
    void operator()(float* p) const { ::operator delete[](p, std::align_val_t(64)); }
  };
  std::unique_ptr<float[], AlignedFree> a, b;
  size_t a_size = 0, b_size = 0;
  static float* ensure(std::unique_ptr<float[], AlignedFree>& buf, size_t& size, size_t need) {
    if (need > size) {
      buf.reset(static_cast<float*>(::operator new[](need * sizeof(float), std::align_val_t(64))));
      size = need;
    }
    return buf.get();
  }
};

PackBuffers& thread_pack_buffers() {
  thread_local PackBuffers buffers;
  return buffers;
}

/// Packs rows [i0, i0+mc) x columns [k0, k0+kc) of op(A) into strips of MR
/// rows: strip s holds, for each k, the MR values op(A)(i0+s*MR+r, k0+k),
/// with rows past mc zero.
template <int MR>
void pack_a(const GemmProblem& p, int64_t i0, int64_t mc, int64_t k0, int64_t kc, float* dst) {
  for (int64_t s = 0; s < mc; s += MR) {
    int64_t rows = std::min<int64_t>(MR, mc - s);
    float* out = dst + s * kc;
    if (!p.trans_a) {
      // A is row-major M x K: row i is contiguous along k.
      for (int64_t r = 0; r < rows; ++r) {
        const float* src = p.A + (i0 + s + r) * p.lda + k0;
        for (int64_t k = 0; k < kc; ++k) out[k * MR + r] = src[k];
      }
    } else {
      // A is K x M: op(A)(i, k) = A[k * lda + i], contiguous along i.
      for (int64_t k = 0; k < kc; ++k) {
        const float* src = p.A + (k0 + k) * p.lda + i0 + s;
        for (int64_t r = 0; r < rows; ++r) out[k * MR + r] = src[r];
      }
    }
    if (rows < MR)
      for (int64_t k = 0; k < kc; ++k)
        for (int64_t r = rows; r < MR; ++r) out[k * MR + r] = 0.0f;
  }
}

/// Packs rows [k0, k0+kc) x columns [j0, j0+nc) of op(B) into strips of NR
/// columns: strip s holds, for each k, the NR values op(B)(k0+k, j0+s*NR+c),
/// with columns past nc zero.
template <int NR>
void pack_b(const GemmProblem& p, int64_t k0, int64_t kc, int64_t j0, int64_t nc, float* dst) {
  for (int64_t s = 0; s < nc; s += NR) {
    int64_t cols = std::min<int64_t>(NR, nc - s);
    float* out = dst + s * kc;
    if (!p.trans_b) {
      // B is row-major K x N: contiguous along j.
      for (int64_t k = 0; k < kc; ++k) {
        const float* src = p.B + (k0 + k) * p.ldb + j0 + s;
        float* row = out + k * NR;
        if (cols == NR) {
          std::memcpy(row, src, NR * sizeof(float));
        } else {
          for (int64_t c = 0; c < cols; ++c) row[c] = src[c];
          for (int64_t c = cols; c < NR; ++c) row[c] = 0.0f;
        }
      }
    } else {
      // B is N x K: op(B)(k, j) = B[j * ldb + k], contiguous along k.
      for (int64_t c = 0; c < cols; ++c) {
        const float* src = p.B + (j0 + s + c) * p.ldb + k0;
        for (int64_t k = 0; k < kc; ++k) out[k * NR + c] = src[k];
      }
      for (int64_t c = cols; c < NR; ++c)
        for (int64_t k = 0; k < kc; ++k) out[k * NR + c] = 0.0f;
    }
  }
}

/// Multiplies one packed A strip (MR x kc) by one packed B strip (kc x NR)
/// and merges the m x n valid part into C: C = alpha*acc + beta*C when
/// `first` (C not read when beta == 0), else C += alpha*acc.
template <typename Vec, int MR, int NR>
GRAFT_ALWAYS_INLINE void micro_kernel(int64_t kc, const float* __restrict a, const float* __restrict b,
                                      float* __restrict c, int64_t ldc, int64_t m, int64_t n, float alpha, float beta,
                                      bool first) {
  constexpr int W = static_cast<int>(sizeof(Vec) / sizeof(float));
  constexpr int NV = NR / W;
  static_assert(NR % W == 0);
  Vec acc[MR][NV];
#pragma GCC unroll 32
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 8
    for (int j = 0; j < NV; ++j) acc[i][j] = Vec{};
  for (int64_t k = 0; k < kc; ++k) {
    Vec bv[NV];
#pragma GCC unroll 8
    for (int j = 0; j < NV; ++j) bv[j] = *reinterpret_cast<const Vec*>(b + j * W);
#pragma GCC unroll 32
    for (int i = 0; i < MR; ++i) {
      const float ai = a[i];
#pragma GCC unroll 8
      for (int j = 0; j < NV; ++j) acc[i][j] += ai * bv[j];
    }
    a += MR;
    b += NR;
  }
  if (m == MR && n == NR) {
#pragma GCC unroll 32
    for (int i = 0; i < MR; ++i) {
      float* row = c + i * ldc;
#pragma GCC unroll 8
      for (int j = 0; j < NV; ++j) {
        Vec out = alpha * acc[i][j];
        if (!first || beta != 0.0f) {
          Vec old;
          std::memcpy(&old, row + j * W, sizeof(Vec));
          out += (first ? beta : 1.0f) * old;
        }
        std::memcpy(row + j * W, &out, sizeof(Vec));
      }
    }
    return;
  }
  alignas(64) float tile[MR * NR];
  std::memcpy(tile, acc, sizeof(tile));
  for (int64_t i = 0; i < m; ++i) {
    float* row = c + i * ldc;
    for (int64_t j = 0; j < n; ++j) {
      float v = alpha * tile[i * NR + j];
      if (!first)
        v += row[j];
      else if (beta != 0.0f)
        v += beta * row[j];
      row[j] = v;
    }
  }
}

/// The layered blocked loop over the output rectangle [m0,m1) x [n0,n1).
template <typename Vec, int MR, int NR, int64_t MC>
GRAFT_ALWAYS_INLINE void gemm_rectangle(const GemmProblem& p, int64_t m0, int64_t m1, int64_t n0, int64_t n1) {
  PackBuffers& buffers = thread_pack_buffers();
  const int64_t kc_max = std::min(kKc, p.K);
  const int64_t nc_max = std::min(kNc, n1 - n0);
  const int64_t mc_max = std::min(MC, m1 - m0);
  float* packed_b =
      PackBuffers::ensure(buffers.b, buffers.b_size, static_cast<size_t>(kc_max * ((nc_max + NR - 1) / NR * NR)));
  float* packed_a =
      PackBuffers::ensure(buffers.a, buffers.a_size, static_cast<size_t>(kc_max * ((mc_max + MR - 1) / MR * MR)));
  for (int64_t jc = n0; jc < n1; jc += kNc) {
    const int64_t nc = std::min(kNc, n1 - jc);
    for (int64_t pc = 0; pc < p.K; pc += kKc) {
      const int64_t kc = std::min(kKc, p.K - pc);
      const bool first = pc == 0;
      pack_b<NR>(p, pc, kc, jc, nc, packed_b);
      for (int64_t ic = m0; ic < m1; ic += MC) {
        const int64_t mc = std::min(MC, m1 - ic);
        pack_a<MR>(p, ic, mc, pc, kc, packed_a);
        for (int64_t jr = 0; jr < nc; jr += NR) {
          const float* b_panel = packed_b + jr * kc;
          const int64_t n = std::min<int64_t>(NR, nc - jr);
          for (int64_t ir = 0; ir < mc; ir += MR) {
            const int64_t m = std::min<int64_t>(MR, mc - ir);
            micro_kernel<Vec, MR, NR>(kc, packed_a + ir * kc, b_panel, p.C + (ic + ir) * p.ldc + jc + jr, p.ldc, m, n,
                                      p.alpha, p.beta, first);
          }
        }
      }
    }
  }
}

/// C[0, :] = alpha * op(A)[0, :] * op(B) + beta * C[0, :] (M == 1).
template <typename Vec>
GRAFT_ALWAYS_INLINE void gemv_row(const GemmProblem& p, int64_t n0, int64_t n1) {
  constexpr int W = static_cast<int>(sizeof(Vec) / sizeof(float));
  const int64_t a_stride = p.trans_a ? p.lda : 1;
  float* c = p.C;
  if (!p.trans_b) {
    // c[j] = sum_k a[k] * B[k, j]: accumulate rows of B.
    constexpr int64_t kBlock = 512;
    alignas(64) float acc[kBlock];
    for (int64_t jb = n0; jb < n1; jb += kBlock) {
      const int64_t nb = std::min(kBlock, n1 - jb);
      std::fill(acc, acc + nb, 0.0f);
      for (int64_t k = 0; k < p.K; ++k) {
        const float ak = p.A[k * a_stride];
        const float* row = p.B + k * p.ldb + jb;
        int64_t j = 0;
        for (; j + W <= nb; j += W) {
          Vec bv, av;
          std::memcpy(&bv, row + j, sizeof(Vec));
          std::memcpy(&av, acc + j, sizeof(Vec));
          av += ak * bv;
          std::memcpy(acc + j, &av, sizeof(Vec));
        }
        for (; j < nb; ++j) acc[j] += ak * row[j];
      }
      for (int64_t j = 0; j < nb; ++j) c[jb + j] = p.alpha * acc[j] + (p.beta != 0.0f ? p.beta * c[jb + j] : 0.0f);
    }
  } else {
    // c[j] = dot(a, B[j, :]).
    for (int64_t j = n0; j < n1; ++j) {
      const float* row = p.B + j * p.ldb;
      float sum = 0.0f;
      if (a_stride == 1) {
        Vec vsum{};
        int64_t k = 0;
        for (; k + W <= p.K; k += W) {
          Vec av, bv;
          std::memcpy(&av, p.A + k, sizeof(Vec));
          std::memcpy(&bv, row + k, sizeof(Vec));
          vsum += av * bv;
        }
        for (int l = 0; l < W; ++l) sum += vsum[l];
        for (; k < p.K; ++k) sum += p.A[k] * row[k];
      } else {
        for (int64_t k = 0; k < p.K; ++k) sum += p.A[k * a_stride] * row[k];
      }
      c[j] = p.alpha * sum + (p.beta != 0.0f ? p.beta * c[j] : 0.0f);
    }
  }
}

/// The rows of C that at most kSmallRows rows of op(A) give (2 <= M <= 4,
/// B not transposed), over columns [n0, n1), reading each row of B once for
/// all of them and packing nothing: a recurrent layer's step (batch rows
/// times the recurrent weights) repacked the whole weight matrix every step.
/// (With B transposed, each output would be a dot product whose lanes must
/// be summed; packing B is cheaper then.)
constexpr int64_t kSmallRows = 4;
template <typename Vec>
GRAFT_ALWAYS_INLINE Vec load_vec(const float* at) {
  Vec v;
  std::memcpy(&v, at, sizeof(Vec));
  return v;
}
// The accumulators are named variables, not arrays: GCC kept arrays of
// vectors in memory, a load and a store around every multiply-add.
template <typename Vec, int R>
GRAFT_ALWAYS_INLINE void gemv_rows_fixed(const GemmProblem& p, int64_t n0, int64_t n1) {
  constexpr int W = static_cast<int>(sizeof(Vec) / sizeof(float));
  const float* A = p.A;
  const int64_t lda = p.lda, K = p.K;
  auto a_at = [&](int i, int64_t k) { return p.trans_a ? A[k * lda + i] : A[i * lda + k]; };
  auto store = [&](int i, int64_t j, float sum) {
    float* c = p.C + i * p.ldc + j;
    *c = p.alpha * sum + (p.beta != 0.0f ? p.beta * *c : 0.0f);
  };
  int64_t j = n0;
  // C[i, j:j+2W] = sum_k A[i, k] * B[k, j:j+2W], R x 2 vectors in registers.
  alignas(64) float lanes[2 * W];
  for (; j + 2 * W <= n1; j += 2 * W) {
    Vec c00{}, c01{}, c10{}, c11{}, c20{}, c21{}, c30{}, c31{};
    for (int64_t k = 0; k < K; ++k) {
      const float* row = p.B + k * p.ldb + j;
      const Vec b0 = load_vec<Vec>(row), b1 = load_vec<Vec>(row + W);
      const float x0 = a_at(0, k);
      c00 += x0 * b0;
      c01 += x0 * b1;
      if constexpr (R > 1) {
        const float x1 = a_at(1, k);
        c10 += x1 * b0;
        c11 += x1 * b1;
      }
      if constexpr (R > 2) {
        const float x2 = a_at(2, k);
        c20 += x2 * b0;
        c21 += x2 * b1;
      }
      if constexpr (R > 3) {
        const float x3 = a_at(3, k);
        c30 += x3 * b0;
        c31 += x3 * b1;
      }
    }
    auto put = [&](int i, const Vec& first, const Vec& second) {
      std::memcpy(lanes, &first, sizeof(Vec));
      std::memcpy(lanes + W, &second, sizeof(Vec));
      for (int l = 0; l < 2 * W; ++l) store(i, j + l, lanes[l]);
    };
    put(0, c00, c01);
    if constexpr (R > 1) put(1, c10, c11);
    if constexpr (R > 2) put(2, c20, c21);
    if constexpr (R > 3) put(3, c30, c31);
  }
  // The columns left.
  for (; j < n1; ++j)
    for (int i = 0; i < R; ++i) {
      float sum = 0.0f;
      for (int64_t k = 0; k < K; ++k) sum += a_at(i, k) * p.B[k * p.ldb + j];
      store(i, j, sum);
    }
}
template <typename Vec>
GRAFT_ALWAYS_INLINE void gemv_rows(const GemmProblem& p, int64_t n0, int64_t n1) {
  switch (p.M) {
    case 2:
      return gemv_rows_fixed<Vec, 2>(p, n0, n1);
    case 3:
      return gemv_rows_fixed<Vec, 3>(p, n0, n1);
    default:
      return gemv_rows_fixed<Vec, 4>(p, n0, n1);
  }
}

/// C[:, 0] = alpha * op(A) * op(B)[:, 0] + beta * C[:, 0] (N == 1): a dot
/// product per row when op(A) rows are contiguous, else accumulated columns.
template <typename Vec>
GRAFT_ALWAYS_INLINE void gemv_column(const GemmProblem& p, int64_t m0, int64_t m1) {
  constexpr int W = static_cast<int>(sizeof(Vec) / sizeof(float));
  const int64_t b_stride = p.trans_b ? 1 : p.ldb;
  for (int64_t i = m0; i < m1; ++i) {
    float sum = 0.0f;
    if (!p.trans_a && b_stride == 1) {
      const float* row = p.A + i * p.lda;
      Vec vsum{};
      int64_t k = 0;
      for (; k + W <= p.K; k += W) {
        Vec av, bv;
        std::memcpy(&av, row + k, sizeof(Vec));
        std::memcpy(&bv, p.B + k, sizeof(Vec));
        vsum += av * bv;
      }
      for (int l = 0; l < W; ++l) sum += vsum[l];
      for (; k < p.K; ++k) sum += row[k] * p.B[k];
    } else {
      for (int64_t k = 0; k < p.K; ++k) {
        float a = p.trans_a ? p.A[k * p.lda + i] : p.A[i * p.lda + k];
        sum += a * p.B[k * b_stride];
      }
    }
    float* c = p.C + i * p.ldc;
    *c = p.alpha * sum + (p.beta != 0.0f ? p.beta * *c : 0.0f);
  }
}

/// One entry point per instruction set: the block sizes, the vector type and
/// the register tile of that set.
struct KernelSet {
  const char* name;
  void (*rectangle)(const GemmProblem&, int64_t, int64_t, int64_t, int64_t);
  void (*gemv_row)(const GemmProblem&, int64_t, int64_t);
  void (*gemv_column)(const GemmProblem&, int64_t, int64_t);
  void (*gemv_rows)(const GemmProblem&, int64_t, int64_t);
  int mr, nr;
};

// Baseline: SSE2 on x86-64, the native vector unit elsewhere. 6 x 8 tile of
// 4-float vectors: 12 accumulators + 2 B vectors + 1 broadcast fit 16 registers.
void rectangle_base(const GemmProblem& p, int64_t m0, int64_t m1, int64_t n0, int64_t n1) {
  gemm_rectangle<Float4, 6, 8, 96>(p, m0, m1, n0, n1);
}
void gemv_row_base(const GemmProblem& p, int64_t n0, int64_t n1) { gemv_row<Float4>(p, n0, n1); }
void gemv_column_base(const GemmProblem& p, int64_t m0, int64_t m1) { gemv_column<Float4>(p, m0, m1); }
void gemv_rows_base(const GemmProblem& p, int64_t n0, int64_t n1) { gemv_rows<Float4>(p, n0, n1); }

#ifdef GRAFT_GEMM_X86_DISPATCH
// AVX2 + FMA: 6 x 16 tile of 8-float vectors (12 accumulators of 16 registers).
__attribute__((target("avx2,fma"))) void rectangle_avx2(const GemmProblem& p, int64_t m0, int64_t m1, int64_t n0,
                                                        int64_t n1) {
  gemm_rectangle<Float8, 6, 16, 144>(p, m0, m1, n0, n1);
}
__attribute__((target("avx2,fma"))) void gemv_row_avx2(const GemmProblem& p, int64_t n0, int64_t n1) {
  gemv_row<Float8>(p, n0, n1);
}
__attribute__((target("avx2,fma"))) void gemv_column_avx2(const GemmProblem& p, int64_t m0, int64_t m1) {
  gemv_column<Float8>(p, m0, m1);
}
__attribute__((target("avx2,fma"))) void gemv_rows_avx2(const GemmProblem& p, int64_t n0, int64_t n1) {
  gemv_rows<Float8>(p, n0, n1);
}
// AVX-512: 8 x 32 tile of 16-float vectors (16 accumulators of 32 registers).
__attribute__((target("avx512f,avx2,fma"))) void rectangle_avx512(const GemmProblem& p, int64_t m0, int64_t m1,
                                                                  int64_t n0, int64_t n1) {
  gemm_rectangle<Float16, 8, 32, 192>(p, m0, m1, n0, n1);
}
__attribute__((target("avx512f,avx2,fma"))) void gemv_row_avx512(const GemmProblem& p, int64_t n0, int64_t n1) {
  gemv_row<Float16>(p, n0, n1);
}
__attribute__((target("avx512f,avx2,fma"))) void gemv_column_avx512(const GemmProblem& p, int64_t m0, int64_t m1) {
  gemv_column<Float16>(p, m0, m1);
}
__attribute__((target("avx512f,avx2,fma"))) void gemv_rows_avx512(const GemmProblem& p, int64_t n0, int64_t n1) {
  gemv_rows<Float16>(p, n0, n1);
}
#endif

/// The kernel sets this CPU can run, widest first.
const std::vector<KernelSet>& available_kernel_sets() {
  static const std::vector<KernelSet> sets = [] {
    std::vector<KernelSet> found;
#ifdef GRAFT_GEMM_X86_DISPATCH
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f"))
      found.push_back({"avx512", rectangle_avx512, gemv_row_avx512, gemv_column_avx512, gemv_rows_avx512, 8, 32});
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
      found.push_back({"avx2", rectangle_avx2, gemv_row_avx2, gemv_column_avx2, gemv_rows_avx2, 6, 16});
#endif
    found.push_back({"baseline", rectangle_base, gemv_row_base, gemv_column_base, gemv_rows_base, 6, 8});
    return found;
  }();
  return sets;
}

/// C = beta * C over M x N (the whole product when K == 0 or alpha == 0).
template <typename T>
void scale_output(int64_t M, int64_t N, T beta, T* C, int64_t ldc) {
  for (int64_t i = 0; i < M; ++i) {
    T* row = C + i * ldc;
    if (beta == T(0))
      std::fill(row, row + N, T(0));
    else if (beta != T(1))
      for (int64_t j = 0; j < N; ++j) row[j] *= beta;
  }
}

/// Validates sizes and leading dimensions (shared by both precisions).
void check_arguments(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, int64_t lda, int64_t ldb,
                     int64_t ldc) {
  GRAFT_CHECK(M >= 0 && N >= 0 && K >= 0, "gemm: negative size M=", M, " N=", N, " K=", K);
  GRAFT_CHECK(lda >= std::max<int64_t>(1, trans_a ? M : K), "gemm: lda=", lda, " too small");
  GRAFT_CHECK(ldb >= std::max<int64_t>(1, trans_b ? K : N), "gemm: ldb=", ldb, " too small");
  GRAFT_CHECK(ldc >= std::max<int64_t>(1, N), "gemm: ldc=", ldc, " too small");
}

/// Splits `threads` into a tm x tn grid over the output, minimizing the
/// micro-tiles of the largest rectangle, then its perimeter (packing cost).
void choose_grid(int64_t M, int64_t N, int mr, int nr, int threads, int& tm, int& tn) {
  const int64_t m_tiles = (M + mr - 1) / mr, n_tiles = (N + nr - 1) / nr;
  int64_t best_work = -1, best_perimeter = 0;
  tm = tn = 1;
  for (int a = 1; a <= threads; ++a) {
    if (threads % a != 0) continue;
    const int b = threads / a;
    if (a > m_tiles || b > n_tiles) continue;
    const int64_t rows = (m_tiles + a - 1) / a, cols = (n_tiles + b - 1) / b;
    const int64_t work = rows * cols;
    const int64_t perimeter = rows * mr + cols * nr;
    if (best_work < 0 || work < best_work || (work == best_work && perimeter < best_perimeter)) {
      best_work = work;
      best_perimeter = perimeter;
      tm = a;
      tn = b;
    }
  }
}

/// gemm_f32 on the given kernel set.
void gemm_f32_on(const KernelSet& kernels, bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
                 const float* A, int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  check_arguments(trans_a, trans_b, M, N, K, lda, ldb, ldc);
  if (M == 0 || N == 0) return;
  if (K == 0 || alpha == 0.0f) {
    scale_output(M, N, beta, C, ldc);
    return;
  }
  const GemmProblem p{trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc};
  // Below ~32^3 multiply-adds per thread the threads cost more than they save.
  const double flops = static_cast<double>(M) * static_cast<double>(N) * static_cast<double>(K);
  int threads = static_cast<int>(std::min<double>(current_num_threads(), std::max(1.0, flops / 32768.0)));

  if (M == 1) {
    parallel_for(N, std::max<int64_t>(64, (N + threads - 1) / threads),
                 [&](int64_t b, int64_t e) { kernels.gemv_row(p, b, e); });
    return;
  }
  if (N == 1) {
    parallel_for(M, std::max<int64_t>(16, (M + threads - 1) / threads),
                 [&](int64_t b, int64_t e) { kernels.gemv_column(p, b, e); });
    return;
  }
  if (M <= kSmallRows && !trans_b) {
    parallel_for(N, std::max<int64_t>(32, (N + threads - 1) / threads),
                 [&](int64_t b, int64_t e) { kernels.gemv_rows(p, b, e); });
    return;
  }
  int tm = 1, tn = 1;
  choose_grid(M, N, kernels.mr, kernels.nr, threads, tm, tn);
  const int64_t m_tiles = (M + kernels.mr - 1) / kernels.mr, n_tiles = (N + kernels.nr - 1) / kernels.nr;
  auto run_rectangle = [&](int64_t index) {
    const int64_t bi = index / tn, bj = index % tn;
    const int64_t m0 = std::min(M, m_tiles * bi / tm * kernels.mr),
                  m1 = std::min(M, m_tiles * (bi + 1) / tm * kernels.mr);
    const int64_t n0 = std::min(N, n_tiles * bj / tn * kernels.nr),
                  n1 = std::min(N, n_tiles * (bj + 1) / tn * kernels.nr);
    if (m0 < m1 && n0 < n1) kernels.rectangle(p, m0, m1, n0, n1);
  };
  if (tm * tn == 1) {
    run_rectangle(0);
    return;
  }
  parallel_for(tm * tn, 1, [&](int64_t b, int64_t e) {
    for (int64_t index = b; index < e; ++index) {
      check_kernel_interrupt();
      run_rectangle(index);
    }
  });
}

}  // namespace

void gemm_f32(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
              const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  gemm_f32_on(available_kernel_sets().front(), trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

namespace detail {

std::vector<std::string> gemm_f32_instruction_sets() {
  std::vector<std::string> names;
  for (const KernelSet& set : available_kernel_sets()) names.push_back(set.name);
  return names;
}

void gemm_f32_with(const std::string& instruction_set, bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K,
                   float alpha, const float* A, int64_t lda, const float* B, int64_t ldb, float beta, float* C,
                   int64_t ldc) {
  for (const KernelSet& set : available_kernel_sets())
    if (instruction_set == set.name)
      return gemm_f32_on(set, trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  fail(ErrorKind::invalid_argument, "gemm: instruction set '", instruction_set, "' is not available on this CPU");
}

}  // namespace detail

void gemm_f64(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, double alpha, const double* A, int64_t lda,
              const double* B, int64_t ldb, double beta, double* C, int64_t ldc) {
  check_arguments(trans_a, trans_b, M, N, K, lda, ldb, ldc);
  if (M == 0 || N == 0) return;
  if (K == 0 || alpha == 0.0) {
    scale_output(M, N, beta, C, ldc);
    return;
  }
  // Row-parallel i-k-j loop: the inner loop runs along contiguous rows of B
  // and C when B is not transposed; a transposed B is copied once so that it is.
  std::vector<double> b_copy;
  const double* b_rows = B;
  int64_t ld_rows = ldb;
  if (trans_b) {
    b_copy.resize(static_cast<size_t>(K * N));
    for (int64_t j = 0; j < N; ++j)
      for (int64_t k = 0; k < K; ++k) b_copy[static_cast<size_t>(k * N + j)] = B[j * ldb + k];
    b_rows = b_copy.data();
    ld_rows = N;
  }
  const double work_per_row = static_cast<double>(N) * static_cast<double>(K);
  const int64_t grain = std::max<int64_t>(1, static_cast<int64_t>(32768.0 / std::max(1.0, work_per_row)));
  parallel_for(M, grain, [&](int64_t begin, int64_t end) {
    std::vector<double> acc(static_cast<size_t>(N));
    for (int64_t i = begin; i < end; ++i) {
      check_kernel_interrupt();
      std::fill(acc.begin(), acc.end(), 0.0);
      for (int64_t k = 0; k < K; ++k) {
        const double a = trans_a ? A[k * lda + i] : A[i * lda + k];
        const double* row = b_rows + k * ld_rows;
        for (int64_t j = 0; j < N; ++j) acc[static_cast<size_t>(j)] += a * row[j];
      }
      double* c = C + i * ldc;
      for (int64_t j = 0; j < N; ++j) c[j] = alpha * acc[static_cast<size_t>(j)] + (beta != 0.0 ? beta * c[j] : 0.0);
    }
  });
}

}  // namespace graft::ops
