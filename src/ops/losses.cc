// NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss.
//
// NLL: input (N, C, d1, ..., dk) holds log-probabilities, target (N, d1, ...,
// dk) class indices. Each position contributes -input[n, target, d...] times
// weight[target] (1 without weights); a position whose target equals
// ignore_index contributes 0 with weight 0. reduction "none" returns the
// per-position losses, "sum" their sum, "mean" their sum divided by the sum
// of the weights used.
// SCE: log_softmax over the class axis (output 1, log_prob, when asked for),
// then NLL on it.
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "graft/core/parallel.h"
#include "graft/ops/gradient.h"
#include "graft/ops/op_context.h"
#include "math_common.h"

namespace graft::ops {
namespace {

enum class Reduction { none, sum, mean };

Reduction parse_reduction(const ir::Node& node, const ir::Attributes& attributes) {
  const std::string r = attributes.get_string("reduction", "mean");
  if (r == "none") return Reduction::none;
  if (r == "sum") return Reduction::sum;
  if (r == "mean") return Reduction::mean;
  fail(ErrorKind::invalid_model, node.describe(), ": reduction '", r, "' is not none, sum or mean");
}

void infer_loss(InferContext& ctx) {
  const ir::ValueType& scores = ctx.input_type(0);
  const ir::ValueType& target = ctx.input_type(1);
  if (scores.has_rank && scores.dims.size() < 2) ctx.fail("input must have rank >= 2, got ", scores.to_string());
  if (parse_reduction(ctx.node(), ctx.attrs()) == Reduction::none)
    ctx.set_output(0, ir::ValueType{scores.dtype, target.has_rank, target.dims});
  else
    ctx.set_output(0, ir::ValueType{scores.dtype, true, {}});
  if (ctx.num_outputs() > 1) ctx.set_output(1, scores);
}

/// The [N, C, D] view of the scores and the matching checks on target/weight.
struct LossView {
  int64_t batch = 1, classes = 1, positions = 1;
};

LossView loss_view(const KernelContext& ctx, const Tensor& scores, const Tensor& target) {
  if (scores.rank() < 2) ctx.fail("input must have rank >= 2, got ", scores.type_string());
  Shape expected = {scores.dim(0)};
  for (int64_t d = 2; d < scores.rank(); ++d) expected.push_back(scores.dim(d));
  if (target.shape() != expected)
    ctx.fail("target ", target.type_string(), " must have shape ", shape_to_string(expected), " for input ",
             scores.type_string());
  if (target.dtype() != DType::int32 && target.dtype() != DType::int64)
    ctx.fail("target must be int32 or int64, got ", target.type_string());
  LossView v;
  v.batch = scores.dim(0);
  v.classes = scores.dim(1);
  v.positions = v.batch == 0 || v.classes == 0 ? 0 : scores.numel() / (v.batch * v.classes);
  if (v.classes == 0) v.positions = shape_numel(expected) / std::max<int64_t>(v.batch, 1);
  return v;
}

/// NLL over log-probabilities `log_prob` ([N, C, D] in W); writes output 0.
template <typename T, typename W>
void negative_log_likelihood(KernelContext& ctx, const W* log_prob, const LossView& v, const Tensor& target,
                             const Shape& target_shape) {
  const Reduction reduction = parse_reduction(ctx.node(), ctx.attrs());
  std::optional<int64_t> ignore_index;
  if (ctx.attrs().has("ignore_index")) ignore_index = ctx.attrs().get_int("ignore_index");
  std::vector<W> weights;
  if (ctx.has_input(2)) {
    const Tensor& w = ctx.input(2);
    if (w.rank() != 1 || w.dim(0) != v.classes)
      ctx.fail("weight ", w.type_string(), " must be 1-D with one value per class (", v.classes, ")");
    weights = tensor_to_vector<W>(w);
  }
  const std::vector<int64_t> targets = target.to_int64_vector();
  const int64_t count = v.batch * v.positions;
  std::vector<W> losses(static_cast<size_t>(count)), used_weights(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) {
    const int64_t t = targets[static_cast<size_t>(i)];
    if (ignore_index && t == *ignore_index) continue;  // loss 0, weight 0
    if (t < 0 || t >= v.classes)
      ctx.fail("target value ", t, " at position ", i, " is not a class index in [0, ", v.classes, ")");
    const int64_t n = i / v.positions, d = i % v.positions;
    const W w = weights.empty() ? W(1) : weights[static_cast<size_t>(t)];
    losses[static_cast<size_t>(i)] = -log_prob[(n * v.classes + t) * v.positions + d] * w;
    used_weights[static_cast<size_t>(i)] = w;
  }
  if (reduction == Reduction::none) {
    Tensor& out = ctx.allocate_output(0, dtype_v<T>, target_shape);
    T* p = out.data<T>();
    for (int64_t i = 0; i < count; ++i) p[i] = static_cast<T>(losses[static_cast<size_t>(i)]);
    return;
  }
  W total = 0, total_weight = 0;
  for (int64_t i = 0; i < count; ++i) {
    total += losses[static_cast<size_t>(i)];
    total_weight += used_weights[static_cast<size_t>(i)];
  }
  Tensor& out = ctx.allocate_output(0, dtype_v<T>, {});
  out.data<T>()[0] = static_cast<T>(reduction == Reduction::sum ? total : total / total_weight);
}

void nll_kernel(KernelContext& ctx) {
  const Tensor& input = ctx.input(0);
  const Tensor& target = ctx.input(1);
  const LossView v = loss_view(ctx, input, target);
  visit_float_dtype(input.dtype(), ctx.node().describe(), [&]<typename T>() {
    using W = std::conditional_t<std::is_same_v<T, double>, double, float>;
    const std::vector<W> log_prob = tensor_to_vector<W>(input);
    negative_log_likelihood<T, W>(ctx, log_prob.data(), v, target, target.shape());
  });
}

void sce_kernel(KernelContext& ctx) {
  const Tensor& scores = ctx.input(0);
  const Tensor& target = ctx.input(1);
  const LossView v = loss_view(ctx, scores, target);
  visit_float_dtype(scores.dtype(), ctx.node().describe(), [&]<typename T>() {
    using W = std::conditional_t<std::is_same_v<T, double>, double, float>;
    std::vector<W> log_prob = tensor_to_vector<W>(scores);
    // log_softmax over the class axis: per (n, d), C values `positions` apart.
    parallel_for(v.batch * v.positions, 256, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        W* base = log_prob.data() + (i / v.positions) * v.classes * v.positions + i % v.positions;
        W max_value = -std::numeric_limits<W>::infinity();
        for (int64_t c = 0; c < v.classes; ++c) max_value = std::max(max_value, base[c * v.positions]);
        W sum = 0;
        for (int64_t c = 0; c < v.classes; ++c) sum += std::exp(base[c * v.positions] - max_value);
        const W log_sum = std::log(sum);
        for (int64_t c = 0; c < v.classes; ++c) base[c * v.positions] = (base[c * v.positions] - max_value) - log_sum;
      }
    });
    negative_log_likelihood<T, W>(ctx, log_prob.data(), v, target, target.shape());
    if (ctx.num_outputs() > 1) {
      Tensor& out = ctx.allocate_output(1, scores.dtype(), scores.shape());
      T* p = out.data<T>();
      for (size_t i = 0; i < log_prob.size(); ++i) p[i] = static_cast<T>(log_prob[i]);
    }
  });
}

}  // namespace

