/// \file
/// Division by a run-time constant as a multiply-high, an add and a shift
/// (Granlund and Montgomery, "Division by invariant integers using
/// multiplication", 1994): what GPU kernels use to turn a flat element index
/// into coordinates, since an integer division is a long instruction sequence
/// on a GPU (a 64-bit one, some 70 instructions). The host computes the magic
/// number and shift once per launch; the generated kernels repeat
/// FastDivider::divide in their own language.
#pragma once

#include <cstdint>

#include "graft/core/error.h"

namespace graft::codegen {

/// Divides unsigned 32-bit dividends below 2^31 by a fixed divisor in
/// [1, 2^31]: q = (mulhi(n, magic) + n) >> shift, exact for every such n.
struct FastDivider {
  /// The largest dividend (and divisor) the identity holds for.
  static constexpr uint32_t kMaxDividend = 0x7fffffffu;

  uint32_t magic = 1;
  uint32_t shift = 0;

  /// The multiplier and shift of `divisor` (throws internal outside [1, 2^31]).
  static FastDivider of(uint64_t divisor) {
    GRAFT_CHECK(divisor >= 1 && divisor <= uint64_t{kMaxDividend} + 1, "FastDivider: divisor ", divisor,
                " outside [1, 2^31]");
    uint32_t shift = 0;
    while ((uint64_t{1} << shift) < divisor) ++shift;
    // 2^shift >= divisor > 2^(shift-1), so the quotient below is under 2^32.
    uint64_t magic = ((uint64_t{1} << 32) * ((uint64_t{1} << shift) - divisor)) / divisor + 1;
    return FastDivider{static_cast<uint32_t>(magic), shift};
  }

  /// n / divisor, for n <= kMaxDividend (the add cannot wrap: mulhi <= n).
  uint32_t divide(uint32_t n) const {
    uint32_t high = static_cast<uint32_t>((uint64_t{n} * magic) >> 32);
    return (high + n) >> shift;
  }
};

}  // namespace graft::codegen
