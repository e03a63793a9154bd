// Activation functions: Relu, Sigmoid, Softplus, Softsign, Elu, Celu, Selu,
// LeakyRelu, HardSigmoid, HardSwish, ThresholdedRelu, Shrink, Mish, Gelu,
// Swish and PRelu (whose slope broadcasts unidirectionally to X). Attribute
// defaults follow the ONNX specification. Sigmoid, Softplus and Swish use the
// forms that do not overflow for large |x|. Each op's pointwise expression
// (for fusion and code generation) follows its functor branch for branch.
#include <cmath>
#include <numbers>

#include "elementwise_kernels.h"
#include "graft/ops/gradient.h"
#include "graft/ops/pointwise_expression.h"

namespace graft::ops {
namespace {

using namespace elementwise;

struct ReluOp {
  static constexpr int64_t grain = kCheapGrain;
  explicit ReluOp(const KernelContext&) {}
  template <typename C>
  C operator()(C x) const {
    return x < C(0) ? C(0) : x;  // NaN stays NaN
  }
};

/// log(1 + exp(x)) without overflow.
template <typename C>
C softplus(C x) {
  return x > C(0) ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
}

/// 1 / (1 + exp(-x)) without overflow (the kernel IR's sigmoid).
template <typename C>
C sigmoid(C x) {
  if (x >= C(0)) return C(1) / (C(1) + std::exp(-x));
  C e = std::exp(x);
  return e / (C(1) + e);
}

struct SigmoidOp {
  static constexpr int64_t grain = kCostlyGrain;
  explicit SigmoidOp(const KernelContext&) {}
  template <typename C>
  C operator()(C x) const {
    return sigmoid(x);
  }
};

/// Swish (opset 24): x * sigmoid(alpha * x); alpha = 1 is SiLU.
struct SwishOp {
  static constexpr int64_t grain = kCostlyGrain;
  float alpha;
  explicit SwishOp(const KernelContext& ctx) : alpha(ctx.attrs().get_float("alpha", 1.0f)) {}
  template <typename C>
  C operator()(C x) const {
    return x * sigmoid(C(alpha) * x);
  }
};

struct SoftplusOp {
  static constexpr int64_t grain = kCostlyGrain;
  explicit SoftplusOp(const KernelContext&) {}
  template <typename C>
  C operator()(C x) const {
    return softplus(x);
  }
};

struct SoftsignOp {
  static constexpr int64_t grain = kCheapGrain;
  explicit SoftsignOp(const KernelContext&) {}
  template <typename C>
  C operator()(C x) const {
    return x / (C(1) + std::abs(x));
  }
};

struct MishOp {
  static constexpr int64_t grain = kCostlyGrain;
  explicit MishOp(const KernelContext&) {}
  template <typename C>
  C operator()(C x) const {
    return x * std::tanh(softplus(x));
  }
};

struct EluOp {
  static constexpr int64_t grain = kCostlyGrain;
  float alpha;
  explicit EluOp(const KernelContext& ctx) : alpha(ctx.attrs().get_float("alpha", 1.0f)) {}
  template <typename C>
  C operator()(C x) const {
    return x < C(0) ? C(alpha) * std::expm1(x) : x;
  }
};

struct CeluOp {
  static constexpr int64_t grain = kCostlyGrain;
  float alpha;
  explicit CeluOp(const KernelContext& ctx) : alpha(ctx.attrs().get_float("alpha", 1.0f)) {
    if (alpha == 0.0f) ctx.fail("attribute 'alpha' must not be 0");
  }
  template <typename C>
  C operator()(C x) const {
    C a = C(alpha);
    if (x != x) return x;  // NaN stays NaN (std::max(0, NaN) is 0), as in ONNX's reference and PyTorch
    return std::max(C(0), x) + std::min(C(0), a * std::expm1(x / a));
  }
};

struct SeluOp {
  static constexpr int64_t grain = kCostlyGrain;
  float alpha, gamma;
  explicit SeluOp(const KernelContext& ctx)
      : alpha(ctx.attrs().get_float("alpha", 1.67326319217681884765625f)),
        gamma(ctx.attrs().get_float("gamma", 1.05070102214813232421875f)) {}
  template <typename C>
  C operator()(C x) const {
    return x > C(0) ? C(gamma) * x : C(gamma) * (C(alpha) * std::exp(x) - C(alpha));
  }
};

struct LeakyReluOp {
  static constexpr int64_t grain = kCheapGrain;
  float alpha;
  explicit LeakyReluOp(const KernelContext& ctx) : alpha(ctx.attrs().get_float("alpha", 0.01f)) {}
  template <typename C>
  C operator()(C x) const {
    return x < C(0) ? C(alpha) * x : x;
  }
};

struct HardSigmoidOp {
  static constexpr int64_t grain = kCheapGrain;
  float alpha, beta;
  explicit HardSigmoidOp(const KernelContext& ctx)
      : alpha(ctx.attrs().get_float("alpha", 0.2f)), beta(ctx.attrs().get_float("beta", 0.5f)) {}
  template <typename C>
  C operator()(C x) const {
    if (x != x) return x;  // NaN stays NaN (std::min(1, NaN) is 1)
    return std::max(C(0), std::min(C(1), C(alpha) * x + C(beta)));
  }
};

struct HardSwishOp {
  static constexpr int64_t grain = kCheapGrain;
  explicit HardSwishOp(const KernelContext&) {}
  template <typename C>
  C operator()(C x) const {
    return x * std::max(C(0), std::min(C(1), x / C(6) + C(0.5)));
  }
};

struct ThresholdedReluOp {
  static constexpr int64_t grain = kCheapGrain;
  float alpha;
  explicit ThresholdedReluOp(const KernelContext& ctx) : alpha(ctx.attrs().get_float("alpha", 1.0f)) {}
  template <typename C>
  C operator()(C x) const {
    return x > C(alpha) ? x : C(0);
  }
};

/// Shrink: x + bias below -lambd, x - bias above lambd, else 0. Integer inputs
/// compute in double and convert back.
struct ShrinkOp {
  static constexpr int64_t grain = kCheapGrain;
  float bias, lambd;
  explicit ShrinkOp(const KernelContext& ctx)
      : bias(ctx.attrs().get_float("bias", 0.0f)), lambd(ctx.attrs().get_float("lambd", 0.5f)) {}
  template <typename C>
  C operator()(C x) const {
    if constexpr (is_integer_type_v<C>) {
      double v = static_cast<double>(x);
      if (v < -double(lambd)) return from_double<C>(v + bias);
      if (v > double(lambd)) return from_double<C>(v - bias);
      return C(0);
    } else {
      if (x < C(-lambd)) return x + C(bias);
      if (x > C(lambd)) return x - C(bias);
      return C(0);
    }
  }
};

/// Gelu (opset 20): approximate = "none" (erf form) or "tanh".
struct GeluOp {
  static constexpr int64_t grain = kCostlyGrain;
  bool tanh_approximation;
  explicit GeluOp(const KernelContext& ctx) {
    std::string approximate = ctx.attrs().get_string("approximate", "none");
    if (approximate != "none" && approximate != "tanh")
      ctx.fail("attribute 'approximate' must be \"none\" or \"tanh\", got \"", approximate, "\"");
    tanh_approximation = approximate == "tanh";
  }
  template <typename C>
  C operator()(C x) const {
    if (tanh_approximation) {
      const C scale = C(std::numbers::sqrt2 * std::numbers::inv_sqrtpi);  // sqrt(2 / pi)
      return C(0.5) * x * (C(1) + std::tanh(scale * (x + C(0.044715) * x * x * x)));
    }
    return C(0.5) * x * (C(1) + std::erf(x * C(std::numbers::sqrt2 / 2)));
  }
};

void infer_gelu(InferContext& ctx) {
  std::string approximate = ctx.attrs().get_string("approximate", "none");
  if (approximate != "none" && approximate != "tanh")
    ctx.fail("attribute 'approximate' must be \"none\" or \"tanh\", got \"", approximate, "\"");
  infer_unary<DTypeSet::float_types>(ctx);
}

void infer_celu(InferContext& ctx) {
  if (ctx.attrs().get_float("alpha", 1.0f) == 0.0f) ctx.fail("attribute 'alpha' must not be 0");
  infer_unary<DTypeSet::float_types>(ctx);
}

// PRelu: y = x < 0 ? slope * x : x, slope broadcast (numpy style) to X's
// shape. Before opset 7 a 1-D slope of X's channel count (dimension 1) is
// per channel, as PyTorch exported it: it is read as [C, 1, ..., 1].

/// Whether the node uses the per-channel slope of opsets 1-6.
bool slope_is_per_channel(int opset, size_t x_rank, size_t slope_rank, int64_t slope_extent, int64_t channels) {
  return opset < 7 && x_rank >= 2 && slope_rank == 1 && slope_extent > 1 && slope_extent == channels;
}

void infer_prelu(InferContext& ctx) {
  require_input_dtype(ctx, 0, DTypeSet::numeric);
  require_same_dtype(ctx, 0, 1);
  const ir::ValueType& x = ctx.input_type(0);
  ir::ValueType slope = ctx.input_type(1);
  if (x.has_rank && slope.has_rank) {
    if (slope.dims.size() == 1 && x.dims.size() >= 2 &&
        slope_is_per_channel(ctx.opset(), x.dims.size(), 1, slope.dims[0].value,
                             x.dims[1].is_known() ? x.dims[1].value : slope.dims[0].value))
      slope.dims.resize(x.dims.size() - 1, ir::Dim::known(1));
    if (slope.dims.size() > x.dims.size())
      ctx.fail("slope of rank ", slope.dims.size(), " does not broadcast to X of rank ", x.dims.size());
    auto dims = broadcast_dims(ctx, {x, slope});
    if (dims) {
      for (size_t d = 0; d < x.dims.size(); ++d)
        if (x.dims[d].is_known() && (*dims)[d].is_known() && x.dims[d].value != (*dims)[d].value)
          ctx.fail("slope of type ", slope.to_string(), " does not broadcast to X of type ", x.to_string());
    }
  }
  infer_same_as_input(ctx);
}

struct PReluOp {
  explicit PReluOp(const KernelContext&) {}
  template <typename C>
  C operator()(C x, C slope) const {
    if constexpr (is_integer_type_v<C>) {
      if constexpr (std::is_unsigned_v<C>) return x;
      using W = wrapping_t<C>;
      return x < C(0) ? static_cast<C>(static_cast<W>(slope) * static_cast<W>(x)) : x;
    } else {
      return x < C(0) ? slope * x : x;
    }
  }
};

void prelu_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor slope = ctx.input(1);
  require_same_dtype(ctx, 0, 1);
  if (x.rank() >= 2 && slope.rank() == 1 &&
      slope_is_per_channel(ctx.opset(), static_cast<size_t>(x.rank()), 1, slope.dim(0), x.dim(1))) {
    Shape per_channel(static_cast<size_t>(x.rank() - 1), 1);
    per_channel[0] = slope.dim(0);
    slope = slope.reshaped(per_channel);
  }
  Shape shape = broadcast_shapes(x.shape(), slope.shape(), ctx.node().describe());
  if (shape != x.shape())
    ctx.fail("slope of shape ", shape_to_string(slope.shape()), " does not broadcast to X of shape ",
             shape_to_string(x.shape()));
  const PReluOp op(ctx);
  visit_dtype_in<DTypeSet::numeric>(x.dtype(), ctx, [&]<typename T>() {
    Tensor& y = allocate_elementwise_output(ctx, x.dtype(), shape, {0});
    zip<T, T, T>(x, slope, y, [&](T u, T v) { return static_cast<T>(op(to_compute(u), to_compute(v))); });
  });
}

// Pointwise expressions (graft/ops/pointwise_expression.h), branch for branch
// the functors above.

using ir::ExprOp;

int32_t relu_expression(PointwiseLowering& l) {
  int32_t x = l.arg(0), zero = l.k(0);
  return l.select(l.cmp(ExprOp::less, x, zero), zero, x);
}

int32_t leaky_relu_expression(PointwiseLowering& l) {
  int32_t x = l.arg(0);
  int32_t scaled = l.bin(ExprOp::mul, l.k(l.attr_float("alpha", 0.01f)), x);
  return l.select(l.cmp(ExprOp::less, x, l.k(0)), scaled, x);
}

int32_t elu_expression(PointwiseLowering& l) {
  int32_t x = l.arg(0);
  int32_t negative = l.bin(ExprOp::mul, l.k(l.attr_float("alpha", 1.0f)), l.un(ExprOp::expm1, x));
  return l.select(l.cmp(ExprOp::less, x, l.k(0)), negative, x);
}

int32_t celu_expression(PointwiseLowering& l) {
  int32_t x = l.arg(0), zero = l.k(0);
  int32_t a = l.k(l.attr_float("alpha", 1.0f));
  int32_t negative = l.bin(ExprOp::mul, a, l.un(ExprOp::expm1, l.bin(ExprOp::div, x, a)));
  return l.keep_nan(x, l.bin(ExprOp::add, l.std_max(zero, x), l.std_min(zero, negative)));
}

std::string check_celu(const ir::Node& node) {
  return node.attributes.get_float("alpha", 1.0f) == 0.0f ? "alpha is 0" : "";
}

int32_t selu_expression(PointwiseLowering& l) {
  int32_t x = l.arg(0);
  int32_t alpha = l.k(l.attr_float("alpha", 1.67326319217681884765625f));
  int32_t gamma = l.k(l.attr_float("gamma", 1.05070102214813232421875f));
  int32_t negative =
      l.bin(ExprOp::mul, gamma, l.bin(ExprOp::sub, l.bin(ExprOp::mul, alpha, l.un(ExprOp::exp, x)), alpha));
  return l.select(l.cmp(ExprOp::greater, x, l.k(0)), l.bin(ExprOp::mul, gamma, x), negative);
}

int32_t softplus_expression(PointwiseLowering& l) { return l.softplus(l.arg(0)); }

int32_t softsign_expression(PointwiseLowering& l) {
  int32_t x = l.arg(0);
  return l.bin(ExprOp::div, x, l.bin(ExprOp::add, l.k(1), l.un(ExprOp::abs, x)));
}

int32_t mish_expression(PointwiseLowering& l) {
  return l.bin(ExprOp::mul, l.arg(0), l.un(ExprOp::tanh, l.softplus(l.arg(0))));
}

int32_t hard_sigmoid_expression(PointwiseLowering& l) {
  int32_t x = l.arg(0);
  int32_t v =
      l.bin(ExprOp::add, l.bin(ExprOp::mul, l.k(l.attr_float("alpha", 0.2f)), x), l.k(l.attr_float("beta", 0.5f)));
  return l.keep_nan(x, l.std_max(l.k(0), l.std_min(l.k(1), v)));
}

int32_t hard_swish_expression(PointwiseLowering& l) {
  int32_t x = l.arg(0);
  int32_t v = l.bin(ExprOp::add, l.bin(ExprOp::div, x, l.k(6)), l.k(0.5));
  return l.bin(ExprOp::mul, x, l.std_max(l.k(0), l.std_min(l.k(1), v)));
}

int32_t thresholded_relu_expression(PointwiseLowering& l) {
  int32_t x = l.arg(0);
  return l.select(l.cmp(ExprOp::greater, x, l.k(l.attr_float("alpha", 1.0f))), x, l.k(0));
}

int32_t shrink_expression(PointwiseLowering& l) {
  int32_t x = l.arg(0);
  float lambd = l.attr_float("lambd", 0.5f), bias = l.attr_float("bias", 0.0f);
  int32_t above = l.select(l.cmp(ExprOp::greater, x, l.k(lambd)), l.bin(ExprOp::sub, x, l.k(bias)), l.k(0));
  return l.select(l.cmp(ExprOp::less, x, l.k(-lambd)), l.bin(ExprOp::add, x, l.k(bias)), above);
}

int32_t gelu_expression(PointwiseLowering& l) {
  int32_t x = l.arg(0);
  int32_t inner;
  if (l.node.attributes.get_string("approximate", "none") == "tanh") {
    int32_t cube = l.bin(ExprOp::mul, l.bin(ExprOp::mul, l.bin(ExprOp::mul, l.k(0.044715), x), x), x);
    int32_t scale = l.k(std::numbers::sqrt2 * std::numbers::inv_sqrtpi);
    inner = l.un(ExprOp::tanh, l.bin(ExprOp::mul, scale, l.bin(ExprOp::add, x, cube)));
  } else {
    inner = l.un(ExprOp::erf, l.bin(ExprOp::mul, x, l.k(std::numbers::sqrt2 / 2)));
  }
  return l.bin(ExprOp::mul, l.bin(ExprOp::mul, l.k(0.5), x), l.bin(ExprOp::add, l.k(1), inner));
}

std::string check_gelu(const ir::Node& node) {
  std::string approximate = node.attributes.get_string("approximate", "none");
  return approximate == "none" || approximate == "tanh" ? "" : "attribute 'approximate' is not none or tanh";
}

int32_t swish_expression(PointwiseLowering& l) {
  int32_t x = l.arg(0);
  return l.bin(ExprOp::mul, x, l.un(ExprOp::sigmoid, l.bin(ExprOp::mul, l.k(l.attr_float("alpha", 1.0f)), x)));
}

int32_t prelu_expression(PointwiseLowering& l) {
  int32_t x = l.arg(0), slope = l.arg(1);
  return l.select(l.cmp(ExprOp::less, x, l.k(0)), l.bin(ExprOp::mul, slope, x), x);
}

std::string check_prelu(const ir::Node& node) {
  return effective_opset(node) < 7 ? "per-channel PRelu of opset < 7 is not fused" : "";
}

constexpr PointwiseExpression kReluExpression{PointwiseInputs::numeric, relu_expression};
constexpr PointwiseExpression kSigmoidExpression{PointwiseInputs::floats, unary_expression<ExprOp::sigmoid>};
constexpr PointwiseExpression kSoftplusExpression{PointwiseInputs::floats, softplus_expression};
constexpr PointwiseExpression kSoftsignExpression{PointwiseInputs::floats, softsign_expression};
constexpr PointwiseExpression kMishExpression{PointwiseInputs::floats, mish_expression};
constexpr PointwiseExpression kEluExpression{PointwiseInputs::floats, elu_expression};
constexpr PointwiseExpression kCeluExpression{PointwiseInputs::floats, celu_expression, check_celu};
constexpr PointwiseExpression kSeluExpression{PointwiseInputs::floats, selu_expression};
constexpr PointwiseExpression kLeakyReluExpression{PointwiseInputs::floats, leaky_relu_expression};
constexpr PointwiseExpression kHardSigmoidExpression{PointwiseInputs::floats, hard_sigmoid_expression};
constexpr PointwiseExpression kHardSwishExpression{PointwiseInputs::floats, hard_swish_expression};
constexpr PointwiseExpression kThresholdedReluExpression{PointwiseInputs::floats, thresholded_relu_expression};
constexpr PointwiseExpression kShrinkExpression{PointwiseInputs::floats, shrink_expression};
constexpr PointwiseExpression kGeluExpression{PointwiseInputs::floats, gelu_expression, check_gelu};
constexpr PointwiseExpression kSwishExpression{PointwiseInputs::floats, swish_expression};
constexpr PointwiseExpression kPReluExpression{PointwiseInputs::numeric, prelu_expression, check_prelu};

}  // namespace

