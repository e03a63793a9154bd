// Identity: the output is the input value itself (a tensor, sharing its
// storage, or a sequence).
#include "graft/ops/gradient.h"
#include "graft/ops/infer_util.h"
#include "graft/ops/pointwise_expression.h"

namespace graft::ops {
namespace {

void identity_kernel(KernelContext& ctx) { ctx.set_output(0, ctx.input_value(0)); }

// The pointwise expression (graft/ops/pointwise_expression.h): the value itself.
int32_t identity_expression(PointwiseLowering& l) { return l.arg(0); }

constexpr PointwiseExpression kIdentityExpression{PointwiseInputs::any, identity_expression};

}  // namespace

GRAFT_REGISTER_OP("", "Identity", infer_same_as_input, identity_kernel);

GRAFT_REGISTER_POINTWISE(Identity, kIdentityExpression);

// Gradient builder (graft/ops/gradient.h).
namespace {

void identity_gradient(GradientContext& g) { g.set_input_gradient(0, g.output_gradient(0)); }

}  // namespace

GRAFT_REGISTER_GRADIENT(Identity, identity_gradient);

}  // namespace graft::ops
