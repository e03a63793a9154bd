/// \file
/// Single-precision matrix multiply shared by MatMul, Gemm, Conv and the
/// recurrent ops: C = alpha * op(A) * op(B) + beta * C, row-major, with
/// leading dimensions. Blocked for the cache and parallel over the intra-op
/// threads.
#pragma once

#include <cstdint>

namespace graft::ops {

/// op(A) is M x K (A is K x M when trans_a), op(B) is K x N (B is N x K when
/// trans_b), C is M x N. beta == 0 overwrites C without reading it.
void gemm_f32(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
              const float* B, int64_t ldb, float beta, float* C, int64_t ldc);

/// Same for double (reference quality, used by float64 models and tests).
void gemm_f64(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, double alpha, const double* A,
              int64_t lda, const double* B, int64_t ldb, double beta, double* C, int64_t ldc);

}  // namespace graft::ops
