// Clip: y = min(max(x, min), max). Before opset 11 the bounds are the float
// attributes `min` and `max`; from opset 11 they are optional one-element
// inputs of X's dtype. An absent bound is the dtype's lowest or highest
// finite value, as the specification states. When min > max every element
// becomes max.
#include <algorithm>
#include <limits>

#include "elementwise_kernels.h"
#include "graft/ops/gradient.h"
#include "graft/ops/pointwise_expression.h"

namespace graft::ops {
namespace {

using namespace elementwise;

void infer_clip(InferContext& ctx) {
  if (ctx.opset() < 11) {
    require_input_dtype(ctx, 0, DTypeSet::float_types);
  } else {
    require_input_dtype(ctx, 0, DTypeSet::numeric);
    for (size_t i = 1; i < 3; ++i) {
      require_same_dtype(ctx, 0, i);
      if (ctx.has_input(i)) {
        const ir::ValueType& bound = ctx.input_type(i);
        // One element: every extent 1 (a product could overflow on a malformed model's extents).
        if (bound.is_concrete()) {
          if (!std::all_of(bound.dims.begin(), bound.dims.end(), [](const ir::Dim& d) { return d.value == 1; }))
            ctx.fail("input ", i, " (", i == 1 ? "min" : "max", ") must be a scalar, got ", bound.to_string());
        }
      }
    }
  }
  infer_same_as_input(ctx);
}

/// The bound in input `i` (opset >= 11) as compute type C, or `fallback`.
template <typename T>
compute_t<T> bound_input(const KernelContext& ctx, size_t i, compute_t<T> fallback) {
  if (!ctx.has_input(i)) return fallback;
  const Tensor& bound = ctx.input(i);
  if (bound.dtype() != ctx.input(0).dtype())
    ctx.fail("input ", i, " has dtype ", dtype_name(bound.dtype()), ", expected ", dtype_name(ctx.input(0).dtype()));
  if (bound.numel() != 1)
    ctx.fail("input ", i, " (", i == 1 ? "min" : "max", ") must be a scalar, got shape ",
             shape_to_string(bound.shape()));
  return to_compute(bound.data<T>()[0]);
}

void clip_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  visit_dtype_in<DTypeSet::numeric>(x.dtype(), ctx, [&]<typename T>() {
    using C = compute_t<T>;
    C low, high;
    if (ctx.opset() < 11) {
      if constexpr (!is_float_type_v<T>) {
        ctx.unsupported("dtype ", dtype_name(x.dtype()), " needs opset 11 or later");
      } else {
        low = static_cast<C>(ctx.attrs().get_float("min", std::numeric_limits<float>::lowest()));
        high = static_cast<C>(ctx.attrs().get_float("max", std::numeric_limits<float>::max()));
      }
    } else {
      low = bound_input<T>(ctx, 1, std::numeric_limits<C>::lowest());
      high = bound_input<T>(ctx, 2, std::numeric_limits<C>::max());
    }
    Tensor& y = allocate_elementwise_output(ctx, x.dtype(), x.shape(), {0});
    map(x.data<T>(), y.data<T>(), x.numel(), kCheapGrain,
        [=](T v) { return static_cast<T>(std::min(std::max(to_compute(v), low), high)); });
  });
}

// The pointwise expression (graft/ops/pointwise_expression.h): the bounds as
// the kernel reads them, std::min(std::max(x, low), high).
int32_t clip_expression(PointwiseLowering& l) {
  int32_t x = l.arg(0);
  DType t = l.t(x);
  int32_t low, high;
  if (effective_opset(l.node) < 11) {
    low = l.k(l.attr_float("min", std::numeric_limits<float>::lowest()));
    high = l.k(l.attr_float("max", std::numeric_limits<float>::max()));
  } else {
    auto bound = [&](size_t i, bool is_low) {
      if (i < l.args.size() && l.args[i] >= 0) return l.args[i];
      switch (t) {
        case DType::float32:
          return l.k(is_low ? std::numeric_limits<float>::lowest() : std::numeric_limits<float>::max());
        case DType::float64:
          return l.k(is_low ? std::numeric_limits<double>::lowest() : std::numeric_limits<double>::max());
        case DType::int32:
          return l.k_int(is_low ? std::numeric_limits<int32_t>::min() : std::numeric_limits<int32_t>::max(), t);
        default:
          return l.k_int(is_low ? std::numeric_limits<int64_t>::min() : std::numeric_limits<int64_t>::max(), t);
      }
    };
    low = bound(1, true);
    high = bound(2, false);
  }
  return l.std_min(l.std_max(x, low), high);
}

constexpr PointwiseExpression kClipExpression{PointwiseInputs::numeric, clip_expression, nullptr,
                                              /*takes_absent_inputs=*/true};

}  // namespace

GRAFT_REGISTER_OP("", "Clip", infer_clip, clip_kernel);

GRAFT_REGISTER_POINTWISE(Clip, kClipExpression);

// Gradient builder (graft/ops/gradient.h): dy passes where min <= x <= max;
// a bound input gets dy where it clipped.
namespace {

void clip_gradient(GradientContext& g) {
  using enum ir::OpId;
  ir::Value x = g.input(0), dy = g.output_gradient(0);
  ir::Value zero = g.scalar(0, g.output_type(0).dtype);
  const bool attribute_bounds = g.node().opset_version > 0 && g.node().opset_version < 11;
  ir::Value low = attribute_bounds && g.attrs().has("min")
                      ? g.scalar(g.attrs().get_float("min"), g.output_type(0).dtype)
                  : g.has_input(1) ? g.input(1)
                                   : ir::Value{};
  ir::Value high = attribute_bounds && g.attrs().has("max")
                       ? g.scalar(g.attrs().get_float("max"), g.output_type(0).dtype)
                   : g.has_input(2) ? g.input(2)
                                    : ir::Value{};
  ir::Value inside;
  if (low) inside = g.add(GreaterOrEqual, {x, low});
  if (high) {
    ir::Value below_high = g.add(LessOrEqual, {x, high});
    inside = inside ? g.add(And, {inside, below_high}) : below_high;
  }
  g.set_input_gradient(0, inside ? g.add(Where, {inside, dy, zero}) : dy);
  if (g.needs_input_gradient(1) && !attribute_bounds)
    g.set_input_gradient(1, g.add(Where, {g.add(Less, {x, low}), dy, zero}));
  if (g.needs_input_gradient(2) && !attribute_bounds)
    g.set_input_gradient(2, g.add(Where, {g.add(Greater, {x, high}), dy, zero}));
}

}  // namespace

GRAFT_REGISTER_GRADIENT(Clip, clip_gradient);

}  // namespace graft::ops
