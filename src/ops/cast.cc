// Cast (to the dtype of attribute `to`) and CastLike (to the dtype of input 1)
// between every dtype graft stores. Conversions are those of
// elementwise::convert_value: float to integer truncates toward zero, float to
// float16/bfloat16 rounds to nearest even, anything to bool is `!= 0`. Strings
// are not stored by graft, so casts from or to string are unsupported.
#include <limits>

#include "elementwise_kernels.h"
#include "graft/ops/gradient.h"
#include "graft/ops/pointwise_expression.h"

namespace graft::ops {
namespace {

using namespace elementwise;

/// The dtype a cast produces; throws unsupported for string and complex.
DType cast_target(const ir::Node& node, DType target) {
  if (!dtype_is_storable(target))
    fail(ErrorKind::unsupported, node.describe(), ": cast to ", dtype_name(target), " is not supported");
  return target;
}

void infer_cast_to(InferContext& ctx, DType target) {
  require_input_dtype(ctx, 0, DTypeSet::any);
  ir::ValueType type = ctx.input_type(0);
  type.dtype = cast_target(ctx.node(), target);
  ctx.set_output(0, std::move(type));
}

/// Cast's attribute 'to' as a dtype; a value that is no ONNX type is an error naming the node.
DType cast_attribute_to(const ir::Node& node, int64_t to) {
  if (to < 0 || to > std::numeric_limits<int32_t>::max())
    fail(ErrorKind::invalid_model, node.describe(), ": attribute 'to' is ", to, ", not an ONNX tensor type");
  try {
    return dtype_from_onnx(static_cast<int32_t>(to));
  } catch (const Error& e) {
    fail(ErrorKind::invalid_model, node.describe(), ": attribute 'to': ", e.what());
  }
}

void infer_cast(InferContext& ctx) {
  if (!ctx.attrs().has("to")) ctx.fail("attribute 'to' is required");
  infer_cast_to(ctx, cast_attribute_to(ctx.node(), ctx.attrs().get_int("to")));
}

void infer_cast_like(InferContext& ctx) {
  DType target = ctx.input_type(1).dtype;
  if (target == DType::undefined) {
    ctx.set_output(0, ir::ValueType{DType::undefined, ctx.input_type(0).has_rank, ctx.input_type(0).dims});
    return;
  }
  infer_cast_to(ctx, target);
}

void cast_tensor(KernelContext& ctx, const Tensor& x, DType target) {
  cast_target(ctx.node(), target);
  if (x.dtype() == target) {
    ctx.set_output(0, x);
    return;
  }
  visit_dtype_in<DTypeSet::any>(x.dtype(), ctx, [&]<typename From>() {
    visit_dtype_in<DTypeSet::any>(target, ctx, [&]<typename To>() {
      Tensor& y = ctx.allocate_output(0, target, x.shape());
      map(x.data<From>(), y.data<To>(), x.numel(), kCheapGrain,
          [](From value) { return convert_value<To, From>(value); });
    });
  });
}

void cast_kernel(KernelContext& ctx) {
  cast_tensor(ctx, ctx.input(0), cast_attribute_to(ctx.node(), ctx.attrs().get_int("to")));
}

void cast_like_kernel(KernelContext& ctx) { cast_tensor(ctx, ctx.input(0), ctx.input(1).dtype()); }

// Pointwise expressions (graft/ops/pointwise_expression.h).

int32_t cast_expression(PointwiseLowering& l) { return l.cast(l.arg(0), l.out); }

std::string check_cast(const ir::Node& node) {
  if (!node.attributes.has("to")) return "attribute 'to' is missing";
  int64_t to = node.attributes.get_int("to");
  if (to < 0 || to > 16 || !ir::is_kernel_dtype(static_cast<DType>(to))) return "Cast to this dtype is not fused";
  // Kernels reach float16 from float32 only; float64 through float32 would
  // round twice, where the kernel rounds once.
  if (static_cast<DType>(to) == DType::float16 && input_dtype(node, 0) == DType::float64)
    return "Cast from float64 to float16 is not fused";
  return {};
}

std::string check_cast_like(const ir::Node& node) {
  return node.output_types[0].dtype == DType::float16 && input_dtype(node, 0) == DType::float64
             ? "CastLike from float64 to float16 is not fused"
             : "";
}

constexpr PointwiseExpression kCastExpression{PointwiseInputs::any, cast_expression, check_cast};
constexpr PointwiseExpression kCastLikeExpression{PointwiseInputs::any, cast_expression, check_cast_like};

}  // namespace

GRAFT_REGISTER_OP("", "Cast", infer_cast, cast_kernel);
GRAFT_REGISTER_OP("", "CastLike", infer_cast_like, cast_like_kernel);

GRAFT_REGISTER_POINTWISE(Cast, kCastExpression);
GRAFT_REGISTER_POINTWISE(CastLike, kCastLikeExpression);

// Gradient builder (graft/ops/gradient.h): dy cast back to the input's dtype.
namespace {

void cast_gradient(GradientContext& g) {
  g.set_input_gradient(
      0, g.add(ir::OpId::Cast, {g.output_gradient(0)}, {{"to", static_cast<int64_t>(g.input_type(0).dtype)}}));
}

}  // namespace

GRAFT_REGISTER_GRADIENT(Cast, cast_gradient);

}  // namespace graft::ops