GRAFT_REGISTER_OP("", "Relu", infer_unary<DTypeSet::signed_numeric>, (unary_kernel<DTypeSet::signed_numeric, ReluOp>));
GRAFT_REGISTER_OP("", "Sigmoid", infer_unary<kFloat>, (unary_kernel<kFloat, SigmoidOp>));
GRAFT_REGISTER_OP("", "Softplus", infer_unary<kFloat>, (unary_kernel<kFloat, SoftplusOp>));
GRAFT_REGISTER_OP("", "Softsign", infer_unary<kFloat>, (unary_kernel<kFloat, SoftsignOp>));
GRAFT_REGISTER_OP("", "Mish", infer_unary<kFloat>, (unary_kernel<kFloat, MishOp>));
GRAFT_REGISTER_OP("", "Elu", infer_unary<kFloat>, (unary_kernel<kFloat, EluOp>));
GRAFT_REGISTER_OP("", "Celu", infer_celu, (unary_kernel<kFloat, CeluOp>));
GRAFT_REGISTER_OP("", "Selu", infer_unary<kFloat>, (unary_kernel<kFloat, SeluOp>));
GRAFT_REGISTER_OP("", "LeakyRelu", infer_unary<kFloat>, (unary_kernel<kFloat, LeakyReluOp>));
GRAFT_REGISTER_OP("", "HardSigmoid", infer_unary<kFloat>, (unary_kernel<kFloat, HardSigmoidOp>));
GRAFT_REGISTER_OP("", "HardSwish", infer_unary<kFloat>, (unary_kernel<kFloat, HardSwishOp>));
GRAFT_REGISTER_OP("", "ThresholdedRelu", infer_unary<kFloat>, (unary_kernel<kFloat, ThresholdedReluOp>));
GRAFT_REGISTER_OP("", "Shrink", infer_unary<DTypeSet::numeric>, (unary_kernel<DTypeSet::numeric, ShrinkOp>));
GRAFT_REGISTER_OP("", "Gelu", infer_gelu, (unary_kernel<kFloat, GeluOp>));
GRAFT_REGISTER_OP("", "Swish", infer_unary<kFloat>, (unary_kernel<kFloat, SwishOp>));
GRAFT_REGISTER_OP("", "PRelu", infer_prelu, prelu_kernel);

