// Equal, Greater, GreaterOrEqual, Less, LessOrEqual: broadcast comparisons of
// two inputs of one dtype, with a bool output. Comparisons with NaN are false
// (IEEE), float16 and bfloat16 compare as float.
#include "elementwise_kernels.h"
#include "graft/ops/pointwise_expression.h"

namespace graft::ops {
namespace {

using namespace elementwise;

#define GRAFT_COMPARISON(name, expression) \
  struct name {                            \
    explicit name(const KernelContext&) {} \
    template <typename C>                  \
    bool operator()(C a, C b) const {      \
      return expression;                   \
    }                                      \
  }

GRAFT_COMPARISON(EqualOp, a == b);
GRAFT_COMPARISON(GreaterOp, a > b);
GRAFT_COMPARISON(GreaterOrEqualOp, a >= b);
GRAFT_COMPARISON(LessOp, a < b);
GRAFT_COMPARISON(LessOrEqualOp, a <= b);

#undef GRAFT_COMPARISON

constexpr DTypeSet kAll = DTypeSet::numeric_or_bool;

// Pointwise expressions (graft/ops/pointwise_expression.h).

using ir::ExprOp;

constexpr PointwiseExpression kEqualExpression{PointwiseInputs::any, comparison_expression<ExprOp::equal>,
                                               no_legacy_broadcast};
constexpr PointwiseExpression kLessExpression{PointwiseInputs::numeric, comparison_expression<ExprOp::less>,
                                              no_legacy_broadcast};
constexpr PointwiseExpression kLessOrEqualExpression{PointwiseInputs::numeric,
                                                     comparison_expression<ExprOp::less_equal>, no_legacy_broadcast};
constexpr PointwiseExpression kGreaterExpression{PointwiseInputs::numeric, comparison_expression<ExprOp::greater>,
                                                 no_legacy_broadcast};
constexpr PointwiseExpression kGreaterOrEqualExpression{
    PointwiseInputs::numeric, comparison_expression<ExprOp::greater_equal>, no_legacy_broadcast};

}  // namespace

GRAFT_REGISTER_OP("", "Equal", infer_broadcast_same_dtype_to_bool<kAll>, (binary_kernel<kAll, EqualOp, true>));
GRAFT_REGISTER_OP("", "Greater", infer_broadcast_same_dtype_to_bool<kNumeric>,
                  (binary_kernel<kNumeric, GreaterOp, true>));
GRAFT_REGISTER_OP("", "GreaterOrEqual", infer_broadcast_same_dtype_to_bool<kNumeric>,
                  (binary_kernel<kNumeric, GreaterOrEqualOp, true>));
GRAFT_REGISTER_OP("", "Less", infer_broadcast_same_dtype_to_bool<kNumeric>, (binary_kernel<kNumeric, LessOp, true>));
GRAFT_REGISTER_OP("", "LessOrEqual", infer_broadcast_same_dtype_to_bool<kNumeric>,
                  (binary_kernel<kNumeric, LessOrEqualOp, true>));

GRAFT_REGISTER_POINTWISE(Equal, kEqualExpression);
GRAFT_REGISTER_POINTWISE(Less, kLessExpression);
GRAFT_REGISTER_POINTWISE(LessOrEqual, kLessOrEqualExpression);
GRAFT_REGISTER_POINTWISE(Greater, kGreaterExpression);
GRAFT_REGISTER_POINTWISE(GreaterOrEqual, kGreaterOrEqualExpression);

}  // namespace graft::ops
