// Equal, Greater, GreaterOrEqual, Less, LessOrEqual: broadcast comparisons of
// two inputs of one dtype, with a bool output. Comparisons with NaN are false
// (IEEE), float16 and bfloat16 compare as float.
#include "elementwise_kernels.h"

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

constexpr DTypeSet kNumeric = DTypeSet::numeric;
constexpr DTypeSet kAll = DTypeSet::numeric_or_bool;

}  // namespace

GRAFT_REGISTER_OP("", "Equal", infer_broadcast_same_dtype_to_bool<kAll>, (binary_kernel<kAll, EqualOp, true>));
GRAFT_REGISTER_OP("", "Greater", infer_broadcast_same_dtype_to_bool<kNumeric>,
                  (binary_kernel<kNumeric, GreaterOp, true>));
GRAFT_REGISTER_OP("", "GreaterOrEqual", infer_broadcast_same_dtype_to_bool<kNumeric>,
                  (binary_kernel<kNumeric, GreaterOrEqualOp, true>));
GRAFT_REGISTER_OP("", "Less", infer_broadcast_same_dtype_to_bool<kNumeric>, (binary_kernel<kNumeric, LessOp, true>));
GRAFT_REGISTER_OP("", "LessOrEqual", infer_broadcast_same_dtype_to_bool<kNumeric>,
                  (binary_kernel<kNumeric, LessOrEqualOp, true>));

}  // namespace graft::ops