GRAFT_REGISTER_POINTWISE(Relu, kReluExpression);
GRAFT_REGISTER_POINTWISE(Sigmoid, kSigmoidExpression);
GRAFT_REGISTER_POINTWISE(Softplus, kSoftplusExpression);
GRAFT_REGISTER_POINTWISE(Softsign, kSoftsignExpression);
GRAFT_REGISTER_POINTWISE(Mish, kMishExpression);
GRAFT_REGISTER_POINTWISE(Elu, kEluExpression);
GRAFT_REGISTER_POINTWISE(Celu, kCeluExpression);
GRAFT_REGISTER_POINTWISE(Selu, kSeluExpression);
GRAFT_REGISTER_POINTWISE(LeakyRelu, kLeakyReluExpression);
GRAFT_REGISTER_POINTWISE(HardSigmoid, kHardSigmoidExpression);
GRAFT_REGISTER_POINTWISE(HardSwish, kHardSwishExpression);
GRAFT_REGISTER_POINTWISE(ThresholdedRelu, kThresholdedReluExpression);
GRAFT_REGISTER_POINTWISE(Shrink, kShrinkExpression);
GRAFT_REGISTER_POINTWISE(Gelu, kGeluExpression);
GRAFT_REGISTER_POINTWISE(Swish, kSwishExpression);
GRAFT_REGISTER_POINTWISE(PRelu, kPReluExpression);

