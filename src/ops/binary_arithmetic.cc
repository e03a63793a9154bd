// Add, Sub, Mul, Div, Mod and Pow with numpy broadcasting.
//
// Integer semantics (ONNX leaves overflow and division by zero undefined;
// graft defines them so that no input can crash the process):
// - Add, Sub, Mul wrap modulo 2^bits.
// - Div truncates toward zero like C. x / 0 gives 0; INT_MIN / -1 wraps to INT_MIN.
// - Mod with fmod=0 takes the sign of the divisor (Python's %), with fmod=1 the
//   sign of the dividend (C's %). x mod 0 gives 0.
// Float Mod requires fmod=1 (C fmod), as the specification says.
// Pow: the output has the base's dtype; the exponent may be of any numeric
// dtype. Float bases with float32-or-narrower exponents compute in float,
// other mixes in double; integer bases with integer exponents use exact
// wrapping integer powers (negative exponents give the truncated quotient
// 1 / base^-e: 1 or -1 for bases 1 and -1, else 0).
#include <cmath>

#include "elementwise_kernels.h"
#include "graft/ops/gradient.h"
#include "graft/ops/pointwise_expression.h"

namespace graft::ops {
namespace {

using namespace elementwise;

struct AddOp {
  explicit AddOp(const KernelContext&) {}
  template <typename C>
  C operator()(C a, C b) const {
    if constexpr (is_integer_type_v<C>)
      return static_cast<C>(static_cast<wrapping_t<C>>(a) + static_cast<wrapping_t<C>>(b));
    else
      return a + b;
  }
};

struct SubOp {
  explicit SubOp(const KernelContext&) {}
  template <typename C>
  C operator()(C a, C b) const {
    if constexpr (is_integer_type_v<C>)
      return static_cast<C>(static_cast<wrapping_t<C>>(a) - static_cast<wrapping_t<C>>(b));
    else
      return a - b;
  }
};

struct MulOp {
  explicit MulOp(const KernelContext&) {}
  template <typename C>
  C operator()(C a, C b) const {
    if constexpr (is_integer_type_v<C>)
      return static_cast<C>(static_cast<wrapping_t<C>>(a) * static_cast<wrapping_t<C>>(b));
    else
      return a * b;
  }
};

struct DivOp {
  explicit DivOp(const KernelContext&) {}
  template <typename C>
  C operator()(C a, C b) const {
    if constexpr (is_integer_type_v<C>) {
      if (b == 0) return 0;
      if constexpr (std::is_signed_v<C>) {
        if (b == -1) return static_cast<C>(wrapping_t<C>(0) - static_cast<wrapping_t<C>>(a));
      }
      return static_cast<C>(a / b);
    } else {
      return a / b;
    }
  }
};

void infer_mod(InferContext& ctx) {
  int64_t fmod = ctx.attrs().get_int("fmod", 0);
  if (fmod != 0 && fmod != 1) ctx.fail("attribute 'fmod' must be 0 or 1, got ", fmod);
  DType dtype = ctx.input_type(0).dtype;
  if (fmod == 0 && dtype_is_float(dtype)) ctx.fail("float inputs (", dtype_name(dtype), ") need attribute fmod=1");
  infer_broadcast_same_dtype<DTypeSet::numeric>(ctx);
}

struct ModOp {
  bool c_fmod;
  explicit ModOp(const KernelContext& ctx) : c_fmod(ctx.attrs().get_int("fmod", 0) != 0) {
    if (!c_fmod && dtype_is_float(ctx.input(0).dtype()))
      ctx.fail("float inputs (", dtype_name(ctx.input(0).dtype()), ") need attribute fmod=1");
  }
  template <typename C>
  C operator()(C a, C b) const {
    if constexpr (is_integer_type_v<C>) {
      if (b == 0) return 0;
      if constexpr (std::is_signed_v<C>) {
        if (b == -1) return 0;  // also avoids INT_MIN % -1, which traps
        C remainder = static_cast<C>(a % b);
        if (!c_fmod && remainder != 0 && ((remainder < 0) != (b < 0))) remainder = static_cast<C>(remainder + b);
        return remainder;
      } else {
        return static_cast<C>(a % b);
      }
    } else {
      return std::fmod(a, b);
    }
  }
};

// ---------------------------------------------------------------------------
// Pow

constexpr DTypeSet kPowBase = DTypeSet::numeric;
constexpr DTypeSet kPowExponent = DTypeSet::numeric;

void infer_pow(InferContext& ctx) {
  require_input_dtype(ctx, 0, kPowBase);
  require_input_dtype(ctx, 1, kPowExponent);
  infer_binary_broadcast(ctx, ctx.input_type(0).dtype);
}

/// base^exponent for integers, wrapping modulo 2^bits.
template <typename B, typename E>
B integer_power(B base, E exponent) {
  if constexpr (std::is_signed_v<E>) {
    if (exponent < 0) {
      if (base == 1) return 1;
      if constexpr (std::is_signed_v<B>) {
        if (base == -1) return (exponent & 1) ? B(-1) : B(1);
      }
      return 0;
    }
  }
  using W = wrapping_t<B>;
  W result = 1, factor = static_cast<W>(base);
  auto e = static_cast<std::make_unsigned_t<E>>(exponent);
  while (e != 0) {
    if (e & 1u) result = static_cast<W>(result * factor);
    factor = static_cast<W>(factor * factor);
    e = static_cast<decltype(e)>(e >> 1);
  }
  return static_cast<B>(result);
}

template <typename T>
inline constexpr bool is_narrow_float_v = std::is_same_v<T, float> || is_half_type_v<T>;

/// One element of Pow with base storage type B and exponent storage type E.
template <typename B, typename E>
B power(B base, E exponent) {
  if constexpr (is_integer_type_v<B> && is_integer_type_v<E>) {
    return integer_power(base, exponent);
  } else if constexpr (is_narrow_float_v<B> && is_narrow_float_v<E>) {
    return static_cast<B>(std::pow(static_cast<float>(base), static_cast<float>(exponent)));
  } else {
    return from_double<B>(std::pow(static_cast<double>(to_compute(base)), static_cast<double>(to_compute(exponent))));
  }
}

/// The type power<B, E> converts an exponent of storage type E to before it
/// computes (its result is the same for the exponent given as this type):
/// integer exponents of integer bases as int64 or uint64, float32-or-narrower
/// exponents of float32-or-narrower bases as float, all else as double. So
/// the kernel is instantiated for 31 pairs of dtypes, not 144.
template <typename B, typename E>
using computed_exponent_t = std::conditional_t<
    is_integer_type_v<B> && is_integer_type_v<E>, std::conditional_t<std::is_signed_v<E>, int64_t, uint64_t>,
    std::conditional_t<is_narrow_float_v<B> && is_narrow_float_v<E>, float, double>>;

/// `exponent` as computed_exponent_t for base type B: the tensor itself when
/// it has that type already (a float32 exponent of a float32 base), else a
/// converted copy (exponents are mostly scalars).
template <typename B>
Tensor exponent_as_computed(const Tensor& exponent, const KernelContext& ctx) {
  Tensor converted;
  visit_dtype_in<kPowExponent>(exponent.dtype(), ctx, [&]<typename E>() {
    using C = computed_exponent_t<B, E>;
    if constexpr (std::is_same_v<C, E>) {
      converted = exponent;
    } else {
      converted = Tensor::uninitialized(dtype_of<C>::value, exponent.shape());
      map(exponent.data<E>(), converted.data<C>(), exponent.numel(), kCheapGrain,
          [](E v) { return convert_value<C, E>(v); });
    }
  });
  return converted;
}

void pow_kernel(KernelContext& ctx) {
  const Tensor& base = ctx.input(0);
  const std::optional<Tensor> legacy_exponent = legacy_operand_b(ctx);
  const Tensor& exponent = legacy_exponent ? *legacy_exponent : ctx.input(1);
  Shape shape = broadcast_shapes(base.shape(), exponent.shape(), ctx.node().describe());
  visit_dtype_in<kPowBase>(base.dtype(), ctx, [&]<typename B>() {
    Tensor& y = allocate_elementwise_output(ctx, base.dtype(), shape, {0});
    // x^2, the common case (variance, squared error), as one multiply.
    if constexpr (is_float_type_v<B>) {
      if (exponent.numel() == 1 && exponent.value_as_double(0) == 2.0 && shape == base.shape()) {
        map(base.data<B>(), y.data<B>(), base.numel(), kCheapGrain, [](B v) {
          auto c = to_compute(v);
          return static_cast<B>(c * c);
        });
        return;
      }
    }
    const Tensor computed_exponent = exponent_as_computed<B>(exponent, ctx);
    visit_dtype_in<kPowExponent>(computed_exponent.dtype(), ctx, [&]<typename E>() {
      if constexpr (std::is_same_v<E, computed_exponent_t<B, E>>)
        zip<B, E, B>(base, computed_exponent, y, [](B u, E v) { return power(u, v); });
      else
        ctx.fail("internal error: Pow's exponent of dtype ", dtype_name(computed_exponent.dtype()),
                 " was not converted for a base of dtype ", dtype_name(base.dtype()));
    });
  });
}

// Pointwise expressions (graft/ops/pointwise_expression.h).

using ir::ExprOp;

/// Pow with the kernel's choice of compute type, which follows the graph's
/// dtypes (float16 operands are float32 values here).
int32_t pow_expression(PointwiseLowering& l) {
  int32_t base = l.arg(0), exponent = l.arg(1);
  DType b = l.t(base), e = l.t(exponent);
  if (l.dtypes.at(0) == l.dtypes.at(1)) return l.bin(ExprOp::pow, base, exponent);
  if (dtype_is_float(b) || dtype_is_float(e)) {
    int32_t r = l.bin(ExprOp::pow, l.cast(base, DType::float64), l.cast(exponent, DType::float64));
    return l.cast(r, b);
  }
  int32_t r = l.bin(ExprOp::pow, l.cast(base, DType::int64), l.cast(exponent, DType::int64));
  return l.cast(r, b);
}

/// Pow of operands of two dtypes computes in float64 and rounds once to the
/// result's dtype: float16 is reached from float32 only.
std::string check_pow(const ir::Node& node) {
  std::string legacy = no_legacy_broadcast(node);
  if (!legacy.empty()) return legacy;
  DType base = input_dtype(node, 0), exponent = input_dtype(node, 1);
  if (base != exponent && base == DType::float16) return "Pow of float16 by another dtype is not fused";
  return {};
}

constexpr PointwiseExpression kAddExpression{PointwiseInputs::numeric, binary_expression<ExprOp::add>,
                                             no_legacy_broadcast};
constexpr PointwiseExpression kSubExpression{PointwiseInputs::numeric, binary_expression<ExprOp::sub>,
                                             no_legacy_broadcast};
constexpr PointwiseExpression kMulExpression{PointwiseInputs::numeric, binary_expression<ExprOp::mul>,
                                             no_legacy_broadcast};
constexpr PointwiseExpression kDivExpression{PointwiseInputs::numeric, binary_expression<ExprOp::div>,
                                             no_legacy_broadcast};
constexpr PointwiseExpression kPowExpression{PointwiseInputs::numeric, pow_expression, check_pow};

}  // namespace

GRAFT_REGISTER_OP("", "Add", infer_broadcast_same_dtype<kNumeric>, (binary_kernel<kNumeric, AddOp>));
GRAFT_REGISTER_OP("", "Sub", infer_broadcast_same_dtype<kNumeric>, (binary_kernel<kNumeric, SubOp>));
GRAFT_REGISTER_OP("", "Mul", infer_broadcast_same_dtype<kNumeric>, (binary_kernel<kNumeric, MulOp>));
GRAFT_REGISTER_OP("", "Div", infer_broadcast_same_dtype<kNumeric>, (binary_kernel<kNumeric, DivOp>));
GRAFT_REGISTER_OP("", "Mod", infer_mod, (binary_kernel<kNumeric, ModOp>));
GRAFT_REGISTER_OP("", "Pow", infer_pow, pow_kernel);

GRAFT_REGISTER_POINTWISE(Add, kAddExpression);
GRAFT_REGISTER_POINTWISE(Sub, kSubExpression);
GRAFT_REGISTER_POINTWISE(Mul, kMulExpression);
GRAFT_REGISTER_POINTWISE(Div, kDivExpression);
GRAFT_REGISTER_POINTWISE(Pow, kPowExpression);

// Gradient builders (graft/ops/gradient.h).
namespace {

void add_gradient(GradientContext& g) {
  g.set_input_gradient(0, g.output_gradient(0));
  g.set_input_gradient(1, g.output_gradient(0));
}

void sub_gradient(GradientContext& g) {
  g.set_input_gradient(0, g.output_gradient(0));
  if (g.needs_input_gradient(1)) g.set_input_gradient(1, g.add(ir::OpId::Neg, {g.output_gradient(0)}));
}

void mul_gradient(GradientContext& g) {
  using enum ir::OpId;
  ir::Value dy = g.output_gradient(0);
  if (g.needs_input_gradient(0)) g.set_input_gradient(0, g.add(Mul, {dy, g.input(1)}));
  if (g.needs_input_gradient(1)) g.set_input_gradient(1, g.add(Mul, {dy, g.input(0)}));
}

// y = a / b: da = dy / b, db = -dy * y / b.
void div_gradient(GradientContext& g) {
  using enum ir::OpId;
  ir::Value dy = g.output_gradient(0);
  if (g.needs_input_gradient(0)) g.set_input_gradient(0, g.add(Div, {dy, g.input(1)}));
  if (g.needs_input_gradient(1))
    g.set_input_gradient(1, g.add(Neg, {g.add(Div, {g.add(Mul, {dy, g.output(0)}), g.input(1)})}));
}

// y = a ^ b: da = dy * b * a^(b-1), db = dy * y * log(a).
void pow_gradient(GradientContext& g) {
  using enum ir::OpId;
  ir::Value dy = g.output_gradient(0);
  const DType dtype = g.output_type(0).dtype;
  if (g.needs_input_gradient(0)) {
    ir::Value b = g.input(1);
    const ir::Node& exponent = *b.node;
    if (!g.needs_input_gradient(1) && exponent.op() == Constant && exponent.constant_value.numel() == 1) {
      // A constant exponent e (a squared error's 2): x^(e - 1) with e - 1 a
      // constant too, so that the gradient needs no constant folding to be
      // a Pow by a constant (which the dnnl backend runs) in a training
      // step, whose Session does not fold constants.
      const double e = exponent.constant_value.value_as_double(0);
      ir::Value a_pow = g.add(Pow, {g.input(0), g.scalar(e - 1, dtype)});
      g.set_input_gradient(0, g.add(Mul, {dy, g.add(Mul, {g.scalar(e, dtype), a_pow})}));
    } else {
      if (g.input_type(1).dtype != dtype) b = g.add(Cast, {b}, {{"to", static_cast<int64_t>(dtype)}});
      ir::Value a_pow = g.add(Pow, {g.input(0), g.add(Sub, {b, g.scalar(1, dtype)})});
      g.set_input_gradient(0, g.add(Mul, {dy, g.add(Mul, {b, a_pow})}));
    }
  }
  if (g.needs_input_gradient(1))
    g.set_input_gradient(1, g.add(Mul, {g.add(Mul, {dy, g.output(0)}), g.add(Log, {g.input(0)})}));
}

}  // namespace

GRAFT_REGISTER_GRADIENT(Add, add_gradient);
GRAFT_REGISTER_GRADIENT(Sub, sub_gradient);
GRAFT_REGISTER_GRADIENT(Mul, mul_gradient);
GRAFT_REGISTER_GRADIENT(Div, div_gradient);
GRAFT_REGISTER_GRADIENT(Pow, pow_gradient);

}  // namespace graft::ops
