// The fusible-op test. Until the code generator's op-to-expression table is
// available this is a fixed list of float32 pointwise ops whose reference
// kernels the fused node's body runs; switching to the table changes only
// has_pointwise_expression().
#include "graft/fusion/fusible.h"

#include <algorithm>
#include <array>
#include <string_view>

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

bool is_fusible_type(const ir::ValueType& type) {
  return type.dtype == DType::float32 && (!type.has_rank || type.dims.size() <= kMaxFusedRank);
}

}  // namespace

bool is_fusible(const ir::Node& node) {
  const ir::OpSchema& schema = node.schema();
  if (schema.category != ir::OpCategory::elementwise && schema.category != ir::OpCategory::broadcast) return false;
  if (!schema.is_implemented() || !has_pointwise_expression(schema)) return false;
  if (!node.backend.empty() && node.backend != "fuse") return false;
  if (node.subgraph || node.num_outputs() != 1) return false;
  if (!is_fusible_type(node.output_types[0])) return false;
  for (const ir::Value& v : node.inputs)
    if (v && !is_fusible_type(v.node->output_types[static_cast<size_t>(v.index)])) return false;
  return true;
}

bool is_scalar_constant(const ir::Node& node) {
  return node.schema().category == ir::OpCategory::source && node.schema().name == "Constant" &&
         node.constant_value.is_defined() && node.constant_value.numel() == 1;
}

}  // namespace graft::fusion
