// graft::float16_t's conversions against an oracle that shares nothing with
// them: float16 values decoded from their fields with std::ldexp, and float32
// values rounded by searching the sorted float16 values for the nearest one
// (ties to the even bit pattern, beyond the largest finite value by IEEE's
// rule: from 65520 on, infinity).
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <random>
#include <vector>

#include "graft/core/dtype.h"

namespace graft {
namespace {

double decode(uint16_t bits) {
  const int exponent = (bits >> 10) & 0x1f, mantissa = bits & 0x3ff;
  const double sign = (bits & 0x8000) ? -1.0 : 1.0;
  if (exponent == 0x1f) return mantissa ? NAN : sign * INFINITY;
  if (exponent == 0) return sign * std::ldexp(mantissa, -24);
  return sign * std::ldexp(1024 + mantissa, exponent - 25);
}

/// The non-negative finite float16 values, ascending, with their bits.
const std::vector<std::pair<double, uint16_t>>& positive_values() {
  static const std::vector<std::pair<double, uint16_t>> values = [] {
    std::vector<std::pair<double, uint16_t>> v;
    for (uint32_t bits = 0; bits < 0x7c00; ++bits) v.emplace_back(decode(static_cast<uint16_t>(bits)), bits);
    return v;
  }();
  return values;
}

uint16_t oracle_round(float f) {
  const double x = std::abs(static_cast<double>(f));
  const uint16_t sign = std::signbit(f) ? 0x8000 : 0;
  if (x >= 65520.0) return sign | 0x7c00;
  if (x >= 65504.0) return sign | 0x7bff;  // the largest finite value, nearest below 65520
  const auto& values = positive_values();
  auto above = std::lower_bound(values.begin(), values.end(), std::make_pair(x, uint16_t{0}));
  if (above->first == x) return sign | above->second;
  auto below = above - 1;
  const double up = above->first - x, down = x - below->first;
  if (up < down) return sign | above->second;
  if (down < up) return sign | below->second;
  return sign | ((below->second & 1) ? above->second : below->second);
}

TEST(Float16, DecodesEveryValueExactly) {
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    float16_t h;
    h.bits = static_cast<uint16_t>(bits);
    const double want = decode(h.bits);
    const float got = static_cast<float>(h);
    if (std::isnan(want)) {
      ASSERT_TRUE(std::isnan(got)) << bits;
    } else {
      ASSERT_EQ(static_cast<double>(got), want) << bits;
      ASSERT_EQ(std::signbit(got), (bits & 0x8000) != 0) << bits;
    }
  }
}

TEST(Float16, RoundsToNearestEven) {
  std::vector<float> probes;
  for (uint32_t bits = 0; bits < 0x7c00; ++bits) {
    const float v = static_cast<float>(decode(static_cast<uint16_t>(bits)));
    const float next = static_cast<float>(decode(static_cast<uint16_t>(bits + 1)));
    const float half = static_cast<float>((static_cast<double>(v) + next) / 2);  // exact in float32
    for (float p : {v, std::nextafter(v, INFINITY), std::nextafter(v, 0.0f), half, std::nextafter(half, INFINITY),
                    std::nextafter(half, 0.0f)})
      probes.insert(probes.end(), {p, -p});
  }
  std::mt19937 rng(7);
  for (int i = 0; i < 200000; ++i) {
    const float f = std::bit_cast<float>(static_cast<uint32_t>(rng()));
    if (!std::isnan(f)) probes.push_back(f);
  }
  for (float f : {65504.0f, 65519.99f, 65520.0f, 1e30f, INFINITY, -INFINITY, 1e-45f, 2.9802322e-08f})
    probes.push_back(f);
  for (float f : probes) ASSERT_EQ(float16_t(f).bits, oracle_round(f)) << std::hexfloat << f;
}

TEST(Float16, NaNStaysNaNWithItsSignAndTopPayload) {
  for (uint32_t bits : {0x7fc00000u, 0xffc00000u, 0x7f800001u, 0x7fffffffu, 0x7fa5a000u}) {
    const float16_t h(std::bit_cast<float>(bits));
    EXPECT_EQ(h.bits & 0x7c00, 0x7c00) << std::hex << bits;
    EXPECT_NE(h.bits & 0x3ff, 0) << std::hex << bits;
    EXPECT_EQ(h.bits & 0x8000, (bits >> 16) & 0x8000) << std::hex << bits;
    EXPECT_EQ(h.bits & 0x1ff, (bits >> 13) & 0x1ff) << std::hex << bits;
  }
}

}  // namespace
}  // namespace graft