GRAFT_REGISTER_OP("", "NegativeLogLikelihoodLoss", infer_loss, nll_kernel);
GRAFT_REGISTER_OP("", "SoftmaxCrossEntropyLoss", infer_loss, sce_kernel);

// Backward ops and gradient builders (graft/ops/gradient.h). With a[i] = the
// weight of position i's target times the incoming gradient (divided by the
// total weight for reduction "mean"; per position for "none"), ignored
// positions a[i] = 0:
//   graft.NegativeLogLikelihoodLossGrad: d input[n, t, d] = -a[i], 0 elsewhere;
//   graft.SoftmaxCrossEntropyLossGrad: d scores[n, c, d] = a[i] (softmax[c] - [c == t]).
// Both take (d_loss, scores, target[, weight]) and the forward's attributes;
// output 0's gradient only (SoftmaxCrossEntropyLoss's log_prob output has
// none); the class weights are treated as constants.
namespace {

void infer_loss_grad(InferContext& ctx) { ctx.set_output(0, ctx.input_type(1)); }

template <bool kSoftmax>
void loss_grad_kernel(KernelContext& ctx) {
  const Tensor& d_loss = ctx.input(0);
  const Tensor& scores = ctx.input(1);
  const Tensor& target = ctx.input(2);
  const LossView v = loss_view(ctx, scores, target);
  const Reduction reduction = parse_reduction(ctx.node(), ctx.attrs());
  std::optional<int64_t> ignore_index;
  if (ctx.attrs().has("ignore_index")) ignore_index = ctx.attrs().get_int("ignore_index");
  const int64_t count = v.batch * v.positions;
  if (reduction == Reduction::none ? d_loss.numel() != count : d_loss.numel() != 1)
    ctx.fail("d_loss ", d_loss.type_string(), " does not match the loss of target ", target.type_string());
  visit_float_dtype(scores.dtype(), ctx.node().describe(), [&]<typename T>() {
    using W = std::conditional_t<std::is_same_v<T, double>, double, float>;
    std::vector<W> weights;
    if (ctx.has_input(3)) {
      const Tensor& w = ctx.input(3);
      if (w.rank() != 1 || w.dim(0) != v.classes)
        ctx.fail("weight ", w.type_string(), " must be 1-D with one value per class (", v.classes, ")");
      weights = tensor_to_vector<W>(w);
    }
    const std::vector<W> dl = tensor_to_vector<W>(d_loss);
    const std::vector<int64_t> targets = target.to_int64_vector();
    std::vector<W> a(static_cast<size_t>(count), W(0));
    W total_weight = 0;
    for (int64_t i = 0; i < count; ++i) {
      const int64_t t = targets[static_cast<size_t>(i)];
      if (ignore_index && t == *ignore_index) continue;
      if (t < 0 || t >= v.classes)
        ctx.fail("target value ", t, " at position ", i, " is not a class index in [0, ", v.classes, ")");
      a[static_cast<size_t>(i)] = weights.empty() ? W(1) : weights[static_cast<size_t>(t)];
      total_weight += a[static_cast<size_t>(i)];
    }
    for (int64_t i = 0; i < count; ++i) {
      W& ai = a[static_cast<size_t>(i)];
      if (reduction == Reduction::none)
        ai *= dl[static_cast<size_t>(i)];
      else
        ai *= reduction == Reduction::mean ? dl[0] / total_weight : dl[0];
    }
    std::vector<W> grad = kSoftmax ? tensor_to_vector<W>(scores) : std::vector<W>(static_cast<size_t>(scores.numel()));
    for (int64_t i = 0; i < count; ++i) {
      W* base = grad.data() + (i / v.positions) * v.classes * v.positions + i % v.positions;
      const int64_t t = targets[static_cast<size_t>(i)];
      const W ai = a[static_cast<size_t>(i)];
      if constexpr (kSoftmax) {
        W max_value = -std::numeric_limits<W>::infinity();
        for (int64_t c = 0; c < v.classes; ++c) max_value = std::max(max_value, base[c * v.positions]);
        W sum = 0;
        for (int64_t c = 0; c < v.classes; ++c) sum += std::exp(base[c * v.positions] - max_value);
        for (int64_t c = 0; c < v.classes; ++c)
          base[c * v.positions] = ai * (std::exp(base[c * v.positions] - max_value) / sum);
        if (ai != W(0)) base[t * v.positions] -= ai;
      } else {
        if (ai != W(0)) base[t * v.positions] = -ai;
      }
    }
    Tensor& out = ctx.allocate_output(0, scores.dtype(), scores.shape());
    T* p = out.data<T>();
    for (size_t i = 0; i < grad.size(); ++i) p[i] = static_cast<T>(grad[i]);
  });
}

/// The forward's reduction and ignore_index, for its backward op.
std::vector<std::pair<std::string, ir::AttributeValue>> loss_attributes(const GradientContext& g) {
  std::vector<std::pair<std::string, ir::AttributeValue>> attributes;
  attributes.emplace_back("reduction", g.attrs().get_string("reduction", "mean"));
  if (g.attrs().has("ignore_index")) attributes.emplace_back("ignore_index", g.attrs().get_int("ignore_index"));
  return attributes;
}

template <ir::OpId kGrad>
void loss_gradient(GradientContext& g) {
  if (g.num_outputs() > 1 && g.output_gradient(1)) g.unsupported("a gradient through log_prob (output 1)");
  std::vector<ir::Value> inputs{g.output_gradient(0), g.input(0), g.input(1)};
  if (g.has_input(2)) inputs.push_back(g.input(2));
  g.set_input_gradient(0, g.add(kGrad, inputs, loss_attributes(g)));
}

}  // namespace

GRAFT_REGISTER_OP("graft", "NegativeLogLikelihoodLossGrad", infer_loss_grad, loss_grad_kernel<false>);
GRAFT_REGISTER_OP("graft", "SoftmaxCrossEntropyLossGrad", infer_loss_grad, loss_grad_kernel<true>);
GRAFT_REGISTER_GRADIENT(NegativeLogLikelihoodLoss, loss_gradient<ir::OpId::NegativeLogLikelihoodLossGrad>);
GRAFT_REGISTER_GRADIENT(SoftmaxCrossEntropyLoss, loss_gradient<ir::OpId::SoftmaxCrossEntropyLossGrad>);

}  // namespace graft::ops
