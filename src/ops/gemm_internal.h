/// \file
/// gemm_f32 on a chosen instruction set, for tests and benchmarks (private to
/// graft: the public entry point picks the widest set the CPU supports).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace graft::ops::detail {

/// Names of the gemm_f32 kernel sets this CPU can run, widest first
/// ("avx512", "avx2", "baseline").
std::vector<std::string> gemm_f32_instruction_sets();

/// gemm_f32 forced onto one of those sets; throws invalid_argument for a set
/// the CPU cannot run.
void gemm_f32_with(const std::string& instruction_set, bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K,
                   float alpha, const float* A, int64_t lda, const float* B, int64_t ldb, float beta, float* C,
                   int64_t ldc);

}  // namespace graft::ops::detail
