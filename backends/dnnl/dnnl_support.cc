// Op-level support of the dnnl backend: one table (kTable, at the end) lists
// every op dnnl takes with its checker. Each checker answers for one op from
// its attributes, dtypes and shapes; the common part (float32 data, known
// ranks, at most oneDNN's rank) is checked first for every op.
#include "dnnl_support.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <optional>

#include "graft/ir/graph.h"
#include "graft/ir/updated_constant.h"
#include "graft/ops/conv_util.h"
#include "graft/ops/quantized_weight.h"

namespace graft::dnnl_backend {
namespace {

using ir::OpId;

constexpr size_t kMaxRank = 12;  // DNNL_MAX_NDIMS

const ir::ValueType& input_type(const ir::Node& node, size_t i) { return node.graph().type_of(node.inputs[i]); }
bool has_input(const ir::Node& node, size_t i) { return i < node.inputs.size() && node.inputs[i]; }
bool is_constant_input(const ir::Node& node, size_t i) {
  return has_input(node, i) && node.inputs[i].node->op() == OpId::Constant;
}
size_t rank_of(const ir::Node& node, size_t i) { return input_type(node, i).dims.size(); }

// Two dimensions known to be equal: the same extent, or the same symbol.
bool same_dim(const ir::Dim& a, const ir::Dim& b) {
  return a.is_known() ? a.value == b.value : !a.symbol.empty() && a.symbol == b.symbol;
}
bool same_dims(const std::vector<ir::Dim>& a, const std::vector<ir::Dim>& b) {
  if (a.size() != b.size()) return false;
  for (size_t d = 0; d < a.size(); ++d)
    if (!same_dim(a[d], b[d])) return false;
  return true;
}

// Unidirectional broadcast: `small` broadcasts to `big` without changing it.
bool broadcasts_into(const ir::ValueType& small, const ir::ValueType& big) {
  if (small.dims.size() > big.dims.size()) return false;
  size_t offset = big.dims.size() - small.dims.size();
  for (size_t d = 0; d < small.dims.size(); ++d)
    if (small.dims[d].value != 1 && !same_dim(small.dims[d], big.dims[d + offset])) return false;
  return true;
}

bool all_known(const std::vector<ir::Dim>& dims) {
  for (const ir::Dim& d : dims)
    if (!d.is_known()) return false;
  return true;
}

// The window of `node` over input `x_input` resolves (pads, output extents)
// where its extents are known.
SupportResult check_window(const ir::Node& node, size_t spatial, const std::vector<int64_t>& kernel, bool pool,
                           size_t x_input = 0) {
  if (spatial < 1 || spatial > 3) return SupportResult::no("only 1 to 3 spatial dimensions");
  try {
    ops::conv::WindowAttributes attrs = ops::conv::read_window_attributes(node, spatial, kernel, pool);
    const ir::ValueType& x = input_type(node, x_input);
    for (size_t d = 0; d < spatial; ++d)
      if (x.dims[2 + d].is_known()) ops::conv::resolve_dim(node, attrs, d, x.dims[2 + d].value);
  } catch (const Error& e) {
    return SupportResult::no(e.what());
  }
  return SupportResult::yes();
}

// Whether a Conv's or ConvTranspose's bias (input 2), where it has one,
// holds one value per output channel: its fill reads that many.
bool bias_per_output_channel(const ir::Node& node, int64_t channels) {
  if (!has_input(node, 2)) return true;
  const ir::ValueType& bias = input_type(node, 2);
  return bias.dims.size() == 1 && bias.dims[0].is_known() && bias.dims[0].value == channels;
}

SupportResult check_conv(const ir::Node& node) {
  if (!has_input(node, 1)) return SupportResult::no("no weight input");
  size_t rank = rank_of(node, 0);
  if (rank < 3 || rank_of(node, 1) != rank) return SupportResult::no("data and weight must have equal rank >= 3");
  const ir::ValueType& x = input_type(node, 0);
  const ir::ValueType& w = input_type(node, 1);
  if (!x.dims[1].is_known() || !all_known(w.dims)) return SupportResult::no("channels or weight shape unknown");
  int64_t group = node.attributes.get_int("group", 1);
  if (group < 1 || x.dims[1].value % group != 0 || w.dims[0].value % group != 0 ||
      w.dims[1].value * group != x.dims[1].value)
    return SupportResult::no("channels do not match the group count");
  if (!bias_per_output_channel(node, w.dims[0].value))
    return SupportResult::no("bias must be 1-D, one per output channel");
  std::vector<int64_t> kernel;
  for (size_t d = 2; d < rank; ++d) kernel.push_back(w.dims[d].value);
  return check_window(node, rank - 2, kernel, false);
}

SupportResult check_conv_transpose(const ir::Node& node) {
  size_t rank = rank_of(node, 0);
  if (!has_input(node, 1) || rank < 3 || rank > 5 || rank_of(node, 1) != rank)
    return SupportResult::no("data and weight must have equal rank 3 to 5");
  if (node.attributes.has("output_shape")) return SupportResult::no("attribute output_shape is not supported");
  std::string auto_pad = node.attributes.get_string("auto_pad", "NOTSET");
  if (auto_pad != "NOTSET" && auto_pad != "VALID") return SupportResult::no("auto_pad " + auto_pad);
  const ir::ValueType& x = input_type(node, 0);
  const ir::ValueType& w = input_type(node, 1);
  if (!x.dims[1].is_known() || !all_known(w.dims)) return SupportResult::no("channels or weight shape unknown");
  int64_t group = node.attributes.get_int("group", 1);
  if (group < 1 || x.dims[1].value % group != 0 || w.dims[0].value != x.dims[1].value)
    return SupportResult::no("channels do not match the group count");
  size_t spatial = rank - 2;
  std::vector<int64_t> pads = node.attributes.get_ints("pads", std::vector<int64_t>(2 * spatial, 0));
  std::vector<int64_t> output_padding = node.attributes.get_ints("output_padding", std::vector<int64_t>(spatial, 0));
  if (pads.size() != 2 * spatial || output_padding.size() != spatial) return SupportResult::no("malformed pads");
  for (size_t d = 0; d < spatial; ++d)
    if (output_padding[d] > pads[spatial + d]) return SupportResult::no("output_padding larger than the end padding");
  if (!bias_per_output_channel(node, w.dims[1].value * group))
    return SupportResult::no("bias must be 1-D, one per output channel");
  return SupportResult::yes();
}

SupportResult check_matmul(const ir::Node& node) {
  size_t a = rank_of(node, 0), b = rank_of(node, 1);
  if (a < 2 || b < 2) return SupportResult::no("1-D operands are not supported");
  const ir::ValueType& ta = input_type(node, 0);
  const ir::ValueType& tb = input_type(node, 1);
  size_t rank = std::max(a, b);
  for (size_t d = 0; d + 2 < rank; ++d) {
    ir::Dim da = d + a >= rank ? ta.dims[d + a - rank] : ir::Dim::known(1);
    ir::Dim db = d + b >= rank ? tb.dims[d + b - rank] : ir::Dim::known(1);
    if (!same_dim(da, db) && da.value != 1 && db.value != 1) return SupportResult::no("batch dimensions do not broadcast");
  }
  return SupportResult::yes();
}

SupportResult check_gemm(const ir::Node& node) {
  if (rank_of(node, 0) != 2 || rank_of(node, 1) != 2) return SupportResult::no("A and B must be 2-D");
  if (has_input(node, 2)) {
    if (!broadcasts_into(input_type(node, 2), node.output_types[0])) return SupportResult::no("C does not broadcast");
    if (!is_constant_input(node, 2) && node.attributes.get_float("beta", 1.0f) != 1.0f)
      return SupportResult::no("beta != 1 with a non-constant C");
  }
  return SupportResult::yes();
}

// MaxPool and AveragePool (x is input 0), and their gradients (x is input 1).
SupportResult check_pool(const ir::Node& node) {
  if (node.num_outputs() > 1) return SupportResult::no("the Indices output is not supported");
  const bool gradient = node.op() == OpId::MaxPoolGrad || node.op() == OpId::AveragePoolGrad;
  const size_t x_input = gradient ? 1 : 0;
  size_t rank = rank_of(node, x_input);
  if (rank < 3) return SupportResult::no("rank below 3");
  const bool average = node.op() == OpId::AveragePool || node.op() == OpId::AveragePoolGrad;
  if (average && node.attributes.get_int("ceil_mode", 0) != 0 && node.attributes.get_int("count_include_pad", 0) != 0)
    return SupportResult::no("ceil_mode with count_include_pad");
  if (average && node.attributes.has("dilations")) {
    for (int64_t d : node.attributes.get_ints("dilations"))
      if (d != 1) return SupportResult::no("dilated AveragePool");
  }
  if (gradient && rank_of(node, 0) != rank) return SupportResult::no("d_y and x differ in rank");
  // oneDNN visits every tap of the window, inside the input or not: a window
  // far wider than its input (kernel 2^31 with SAME padding) would run for
  // hours in one primitive, past any deadline. The reference kernel visits
  // only the taps inside the input.
  // Where an extent is not known yet, the window's taps are bounded instead.
  const ir::ValueType& x = input_type(node, x_input);
  const std::vector<int64_t> kernel = node.attributes.get_ints("kernel_shape", {});
  double taps = 1;
  for (size_t d = 0; d < kernel.size() && 2 + d < x.dims.size(); ++d) {
    taps *= static_cast<double>(kernel[d]);
    if (x.dims[2 + d].is_known() && kernel[d] > 2 * x.dims[2 + d].value + 16)
      return SupportResult::no("the window is far wider than the input");
  }
  if (taps > double(1 << 20)) return SupportResult::no("the window has over 2^20 taps");
  return check_window(node, rank - 2, {}, true, x_input);
}

// The reduced axes of a ReduceSum with constant axes (every axis when it
// names none), per axis of its input; nothing when they are not constants,
// out of range or repeated.
std::optional<std::vector<bool>> reduce_sum_axes(const ir::Node& node) {
  const size_t rank = rank_of(node, 0);
  if (node.opset_version >= 13 && has_input(node, 1) && !is_constant_input(node, 1)) return std::nullopt;
  std::vector<int64_t> axes;
  if (node.opset_version >= 13) {
    if (has_input(node, 1)) axes = node.inputs[1].node->constant_value.to_int64_vector();
  } else {
    axes = node.attributes.get_ints("axes", {});
  }
  std::vector<bool> seen(rank, axes.empty());
  for (int64_t a : axes) {
    if (a < 0) a += static_cast<int64_t>(rank);
    if (a < 0 || a >= static_cast<int64_t>(rank) || seen[static_cast<size_t>(a)]) return std::nullopt;
    seen[static_cast<size_t>(a)] = true;
  }
  return seen;
}

// ReduceSum over constant axes (oneDNN's reduction: ranks 1 to 5); not
// noop_with_empty_axes. A sum over leading axes only runs on the reference
// kernel inside the program (sums_leading_axes_only).
SupportResult check_reduce_sum(const ir::Node& node) {
  const size_t rank = rank_of(node, 0);
  if (rank < 1 || rank > 5) return SupportResult::no("rank must be 1 to 5");
  if (node.attributes.get_int("noop_with_empty_axes", 0) != 0) return SupportResult::no("noop_with_empty_axes");
  if (node.opset_version >= 13 && has_input(node, 1) && !is_constant_input(node, 1))
    return SupportResult::no("axes must be a constant");
  if (!reduce_sum_axes(node)) return SupportResult::no("axes out of range or repeated");
  if (!all_known(input_type(node, 0).dims)) return SupportResult::no("shape unknown");
  return SupportResult::yes();
}

// graft.ConvInputGrad(d_y, w, x) and graft.ConvWeightGrad(d_y, x, w): a Conv
// oneDNN runs (1 to 3 spatial dimensions), d_y of the forward's output shape.
SupportResult check_conv_grad(const ir::Node& node) {
  const bool weight_grad = node.op() == OpId::ConvWeightGrad;
  const size_t x_input = weight_grad ? 1 : 2, w_input = weight_grad ? 2 : 1;
  if (node.attributes.has("output_padding") || node.attributes.has("output_shape"))
    return SupportResult::no("a ConvTranspose's attributes (output_padding, output_shape)");
  const size_t rank = rank_of(node, x_input);
  if (rank < 3 || rank > 5 || rank_of(node, w_input) != rank || rank_of(node, 0) != rank)
    return SupportResult::no("d_y, x and w must have equal rank 3 to 5");
  const ir::ValueType& x = input_type(node, x_input);
  const ir::ValueType& w = input_type(node, w_input);
  const ir::ValueType& dy = input_type(node, 0);
  if (!all_known(x.dims) || !all_known(w.dims) || !all_known(dy.dims)) return SupportResult::no("shapes unknown");
  const int64_t group = node.attributes.get_int("group", 1);
  if (group < 1 || x.dims[1].value % group != 0 || w.dims[0].value % group != 0 ||
      w.dims[1].value * group != x.dims[1].value)
    return SupportResult::no("channels do not match the group count");
  std::vector<int64_t> kernel;
  for (size_t d = 2; d < rank; ++d) kernel.push_back(w.dims[d].value);
  try {
    ops::conv::WindowAttributes attrs = ops::conv::read_window_attributes(node, rank - 2, kernel, false);
    if (dy.dims[0].value != x.dims[0].value || dy.dims[1].value != w.dims[0].value)
      return SupportResult::no("d_y does not match the convolution's output");
    for (size_t d = 0; d + 2 < rank; ++d)
      if (ops::conv::resolve_dim(node, attrs, d, x.dims[2 + d].value).output != dy.dims[2 + d].value)
        return SupportResult::no("d_y does not match the convolution's output");
  } catch (const Error& e) {
    return SupportResult::no(e.what());
  }
  return SupportResult::yes();
}

// The element count of dims[begin..]; nullopt when an extent is unknown or
// the product overflows (a malformed model's INT64_MAX extents).
std::optional<int64_t> known_element_count(const std::vector<ir::Dim>& dims, size_t begin) {
  int64_t n = 1;
  for (size_t d = begin; d < dims.size(); ++d)
    if (!dims[d].is_known() || __builtin_mul_overflow(n, dims[d].value, &n)) return std::nullopt;
  return n;
}

// graft.BatchNormalizationGrad and graft.LayerNormalizationGrad (d_y, x,
// scale): d_y of x's shape, on oneDNN's 2-D to 5-D normalizations.
SupportResult check_norm_grad(const ir::Node& node) {
  const ir::ValueType& x = input_type(node, 1);
  if (!all_known(x.dims) || !all_known(input_type(node, 2).dims)) return SupportResult::no("shapes unknown");
  if (!same_dims(input_type(node, 0).dims, x.dims)) return SupportResult::no("d_y and x differ in shape");
  const std::optional<int64_t> scale = known_element_count(input_type(node, 2).dims, 0);
  if (!scale) return SupportResult::no("scale too large");
  const int64_t rank = static_cast<int64_t>(x.dims.size());
  if (node.op() == OpId::BatchNormalizationGrad) {
    if (rank < 2 || rank > 5) return SupportResult::no("rank must be 2 to 5");
    if (*scale != x.dims[1].value) return SupportResult::no("scale must have one value per channel");
    return SupportResult::yes();
  }
  int64_t axis = node.attributes.get_int("axis", -1);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) return SupportResult::no("axis out of range");
  if (axis + 1 > 5) return SupportResult::no("more than 4 dimensions before the axis");
  if (known_element_count(x.dims, static_cast<size_t>(axis)) != scale) return SupportResult::no("scale must cover the normalized dimensions");
  return SupportResult::yes();
}

// The mask of a Relu's gradient, Greater(x, 0) with a one-element constant
// 0: taken only with the Where that reads it (DnnlSelector::Filter keeps the
// two together), which runs as oneDNN's Relu backward on x itself, so the
// boolean mask is never written.
SupportResult check_relu_mask(const ir::Node& node) {
  if (!is_constant_input(node, 1) || node.inputs[1].node->constant_value.numel() != 1 ||
      node.inputs[1].node->constant_value.value_as_double(0) != 0.0)
    return SupportResult::no("only x > 0 (a Relu's gradient mask)");
  if (!same_dims(input_type(node, 0).dims, node.output_types[0].dims)) return SupportResult::no("x is broadcast");
  return SupportResult::yes();
}

// A Relu's gradient, Where(Greater(x, 0), d_y, 0) with d_y and x of the
// output's shape: oneDNN's eltwise backward (relu) on x and d_y.
SupportResult check_relu_gradient(const ir::Node& node) {
  if (!has_input(node, 0) || !has_input(node, 1) || !has_input(node, 2))
    return SupportResult::no("a Where with a missing input");
  const ir::Node& mask = *node.inputs[0].node;
  if (mask.op() != OpId::Greater || !check_relu_mask(mask) || input_type(node, 0).dtype != DType::boolean)
    return SupportResult::no("only a Relu's gradient (the condition must be Greater(x, 0))");
  if (input_type(node, 1).dtype != DType::float32 || !same_dims(input_type(node, 1).dims, node.output_types[0].dims) ||
      !same_dims(mask.graph().type_of(mask.inputs[0]).dims, node.output_types[0].dims))
    return SupportResult::no("d_y and x must have the output's shape, d_y float32");
  if (!is_constant_input(node, 2) || node.inputs[2].node->constant_value.numel() != 1 ||
      node.inputs[2].node->constant_value.value_as_double(0) != 0.0)
    return SupportResult::no("only a Relu's gradient (the else branch must be the constant 0)");
  return SupportResult::yes();
}

// Sum of two values of the output's shape (autodiff's sum of two gradient
// contributions: a residual connection's), as a binary add.
SupportResult check_sum(const ir::Node& node) {
  if (node.inputs.size() != 2 || !has_input(node, 0) || !has_input(node, 1))
    return SupportResult::no("only a Sum of two inputs");
  const ir::ValueType& out = node.output_types[0];
  if (out.dims.empty()) return SupportResult::no("0-d output");
  if (!same_dims(input_type(node, 0).dims, out.dims) || !same_dims(input_type(node, 1).dims, out.dims))
    return SupportResult::no("inputs must have the output's shape");
  return SupportResult::yes();
}

SupportResult check_global_pool(const ir::Node& node) {
  size_t rank = rank_of(node, 0);
  if (rank < 3 || rank > 5) return SupportResult::no("rank must be 3 to 5");
  return SupportResult::yes();
}

// Inference or training mode (batch statistics, and the running statistics
// as outputs 1 and 2 where the node has them), over channels (not opset 7-8's
// spatial = 0).
SupportResult check_batch_norm(const ir::Node& node) {
  if (node.opset_version > 0 && node.opset_version < 9 && node.attributes.get_int("spatial", 1) == 0)
    return SupportResult::no("spatial = 0");
  if (node.num_outputs() > 1 && !is_training_batch_norm(node))
    return SupportResult::no("running statistics as outputs in inference mode");
  if (rank_of(node, 0) < 2 || rank_of(node, 0) > 5) return SupportResult::no("rank must be 2 to 5");
  for (size_t i = 1; i < 5; ++i)
    if (!has_input(node, i) || rank_of(node, i) != 1) return SupportResult::no("parameters must be 1-D");
  return SupportResult::yes();
}

SupportResult check_lrn(const ir::Node& node) {
  if (rank_of(node, 0) < 3 || rank_of(node, 0) > 5) return SupportResult::no("rank must be 3 to 5");
  if (node.attributes.get_int("size") % 2 == 0) return SupportResult::no("even window size");
  return SupportResult::yes();
}

SupportResult check_layer_norm(const ir::Node& node) {
  if (node.num_outputs() > 1) return SupportResult::no("Mean and InvStdDev outputs are not supported");
  // Scale is required; a model that leaves it empty goes to ref, which names it.
  if (!has_input(node, 1)) return SupportResult::no("no Scale input");
  int64_t rank = static_cast<int64_t>(rank_of(node, 0));
  int64_t axis = node.attributes.get_int("axis", -1);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) return SupportResult::no("axis out of range");
  std::optional<int64_t> inner = known_element_count(input_type(node, 0).dims, static_cast<size_t>(axis));
  if (!inner) return SupportResult::no("normalized dimensions unknown or too large");
  for (size_t i = 1; i < 3; ++i)
    if (has_input(node, i) && known_element_count(input_type(node, i).dims, 0) != inner)
      return SupportResult::no("scale and bias must cover the normalized dimensions");
  return SupportResult::yes();
}

