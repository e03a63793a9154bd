// The fusible-node test: the op table's category (elementwise or broadcast)
// and the op's pointwise expression (codegen::is_fusible, which also checks
// dtypes, ranks and attributes), so that the pass fuses exactly what the
// `fuse` backend can compile.
#include "graft/fusion/fusible.h"

#include <vector>

#include "graft/codegen/op_expressions.h"
#include "graft/ir/updated_constant.h"

namespace graft::fusion {

namespace {

/// Per op of the op table (by position): elementwise or broadcast, implemented,
/// and with a pointwise expression. Built on first use, after static
/// initialization has attached the semantics.
bool op_is_pointwise(const ir::OpSchema& schema) {
  static const std::vector<bool> table = [] {
    std::vector<bool> t;
    for (const ir::OpSchema& op : ir::all_ops())
      t.push_back((op.category == ir::OpCategory::elementwise || op.category == ir::OpCategory::broadcast) &&
                  op.is_implemented() && op.pointwise != nullptr);
    return t;
  }();
  return table[ir::op_index(schema.id)];
}

}  // namespace

bool is_fusible_op(const ir::Node& node) {
  if (!op_is_pointwise(node.schema())) return false;
  if (!node.backend.empty() && node.backend != kFuseBackend) return false;
  return !node.subgraph && node.num_outputs() == 1;
}

bool is_fusible(const ir::Node& node) { return is_fusible_op(node) && codegen::is_fusible(node); }

bool is_scalar_constant(const ir::Node& node) {
  return node.op() == ir::OpId::Constant && node.constant_value.is_defined() && node.constant_value.numel() == 1 &&
         !ir::is_updated_in_place(node);
}

}  // namespace graft::fusion