// Gradient builders (graft/ops/gradient.h): dx = dy * f'(x).
namespace {

/// dy where x > threshold, else dy * below (0 when `below` is null).
void set_dx_above(GradientContext& g, double threshold, ir::Value below_derivative) {
  using enum ir::OpId;
  ir::Value dy = g.output_gradient(0);
  ir::Value mask = g.add(Greater, {g.input(0), constant(g, threshold)});
  ir::Value below = below_derivative ? g.add(Mul, {dy, below_derivative}) : constant(g, 0);
  g.set_input_gradient(0, g.add(Where, {mask, dy, below}));
}

void relu_gradient(GradientContext& g) { set_dx_above(g, 0, {}); }
void leaky_relu_gradient(GradientContext& g) { set_dx_above(g, 0, constant(g, g.attrs().get_float("alpha", 0.01f))); }
void thresholded_relu_gradient(GradientContext& g) { set_dx_above(g, g.attrs().get_float("alpha", 1.0f), {}); }
// x <= 0: y = alpha (e^x - 1), so y' = y + alpha.
void elu_gradient(GradientContext& g) {
  using enum ir::OpId;
  set_dx_above(g, 0, g.add(Add, {g.output(0), constant(g, g.attrs().get_float("alpha", 1.0f))}));
}
// x <= 0: y = gamma alpha (e^x - 1), y' = y + gamma alpha; x > 0: gamma.
void selu_gradient(GradientContext& g) {
  using enum ir::OpId;
  const double alpha = g.attrs().get_float("alpha", 1.67326319217681884765625f);
  const double gamma = g.attrs().get_float("gamma", 1.05070102214813232421875f);
  ir::Value mask = g.add(Greater, {g.input(0), constant(g, 0)});
  ir::Value derivative =
      g.add(Where, {mask, constant(g, gamma), g.add(Add, {g.output(0), constant(g, gamma * alpha)})});
  set_dx(g, derivative);
}
// x <= 0: y = alpha (e^(x/alpha) - 1), y' = y / alpha + 1.
void celu_gradient(GradientContext& g) {
  using enum ir::OpId;
  const double alpha = g.attrs().get_float("alpha", 1.0f);
  set_dx_above(g, 0, g.add(Add, {g.add(Div, {g.output(0), constant(g, alpha)}), constant(g, 1)}));
}
// sigma' = y (1 - y).
void sigmoid_gradient(GradientContext& g) {
  using enum ir::OpId;
  set_dx(g, g.add(Mul, {g.output(0), g.add(Sub, {constant(g, 1), g.output(0)})}));
}
void softplus_gradient(GradientContext& g) {
  using enum ir::OpId;
  set_dx(g, g.add(Sigmoid, {g.input(0)}));
}
// x / (1 + |x|): 1 / (1 + |x|)^2.
void softsign_gradient(GradientContext& g) {
  using enum ir::OpId;
  ir::Value d = g.add(Add, {constant(g, 1), g.add(Abs, {g.input(0)})});
  g.set_input_gradient(0, g.add(Div, {g.output_gradient(0), g.add(Mul, {d, d})}));
}
// x tanh(softplus(x)): t + x sigma(x) (1 - t^2).
void mish_gradient(GradientContext& g) {
  using enum ir::OpId;
  ir::Value x = g.input(0);
  ir::Value t = g.add(Tanh, {g.add(Softplus, {x})});
  ir::Value one_minus_t2 = g.add(Sub, {constant(g, 1), g.add(Mul, {t, t})});
  set_dx(g, g.add(Add, {t, g.add(Mul, {g.add(Mul, {x, g.add(Sigmoid, {x})}), one_minus_t2})}));
}
// x sigma(a x): s + a x s (1 - s).
void swish_gradient(GradientContext& g) {
  using enum ir::OpId;
  ir::Value x = g.input(0);
  ir::Value a = constant(g, g.attrs().get_float("alpha", 1.0f));
  ir::Value s = g.add(Sigmoid, {g.add(Mul, {a, x})});
  ir::Value rest = g.add(Mul, {g.add(Mul, {a, x}), g.add(Mul, {s, g.add(Sub, {constant(g, 1), s})})});
  set_dx(g, g.add(Add, {s, rest}));
}
// clamp(alpha x + beta, 0, 1): alpha inside (0, 1), else 0.
void hard_sigmoid_gradient(GradientContext& g) {
  using enum ir::OpId;
  const double alpha = g.attrs().get_float("alpha", 0.2f);
  const double beta = g.attrs().get_float("beta", 0.5f);
  ir::Value z = g.add(Add, {g.add(Mul, {g.input(0), constant(g, alpha)}), constant(g, beta)});
  ir::Value inside = g.add(And, {g.add(Greater, {z, constant(g, 0)}), g.add(Less, {z, constant(g, 1)})});
  g.set_input_gradient(0,
                       g.add(Where, {inside, g.add(Mul, {g.output_gradient(0), constant(g, alpha)}), constant(g, 0)}));
}
// x clamp(x/6 + 1/2, 0, 1): 0 below -3, 1 above 3, (2x + 3) / 6 between.
void hard_swish_gradient(GradientContext& g) {
  using enum ir::OpId;
  ir::Value x = g.input(0);
  ir::Value middle = g.add(Div, {g.add(Add, {g.add(Mul, {x, constant(g, 2)}), constant(g, 3)}), constant(g, 6)});
  ir::Value upper = g.add(Where, {g.add(Greater, {x, constant(g, 3)}), constant(g, 1), middle});
  set_dx(g, g.add(Where, {g.add(Less, {x, constant(g, -3)}), constant(g, 0), upper}));
}
// Exact: Phi(x) + x phi(x). Tanh form: with u = c (x + k x^3), t = tanh(u):
// 0.5 (1 + t) + 0.5 x (1 - t^2) c (1 + 3 k x^2).
void gelu_gradient(GradientContext& g) {
  using enum ir::OpId;
  ir::Value x = g.input(0);
  ir::Value x2 = g.add(Mul, {x, x});
  ir::Value derivative;
  if (g.attrs().get_string("approximate", "none") == "tanh") {
    const double c = std::sqrt(2.0 / std::numbers::pi), k = 0.044715;
    ir::Value u = g.add(Mul, {constant(g, c), g.add(Add, {x, g.add(Mul, {constant(g, k), g.add(Mul, {x2, x})})})});
    ir::Value t = g.add(Tanh, {u});
    ir::Value left = g.add(Mul, {constant(g, 0.5), g.add(Add, {constant(g, 1), t})});
    ir::Value du = g.add(Mul, {constant(g, c), g.add(Add, {constant(g, 1), g.add(Mul, {constant(g, 3 * k), x2})})});
    ir::Value right = g.add(
        Mul, {g.add(Mul, {constant(g, 0.5), x}), g.add(Mul, {g.add(Sub, {constant(g, 1), g.add(Mul, {t, t})}), du})});
    derivative = g.add(Add, {left, right});
  } else {
    ir::Value cdf = g.add(
        Mul,
        {constant(g, 0.5), g.add(Add, {constant(g, 1), g.add(Erf, {g.add(Mul, {x, constant(g, std::sqrt(0.5))})})})});
    ir::Value pdf = g.add(
        Mul, {constant(g, 1.0 / std::sqrt(2 * std::numbers::pi)), g.add(Exp, {g.add(Mul, {x2, constant(g, -0.5)})})});
    derivative = g.add(Add, {cdf, g.add(Mul, {x, pdf})});
  }
  set_dx(g, derivative);
}
// PRelu(x, slope): dx = dy where x > 0 else dy slope; dslope = dy x where x <= 0.
void prelu_gradient(GradientContext& g) {
  using enum ir::OpId;
  ir::Value dy = g.output_gradient(0);
  ir::Value mask = g.add(Greater, {g.input(0), constant(g, 0)});
  if (g.needs_input_gradient(0)) g.set_input_gradient(0, g.add(Where, {mask, dy, g.add(Mul, {dy, g.input(1)})}));
  if (g.needs_input_gradient(1))
    g.set_input_gradient(1, g.add(Where, {mask, constant(g, 0), g.add(Mul, {dy, g.input(0)})}));
}

}  // namespace