SupportResult check_softmax(const ir::Node& node) {
  int64_t rank = static_cast<int64_t>(rank_of(node, 0));
  int64_t axis = node.attributes.get_int("axis", node.opset_version >= 13 ? -1 : 1);
  if (axis < -rank || axis >= std::max<int64_t>(rank, 1)) return SupportResult::no("axis out of range");
  if (rank == 0) return SupportResult::no("0-d input");
  return SupportResult::yes();
}

SupportResult check_concat(const ir::Node& node) {
  if (node.inputs.empty()) return SupportResult::no("no inputs");
  size_t rank = rank_of(node, 0);
  if (rank == 0) return SupportResult::no("0-d inputs");
  for (size_t i = 0; i < node.inputs.size(); ++i)
    if (!has_input(node, i) || rank_of(node, i) != rank) return SupportResult::no("inputs differ in rank");
  return SupportResult::yes();
}

SupportResult check_binary(const ir::Node& node) {
  const ir::ValueType& out = node.output_types[0];
  if (out.dims.empty()) return SupportResult::no("0-d output");
  bool first_full = same_dims(input_type(node, 0).dims, out.dims);
  bool second_full = same_dims(input_type(node, 1).dims, out.dims);
  bool commutative = node.op() == OpId::Add || node.op() == OpId::Mul;
  if (first_full && broadcasts_into(input_type(node, 1), out)) return SupportResult::yes();
  // A one-element constant on either side becomes alpha * x + beta.
  if ((second_full && is_constant_input(node, 0) && input_type(node, 0).dims.size() <= out.dims.size() &&
       node.inputs[0].node->constant_value.numel() == 1 && node.op() != OpId::Div))
    return SupportResult::yes();
  if (commutative && second_full && broadcasts_into(input_type(node, 0), out)) return SupportResult::yes();
  return SupportResult::no("neither operand has the output's shape");
}

