// The Reduce* family: ReduceSum, ReduceSumSquare, ReduceMean, ReduceProd,
// ReduceMax, ReduceMin, ReduceL1, ReduceL2, ReduceLogSum, ReduceLogSumExp.
//
// Axes come from the `axes` attribute (ReduceSum before opset 13, the others
// before opset 18) or from the optional second input (later opsets); an absent
// or empty list reduces every axis, unless noop_with_empty_axes = 1, which
// makes the op an identity. keepdims (default 1) keeps reduced dimensions as 1.
//
// Each op is an accumulator (init, add, finish). The input is viewed through a
// ReductionLayout: contiguous rows, [outer, reduced, inner] columns (the
// accumulators of `inner` neighbouring outputs advance together, so memory is
// read in order), or offset tables for any other pattern. Floating types
// accumulate in float (double for float64); integer sums and products wrap.
// Reducing an empty set gives the op's identity (0 for sums, 1 for products,
// -inf / the lowest value for Max, and so on; Mean of nothing is NaN).
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "graft/core/parallel.h"
#include "graft/ops/gradient.h"
#include "graft/ops/infer_util.h"
#include "graft/ops/op_context.h"
#include "math_common.h"
#include "vector_math.h"

namespace graft::ops {
namespace {

/// The accumulation type of T: float for half types, T otherwise.
template <typename T>
using Wide = compute_t<T>;

/// Wrapping add / multiply for integers (unsigned arithmetic), plain for floats.
template <typename A>
A wrap_add(A a, A b) {
  if constexpr (std::is_integral_v<A>)
    return static_cast<A>(static_cast<std::make_unsigned_t<A>>(a) + static_cast<std::make_unsigned_t<A>>(b));
  else
    return a + b;
}
template <typename A>
A wrap_mul(A a, A b) {
  if constexpr (std::is_integral_v<A>)
    return static_cast<A>(static_cast<std::make_unsigned_t<A>>(a) * static_cast<std::make_unsigned_t<A>>(b));
  else
    return a * b;
}

template <typename A>
bool is_nan(A v) {
  if constexpr (std::is_floating_point_v<A>)
    return std::isnan(v);
  else
    return false;
}

template <typename T>
T from_double(double v) {
  if constexpr (std::is_integral_v<T>) {
    if (std::isnan(v)) return T(0);
    if (v <= static_cast<double>(std::numeric_limits<T>::lowest())) return std::numeric_limits<T>::lowest();
    if (v >= static_cast<double>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
    return static_cast<T>(v);
  } else {
    return static_cast<T>(static_cast<compute_t<T>>(v));
  }
}

template <typename T>
struct SumOp {
  using Acc = Wide<T>;
  static Acc init() { return Acc(0); }
  static void add(Acc& a, T x) { a = wrap_add(a, static_cast<Acc>(x)); }
  static T finish(Acc a, int64_t) { return static_cast<T>(a); }
};

template <typename T>
struct SumSquareOp {
  using Acc = Wide<T>;
  static Acc init() { return Acc(0); }
  static void add(Acc& a, T x) { a = wrap_add(a, wrap_mul(static_cast<Acc>(x), static_cast<Acc>(x))); }
  static T finish(Acc a, int64_t) { return static_cast<T>(a); }
};

template <typename T>
struct L1Op {
  using Acc = Wide<T>;
  static Acc init() { return Acc(0); }
  static void add(Acc& a, T x) {
    const Acc v = static_cast<Acc>(x);
    if constexpr (std::is_unsigned_v<Acc>)
      a = wrap_add(a, v);
    else
      a = wrap_add(a, v < Acc(0) ? static_cast<Acc>(Acc(0) - v) : v);
  }
  static T finish(Acc a, int64_t) { return static_cast<T>(a); }
};

template <typename T>
struct L2Op {
  using Acc = Wide<T>;
  static Acc init() { return Acc(0); }
  static void add(Acc& a, T x) { a = wrap_add(a, wrap_mul(static_cast<Acc>(x), static_cast<Acc>(x))); }
  static T finish(Acc a, int64_t) {
    if constexpr (std::is_integral_v<Acc>)
      return from_double<T>(std::sqrt(static_cast<double>(a)));
    else
      return static_cast<T>(std::sqrt(a));
  }
};

template <typename T>
struct LogSumOp {
  using Acc = Wide<T>;
  static Acc init() { return Acc(0); }
  static void add(Acc& a, T x) { a = wrap_add(a, static_cast<Acc>(x)); }
  static T finish(Acc a, int64_t) {
    if constexpr (std::is_integral_v<Acc>)
      return from_double<T>(std::log(static_cast<double>(a)));
    else
      return static_cast<T>(std::log(a));
  }
};

template <typename T>
struct LogSumExpOp {
  using F = std::conditional_t<std::is_same_v<T, double> || std::is_integral_v<T>, double, float>;
  /// Running maximum and the sum of exp(x - maximum) (online, overflow-free).
  struct Acc {
    F max, sum;
  };
  static Acc init() { return {-std::numeric_limits<F>::infinity(), F(0)}; }
  static void add(Acc& a, T x) {
    const F v = static_cast<F>(static_cast<compute_t<T>>(x));
    if (v == -std::numeric_limits<F>::infinity()) return;
    if (v > a.max) {
      a.sum = a.sum * std::exp(a.max - v) + F(1);
      a.max = v;
    } else {
      a.sum += std::exp(v - a.max);
    }
  }
  static T finish(Acc a, int64_t) {
    if (a.sum == F(0)) return from_double<T>(-std::numeric_limits<double>::infinity());
    return from_double<T>(static_cast<double>(a.max + std::log(a.sum)));
  }
};

template <typename T>
struct MaxOp {
  using Acc = Wide<T>;
  static Acc init() {
    if constexpr (std::is_floating_point_v<Acc>)
      return -std::numeric_limits<Acc>::infinity();
    else
      return std::numeric_limits<Acc>::lowest();
  }
  static void add(Acc& a, T x) {
    const Acc v = static_cast<Acc>(x);
    if (v > a || is_nan(v)) a = v;  // NaN propagates
  }
  static T finish(Acc a, int64_t) { return static_cast<T>(a); }
};

template <typename T>
struct MinOp {
  using Acc = Wide<T>;
  static Acc init() {
    if constexpr (std::is_floating_point_v<Acc>)
      return std::numeric_limits<Acc>::infinity();
    else
      return std::numeric_limits<Acc>::max();
  }
  static void add(Acc& a, T x) {
    const Acc v = static_cast<Acc>(x);
    if (v < a || is_nan(v)) a = v;
  }
  static T finish(Acc a, int64_t) { return static_cast<T>(a); }
};

template <typename T>
struct ProdOp {
  using Acc = Wide<T>;
  static Acc init() { return Acc(1); }
  static void add(Acc& a, T x) { a = wrap_mul(a, static_cast<Acc>(x)); }
  static T finish(Acc a, int64_t) { return static_cast<T>(a); }
};

template <typename T>
struct MeanOp {
  using Acc = Wide<T>;
  static Acc init() { return Acc(0); }
  static void add(Acc& a, T x) { a = wrap_add(a, static_cast<Acc>(x)); }
  static T finish(Acc a, int64_t count) {
    if constexpr (std::is_integral_v<Acc>)
      return count == 0 ? T(0) : static_cast<T>(a / static_cast<Acc>(count));
    else
      return static_cast<T>(a / static_cast<Acc>(count));
  }
};

/// Ops whose float32 rows can accumulate with vector_math::sum (their
/// accumulator is the plain sum) or squared_deviation_sum around 0.
template <typename O>
constexpr bool kVectorSum =
    std::is_same_v<O, SumOp<float>> || std::is_same_v<O, MeanOp<float>> || std::is_same_v<O, LogSumOp<float>>;
template <typename O>
constexpr bool kVectorSumOfSquares = std::is_same_v<O, SumSquareOp<float>> || std::is_same_v<O, L2Op<float>>;

/// Runs `Op` over `layout`, writing kept_count() outputs.
template <typename T, template <typename> class Op>
void reduce_typed(const T* in, T* out, const ReductionLayout& layout) {
  using O = Op<T>;
  using Acc = typename O::Acc;
  const int64_t reduced = layout.reduced_count();
  const int64_t outputs = layout.kept_count();
  using Kind = ReductionLayout::Kind;
  if (layout.kind == Kind::rows) {
    const int64_t grain = std::max<int64_t>(1, 32768 / std::max<int64_t>(reduced, 1));
    parallel_for(outputs, grain, [&](int64_t begin, int64_t end) {
      for (int64_t o = begin; o < end; ++o) {
        const T* row = in + o * reduced;
        if constexpr (std::is_same_v<T, float> && kVectorSum<O>) {
          out[o] = O::finish(vector_math::sum(row, reduced), reduced);
          continue;
        } else if constexpr (std::is_same_v<T, float> && kVectorSumOfSquares<O>) {
          out[o] = O::finish(vector_math::squared_deviation_sum(row, reduced, 0.0f), reduced);
          continue;
        }
        Acc a = O::init();
        for (int64_t r = 0; r < reduced; ++r) O::add(a, row[r]);
        out[o] = O::finish(a, reduced);
      }
    });
  } else if (layout.kind == Kind::columns) {
    constexpr int64_t kChunk = 512;
    const int64_t inner = layout.inner;
    const int64_t chunks = (inner + kChunk - 1) / kChunk;
    const int64_t grain = std::max<int64_t>(1, 32768 / std::max<int64_t>(reduced * std::min(inner, kChunk), 1));
    parallel_for(layout.outer * chunks, grain, [&](int64_t begin, int64_t end) {
      std::vector<Acc> acc(static_cast<size_t>(std::min(inner, kChunk)));
      for (int64_t task = begin; task < end; ++task) {
        const int64_t o = task / chunks, c0 = (task % chunks) * kChunk;
        const int64_t width = std::min(kChunk, inner - c0);
        std::fill(acc.begin(), acc.begin() + width, O::init());
        const T* base = in + o * reduced * inner + c0;
        for (int64_t r = 0; r < reduced; ++r) {
          const T* row = base + r * inner;
          for (int64_t i = 0; i < width; ++i) O::add(acc[static_cast<size_t>(i)], row[i]);
        }
        for (int64_t i = 0; i < width; ++i) out[o * inner + c0 + i] = O::finish(acc[static_cast<size_t>(i)], reduced);
      }
    });
  } else {
    const int64_t grain = std::max<int64_t>(1, 32768 / std::max<int64_t>(reduced, 1));
    parallel_for(outputs, grain, [&](int64_t begin, int64_t end) {
      for (int64_t o = begin; o < end; ++o) {
        const T* base = in + layout.kept_offsets[static_cast<size_t>(o)];
        Acc a = O::init();
        for (int64_t r = 0; r < reduced; ++r) O::add(a, base[layout.reduced_offsets[static_cast<size_t>(r)]]);
        out[o] = O::finish(a, reduced);
      }
    });
  }
}

/// First opset where this op takes its axes as an input.
int axes_input_opset(const ir::Node& node) { return node.op() == ir::OpId::ReduceSum ? 13 : 18; }

/// What the node says about its axes: a list, "unknown" (a non-constant
/// input), and whether an empty list means identity.
struct AxesSpec {
  std::optional<std::vector<int64_t>> axes;  // nullopt: unknown at inference time
  bool noop_with_empty_axes = false;
  bool keepdims = true;
};

AxesSpec axes_from_attribute(const ir::Node& node, const ir::Attributes& attributes) {
  AxesSpec spec;
  spec.keepdims = attributes.get_int("keepdims", 1) != 0;
  spec.noop_with_empty_axes =
      node.opset_version >= axes_input_opset(node) && attributes.get_int("noop_with_empty_axes", 0) != 0;
  spec.axes = attributes.get_ints("axes", {});
  return spec;
}

void infer_reduce(InferContext& ctx) {
  const ir::ValueType& x = ctx.input_type(0);
  AxesSpec spec = axes_from_attribute(ctx.node(), ctx.attrs());
  if (ctx.has_input(1)) spec.axes = constant_ints(ctx, 1);
  if (!x.has_rank) return set_output_dtype_only(ctx, 0, x.dtype);
  const int64_t rank = static_cast<int64_t>(x.dims.size());
  if (!spec.axes) {
    // Unknown axes: with keepdims the rank survives, nothing else is known.
    if (!spec.keepdims) return set_output_dtype_only(ctx, 0, x.dtype);
    ctx.set_output(0, ir::ValueType{x.dtype, true, std::vector<ir::Dim>(x.dims.size())});
    return;
  }
  if (spec.axes->empty()) {
    if (spec.noop_with_empty_axes) return ctx.set_output(0, x);
    for (int64_t d = 0; d < rank; ++d) spec.axes->push_back(d);
  }
  const std::vector<int64_t> axes = normalize_axes(*spec.axes, rank, ctx.node().describe());
  ctx.set_output(0, ir::ValueType{x.dtype, true, reduced_dims(x.dims, axes, spec.keepdims)});
}

template <template <typename> class Op>
void reduce_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  AxesSpec spec = axes_from_attribute(ctx.node(), ctx.attrs());
  if (ctx.has_input(1)) {
    const Tensor& axes_tensor = ctx.input(1);
    if (!dtype_is_integer(axes_tensor.dtype()) || axes_tensor.rank() > 1)
      ctx.fail("axes must be a 1-D integer tensor, got ", axes_tensor.type_string());
    spec.axes = axes_tensor.to_int64_vector();
  }
  const int64_t rank = x.rank();
  if (spec.axes->empty()) {
    // noop_with_empty_axes reduces over no axis: each element alone, which is
    // the element itself for ReduceSum, Mean, Max, Min and Prod, but |x| for
    // L1 and L2, x * x for SumSquare and log(x) for LogSum (ONNX's reference
    // and ONNX Runtime; returning x unchanged was wrong for those).
    if (!spec.noop_with_empty_axes)
      for (int64_t d = 0; d < rank; ++d) spec.axes->push_back(d);
  }
  const std::vector<int64_t> axes = normalize_axes(*spec.axes, rank, ctx.node().describe());
  Shape out_shape;
  for (int64_t d = 0; d < rank; ++d) {
    const bool reduced = std::binary_search(axes.begin(), axes.end(), d);
    if (!reduced)
      out_shape.push_back(x.dim(d));
    else if (spec.keepdims)
      out_shape.push_back(1);
  }
  constexpr bool kMaxOrMin = std::is_same_v<Op<float>, MaxOp<float>> || std::is_same_v<Op<float>, MinOp<float>>;
  if (x.dtype() == DType::boolean && !kMaxOrMin)
    ctx.fail(ctx.node().op_type(), " is not defined for bool (ReduceMax and ReduceMin are, from opset 20)");
  Tensor& y = ctx.allocate_output(0, x.dtype(), out_shape);
  if (y.numel() == 0) return;
  // Only now: the layout's offset tables grow with the kept and reduced
  // extents, which an empty input does not bound, the checked output does.
  const ReductionLayout layout = make_reduction_layout(x.shape(), axes);
  if (x.dtype() == DType::boolean) {
    // Max is any, min is all: the bytes 0 and 1 as uint8, then each result
    // back to 0 or 1 (a min over no elements gives 255: true, as all()).
    if constexpr (kMaxOrMin) {
      uint8_t* out = reinterpret_cast<uint8_t*>(y.data<bool>());
      reduce_typed<uint8_t, Op>(reinterpret_cast<const uint8_t*>(x.data<bool>()), out, layout);
      for (int64_t i = 0; i < y.numel(); ++i) out[i] = out[i] != 0;
    }
    return;
  }
  visit_numeric_dtype(x.dtype(), ctx.node().describe(), [&]<typename T>() {
    if constexpr (!std::is_same_v<T, bool>) reduce_typed<T, Op>(x.data<T>(), y.data<T>(), layout);
  });
}

}  // namespace

GRAFT_REGISTER_OP("", "ReduceSum", infer_reduce, reduce_kernel<SumOp>);
GRAFT_REGISTER_OP("", "ReduceSumSquare", infer_reduce, reduce_kernel<SumSquareOp>);
GRAFT_REGISTER_OP("", "ReduceMean", infer_reduce, reduce_kernel<MeanOp>);
GRAFT_REGISTER_OP("", "ReduceProd", infer_reduce, reduce_kernel<ProdOp>);
GRAFT_REGISTER_OP("", "ReduceMax", infer_reduce, reduce_kernel<MaxOp>);
GRAFT_REGISTER_OP("", "ReduceMin", infer_reduce, reduce_kernel<MinOp>);
GRAFT_REGISTER_OP("", "ReduceL1", infer_reduce, reduce_kernel<L1Op>);
GRAFT_REGISTER_OP("", "ReduceL2", infer_reduce, reduce_kernel<L2Op>);
GRAFT_REGISTER_OP("", "ReduceLogSum", infer_reduce, reduce_kernel<LogSumOp>);
GRAFT_REGISTER_OP("", "ReduceLogSumExp", infer_reduce, reduce_kernel<LogSumExpOp>);

// Gradient builders (graft/ops/gradient.h): dy (with the reduced axes kept
// as 1) expanded back to the input's shape, times each op's local derivative.
namespace {

/// dy and the forward output reshaped with the reduced axes kept (extent 1),
/// so they broadcast against the input.
struct KeptReduction {
  ir::Value dy, y;
  double count = 1;  ///< elements reduced into each output
};

KeptReduction kept_reduction(GradientContext& g) {
  using enum ir::OpId;
  AxesSpec spec = axes_from_attribute(g.node(), g.attrs());
  if (g.has_input(1)) spec.axes = g.constant_ints(1);
  if (!spec.axes) g.unsupported("the axes must be a constant");
  std::vector<int64_t> dims = g.known_dims(g.input(0));
  const int64_t rank = static_cast<int64_t>(dims.size());
  if (spec.axes->empty() && !spec.noop_with_empty_axes)
    for (int64_t d = 0; d < rank; ++d) spec.axes->push_back(d);
  const std::vector<int64_t> axes = normalize_axes(*spec.axes, rank, g.node().describe());
  KeptReduction k{g.output_gradient(0), g.output(0)};
  std::vector<int64_t> kept = dims;
  for (int64_t a : axes) {
    k.count *= static_cast<double>(dims[static_cast<size_t>(a)]);
    kept[static_cast<size_t>(a)] = 1;
  }
  if (!spec.keepdims) {
    ir::Value shape = g.int64s(kept);
    k.dy = g.add(Reshape, {k.dy, shape});
    k.y = g.add(Reshape, {k.y, shape});
  }
  return k;
}

ir::Value expand_to_input(GradientContext& g, ir::Value v) {
  using enum ir::OpId;
  return g.add(Expand, {v, g.shape_of(g.input(0))});
}

void reduce_sum_gradient(GradientContext& g) { g.set_input_gradient(0, expand_to_input(g, kept_reduction(g).dy)); }

void reduce_mean_gradient(GradientContext& g) {
  using enum ir::OpId;
  KeptReduction k = kept_reduction(g);
  g.set_input_gradient(0, expand_to_input(g, g.add(Div, {k.dy, constant(g, k.count)})));
}

// d sum(x^2) = 2 x.
void reduce_sum_square_gradient(GradientContext& g) {
  using enum ir::OpId;
  KeptReduction k = kept_reduction(g);
  g.set_input_gradient(0, g.add(Mul, {g.add(Mul, {k.dy, constant(g, 2)}), g.input(0)}));
}

// Max, Min: dy to every element equal to the result.
void reduce_extremum_gradient(GradientContext& g) {
  using enum ir::OpId;
  KeptReduction k = kept_reduction(g);
  ir::Value mask = g.add(Equal, {g.input(0), k.y});
  g.set_input_gradient(0, g.add(Where, {mask, expand_to_input(g, k.dy), constant(g, 0)}));
}

// d sqrt(sum(x^2)) = x / y.
void reduce_l2_gradient(GradientContext& g) {
  using enum ir::OpId;
  KeptReduction k = kept_reduction(g);
  g.set_input_gradient(0, g.add(Mul, {k.dy, g.add(Div, {g.input(0), k.y})}));
}

// d log(sum(exp(x))) = exp(x - y).
void reduce_log_sum_exp_gradient(GradientContext& g) {
  using enum ir::OpId;
  KeptReduction k = kept_reduction(g);
  g.set_input_gradient(0, g.add(Mul, {k.dy, g.add(Exp, {g.add(Sub, {g.input(0), k.y})})}));
}

}  // namespace

GRAFT_REGISTER_GRADIENT(ReduceSum, reduce_sum_gradient);
GRAFT_REGISTER_GRADIENT(ReduceMean, reduce_mean_gradient);
GRAFT_REGISTER_GRADIENT(ReduceSumSquare, reduce_sum_square_gradient);
GRAFT_REGISTER_GRADIENT(ReduceMax, reduce_extremum_gradient);
GRAFT_REGISTER_GRADIENT(ReduceMin, reduce_extremum_gradient);
GRAFT_REGISTER_GRADIENT(ReduceL2, reduce_l2_gradient);
GRAFT_REGISTER_GRADIENT(ReduceLogSumExp, reduce_log_sum_exp_gradient);

// More reductions: L1 (sign(x)), LogSum (1 / sum, i.e. exp(-y)), Prod (y / x;
// inputs with zeros are not supported: the quotient is undefined there).
namespace {

void reduce_l1_gradient(GradientContext& g) {
  using enum ir::OpId;
  KeptReduction k = kept_reduction(g);
  g.set_input_gradient(0, g.add(Mul, {k.dy, g.add(Sign, {g.input(0)})}));
}

void reduce_log_sum_gradient(GradientContext& g) {
  using enum ir::OpId;
  KeptReduction k = kept_reduction(g);
  g.set_input_gradient(0, expand_to_input(g, g.add(Mul, {k.dy, g.add(Exp, {g.add(Neg, {k.y})})})));
}

void reduce_prod_gradient(GradientContext& g) {
  using enum ir::OpId;
  KeptReduction k = kept_reduction(g);
  g.set_input_gradient(0, g.add(Mul, {k.dy, g.add(Div, {k.y, g.input(0)})}));
}

}  // namespace

GRAFT_REGISTER_GRADIENT(ReduceL1, reduce_l1_gradient);
GRAFT_REGISTER_GRADIENT(ReduceLogSum, reduce_log_sum_gradient);
GRAFT_REGISTER_GRADIENT(ReduceProd, reduce_prod_gradient);

}  // namespace graft::ops
