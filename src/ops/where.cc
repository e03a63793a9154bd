// Where: out = condition ? X : Y, the three inputs broadcast together; the
// output has X's dtype (X and Y must agree) and may reuse X's or Y's buffer.
#include "elementwise_kernels.h"
#include "graft/ops/gradient.h"
#include "graft/ops/pointwise_expression.h"

namespace graft::ops {
namespace {

using namespace elementwise;

void infer_where(InferContext& ctx) {
  for (size_t i = 0; i < 3; ++i)
    if (!ctx.has_input(i)) ctx.fail("input ", i, " is required");
  require_input_dtype(ctx, 0, DTypeSet::boolean);
  require_input_dtype(ctx, 1, DTypeSet::any);
  require_same_dtype(ctx, 1, 2);
  auto dims = broadcast_dims(ctx, {ctx.input_type(0), ctx.input_type(1), ctx.input_type(2)});
  ctx.set_output(0, ir::ValueType{ctx.input_type(1).dtype, dims.has_value(), dims.value_or(std::vector<ir::Dim>{})});
}

void where_kernel(KernelContext& ctx) {
  const Tensor& condition = ctx.input(0);
  const Tensor& x = ctx.input(1);
  const Tensor& y = ctx.input(2);
  if (condition.dtype() != DType::boolean)
    ctx.fail("input 0 (condition) has dtype ", dtype_name(condition.dtype()), ", expected bool");
  require_same_dtype(ctx, 1, 2);
  Shape shape = broadcast_input_shapes(ctx, 3);
  visit_dtype_in<DTypeSet::any>(x.dtype(), ctx, [&]<typename T>() {
    Tensor& out = allocate_elementwise_output(ctx, x.dtype(), shape, {1, 2});
    zip3<bool, T, T, T>(condition, x, y, out, [](bool c, T a, T b) { return c ? a : b; });
  });
}

// The pointwise expression (graft/ops/pointwise_expression.h).
int32_t where_expression(PointwiseLowering& l) { return l.select(l.arg(0), l.arg(1), l.arg(2)); }

constexpr PointwiseExpression kWhereExpression{PointwiseInputs::boolean, where_expression};

}  // namespace

GRAFT_REGISTER_OP("", "Where", infer_where, where_kernel);

GRAFT_REGISTER_POINTWISE(Where, kWhereExpression);

// Gradient builder (graft/ops/gradient.h): each branch gets dy where it was
// chosen; the condition has none.
namespace {

void where_gradient(GradientContext& g) {
  ir::Value zero = g.scalar(0, g.output_type(0).dtype);
  ir::Value dy = g.output_gradient(0);
  if (g.needs_input_gradient(1)) g.set_input_gradient(1, g.add(ir::OpId::Where, {g.input(0), dy, zero}));
  if (g.needs_input_gradient(2)) g.set_input_gradient(2, g.add(ir::OpId::Where, {g.input(0), zero, dy}));
}

}  // namespace

GRAFT_REGISTER_GRADIENT(Where, where_gradient);

}  // namespace graft::ops