SupportResult check_clip(const ir::Node& node) {
  for (size_t i = 1; i < 3; ++i)
    if (has_input(node, i) && !is_constant_input(node, i)) return SupportResult::no("min/max must be constants");
  return SupportResult::yes();
}

// Pow(x, 1) and Pow(x, 2) (a squared error and its gradient): oneDNN's
// eltwise pow with that exponent, which it computes as a copy or a square.
// Other exponents stay on the reference kernels (oneDNN's general pow goes
// through exp and log, which a negative x does not survive).
SupportResult check_pow(const ir::Node& node) {
  if (!is_constant_input(node, 1)) return SupportResult::no("the exponent is not a constant");
  const Tensor& exponent = node.inputs[1].node->constant_value;
  if (exponent.numel() != 1 || ir::is_updated_in_place(*node.inputs[1].node))
    return SupportResult::no("the exponent is not one value");
  const double e = exponent.value_as_double(0);
  if (e != 1.0 && e != 2.0) return SupportResult::no("an exponent other than 1 or 2");
  return SupportResult::yes();
}

// A ReduceMean to a few values (a training step's mean loss): graft's
// reference kernel inside the program, so that the loss does not cut the
// step into a forward and a backward subgraph.
SupportResult check_mean_loss(const ir::Node& node) {
  const ir::ValueType& out = node.output_types[0];
  if (!out.has_rank || !all_known(out.dims)) return SupportResult::no("output shape unknown");
  int64_t count = 1;
  for (const ir::Dim& d : out.dims) count *= d.value;
  if (count > 64) return SupportResult::no("a mean to more than 64 values (only a loss's mean runs inside dnnl)");
  return SupportResult::yes();
}

