// Boolean logic: And, Or, Xor (broadcast) and Not.
#include "elementwise_kernels.h"
#include "graft/ops/pointwise_expression.h"

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

// Pointwise expressions (graft/ops/pointwise_expression.h).

using ir::ExprOp;

constexpr PointwiseExpression kAndExpression{PointwiseInputs::boolean, binary_expression<ExprOp::logical_and>,
                                             no_legacy_broadcast};
constexpr PointwiseExpression kOrExpression{PointwiseInputs::boolean, binary_expression<ExprOp::logical_or>,
                                            no_legacy_broadcast};
constexpr PointwiseExpression kXorExpression{PointwiseInputs::boolean, binary_expression<ExprOp::logical_xor>,
                                             no_legacy_broadcast};
constexpr PointwiseExpression kNotExpression{PointwiseInputs::boolean, unary_expression<ExprOp::logical_not>};

}  // namespace

GRAFT_REGISTER_OP("", "And", infer_broadcast_same_dtype<kBool>, (binary_kernel<kBool, AndOp>));
GRAFT_REGISTER_OP("", "Or", infer_broadcast_same_dtype<kBool>, (binary_kernel<kBool, OrOp>));
GRAFT_REGISTER_OP("", "Xor", infer_broadcast_same_dtype<kBool>, (binary_kernel<kBool, XorOp>));
GRAFT_REGISTER_OP("", "Not", infer_unary<kBool>, (unary_kernel<kBool, NotOp>));

GRAFT_REGISTER_POINTWISE(And, kAndExpression);
GRAFT_REGISTER_POINTWISE(Or, kOrExpression);
GRAFT_REGISTER_POINTWISE(Xor, kXorExpression);
GRAFT_REGISTER_POINTWISE(Not, kNotExpression);

}  // namespace graft::ops
