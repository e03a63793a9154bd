// Sum, Mean, Max and Min of one or more inputs with numpy broadcasting. The
// output is folded pairwise: out = f(in0, in1), then out = f(out, in_i); the
// output may reuse the buffer of input 0 or 1 (never a later input, which
// would be overwritten before it is read). Max and Min propagate NaN.
#include "elementwise_kernels.h"
#include "graft/ops/gradient.h"
#include "graft/ops/pointwise_expression.h"

namespace graft::ops {
namespace {

using namespace elementwise;

struct PairwiseSum {
  template <typename C>
  C operator()(C a, C b) const {
    if constexpr (is_integer_type_v<C>)
      return static_cast<C>(static_cast<wrapping_t<C>>(a) + static_cast<wrapping_t<C>>(b));
    else
      return a + b;
  }
};

struct PairwiseMax {
  template <typename C>
  C operator()(C a, C b) const {
    return (a != a || a > b) ? a : b;  // a != a: a is NaN; a NaN b falls through to b
  }
};

struct PairwiseMin {
  template <typename C>
  C operator()(C a, C b) const {
    return (a != a || a < b) ? a : b;
  }
};

template <DTypeSet set, typename Op, bool mean = false>
void variadic_kernel(KernelContext& ctx) {
  size_t n = ctx.num_inputs();
  if (n == 0) ctx.fail("needs at least one input");
  for (size_t i = 0; i < n; ++i) {
    ctx.input(i);  // fails naming the input when it is absent
    if (i > 0) require_same_dtype(ctx, 0, i);
  }
  const Tensor& first = ctx.input(0);
  if (n == 1) {
    visit_dtype_in<set>(first.dtype(), ctx, [&]<typename T>() { ctx.set_output(0, first); });
    return;
  }
  Shape shape = broadcast_input_shapes(ctx, n);
  const Op op;
  visit_dtype_in<set>(first.dtype(), ctx, [&]<typename T>() {
    auto apply = [&](T u, T v) { return static_cast<T>(op(to_compute(u), to_compute(v))); };
    Tensor& y = allocate_elementwise_output(ctx, first.dtype(), shape, {0, 1});
    zip<T, T, T>(first, ctx.input(1), y, apply);
    for (size_t i = 2; i < n; ++i) zip<T, T, T>(y, ctx.input(i), y, apply);
    if constexpr (mean) {
      using C = compute_t<T>;
      const C count = static_cast<C>(n);
      map(y.data<T>(), y.data<T>(), y.numel(), kCheapGrain, [=](T v) { return static_cast<T>(to_compute(v) / count); });
    }
  });
}

// Pointwise expressions (graft/ops/pointwise_expression.h).

using ir::ExprOp;

/// As the kernel: pairwise, the result of each step stored in the node's
/// dtype (the last one is rounded by lower_pointwise).
int32_t fold(PointwiseLowering& l, ExprOp op) {
  int32_t acc = l.arg(0);
  for (size_t i = 1; i < l.args.size(); ++i) acc = l.bin(op, i > 1 ? l.rounded(acc) : acc, l.arg(i));
  return acc;
}

int32_t sum_expression(PointwiseLowering& l) { return fold(l, ExprOp::add); }
int32_t max_expression(PointwiseLowering& l) { return fold(l, ExprOp::max); }
int32_t min_expression(PointwiseLowering& l) { return fold(l, ExprOp::min); }
int32_t mean_expression(PointwiseLowering& l) {
  return l.bin(ExprOp::div, l.rounded(fold(l, ExprOp::add)), l.k(static_cast<double>(l.args.size())));
}

constexpr PointwiseExpression kSumExpression{PointwiseInputs::numeric, sum_expression};
constexpr PointwiseExpression kMeanExpression{PointwiseInputs::floats, mean_expression};
constexpr PointwiseExpression kMaxExpression{PointwiseInputs::numeric, max_expression};
constexpr PointwiseExpression kMinExpression{PointwiseInputs::numeric, min_expression};

}  // namespace

GRAFT_REGISTER_OP("", "Sum", infer_broadcast_same_dtype<kNumeric>, (variadic_kernel<kNumeric, PairwiseSum>));
GRAFT_REGISTER_OP("", "Mean", infer_broadcast_same_dtype<kFloat>, (variadic_kernel<kFloat, PairwiseSum, true>));
GRAFT_REGISTER_OP("", "Max", infer_broadcast_same_dtype<kNumeric>, (variadic_kernel<kNumeric, PairwiseMax>));
GRAFT_REGISTER_OP("", "Min", infer_broadcast_same_dtype<kNumeric>, (variadic_kernel<kNumeric, PairwiseMin>));

GRAFT_REGISTER_POINTWISE(Sum, kSumExpression);
GRAFT_REGISTER_POINTWISE(Mean, kMeanExpression);
GRAFT_REGISTER_POINTWISE(Max, kMaxExpression);
GRAFT_REGISTER_POINTWISE(Min, kMinExpression);

// Gradient builders (graft/ops/gradient.h). Max and Min send dy to every
// input equal to the result (ties are measure zero on real data).
namespace {

void sum_gradient(GradientContext& g) {
  for (size_t i = 0; i < g.num_inputs(); ++i)
    if (g.needs_input_gradient(i)) g.set_input_gradient(i, g.output_gradient(0));
}

void mean_gradient(GradientContext& g) {
  ir::Value scaled = g.add(
      ir::OpId::Div, {g.output_gradient(0), g.scalar(static_cast<double>(g.num_inputs()), g.output_type(0).dtype)});
  for (size_t i = 0; i < g.num_inputs(); ++i)
    if (g.needs_input_gradient(i)) g.set_input_gradient(i, scaled);
}

void extremum_gradient(GradientContext& g) {
  using enum ir::OpId;
  ir::Value zero = g.scalar(0, g.output_type(0).dtype);
  for (size_t i = 0; i < g.num_inputs(); ++i)
    if (g.needs_input_gradient(i))
      g.set_input_gradient(i, g.add(Where, {g.add(Equal, {g.input(i), g.output(0)}), g.output_gradient(0), zero}));
}

}  // namespace

GRAFT_REGISTER_GRADIENT(Sum, sum_gradient);
GRAFT_REGISTER_GRADIENT(Mean, mean_gradient);
GRAFT_REGISTER_GRADIENT(Max, extremum_gradient);
GRAFT_REGISTER_GRADIENT(Min, extremum_gradient);

}  // namespace graft::ops