SupportResult check_gelu(const ir::Node& node) {
  std::string approximate = node.attributes.get_string("approximate", "none");
  if (approximate != "none" && approximate != "tanh") return SupportResult::no("approximate=" + approximate);
  return SupportResult::yes();
}

// Erf exists in oneDNN only inside GELU: an Erf of x * sqrt(1/2) may be a
// step of GELU's gradient (dnnl_gelu_gradient.h), which the selector's
// Filter keeps only with the rest of that expression.
SupportResult check_gelu_gradient_erf(const ir::Node& node) {
  const ir::Value& scaled = node.inputs[0];
  bool by_root_half = false;
  if (scaled && scaled.node->op() == OpId::Mul && scaled.node->inputs.size() == 2)
    for (const ir::Value& operand : scaled.node->inputs)
      by_root_half = by_root_half ||
                     (operand && operand.node->op() == OpId::Constant && operand.node->constant_value.numel() == 1 &&
                      std::abs(operand.node->constant_value.value_as_double(0) - std::sqrt(0.5)) < 1e-6);
  if (!by_root_half) return SupportResult::no("an Erf outside GELU's gradient (oneDNN has no erf primitive)");
  return SupportResult::yes();
}

SupportResult check_reshape(const ir::Node& node) {
  if (node.op() == OpId::Reshape && !is_constant_input(node, 1)) return SupportResult::no("shape is not a constant");
  if (node.op() == OpId::Reshape && node.attributes.get_int("allowzero", 0) != 0) return SupportResult::no("allowzero");
  if (node.output_types[0].dims.empty()) return SupportResult::no("0-d output");
  return SupportResult::yes();
}

