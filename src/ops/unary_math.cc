// Elementwise math of one input: trigonometric and hyperbolic functions,
// exp/log/sqrt, rounding, sign and magnitude, erf, and the IsNaN/IsInf
// predicates. Float types compute in compute_t (float for float16/bfloat16);
// integer inputs, where ONNX allows them, use wrapping integer arithmetic.
#include <cmath>
#include <limits>
#include <numbers>

#include "elementwise_kernels.h"
#include "graft/ops/gradient.h"
#include "graft/ops/pointwise_expression.h"

namespace graft::ops {
namespace {

using namespace elementwise;

/// Declares an Op functor `name` applying `expression` (of `x`) in compute type C.
#define GRAFT_UNARY_FUNCTION(name, grain_value, expression) \
  struct name {                                             \
    static constexpr int64_t grain = grain_value;           \
    explicit name(const KernelContext&) {}                  \
    template <typename C>                                   \
    C operator()(C x) const {                               \
      return expression;                                    \
    }                                                       \
  }

GRAFT_UNARY_FUNCTION(AcosOp, kCostlyGrain, std::acos(x));
GRAFT_UNARY_FUNCTION(AcoshOp, kCostlyGrain, std::acosh(x));
GRAFT_UNARY_FUNCTION(AsinOp, kCostlyGrain, std::asin(x));
GRAFT_UNARY_FUNCTION(AsinhOp, kCostlyGrain, std::asinh(x));
GRAFT_UNARY_FUNCTION(AtanOp, kCostlyGrain, std::atan(x));
GRAFT_UNARY_FUNCTION(AtanhOp, kCostlyGrain, std::atanh(x));
GRAFT_UNARY_FUNCTION(CosOp, kCostlyGrain, std::cos(x));
GRAFT_UNARY_FUNCTION(CoshOp, kCostlyGrain, std::cosh(x));
GRAFT_UNARY_FUNCTION(SinOp, kCostlyGrain, std::sin(x));
GRAFT_UNARY_FUNCTION(SinhOp, kCostlyGrain, std::sinh(x));
GRAFT_UNARY_FUNCTION(TanOp, kCostlyGrain, std::tan(x));
GRAFT_UNARY_FUNCTION(TanhOp, kCostlyGrain, std::tanh(x));
GRAFT_UNARY_FUNCTION(ExpOp, kCostlyGrain, std::exp(x));
GRAFT_UNARY_FUNCTION(LogOp, kCostlyGrain, std::log(x));
GRAFT_UNARY_FUNCTION(SqrtOp, kCheapGrain, std::sqrt(x));
GRAFT_UNARY_FUNCTION(ReciprocalOp, kCheapGrain, C(1) / x);
GRAFT_UNARY_FUNCTION(CeilOp, kCheapGrain, std::ceil(x));
GRAFT_UNARY_FUNCTION(FloorOp, kCheapGrain, std::floor(x));
// nearbyint in the default rounding mode rounds halves to even, as ONNX's Round.
GRAFT_UNARY_FUNCTION(RoundOp, kCheapGrain, std::nearbyint(x));

#undef GRAFT_UNARY_FUNCTION

struct AbsOp {
  static constexpr int64_t grain = kCheapGrain;
  explicit AbsOp(const KernelContext&) {}
  template <typename C>
  C operator()(C x) const {
    if constexpr (is_integer_type_v<C>) {
      if constexpr (std::is_unsigned_v<C>) return x;
      // Wrapping negation: abs(INT_MIN) is INT_MIN, as in two's complement hardware.
      return x < 0 ? static_cast<C>(wrapping_t<C>(0) - static_cast<wrapping_t<C>>(x)) : x;
    } else {
      return std::abs(x);
    }
  }
};

struct NegOp {
  static constexpr int64_t grain = kCheapGrain;
  explicit NegOp(const KernelContext&) {}
  template <typename C>
  C operator()(C x) const {
    if constexpr (is_integer_type_v<C>)
      return static_cast<C>(wrapping_t<C>(0) - static_cast<wrapping_t<C>>(x));
    else
      return -x;
  }
};

struct SignOp {
  static constexpr int64_t grain = kCheapGrain;
  explicit SignOp(const KernelContext&) {}
  template <typename C>
  C operator()(C x) const {
    if constexpr (is_integer_type_v<C>) {
      return static_cast<C>((x > 0) - (x < 0));
    } else {
      if (std::isnan(x)) return x;
      return x > 0 ? C(1) : (x < 0 ? C(-1) : C(0));
    }
  }
};

/// Erf; integer inputs (which ONNX allows) are computed in double and truncated.
struct ErfOp {
  static constexpr int64_t grain = kCostlyGrain;
  explicit ErfOp(const KernelContext&) {}
  template <typename C>
  C operator()(C x) const {
    if constexpr (is_integer_type_v<C>)
      return from_double<C>(std::erf(static_cast<double>(x)));
    else
      return std::erf(x);
  }
};

/// IsNaN and IsInf: float input, bool output of the same shape.
void isnan_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  visit_dtype_in<DTypeSet::float_types>(x.dtype(), ctx, [&]<typename T>() {
    Tensor& y = ctx.allocate_output(0, DType::boolean, x.shape());
    map(x.data<T>(), y.data<bool>(), x.numel(), kCheapGrain, [](T v) { return std::isnan(to_compute(v)); });
  });
}

void isinf_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  bool detect_negative = ctx.attrs().get_int("detect_negative", 1) != 0;
  bool detect_positive = ctx.attrs().get_int("detect_positive", 1) != 0;
  visit_dtype_in<DTypeSet::float_types>(x.dtype(), ctx, [&]<typename T>() {
    Tensor& y = ctx.allocate_output(0, DType::boolean, x.shape());
    map(x.data<T>(), y.data<bool>(), x.numel(), kCheapGrain, [&](T v) {
      auto c = to_compute(v);
      return std::isinf(c) && (c > 0 ? detect_positive : detect_negative);
    });
  });
}

