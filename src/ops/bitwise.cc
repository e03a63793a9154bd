// Bitwise ops on integers: BitwiseAnd, BitwiseOr, BitwiseXor, BitwiseNot, and
// BitShift (unsigned integers, attribute direction = "LEFT" | "RIGHT"). A shift
// by the bit width or more gives 0 (C++ leaves it undefined).
#include "elementwise_kernels.h"

namespace graft::ops {
namespace {

using namespace elementwise;

struct BitwiseAndOp {
  explicit BitwiseAndOp(const KernelContext&) {}
  template <typename C>
  C operator()(C a, C b) const {
    return static_cast<C>(a & b);
  }
};
struct BitwiseOrOp {
  explicit BitwiseOrOp(const KernelContext&) {}
  template <typename C>
  C operator()(C a, C b) const {
    return static_cast<C>(a | b);
  }
};
struct BitwiseXorOp {
  explicit BitwiseXorOp(const KernelContext&) {}
  template <typename C>
  C operator()(C a, C b) const {
    return static_cast<C>(a ^ b);
  }
};
struct BitwiseNotOp {
  static constexpr int64_t grain = kCheapGrain;
  explicit BitwiseNotOp(const KernelContext&) {}
  template <typename C>
  C operator()(C a) const {
    return static_cast<C>(~a);
  }
};

/// Whether `direction` names a left shift; fails on anything but LEFT/RIGHT.
template <typename Context>
bool shifts_left(const Context& ctx) {
  if (!ctx.attrs().has("direction")) ctx.fail("attribute 'direction' is required");
  const std::string& direction = ctx.attrs().get_string("direction");
  if (direction != "LEFT" && direction != "RIGHT")
    ctx.fail("attribute 'direction' must be \"LEFT\" or \"RIGHT\", got \"", direction, "\"");
  return direction == "LEFT";
}

void infer_bit_shift(InferContext& ctx) {
  shifts_left(ctx);
  infer_broadcast_same_dtype<DTypeSet::unsigned_integer>(ctx);
}

struct BitShiftOp {
  bool left;
  explicit BitShiftOp(const KernelContext& ctx) : left(shifts_left(ctx)) {}
  template <typename C>
  C operator()(C value, C amount) const {
    constexpr unsigned bits = sizeof(C) * 8;
    if (amount >= bits) return 0;
    using W = wrapping_t<C>;
    return left ? static_cast<C>(static_cast<W>(value) << amount) : static_cast<C>(value >> amount);
  }
};

constexpr DTypeSet kInteger = DTypeSet::integer;

}  // namespace

GRAFT_REGISTER_OP("", "BitwiseAnd", infer_broadcast_same_dtype<kInteger>, (binary_kernel<kInteger, BitwiseAndOp>));
GRAFT_REGISTER_OP("", "BitwiseOr", infer_broadcast_same_dtype<kInteger>, (binary_kernel<kInteger, BitwiseOrOp>));
GRAFT_REGISTER_OP("", "BitwiseXor", infer_broadcast_same_dtype<kInteger>, (binary_kernel<kInteger, BitwiseXorOp>));
GRAFT_REGISTER_OP("", "BitwiseNot", infer_unary<kInteger>, (unary_kernel<kInteger, BitwiseNotOp>));
GRAFT_REGISTER_OP("", "BitShift", infer_bit_shift,
                  (binary_kernel<DTypeSet::unsigned_integer, BitShiftOp>));

}  // namespace graft::ops