SupportResult check_transpose(const ir::Node& node) {
  size_t rank = rank_of(node, 0);
  std::vector<int64_t> perm = node.attributes.get_ints("perm", {});
  if (perm.empty()) return SupportResult::yes();
  if (perm.size() != rank) return SupportResult::no("perm does not match the rank");
  std::vector<bool> seen(rank, false);
  for (int64_t p : perm) {
    if (p < 0 || p >= static_cast<int64_t>(rank) || seen[static_cast<size_t>(p)]) return SupportResult::no("perm is not a permutation");
    seen[static_cast<size_t>(p)] = true;
  }
  return SupportResult::yes();
}

SupportResult check_slice(const ir::Node& node) {
  if (node.opset_version < 10) return SupportResult::yes();
  for (size_t i = 1; i < node.inputs.size(); ++i)
    if (has_input(node, i) && !is_constant_input(node, i)) return SupportResult::no("starts/ends/axes/steps must be constants");
  if (!has_input(node, 1)) return SupportResult::no("no starts");
  if (has_input(node, 4))
    for (int64_t step : node.inputs[4].node->constant_value.to_int64_vector())
      if (step != 1) return SupportResult::no("steps other than 1");
  return SupportResult::yes();
}

SupportResult check_split(const ir::Node& node) {
  if (has_input(node, 1) && !is_constant_input(node, 1)) return SupportResult::no("split sizes must be constants");
  if (rank_of(node, 0) == 0) return SupportResult::no("0-d input");
  return SupportResult::yes();
}

