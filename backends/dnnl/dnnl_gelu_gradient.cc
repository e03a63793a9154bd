// GELU's gradient as one eltwise backward: matching the expression that
// ops/activations.cc's gelu_gradient writes (exact form),
//   s = x * sqrt(1/2);  cdf = 0.5 * (1 + Erf(s))
//   x2 = x * x;         pdf = 1/sqrt(2 pi) * Exp(x2 * -0.5)
//   derivative = cdf + x * pdf;  dx = dy * derivative
// upward from the final product, each Add and Mul with its operands in
// either order. A match needs every intermediate value read only inside the
// expression, so that replacing it by one primitive leaves no reader without
// its value.
#include "dnnl_gelu_gradient.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "graft/ir/updated_constant.h"

namespace graft::dnnl_backend {
namespace {

using ir::OpId;

const ir::Node* producer(const ir::Value& v, OpId op) {
  return v && v.node->op() == op && v.index == 0 ? v.node : nullptr;
}

bool scalar_near(const ir::Value& v, double want) {
  if (!v || v.node->op() != OpId::Constant || ir::is_updated_in_place(*v.node)) return false;
  const Tensor& t = v.node->constant_value;
  if (t.numel() != 1 || !dtype_is_float(t.dtype())) return false;
  return std::abs(t.value_as_double(0) - want) <= 1e-6 * std::abs(want);
}

// For a two-input `node` (Add or Mul) with one operand a constant near
// `constant`: the other operand.
std::optional<ir::Value> other_than_constant(const ir::Node* node, double constant) {
  if (!node || node->inputs.size() != 2) return std::nullopt;
  for (int k = 0; k < 2; ++k)
    if (scalar_near(node->inputs[static_cast<size_t>(k)], constant)) return node->inputs[static_cast<size_t>(1 - k)];
  return std::nullopt;
}

// cdf = 0.5 * (1 + Erf(x * sqrt(1/2))): x, and the steps in `steps`.
std::optional<ir::Value> match_cdf(const ir::Value& cdf, std::vector<const ir::Node*>& steps) {
  const ir::Node* half = producer(cdf, OpId::Mul);
  std::optional<ir::Value> one_plus = other_than_constant(half, 0.5);
  if (!one_plus) return std::nullopt;
  const ir::Node* add = producer(*one_plus, OpId::Add);
  std::optional<ir::Value> erf_value = other_than_constant(add, 1.0);
  if (!erf_value) return std::nullopt;
  const ir::Node* erf = producer(*erf_value, OpId::Erf);
  if (!erf || erf->inputs.size() != 1) return std::nullopt;
  const ir::Node* scale = producer(erf->inputs[0], OpId::Mul);
  std::optional<ir::Value> x = other_than_constant(scale, std::sqrt(0.5));
  if (!x) return std::nullopt;
  steps.insert(steps.end(), {half, add, erf, scale});
  return x;
}

// x * pdf with pdf = 1/sqrt(2 pi) * Exp(Mul(x, x) * -0.5), for the same x.
bool match_x_times_pdf(const ir::Value& value, const ir::Value& x, std::vector<const ir::Node*>& steps) {
  const ir::Node* product = producer(value, OpId::Mul);
  if (!product || product->inputs.size() != 2) return false;
  for (int k = 0; k < 2; ++k) {
    if (!(product->inputs[static_cast<size_t>(k)] == x)) continue;
    const ir::Node* pdf = producer(product->inputs[static_cast<size_t>(1 - k)], OpId::Mul);
    std::optional<ir::Value> exp_value = other_than_constant(pdf, 1.0 / std::sqrt(2.0 * std::numbers::pi));
    const ir::Node* exp = exp_value ? producer(*exp_value, OpId::Exp) : nullptr;
    if (!exp || exp->inputs.size() != 1) continue;
    const ir::Node* scaled = producer(exp->inputs[0], OpId::Mul);
    std::optional<ir::Value> square_value = other_than_constant(scaled, -0.5);
    const ir::Node* square = square_value ? producer(*square_value, OpId::Mul) : nullptr;
    if (!square || square->inputs.size() != 2 || !(square->inputs[0] == x) || !(square->inputs[1] == x)) continue;
    steps.insert(steps.end(), {product, pdf, exp, scaled, square});
    return true;
  }
  return false;
}

}  // namespace

std::optional<GeluGradient> match_gelu_gradient(
    const ir::Node& product, const std::function<std::vector<const ir::Node*>(const ir::Node&)>& readers,
    const std::function<bool(const ir::Node&)>& is_output) {
  if (product.op() != OpId::Mul || product.inputs.size() != 2 || product.num_outputs() != 1) return std::nullopt;
  for (int d = 0; d < 2; ++d) {
    const ir::Node* derivative = producer(product.inputs[static_cast<size_t>(d)], OpId::Add);
    if (!derivative || derivative->inputs.size() != 2) continue;
    for (int c = 0; c < 2; ++c) {
      GeluGradient match;
      match.steps = {derivative};
      std::optional<ir::Value> x = match_cdf(derivative->inputs[static_cast<size_t>(c)], match.steps);
      if (!x || !match_x_times_pdf(derivative->inputs[static_cast<size_t>(1 - c)], *x, match.steps)) continue;
      match.product = &product;
      match.x = *x;
      match.dy = product.inputs[static_cast<size_t>(1 - d)];
      // One eltwise backward reads x and dy element by element: neither broadcasts.
      const ir::ValueType& out = product.output_types[0];
      if (!match.dy || match.x.node->output_types[static_cast<size_t>(match.x.index)] != out ||
          match.dy.node->output_types[static_cast<size_t>(match.dy.index)] != out)
        continue;
      bool inside = true;
      for (const ir::Node* step : match.steps) {
        if (is_output(*step)) inside = false;
        for (const ir::Node* reader : readers(*step))
          if (reader != &product && std::find(match.steps.begin(), match.steps.end(), reader) == match.steps.end())
            inside = false;
      }
      if (inside) return match;
    }
  }
  return std::nullopt;
}

}  // namespace graft::dnnl_backend
