// ccodegen's op table and the per-element C expressions of its pointwise ops.
// Operands are C expressions of type float (in practice the names of locals
// the emitter loaded them into); every expression is float-typed C99 using
// <math.h>'s float functions, so -O3 can vectorize the loops around them.
#include "c_op_table.h"

#include <cmath>
#include <cstdio>
#include <numbers>

#include "graft/ir/graph.h"

namespace graft::backends {

namespace {

constexpr COp kOps[] = {
    // Unary pointwise
    {"Abs", COpKind::pointwise}, {"Ceil", COpKind::pointwise}, {"Cos", COpKind::pointwise},
    {"Elu", COpKind::pointwise}, {"Erf", COpKind::pointwise}, {"Exp", COpKind::pointwise},
    {"Floor", COpKind::pointwise}, {"Gelu", COpKind::pointwise}, {"HardSigmoid", COpKind::pointwise},
    {"HardSwish", COpKind::pointwise}, {"LeakyRelu", COpKind::pointwise}, {"Log", COpKind::pointwise},
    {"Neg", COpKind::pointwise}, {"Reciprocal", COpKind::pointwise}, {"Relu", COpKind::pointwise},
    {"Selu", COpKind::pointwise}, {"Sigmoid", COpKind::pointwise}, {"Sin", COpKind::pointwise},
    {"Softplus", COpKind::pointwise}, {"Softsign", COpKind::pointwise}, {"Sqrt", COpKind::pointwise},
    {"Tanh", COpKind::pointwise}, {"Clip", COpKind::pointwise},
    // Broadcast pointwise
    {"Add", COpKind::pointwise}, {"Sub", COpKind::pointwise}, {"Mul", COpKind::pointwise},
    {"Div", COpKind::pointwise}, {"Pow", COpKind::pointwise}, {"PRelu", COpKind::pointwise},
    {"Max", COpKind::pointwise}, {"Min", COpKind::pointwise}, {"Sum", COpKind::pointwise},
    {"Mean", COpKind::pointwise},
    // Others
    {"MatMul", COpKind::matmul}, {"Gemm", COpKind::gemm}, {"Softmax", COpKind::softmax},
    {"LogSoftmax", COpKind::softmax}, {"ReduceSum", COpKind::reduce}, {"ReduceMean", COpKind::reduce},
    {"ReduceMax", COpKind::reduce}, {"ReduceMin", COpKind::reduce}, {"Reshape", COpKind::copy},
    {"Flatten", COpKind::copy}, {"Squeeze", COpKind::copy}, {"Unsqueeze", COpKind::copy},
    {"Identity", COpKind::copy}, {"Transpose", COpKind::transpose}, {"LayerNormalization", COpKind::layer_norm},
};

std::string lit(float v) { return c_float_literal(v); }

/// Reads a Clip bound: an attribute before opset 11, else an optional
/// constant input. nullopt (with reason) when it is a computed value.
std::optional<float> clip_bound(const ir::Node& node, int which, float fallback, std::string* reason) {
  const char* name = which == 1 ? "min" : "max";
  if (node.opset_version > 0 && node.opset_version < 11) return node.attributes.get_float(name, fallback);
  if (static_cast<int>(node.inputs.size()) <= which || !node.inputs[static_cast<size_t>(which)]) return fallback;
  const ir::Node* producer = node.inputs[static_cast<size_t>(which)].node;
  if (producer->op() != ir::OpId::Constant || producer->constant_value.dtype() != DType::float32 ||
      producer->constant_value.numel() != 1) {
    *reason = std::string("Clip's ") + name + " is not a float32 constant";
    return std::nullopt;
  }
  return producer->constant_value.data<float>()[0];
}

std::string fold(const std::vector<std::string>& operands, const std::string& open, const std::string& separator,
                 const std::string& close) {
  std::string out = operands[0];
  for (size_t i = 1; i < operands.size(); ++i) out = open + out + separator + operands[i] + close;
  return out;
}

}  // namespace

std::span<const COp> c_ops() { return kOps; }

const COp* find_c_op(std::string_view op_name) {
  for (const COp& op : kOps)
    if (op.name == op_name) return &op;
  return nullptr;
}

int num_data_inputs(const ir::Node& node) {
  std::string_view name = node.schema().name;
  const COp* op = find_c_op(name);
  if (!op) return static_cast<int>(node.inputs.size());
  if (name == "Clip" || op->kind == COpKind::copy || op->kind == COpKind::reduce) return 1;
  return static_cast<int>(node.inputs.size());
}

std::string c_float_literal(float value) {
  if (std::isnan(value)) return "NAN";
  if (std::isinf(value)) return value > 0 ? "INFINITY" : "(-INFINITY)";
  char buffer[48];
  std::snprintf(buffer, sizeof(buffer), "%.9g", static_cast<double>(value));
  std::string s = buffer;
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  s += "f";
  return s[0] == '-' ? "(" + s + ")" : s;
}

std::optional<std::string> pointwise_expression(const ir::Node& node, const std::vector<std::string>& operands,
                                                std::string* reason) {
  const std::string_view op = node.schema().name;
  const ir::Attributes& attrs = node.attributes;
  if (operands.empty()) {
    *reason = "no inputs";
    return std::nullopt;
  }
  const std::string& x = operands[0];
  if (operands.size() == 2) {
    const std::string& b = operands[1];
    if (op == "Add") return "(" + x + " + " + b + ")";
    if (op == "Sub") return "(" + x + " - " + b + ")";
    if (op == "Mul") return "(" + x + " * " + b + ")";
    if (op == "Div") return "(" + x + " / " + b + ")";
    if (op == "Pow") return "powf(" + x + ", " + b + ")";
    if (op == "PRelu") return "(" + x + " < 0.0f ? " + x + " * " + b + " : " + x + ")";
  }
  if (op == "Max") return fold(operands, "fmaxf(", ", ", ")");
  if (op == "Min") return fold(operands, "fminf(", ", ", ")");
  if (op == "Sum") return fold(operands, "(", " + ", ")");
  if (op == "Mean") return "(" + fold(operands, "(", " + ", ")") + " * " + lit(1.0f / static_cast<float>(operands.size())) + ")";
  if (op == "Clip") {
    auto lo = clip_bound(node, 1, -INFINITY, reason);
    auto hi = clip_bound(node, 2, INFINITY, reason);
    if (!lo || !hi) return std::nullopt;
    return "fminf(fmaxf(" + x + ", " + lit(*lo) + "), " + lit(*hi) + ")";
  }
  if (operands.size() != 1) {
    *reason = "unexpected input count " + std::to_string(operands.size());
    return std::nullopt;
  }
  if (op == "Abs") return "fabsf(" + x + ")";
  if (op == "Ceil") return "ceilf(" + x + ")";
  if (op == "Cos") return "cosf(" + x + ")";
  if (op == "Erf") return "graft_erff(" + x + ")";
  if (op == "Exp") return "graft_expf(" + x + ")";
  if (op == "Floor") return "floorf(" + x + ")";
  if (op == "Log") return "logf(" + x + ")";
  if (op == "Neg") return "(-" + x + ")";
  if (op == "Reciprocal") return "(1.0f / " + x + ")";
  if (op == "Relu") return "(" + x + " > 0.0f ? " + x + " : 0.0f)";
  if (op == "Sigmoid") return "(1.0f / (1.0f + graft_expf(-" + x + ")))";
  if (op == "Sin") return "sinf(" + x + ")";
  if (op == "Softplus") return "(" + x + " > 20.0f ? " + x + " : log1pf(graft_expf(" + x + ")))";
  if (op == "Softsign") return "(" + x + " / (1.0f + fabsf(" + x + ")))";
  if (op == "Sqrt") return "sqrtf(" + x + ")";
  if (op == "Tanh") return "graft_tanhf(" + x + ")";
  if (op == "Elu") {
    float alpha = attrs.get_float("alpha", 1.0f);
    return "(" + x + " < 0.0f ? " + lit(alpha) + " * (graft_expf(" + x + ") - 1.0f) : " + x + ")";
  }
  if (op == "LeakyRelu") {
    float alpha = attrs.get_float("alpha", 0.01f);
    return "(" + x + " < 0.0f ? " + lit(alpha) + " * " + x + " : " + x + ")";
  }
  if (op == "HardSigmoid") {
    float alpha = attrs.get_float("alpha", 0.2f), beta = attrs.get_float("beta", 0.5f);
    return "fminf(fmaxf(" + lit(alpha) + " * " + x + " + " + lit(beta) + ", 0.0f), 1.0f)";
  }
  if (op == "HardSwish") return "(" + x + " * fminf(fmaxf(" + x + " * (1.0f / 6.0f) + 0.5f, 0.0f), 1.0f))";
  if (op == "Selu") {
    float alpha = attrs.get_float("alpha", 1.67326319217681884765625f);
    float gamma = attrs.get_float("gamma", 1.05070102214813232421875f);
    return "(" + lit(gamma) + " * (" + x + " > 0.0f ? " + x + " : " + lit(alpha) + " * (graft_expf(" + x + ") - 1.0f)))";
  }
  if (op == "Gelu") {
    std::string approximate = attrs.get_string("approximate", "none");
    if (approximate == "tanh")
      return "(0.5f * " + x + " * (1.0f + graft_tanhf(" + lit(static_cast<float>(std::numbers::sqrt2 * std::numbers::inv_sqrtpi)) +
             " * (" + x + " + 0.044715f * " + x + " * " + x + " * " + x + "))))";
    if (approximate != "none") {
      *reason = "Gelu approximate=\"" + approximate + "\"";
      return std::nullopt;
    }
    return "(0.5f * " + x + " * (1.0f + graft_erff(" + x + " * " + lit(static_cast<float>(std::numbers::sqrt2 / 2)) + ")))";
  }
  *reason = "no C expression for " + std::string(op);
  return std::nullopt;
}

}  // namespace graft::backends