SupportResult check_gather(const ir::Node& node) {
  if (!is_constant_input(node, 1)) return SupportResult::no("indices must be a constant");
  const Tensor& indices = node.inputs[1].node->constant_value;
  if (indices.numel() != 1 || indices.rank() > 1) return SupportResult::no("only a single index (a plane) is supported");
  if (rank_of(node, 0) == 0) return SupportResult::no("0-d data");
  return SupportResult::yes();
}

// ONNX LSTM and GRU on oneDNN's LSTM, GRU and linear-before-reset GRU: one
// direction, the default activations, weights known at compile time, no
// per-sequence lengths, no peepholes, clipping or coupled input-forget gate.
SupportResult check_recurrent(const ir::Node& node) {
  const bool lstm = node.op() == OpId::LSTM;
  const int64_t gates = lstm ? 4 : 3;
  std::string direction = node.attributes.get_string("direction", "forward");
  if (direction != "forward" && direction != "reverse") return SupportResult::no("direction " + direction);
  if (node.attributes.has("clip")) return SupportResult::no("clip");
  if (node.attributes.get_int("input_forget", 0) != 0) return SupportResult::no("input_forget");
  if (node.attributes.get_int("layout", 0) != 0) return SupportResult::no("layout 1 (batch first)");
  if (node.attributes.has("activations")) {
    std::vector<std::string> defaults = lstm ? std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"}
                                             : std::vector<std::string>{"Sigmoid", "Tanh"};
    if (node.attributes.get_strings("activations") != defaults) return SupportResult::no("activations other than the defaults");
  }
  // Weights are converted when first seen and again when their version
  // changes: constants or graph inputs, not values computed in the graph.
  // (W and R are required, but a model may leave them empty: then they are no weights, and ref names the problem.)
  auto is_weight = [&](size_t i) {
    return has_input(node, i) && (is_constant_input(node, i) || node.inputs[i].node->op() == OpId::Input);
  };
  if (!is_weight(1) || !is_weight(2)) return SupportResult::no("W and R must be constants or graph inputs");
  if (has_input(node, 3) && !is_weight(3)) return SupportResult::no("B must be a constant or a graph input");
  if (has_input(node, 4)) return SupportResult::no("sequence_lens");
  if (lstm && has_input(node, 7)) return SupportResult::no("peepholes (P)");
  if (rank_of(node, 0) != 3 || !all_known(input_type(node, 0).dims)) return SupportResult::no("X must be 3-D, shape known");
  const ir::ValueType& w = input_type(node, 1);
  const ir::ValueType& r = input_type(node, 2);
  if (w.dims.size() != 3 || r.dims.size() != 3 || !all_known(w.dims) || !all_known(r.dims) || w.dims[0].value != 1 ||
      r.dims[0].value != 1 || w.dims[1].value % gates != 0)
    return SupportResult::no("W and R must be [1, gates*hidden, ...]");
  int64_t hidden = w.dims[1].value / gates;
  if (node.attributes.get_int("hidden_size", hidden) != hidden || r.dims[1].value != gates * hidden ||
      r.dims[2].value != hidden || w.dims[2].value != input_type(node, 0).dims[2].value)
    return SupportResult::no("W and R do not match hidden_size and the input size");
  if (has_input(node, 3) &&
      (rank_of(node, 3) != 2 || !all_known(input_type(node, 3).dims) || input_type(node, 3).dims[0].value != 1 ||
       input_type(node, 3).dims[1].value != 2 * gates * hidden))
    return SupportResult::no("B must be [1, 2*gates*hidden]");
  const int64_t batch = input_type(node, 0).dims[1].value;
  for (size_t i : {size_t{5}, size_t{6}}) {
    if (!has_input(node, i)) continue;
    const std::vector<ir::Dim>& state = input_type(node, i).dims;
    if (state.size() != 3 || !all_known(state) || state[0].value != 1 || state[1].value != batch ||
        state[2].value != hidden)
      return SupportResult::no("initial states must be [1, batch, hidden]");
  }
  return SupportResult::yes();
}