// Pointwise expressions (graft/ops/pointwise_expression.h).

using ir::ExprOp;

/// Erf of an integer: in float64, truncated, as the kernel.
int32_t erf_expression(PointwiseLowering& l) {
  int32_t x = l.arg(0);
  if (dtype_is_float(l.t(x))) return l.un(ExprOp::erf, x);
  return l.cast(l.un(ExprOp::erf, l.cast(x, DType::float64)), l.t(x));
}

int32_t reciprocal_expression(PointwiseLowering& l) { return l.bin(ExprOp::div, l.k(1), l.arg(0)); }

int32_t isnan_expression(PointwiseLowering& l) {
  return l.ir.add_op(ExprOp::logical_not, DType::boolean, l.cmp(ExprOp::equal, l.arg(0), l.arg(0)));
}

int32_t isinf_expression(PointwiseLowering& l) {
  int32_t x = l.arg(0);
  DType t = l.t(x);
  int32_t result = -1;
  auto detect = [&](double infinity) {
    int32_t is = l.cmp(ExprOp::equal, x, l.k(infinity, t));
    result = result < 0 ? is : l.bin(ExprOp::logical_or, result, is);
  };
  if (l.node.attributes.get_int("detect_positive", 1) != 0) detect(std::numeric_limits<double>::infinity());
  if (l.node.attributes.get_int("detect_negative", 1) != 0) detect(-std::numeric_limits<double>::infinity());
  // Detecting neither: x < x, false for every x (NaN included) in x's shape,
  // where a constant false would be a scalar.
  return result < 0 ? l.cmp(ExprOp::less, x, x) : result;
}

