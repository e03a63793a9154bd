// gemm_f32 / gemm_f64 against a naive triple loop over many random shapes,
// transposes, leading dimensions, alpha/beta and thread counts.
#include "graft/ops/gemm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <tuple>
#include <vector>

#include "../src/ops/gemm_internal.h"
#include "graft/core/error.h"
#include "graft/core/parallel.h"

using namespace graft;

namespace {

struct Case {
  bool trans_a, trans_b;
  int64_t M, N, K, lda, ldb, ldc;
  double alpha, beta;
};

Case random_case(std::mt19937& rng) {
  auto pick = [&] {
    int r = static_cast<int>(rng() % 10);
    if (r < 2) return static_cast<int64_t>(1 + rng() % 3);
    if (r < 8) return static_cast<int64_t>(1 + rng() % 70);
    return static_cast<int64_t>(1 + rng() % 300);
  };
  Case c;
  c.trans_a = rng() & 1;
  c.trans_b = rng() & 1;
  c.M = pick();
  c.N = pick();
  c.K = rng() % 25 == 0 ? 0 : pick();
  c.lda = (c.trans_a ? c.M : c.K) + static_cast<int64_t>(rng() % 3);
  c.ldb = (c.trans_b ? c.K : c.N) + static_cast<int64_t>(rng() % 3);
  c.ldc = c.N + static_cast<int64_t>(rng() % 3);
  c.lda = std::max<int64_t>(c.lda, 1);
  c.ldb = std::max<int64_t>(c.ldb, 1);
  c.alpha = rng() % 4 == 0 ? 1.0 : static_cast<double>(rng() % 7) / 3.0 - 1.0;
  c.beta = rng() % 3 == 0 ? 0.0 : static_cast<double>(rng() % 5) / 2.0 - 1.0;
  return c;
}

/// Runs one case (float32 on `instruction_set`, or the public entry point when
/// empty) and compares with a naive triple loop in double.
template <typename T>
void check_case(const Case& c, std::mt19937& rng, double tolerance, const std::string& instruction_set = "") {
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  std::vector<T> A(static_cast<size_t>((c.trans_a ? c.K : c.M) * c.lda + 1));
  std::vector<T> B(static_cast<size_t>((c.trans_b ? c.N : c.K) * c.ldb + 1));
  std::vector<T> C(static_cast<size_t>(c.M * c.ldc));
  for (auto& x : A) x = static_cast<T>(dist(rng));
  for (auto& x : B) x = static_cast<T>(dist(rng));
  for (auto& x : C) x = static_cast<T>(dist(rng));
  std::vector<T> original = C;
  // beta == 0 must not read C: fill the matrix part with NaN.
  if (c.beta == 0.0)
    for (int64_t i = 0; i < c.M; ++i)
      for (int64_t j = 0; j < c.N; ++j) C[static_cast<size_t>(i * c.ldc + j)] = std::numeric_limits<T>::quiet_NaN();
  if constexpr (std::is_same_v<T, float>)
    if (!instruction_set.empty())
      ops::detail::gemm_f32_with(instruction_set, c.trans_a, c.trans_b, c.M, c.N, c.K, static_cast<float>(c.alpha),
                                 A.data(), c.lda, B.data(), c.ldb, static_cast<float>(c.beta), C.data(), c.ldc);
    else
      ops::gemm_f32(c.trans_a, c.trans_b, c.M, c.N, c.K, static_cast<float>(c.alpha), A.data(), c.lda, B.data(), c.ldb,
                    static_cast<float>(c.beta), C.data(), c.ldc);
  else
    ops::gemm_f64(c.trans_a, c.trans_b, c.M, c.N, c.K, c.alpha, A.data(), c.lda, B.data(), c.ldb, c.beta, C.data(),
                  c.ldc);
  for (int64_t i = 0; i < c.M; ++i) {
    for (int64_t j = 0; j < c.ldc; ++j) {
      const size_t at = static_cast<size_t>(i * c.ldc + j);
      if (j >= c.N) {
        ASSERT_EQ(C[at], original[at]) << "wrote past N at row " << i;
        continue;
      }
      double sum = 0.0;
      for (int64_t k = 0; k < c.K; ++k) {
        double a = c.trans_a ? A[static_cast<size_t>(k * c.lda + i)] : A[static_cast<size_t>(i * c.lda + k)];
        double b = c.trans_b ? B[static_cast<size_t>(j * c.ldb + k)] : B[static_cast<size_t>(k * c.ldb + j)];
        sum += a * b;
      }
      double want = c.alpha * sum + (c.beta != 0.0 ? c.beta * static_cast<double>(original[at]) : 0.0);
      ASSERT_NEAR(static_cast<double>(C[at]), want, tolerance * (1.0 + std::sqrt(static_cast<double>(c.K))))
          << "trans_a=" << c.trans_a << " trans_b=" << c.trans_b << " M=" << c.M << " N=" << c.N << " K=" << c.K
          << " lda=" << c.lda << " ldb=" << c.ldb << " ldc=" << c.ldc << " alpha=" << c.alpha << " beta=" << c.beta
          << " at (" << i << "," << j << ")";
    }
  }
}

}  // namespace