// Resize on oneDNN's resampling: bilinear (half_pixel, or
// pytorch_half_pixel with outputs above 1: F.interpolate's align_corners=False)
// or nearest (asymmetric + floor: F.interpolate's nearest) by whole factors,
// over the spatial dimensions only, scales or sizes constant.
SupportResult check_resize(const ir::Node& node) {
  size_t rank = rank_of(node, 0);
  if (rank < 3 || rank > 5) return SupportResult::no("rank must be 3 to 5");
  if (node.opset_version < 11) return SupportResult::no("opset below 11");
  const std::string mode = node.attributes.get_string("mode", "nearest");
  const std::string coordinates = node.attributes.get_string("coordinate_transformation_mode", "half_pixel");
  if (node.attributes.get_int("antialias", 0) != 0 || node.attributes.has("axes") ||
      node.attributes.get_int("exclude_outside", 0) != 0)
    return SupportResult::no("antialias, axes or exclude_outside");
  for (size_t i = 2; i < 4; ++i)
    if (has_input(node, i) && !is_constant_input(node, i)) return SupportResult::no("scales and sizes must be constants");
  const ir::ValueType& x = input_type(node, 0);
  const ir::ValueType& y = node.output_types[0];
  if (!all_known(x.dims) || !all_known(y.dims) || y.dims.size() != rank)
    return SupportResult::no("shapes must be known");
  if (x.dims[0].value != y.dims[0].value || x.dims[1].value != y.dims[1].value)
    return SupportResult::no("resizes the batch or channel dimension");
  // With scales, the coordinates follow the scale: oneDNN follows out / in.
  std::vector<float> scales;
  if (has_input(node, 2) && node.inputs[2].node->constant_value.numel() > 0)
    for (int64_t i = 0; i < node.inputs[2].node->constant_value.numel(); ++i)
      scales.push_back(static_cast<float>(node.inputs[2].node->constant_value.value_as_double(i)));
  for (size_t d = 2; d < rank; ++d) {
    const double in = static_cast<double>(x.dims[d].value), out = static_cast<double>(y.dims[d].value);
    if (!scales.empty() && (scales.size() != rank || std::abs(scales[d] - out / in) > 1e-6 * (out / in)))
      return SupportResult::no("scales that do not equal output / input");
    if (mode == "linear") {
      if (coordinates != "half_pixel" && !(coordinates == "pytorch_half_pixel" && out > 1))
        return SupportResult::no("linear with coordinate_transformation_mode " + coordinates);
    } else if (mode == "nearest") {
      if (coordinates != "asymmetric" || node.attributes.get_string("nearest_mode", "round_prefer_floor") != "floor")
        return SupportResult::no("nearest other than asymmetric + floor");
      if (y.dims[d].value % x.dims[d].value != 0) return SupportResult::no("nearest by a fractional factor");
    } else {
      return SupportResult::no("mode " + mode);
    }
  }
  return SupportResult::yes();
}

// Expand of the spatial extents of 1 of a rank 3-5 value to the output's
// (GlobalAveragePool's gradient, [N, C, 1, 1] -> [N, C, H, W]): oneDNN's
// nearest resampling, in the input's layout.
SupportResult check_expand(const ir::Node& node) {
  if (!is_constant_input(node, 1)) return SupportResult::no("shape must be a constant");
  const ir::ValueType& x = input_type(node, 0);
  const ir::ValueType& y = node.output_types[0];
  const size_t rank = y.dims.size();
  if (rank < 3 || rank > 5 || x.dims.size() != rank)
    return SupportResult::no("only an expansion of the spatial dimensions of a rank 3 to 5 value");
  if (!same_dim(x.dims[0], y.dims[0]) || !same_dim(x.dims[1], y.dims[1]))
    return SupportResult::no("expands the batch or channel dimension");
  for (size_t d = 2; d < rank; ++d)
    if (!y.dims[d].is_known() || !(x.dims[d].value == 1 || same_dim(x.dims[d], y.dims[d])))
      return SupportResult::no("spatial extents must be 1 or the output's");
  return SupportResult::yes();
}

// A training step's loss and its gradient, on graft's reference kernels
// (dnnl_reference_step.cc): float32 scores of rank 2 or more, integer
// targets, float32 class weights.
SupportResult check_loss(const ir::Node& node) {
  const bool gradient =
      node.op() == OpId::SoftmaxCrossEntropyLossGrad || node.op() == OpId::NegativeLogLikelihoodLossGrad;
  const size_t scores = gradient ? 1 : 0;
  if (!has_input(node, scores) || !has_input(node, scores + 1)) return SupportResult::no("no scores or targets");
  if (rank_of(node, scores) < 2) return SupportResult::no("scores of rank below 2");
  const DType targets = input_type(node, scores + 1).dtype;
  if (targets != DType::int64 && targets != DType::int32) return SupportResult::no("targets are not int32 or int64");
  if (has_input(node, scores + 2) && input_type(node, scores + 2).dtype != DType::float32)
    return SupportResult::no("class weights are not float32");
  return SupportResult::yes();
}

SupportResult always(const ir::Node&) { return SupportResult::yes(); }

// Shape, index and scale inputs (input 1 on) are constants of any dtype.
constexpr size_t kDataOnly = 1;

// The int8 weights of a product as stored (ops::is_quantized_weight): taken
// with their reader, which reads the int8 values and the scales (an int8
// product) or their float32 values, dequantized once at build time.
SupportResult check_quantized_weight(const ir::Node& node) {
  if (!ops::is_quantized_weight(node))
    return SupportResult::no(
        "not a DequantizeLinear of int8 weights (int8 constants, float32 scales, zero points of zero)");
  return SupportResult::yes();
}