constexpr PointwiseExpression kAbsExpression{PointwiseInputs::numeric, unary_expression<ExprOp::abs>};
constexpr PointwiseExpression kNegExpression{PointwiseInputs::numeric, unary_expression<ExprOp::neg>};
constexpr PointwiseExpression kExpExpression{PointwiseInputs::floats, unary_expression<ExprOp::exp>};
constexpr PointwiseExpression kLogExpression{PointwiseInputs::floats, unary_expression<ExprOp::log>};
constexpr PointwiseExpression kSqrtExpression{PointwiseInputs::floats, unary_expression<ExprOp::sqrt>};
constexpr PointwiseExpression kTanhExpression{PointwiseInputs::floats, unary_expression<ExprOp::tanh>};
constexpr PointwiseExpression kSinExpression{PointwiseInputs::floats, unary_expression<ExprOp::sin>};
constexpr PointwiseExpression kCosExpression{PointwiseInputs::floats, unary_expression<ExprOp::cos>};
constexpr PointwiseExpression kFloorExpression{PointwiseInputs::floats, unary_expression<ExprOp::floor>};
constexpr PointwiseExpression kCeilExpression{PointwiseInputs::floats, unary_expression<ExprOp::ceil>};
constexpr PointwiseExpression kRoundExpression{PointwiseInputs::floats, unary_expression<ExprOp::round>};
constexpr PointwiseExpression kSignExpression{PointwiseInputs::numeric, unary_expression<ExprOp::sign>};
constexpr PointwiseExpression kErfExpression{PointwiseInputs::numeric, erf_expression};
constexpr PointwiseExpression kReciprocalExpression{PointwiseInputs::floats, reciprocal_expression};
constexpr PointwiseExpression kIsNaNExpression{PointwiseInputs::floats, isnan_expression};
constexpr PointwiseExpression kIsInfExpression{PointwiseInputs::floats, isinf_expression};

}  // namespace

GRAFT_REGISTER_OP("", "Acos", infer_unary<kFloat>, (unary_kernel<kFloat, AcosOp>));
GRAFT_REGISTER_OP("", "Acosh", infer_unary<kFloat>, (unary_kernel<kFloat, AcoshOp>));
GRAFT_REGISTER_OP("", "Asin", infer_unary<kFloat>, (unary_kernel<kFloat, AsinOp>));
GRAFT_REGISTER_OP("", "Asinh", infer_unary<kFloat>, (unary_kernel<kFloat, AsinhOp>));
GRAFT_REGISTER_OP("", "Atan", infer_unary<kFloat>, (unary_kernel<kFloat, AtanOp>));
GRAFT_REGISTER_OP("", "Atanh", infer_unary<kFloat>, (unary_kernel<kFloat, AtanhOp>));
GRAFT_REGISTER_OP("", "Cos", infer_unary<kFloat>, (unary_kernel<kFloat, CosOp>));
GRAFT_REGISTER_OP("", "Cosh", infer_unary<kFloat>, (unary_kernel<kFloat, CoshOp>));
GRAFT_REGISTER_OP("", "Sin", infer_unary<kFloat>, (unary_kernel<kFloat, SinOp>));
GRAFT_REGISTER_OP("", "Sinh", infer_unary<kFloat>, (unary_kernel<kFloat, SinhOp>));
GRAFT_REGISTER_OP("", "Tan", infer_unary<kFloat>, (unary_kernel<kFloat, TanOp>));
GRAFT_REGISTER_OP("", "Tanh", infer_unary<kFloat>, (unary_kernel<kFloat, TanhOp>));
GRAFT_REGISTER_OP("", "Exp", infer_unary<kFloat>, (unary_kernel<kFloat, ExpOp>));
GRAFT_REGISTER_OP("", "Log", infer_unary<kFloat>, (unary_kernel<kFloat, LogOp>));
GRAFT_REGISTER_OP("", "Sqrt", infer_unary<kFloat>, (unary_kernel<kFloat, SqrtOp>));
GRAFT_REGISTER_OP("", "Reciprocal", infer_unary<kFloat>, (unary_kernel<kFloat, ReciprocalOp>));
GRAFT_REGISTER_OP("", "Ceil", infer_unary<kFloat>, (unary_kernel<kFloat, CeilOp>));
GRAFT_REGISTER_OP("", "Floor", infer_unary<kFloat>, (unary_kernel<kFloat, FloorOp>));
GRAFT_REGISTER_OP("", "Round", infer_unary<kFloat>, (unary_kernel<kFloat, RoundOp>));
GRAFT_REGISTER_OP("", "Abs", infer_unary<DTypeSet::numeric>, (unary_kernel<DTypeSet::numeric, AbsOp>));
GRAFT_REGISTER_OP("", "Neg", infer_unary<DTypeSet::signed_numeric>, (unary_kernel<DTypeSet::signed_numeric, NegOp>));
GRAFT_REGISTER_OP("", "Sign", infer_unary<DTypeSet::numeric>, (unary_kernel<DTypeSet::numeric, SignOp>));
GRAFT_REGISTER_OP("", "Erf", infer_unary<DTypeSet::numeric>, (unary_kernel<DTypeSet::numeric, ErfOp>));
GRAFT_REGISTER_OP("", "IsNaN", infer_unary_to_bool<kFloat>, isnan_kernel);
GRAFT_REGISTER_OP("", "IsInf", infer_unary_to_bool<kFloat>, isinf_kernel);

