// ccodegen's op support: what its table (c_op_table.cc) and its emitter take,
// node by node, and one partition checker per op of the table asking
// ccodegen_supports(). The partitioner's generic property then grows the
// largest convex regions of supported nodes into graft.Subgraph nodes for
// ccodegen.
#include "c_op_table.h"
#include "graft/backends/ccodegen.h"
#include "graft/ir/graph.h"
#include "graft/ops/pointwise_expression.h"
#include "graft/partition/op_support.h"

namespace graft::backends {

namespace {

/// What a pointwise node's expression takes: float32 as its first input, its
/// attributes (the expression's own check), absent inputs where it allows
/// them.
std::string pointwise_refusal(const ir::Node& node) {
  const ops::PointwiseExpression& expression = *node.schema().pointwise;
  if (!ops::accepts(expression.first_input, DType::float32))
    return "the expression of " + node.op_type() + " does not take float32";
  for (size_t k = 0; k < node.inputs.size(); ++k)
    if (!node.inputs[k] && !expression.takes_absent_inputs) return "input " + std::to_string(k) + " is absent";
  return expression.check ? expression.check(node) : std::string();
}

}  // namespace

std::string c_op_refusal(const ir::Node& node) {
  std::optional<COp> op = find_c_op(node.op());
  if (!op) return "ccodegen has no C emitter for " + node.op_type();
  if (node.num_outputs() != 1) return "ccodegen emits single-output ops only";
  auto float_or_unknown = [](const ir::ValueType& t) {
    return t.dtype == DType::float32 || t.dtype == DType::undefined;
  };
  if (!float_or_unknown(node.output_types[0]))
    return "output is " + node.output_types[0].to_string() + " (ccodegen: float32 only)";
  const int data_inputs = num_data_inputs(node);
  for (int k = 0; k < data_inputs; ++k) {
    const ir::Value& v = node.inputs[static_cast<size_t>(k)];
    if (!v) continue;
    const ir::ValueType& t = v.node->output_types[static_cast<size_t>(v.index)];
    if (!float_or_unknown(t))
      return "input " + std::to_string(k) + " is " + t.to_string() + " (ccodegen: float32 only)";
  }
  switch (op->kind) {
    case COpKind::pointwise:
      return pointwise_refusal(node);
    case COpKind::layer_norm:
      if (node.attributes.get_int("stash_type", 1) != 1) return "LayerNormalization with a stash_type other than float";
      break;
    case COpKind::reduce:
      if (node.inputs.size() > 1 && node.inputs[1] && node.inputs[1].node->op() != ir::OpId::Constant)
        return "reduction axes are not a constant";
      break;
    default:
      break;
  }
  return {};
}

namespace {

bool register_ccodegen_op_support() {
  for (ir::OpId op : c_op_candidates())
    partition::register_op_support("ccodegen", std::string(ir::op_schema(op).name), [](const ir::Node& node) {
      CcodegenSupport answer = ccodegen_supports(node);
      return answer.supported ? partition::Support::yes() : partition::Support::no(answer.reason);
    });
  return true;
}

[[maybe_unused]] const bool registered = register_ccodegen_op_support();

}  // namespace
}  // namespace graft::backends
