// Boolean logic: And, Or, Xor (broadcast) and Not.
#include "elementwise_kernels.h"

namespace graft::ops {
namespace {

using namespace elementwise;

struct AndOp {
  explicit AndOp(const KernelContext&) {}
  bool operator()(bool a, bool b) const { return a && b; }
};
struct OrOp {
  explicit OrOp(const KernelContext&) {}
  bool operator()(bool a, bool b) const { return a || b; }
};
struct XorOp {
  explicit XorOp(const KernelContext&) {}
  bool operator()(bool a, bool b) const { return a != b; }
};
struct NotOp {
  static constexpr int64_t grain = kCheapGrain;
  explicit NotOp(const KernelContext&) {}
  bool operator()(bool a) const { return !a; }
};

constexpr DTypeSet kBool = DTypeSet::boolean;

}  // namespace

GRAFT_REGISTER_OP("", "And", infer_broadcast_same_dtype<kBool>, (binary_kernel<kBool, AndOp>));
GRAFT_REGISTER_OP("", "Or", infer_broadcast_same_dtype<kBool>, (binary_kernel<kBool, OrOp>));
GRAFT_REGISTER_OP("", "Xor", infer_broadcast_same_dtype<kBool>, (binary_kernel<kBool, XorOp>));
GRAFT_REGISTER_OP("", "Not", infer_unary<kBool>, (unary_kernel<kBool, NotOp>));

}  // namespace graft::ops