GRAFT_REGISTER_POINTWISE(Abs, kAbsExpression);
GRAFT_REGISTER_POINTWISE(Neg, kNegExpression);
GRAFT_REGISTER_POINTWISE(Exp, kExpExpression);
GRAFT_REGISTER_POINTWISE(Log, kLogExpression);
GRAFT_REGISTER_POINTWISE(Sqrt, kSqrtExpression);
GRAFT_REGISTER_POINTWISE(Tanh, kTanhExpression);
GRAFT_REGISTER_POINTWISE(Sin, kSinExpression);
GRAFT_REGISTER_POINTWISE(Cos, kCosExpression);
GRAFT_REGISTER_POINTWISE(Floor, kFloorExpression);
GRAFT_REGISTER_POINTWISE(Ceil, kCeilExpression);
GRAFT_REGISTER_POINTWISE(Round, kRoundExpression);
GRAFT_REGISTER_POINTWISE(Sign, kSignExpression);
GRAFT_REGISTER_POINTWISE(Erf, kErfExpression);
GRAFT_REGISTER_POINTWISE(Reciprocal, kReciprocalExpression);
GRAFT_REGISTER_POINTWISE(IsNaN, kIsNaNExpression);
GRAFT_REGISTER_POINTWISE(IsInf, kIsInfExpression);

// Gradient builders (graft/ops/gradient.h): dx = dy * f'(x), written with
// the forward's output where that is cheaper.
namespace {

DType out_dtype(const GradientContext& g) { return g.output_type(0).dtype; }

void neg_gradient(GradientContext& g) {
  using enum ir::OpId;
  g.set_input_gradient(0, g.add(Neg, {g.output_gradient(0)}));
}
void exp_gradient(GradientContext& g) { set_dx(g, g.output(0)); }
void log_gradient(GradientContext& g) {
  using enum ir::OpId;
  g.set_input_gradient(0, g.add(Div, {g.output_gradient(0), g.input(0)}));
}
// d sqrt(x) = 1 / (2 sqrt(x)).
void sqrt_gradient(GradientContext& g) {
  using enum ir::OpId;
  g.set_input_gradient(0, g.add(Div, {g.output_gradient(0), g.add(Mul, {g.output(0), g.scalar(2, out_dtype(g))})}));
}
// d (1/x) = -y^2.
void reciprocal_gradient(GradientContext& g) {
  using enum ir::OpId;
  set_dx(g, g.add(Neg, {g.add(Mul, {g.output(0), g.output(0)})}));
}
// d tanh(x) = 1 - y^2.
void tanh_gradient(GradientContext& g) {
  using enum ir::OpId;
  set_dx(g, g.add(Sub, {g.scalar(1, out_dtype(g)), g.add(Mul, {g.output(0), g.output(0)})}));
}
void sin_gradient(GradientContext& g) {
  using enum ir::OpId;
  set_dx(g, g.add(Cos, {g.input(0)}));
}
void cos_gradient(GradientContext& g) {
  using enum ir::OpId;
  set_dx(g, g.add(Neg, {g.add(Sin, {g.input(0)})}));
}
void abs_gradient(GradientContext& g) {
  using enum ir::OpId;
  set_dx(g, g.add(Sign, {g.input(0)}));
}
// d erf(x) = 2 / sqrt(pi) * exp(-x^2).
void erf_gradient(GradientContext& g) {
  using enum ir::OpId;
  ir::Value x = g.input(0);
  ir::Value e = g.add(Exp, {g.add(Neg, {g.add(Mul, {x, x})})});
  set_dx(g, g.add(Mul, {e, g.scalar(2.0 / std::sqrt(std::numbers::pi), out_dtype(g))}));
}
// Piecewise constant: zero almost everywhere.
void zero_gradient(GradientContext& g) { set_dx(g, g.scalar(0, out_dtype(g))); }

}  // namespace