TEST(Gemm, F32MatchesNaiveOnRandomCases) {
  std::mt19937 rng(12345);
  for (int iteration = 0; iteration < 300; ++iteration) {
    Case c = random_case(rng);
    ScopedNumThreads threads(1 + static_cast<int>(rng() % 3));
    check_case<float>(c, rng, 2e-5);
    if (HasFatalFailure()) return;
  }
}

TEST(Gemm, F32EveryInstructionSetMatchesNaive) {
  const std::vector<std::string> sets = ops::detail::gemm_f32_instruction_sets();
  ASSERT_FALSE(sets.empty());
  EXPECT_EQ(sets.back(), "baseline");
  for (const std::string& set : sets) {
    SCOPED_TRACE(set);
    std::mt19937 rng(4242);
    for (int iteration = 0; iteration < 120; ++iteration) {
      Case c = random_case(rng);
      ScopedNumThreads threads(1 + static_cast<int>(rng() % 2));
      check_case<float>(c, rng, 2e-5, set);
      if (HasFatalFailure()) return;
    }
  }
  float a = 1, b = 1, c = 0;
  EXPECT_THROW(ops::detail::gemm_f32_with("no-such-set", false, false, 1, 1, 1, 1, &a, 1, &b, 1, 0, &c, 1), Error);
}

TEST(Gemm, F64MatchesNaiveOnRandomCases) {
  std::mt19937 rng(777);
  for (int iteration = 0; iteration < 150; ++iteration) {
    Case c = random_case(rng);
    ScopedNumThreads threads(1 + static_cast<int>(rng() % 2));
    check_case<double>(c, rng, 1e-12);
    if (HasFatalFailure()) return;
  }
}

TEST(Gemm, F32LargeBlockedShapesAndThreads) {
  // Shapes that cross the K block (256) and several micro-tiles, on 1 and 2 threads.
  std::mt19937 rng(99);
  for (int threads : {1, 2}) {
    ScopedNumThreads scoped(threads);
    for (auto [M, N, K] : {std::tuple<int64_t, int64_t, int64_t>{64, 300, 577}, {131, 67, 260}, {9, 1000, 33}}) {
      for (int t = 0; t < 4; ++t) {
        Case c{(t & 1) != 0, (t & 2) != 0, M, N, K, 0, 0, N, 0.5, t == 3 ? -1.0 : 0.0};
        c.lda = c.trans_a ? M : K;
        c.ldb = c.trans_b ? K : N;
        check_case<float>(c, rng, 2e-5);
        if (HasFatalFailure()) return;
      }
    }
  }
}

TEST(Gemm, ZeroSizesAndAlphaZero) {
  std::vector<float> C = {1, 2, 3, 4};
  ops::gemm_f32(false, false, 2, 2, 0, 1.0f, nullptr, 1, nullptr, 2, 0.5f, C.data(), 2);
  EXPECT_EQ(C, (std::vector<float>{0.5f, 1, 1.5f, 2}));
  std::vector<float> A = {std::numeric_limits<float>::quiet_NaN(), 1}, B = {1, 1, 1, 1};
  ops::gemm_f32(false, false, 1, 2, 2, 0.0f, A.data(), 2, B.data(), 2, 0.0f, C.data(), 2);
  EXPECT_EQ(C[0], 0.0f);
  EXPECT_EQ(C[1], 0.0f);
  EXPECT_THROW(ops::gemm_f32(false, false, 2, 2, 2, 1.0f, A.data(), 1, B.data(), 2, 0.0f, C.data(), 2), Error);
}

TEST(Gemm, F32FewRowsEveryLayoutAndInstructionSet) {
  // 2 to 4 rows take the unpacked path (a recurrent step's batch): every
  // transposition, column counts around the vector widths, padded strides.
  std::mt19937 rng(99);
  for (const std::string& set : ops::detail::gemm_f32_instruction_sets()) {
    SCOPED_TRACE(set);
    for (int64_t M = 2; M <= 4; ++M)
      for (int layout = 0; layout < 4; ++layout)
        for (int64_t N : {1, 7, 16, 33, 64, 130})
          for (int64_t K : {1, 5, 16, 47, 128}) {
            Case c;
            c.trans_a = layout & 1;
            c.trans_b = layout & 2;
            c.M = M;
            c.N = N;
            c.K = K;
            c.lda = (c.trans_a ? M : K) + static_cast<int64_t>(rng() % 3);
            c.ldb = (c.trans_b ? K : N) + static_cast<int64_t>(rng() % 3);
            c.ldc = N + static_cast<int64_t>(rng() % 3);
            c.alpha = rng() % 2 ? 1.0 : -0.5;
            c.beta = rng() % 2 ? 0.0 : 0.75;
            ScopedNumThreads threads(1 + static_cast<int>(rng() % 2));
            check_case<float>(c, rng, 2e-5, set);
            if (HasFatalFailure()) return;
          }
  }
}