GRAFT_REGISTER_GRADIENT(Relu, relu_gradient);
GRAFT_REGISTER_GRADIENT(LeakyRelu, leaky_relu_gradient);
GRAFT_REGISTER_GRADIENT(ThresholdedRelu, thresholded_relu_gradient);
GRAFT_REGISTER_GRADIENT(Elu, elu_gradient);
GRAFT_REGISTER_GRADIENT(Selu, selu_gradient);
GRAFT_REGISTER_GRADIENT(Celu, celu_gradient);
GRAFT_REGISTER_GRADIENT(Sigmoid, sigmoid_gradient);
GRAFT_REGISTER_GRADIENT(Softplus, softplus_gradient);
GRAFT_REGISTER_GRADIENT(Softsign, softsign_gradient);
GRAFT_REGISTER_GRADIENT(Mish, mish_gradient);
GRAFT_REGISTER_GRADIENT(Swish, swish_gradient);
GRAFT_REGISTER_GRADIENT(HardSigmoid, hard_sigmoid_gradient);
GRAFT_REGISTER_GRADIENT(HardSwish, hard_swish_gradient);
GRAFT_REGISTER_GRADIENT(Gelu, gelu_gradient);
GRAFT_REGISTER_GRADIENT(PRelu, prelu_gradient);

}  // namespace graft::ops