GRAFT_REGISTER_GRADIENT(Neg, neg_gradient);
GRAFT_REGISTER_GRADIENT(Exp, exp_gradient);
GRAFT_REGISTER_GRADIENT(Log, log_gradient);
GRAFT_REGISTER_GRADIENT(Sqrt, sqrt_gradient);
GRAFT_REGISTER_GRADIENT(Reciprocal, reciprocal_gradient);
GRAFT_REGISTER_GRADIENT(Tanh, tanh_gradient);
GRAFT_REGISTER_GRADIENT(Sin, sin_gradient);
GRAFT_REGISTER_GRADIENT(Cos, cos_gradient);
GRAFT_REGISTER_GRADIENT(Abs, abs_gradient);
GRAFT_REGISTER_GRADIENT(Erf, erf_gradient);
GRAFT_REGISTER_GRADIENT(Floor, zero_gradient);
GRAFT_REGISTER_GRADIENT(Ceil, zero_gradient);
GRAFT_REGISTER_GRADIENT(Round, zero_gradient);
GRAFT_REGISTER_GRADIENT(Sign, zero_gradient);

// Gradient builders of the inverse and hyperbolic functions.
namespace {

ir::Value one(GradientContext& g) { return g.scalar(1, g.output_type(0).dtype); }
ir::Value x_squared(GradientContext& g) {
  using enum ir::OpId;
  return g.add(Mul, {g.input(0), g.input(0)});
}

// 1 / sqrt(1 - x^2), -1 / sqrt(1 - x^2), 1 / (1 + x^2).
void asin_gradient(GradientContext& g) {
  using enum ir::OpId;
  g.set_input_gradient(0, g.add(Div, {g.output_gradient(0), g.add(Sqrt, {g.add(Sub, {one(g), x_squared(g)})})}));
}
void acos_gradient(GradientContext& g) {
  using enum ir::OpId;
  g.set_input_gradient(
      0, g.add(Neg, {g.add(Div, {g.output_gradient(0), g.add(Sqrt, {g.add(Sub, {one(g), x_squared(g)})})})}));
}
void atan_gradient(GradientContext& g) {
  using enum ir::OpId;
  g.set_input_gradient(0, g.add(Div, {g.output_gradient(0), g.add(Add, {one(g), x_squared(g)})}));
}
// 1 + tan^2, cosh, sinh.
void tan_gradient(GradientContext& g) {
  using enum ir::OpId;
  set_dx(g, g.add(Add, {one(g), g.add(Mul, {g.output(0), g.output(0)})}));
}
void sinh_gradient(GradientContext& g) {
  using enum ir::OpId;
  set_dx(g, g.add(Cosh, {g.input(0)}));
}
void cosh_gradient(GradientContext& g) {
  using enum ir::OpId;
  set_dx(g, g.add(Sinh, {g.input(0)}));
}
// 1 / sqrt(x^2 + 1), 1 / sqrt(x^2 - 1), 1 / (1 - x^2).
void asinh_gradient(GradientContext& g) {
  using enum ir::OpId;
  g.set_input_gradient(0, g.add(Div, {g.output_gradient(0), g.add(Sqrt, {g.add(Add, {x_squared(g), one(g)})})}));
}
void acosh_gradient(GradientContext& g) {
  using enum ir::OpId;
  g.set_input_gradient(0, g.add(Div, {g.output_gradient(0), g.add(Sqrt, {g.add(Sub, {x_squared(g), one(g)})})}));
}
void atanh_gradient(GradientContext& g) {
  using enum ir::OpId;
  g.set_input_gradient(0, g.add(Div, {g.output_gradient(0), g.add(Sub, {one(g), x_squared(g)})}));
}

}  // namespace

GRAFT_REGISTER_GRADIENT(Asin, asin_gradient);
GRAFT_REGISTER_GRADIENT(Acos, acos_gradient);
GRAFT_REGISTER_GRADIENT(Atan, atan_gradient);
GRAFT_REGISTER_GRADIENT(Tan, tan_gradient);
GRAFT_REGISTER_GRADIENT(Sinh, sinh_gradient);
GRAFT_REGISTER_GRADIENT(Cosh, cosh_gradient);
GRAFT_REGISTER_GRADIENT(Asinh, asinh_gradient);
GRAFT_REGISTER_GRADIENT(Acosh, acosh_gradient);
GRAFT_REGISTER_GRADIENT(Atanh, atanh_gradient);

}  // namespace graft::ops
