// The fusible-op test. Until the code generator's op-to-expression table is
// available this is a fixed list of float32 pointwise ops whose reference
// kernels the fused node's body runs; switching to the table changes only
// has_pointwise_expression().
#include "graft/fusion/fusible.h"

#include <algorithm>
#include <array>
#include <string_view>
#include <vector>

namespace graft::fusion {

namespace {

constexpr size_t kMaxFusedRank = 8;

bool has_pointwise_expression(const ir::OpSchema& schema) {
  static constexpr std::array<std::string_view, 32> kPointwiseOps = {
      "Abs",   "Add",        "Ceil",  "Clip",    "Cos",      "Div",   "Elu",  "Erf",
      "Exp",   "Floor",      "Gelu",  "HardSigmoid", "Identity", "LeakyRelu", "Log", "Max",
      "Mean",  "Min",        "Mul",   "Neg",     "Pow",      "Reciprocal", "Relu", "Selu",
      "Sigmoid", "Sin",      "Softplus", "Softsign", "Sqrt", "Sub",   "Sum",  "Tanh",
  };
  if (!schema.domain.empty()) return false;
  return std::find(kPointwiseOps.begin(), kPointwiseOps.end(), schema.name) != kPointwiseOps.end();
}

/// has_pointwise_expression and the category test for every op, by position
/// in the op table (built on first use, after static initialization).
bool op_is_pointwise(const ir::OpSchema& schema) {
  static const std::vector<bool> table = [] {
    std::vector<bool> t;
    for (const ir::OpSchema& op : ir::all_ops())
      t.push_back((op.category == ir::OpCategory::elementwise || op.category == ir::OpCategory::broadcast) &&
                  op.is_implemented() && has_pointwise_expression(op));
    return t;
  }();
  auto ops = ir::all_ops();
  if (&schema < ops.data() || &schema >= ops.data() + ops.size()) return false;
  return table[static_cast<size_t>(&schema - ops.data())];
}

}  // namespace

bool is_fusible_type(const ir::ValueType& type) {
  return type.dtype == DType::float32 && (!type.has_rank || type.dims.size() <= kMaxFusedRank);
}

bool is_fusible_op(const ir::Node& node) {
  if (!op_is_pointwise(node.schema())) return false;
  if (!node.backend.empty() && node.backend != "fuse") return false;
  return !node.subgraph && node.num_outputs() == 1;
}

bool is_fusible(const ir::Node& node) {
  if (!is_fusible_op(node) || !is_fusible_type(node.output_types[0])) return false;
  for (const ir::Value& v : node.inputs)
    if (v && !is_fusible_type(v.node->output_types[static_cast<size_t>(v.index)])) return false;
  return true;
}

bool is_scalar_constant(const ir::Node& node) {
  return node.schema().category == ir::OpCategory::source && node.schema().name == "Constant" &&
         node.constant_value.is_defined() && node.constant_value.numel() == 1;
}

}  // namespace graft::fusion