// What dnnl takes: every op it lowers, with its checker. docs/dnnl.md's
// table says the same in prose.
constexpr OpSupport kTable[] = {
    // compute: group anchors and standalone primitives
    {OpId::Conv, check_conv},
    {OpId::ConvTranspose, check_conv_transpose},
    {OpId::MatMul, check_matmul},
    {OpId::Gemm, check_gemm},
    {OpId::MaxPool, check_pool},
    {OpId::AveragePool, check_pool},
    {OpId::GlobalAveragePool, check_global_pool},
    {OpId::GlobalMaxPool, check_global_pool},
    {OpId::BatchNormalization, check_batch_norm},
    {OpId::LRN, check_lrn},
    {OpId::Softmax, check_softmax},
    {OpId::LayerNormalization, check_layer_norm},
    {OpId::LSTM, check_recurrent},
    {OpId::GRU, check_recurrent},
    {OpId::Resize, check_resize, kDataOnly},
    {OpId::ReduceSum, check_reduce_sum, kDataOnly},
    // backward (autodiff's graft ops)
    {OpId::ConvInputGrad, check_conv_grad},
    {OpId::ConvWeightGrad, check_conv_grad},
    {OpId::MaxPoolGrad, check_pool},
    {OpId::AveragePoolGrad, check_pool},
    {OpId::BatchNormalizationGrad, check_norm_grad},
    {OpId::LayerNormalizationGrad, check_norm_grad},
    {OpId::Greater, check_relu_mask},
    {OpId::Where, check_relu_gradient, 0},  // the checker checks the dtypes (the condition is boolean)
    {OpId::Sum, check_sum},
    {OpId::Expand, check_expand, kDataOnly},
    // a training step's loss and its gradient: graft's reference kernels in
    // the program (the scores float32, the targets integers)
    {OpId::SoftmaxCrossEntropyLoss, check_loss, 1, true},
    {OpId::NegativeLogLikelihoodLoss, check_loss, 1, true},
    {OpId::SoftmaxCrossEntropyLossGrad, check_loss, 2, true},
    {OpId::NegativeLogLikelihoodLossGrad, check_loss, 2, true},
    {OpId::ReduceMean, check_mean_loss, 1, true},
    // eltwise: post-ops or eltwise primitives
    {OpId::Relu, always},
    {OpId::LeakyRelu, always},
    {OpId::Clip, check_clip},
    {OpId::Sigmoid, always},
    {OpId::Tanh, always},
    {OpId::HardSigmoid, always},
    {OpId::HardSwish, always},
    {OpId::Elu, always},
    {OpId::Gelu, check_gelu},
    {OpId::Erf, check_gelu_gradient_erf},  // a step of GELU's gradient (one eltwise backward)
    {OpId::Exp, always},
    {OpId::Pow, check_pow, 1},
    {OpId::Abs, always},
    {OpId::Sqrt, always},
    {OpId::Round, always},
    // binary: post-ops or binary primitives
    {OpId::Add, check_binary},
    {OpId::Mul, check_binary},
    {OpId::Sub, check_binary},
    {OpId::Div, check_binary},
    // data movement: views where the layout allows, else copies
    {OpId::Concat, check_concat},
    {OpId::Flatten, check_reshape},
    {OpId::Reshape, check_reshape, kDataOnly},
    {OpId::Transpose, check_transpose},
    {OpId::Slice, check_slice, kDataOnly},
    {OpId::Split, check_split, kDataOnly},
    {OpId::Gather, check_gather, kDataOnly},
    // weights
    {OpId::DequantizeLinear, check_quantized_weight, 0},
};

// kTable's row of each op, by ir::op_index.
const std::array<const OpSupport*, ir::kNumOps>& rows_by_op() {
  static const std::array<const OpSupport*, ir::kNumOps> rows = [] {
    std::array<const OpSupport*, ir::kNumOps> out{};
    for (const OpSupport& row : kTable) {
      GRAFT_CHECK(out[ir::op_index(row.op)] == nullptr, "dnnl: an op listed twice in the support table");
      out[ir::op_index(row.op)] = &row;
    }
    return out;
  }();
  return rows;
}

}  // namespace

bool sums_leading_axes_only(const ir::Node& node) {
  if (node.op() != OpId::ReduceSum || node.inputs.empty() || !node.inputs[0]) return false;
  std::optional<std::vector<bool>> seen = reduce_sum_axes(node);
  if (!seen) return false;
  size_t leading = 0;
  while (leading < seen->size() && (*seen)[leading]) ++leading;
  size_t reduced = 0;
  for (bool s : *seen) reduced += s;
  return leading > 0 && leading < seen->size() && reduced == leading;
}

bool is_training_batch_norm(const ir::Node& node) {
  if (node.opset_version >= 14) return node.attributes.get_int("training_mode", 0) != 0;
  return node.num_outputs() > 1;
}

std::span<const OpSupport> dnnl_op_table() { return kTable; }

const OpSupport* dnnl_op_support(ir::OpId op) { return rows_by_op()[ir::op_index(op)]; }

SupportResult dnnl_supports(const ir::Node& node) {
  const OpSupport* row = dnnl_op_support(node.op());
  if (!row) return SupportResult::no("op " + node.op_type() + " is not supported by dnnl");
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    if (!node.inputs[i]) continue;
    const ir::ValueType& t = input_type(node, i);
    if (i < row->data_inputs && t.dtype != DType::float32)
      return SupportResult::no("input " + std::to_string(i) + " is not float32");
    if (!t.has_rank) return SupportResult::no("input " + std::to_string(i) + " has unknown rank");
    if (t.dims.size() > kMaxRank) return SupportResult::no("rank above 12");
  }
  for (const ir::ValueType& t : node.output_types) {
    // A Relu gradient's mask is boolean; it is never written (check_relu_mask).
    const bool relu_mask = node.op() == OpId::Greater && t.dtype == DType::boolean;
    if (t.dtype != DType::float32 && !relu_mask) return SupportResult::no("output is not float32");
    if (!t.has_rank) return SupportResult::no("output has unknown rank");
    if (t.dims.size() > kMaxRank) return SupportResult::no("rank above 12");
    for (const ir::Dim& d : t.dims)
      if (d.value == 0) return SupportResult::no("empty output");
  }
  return row->check(node);
}

}  // namespace graft::dnnl_backend
