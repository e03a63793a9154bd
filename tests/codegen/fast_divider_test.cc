// FastDivider, the division by multiplication that CUDA kernels use to turn
// flat indices into coordinates: exact against the hardware's division over
// every divisor up to 2^12 with the dividends where errors would show (near
// multiples of the divisor, near 2^31), every power of two and its
// neighbours, and random pairs over the whole range.
#include "graft/codegen/fast_divider.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "graft/core/error.h"

using graft::codegen::FastDivider;

namespace {

constexpr uint32_t kMax = FastDivider::kMaxDividend;

/// Dividends around multiples of `d` (where a wrong magic number first shows
/// as an off-by-one), at the start of the range and at its end.
std::vector<uint32_t> telling_dividends(uint32_t d) {
  std::vector<uint32_t> out;
  for (uint64_t q : {uint64_t{0}, uint64_t{1}, uint64_t{2}, uint64_t{3}, uint64_t{kMax} / d - 1, uint64_t{kMax} / d}) {
    uint64_t m = q * d;
    for (int delta = -2; delta <= 2; ++delta) {
      int64_t n = static_cast<int64_t>(m) + delta;
      if (n >= 0 && n <= kMax) out.push_back(static_cast<uint32_t>(n));
    }
  }
  for (uint32_t n = kMax - 3; n <= kMax && n >= kMax - 3; ++n) out.push_back(n);
  return out;
}

}  // namespace

TEST(FastDivider, SmallDivisorsAreExactWhereErrorsWouldShow) {
  for (uint32_t d = 1; d <= 4096; ++d) {
    FastDivider divider = FastDivider::of(d);
    for (uint32_t n : telling_dividends(d)) ASSERT_EQ(divider.divide(n), n / d) << n << " / " << d;
    // Every dividend below a few multiples, exhaustively.
    for (uint32_t n = 0; n < 4 * d + 3; ++n) ASSERT_EQ(divider.divide(n), n / d) << n << " / " << d;
  }
}

TEST(FastDivider, PowersOfTwoAndTheirNeighboursAreExact) {
  for (uint32_t shift = 0; shift <= 31; ++shift) {
    uint64_t p = uint64_t{1} << shift;
    for (int64_t delta : {-1, 0, 1}) {
      int64_t d = static_cast<int64_t>(p) + delta;
      if (d < 1 || d > int64_t{kMax} + 1) continue;
      FastDivider divider = FastDivider::of(static_cast<uint64_t>(d));
      for (uint32_t n : telling_dividends(static_cast<uint32_t>(std::min<int64_t>(d, kMax))))
        ASSERT_EQ(divider.divide(n), n / static_cast<uint64_t>(d)) << n << " / " << d;
    }
  }
}

TEST(FastDivider, RandomPairsOverTheWholeRangeAreExact) {
  std::mt19937_64 rng(7);
  for (int i = 0; i < 2'000'000; ++i) {
    // Divisors spread over every magnitude: a random bit length, then a value.
    uint32_t bits = 1 + static_cast<uint32_t>(rng() % 31);
    uint32_t d = 1 + static_cast<uint32_t>(rng() % (uint64_t{1} << bits));
    uint32_t n = static_cast<uint32_t>(rng() % (uint64_t{kMax} + 1));
    ASSERT_EQ(FastDivider::of(d).divide(n), n / d) << n << " / " << d;
  }
}

TEST(FastDivider, RefusesDivisorsOutsideItsRange) {
  EXPECT_THROW(FastDivider::of(0), graft::Error);
  EXPECT_THROW(FastDivider::of(uint64_t{kMax} + 2), graft::Error);
  EXPECT_NO_THROW(FastDivider::of(uint64_t{kMax} + 1));
}
