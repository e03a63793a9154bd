/// \file
/// Fused bodies to kernel IR. Each op's pointwise expression is declared with
/// its semantics (OpSchema::pointwise, graft/ops/pointwise_expression.h);
/// the fusion pass asks is_fusible() and code generation calls lower_body(),
/// which read those expressions, so both always agree on what can be fused.
#pragma once

#include <string>
#include <vector>

#include "graft/core/tensor.h"
#include "graft/ir/kernel_ir.h"

namespace graft::ir {
class Graph;
class Node;
}  // namespace graft::ir

namespace graft::codegen {

/// True when `node` (with inferred input and output dtypes) can be part of a
/// fused pointwise kernel: its op has a pointwise expression, every input and
/// output dtype is a kernel dtype the expression accepts, its attributes are
/// supported (no legacy broadcast attributes, Cast to a kernel dtype, ...:
/// the expression's check) and every known
/// rank is at most kMaxKernelRank. Constant nodes holding a kernel dtype are
/// fusible too (they become constants or captured inputs).
bool is_fusible(const ir::Node& node);
/// Empty when is_fusible(node); otherwise why not (for reports and messages).
std::string why_not_fusible(const ir::Node& node);

/// A fused body lowered to kernel IR.
struct LoweredKernel {
  /// Canonical IR. Its first inputs are the body's inputs, in order; the rest
  /// are `captured` tensors.
  ir::KernelIR ir;
  /// Non-scalar Constant nodes of the body, passed as extra kernel inputs.
  std::vector<Tensor> captured;
};

/// Lowers a FusedPointwise body (Input nodes = kernel inputs, outputs = kernel
/// outputs) whose dtypes are inferred. Throws unsupported naming the node
/// when a body node is not fusible.
LoweredKernel lower_body(const ir::Graph& body);

/// Why `node`, a graft.FusedPointwise node or a single op with a pointwise
/// expression, cannot be lowered to one kernel ("" when it can): its body's
/// first node that is not fusible, named; what is_fusible says of a single op.
std::string why_not_lowerable(const ir::Node& node);
/// Lowers `node` (as why_not_lowerable accepts): a FusedPointwise node's
/// body, or a body of the single op (an Input per node input) whose types are
/// the node's own. The device backends run every pointwise node this way.
LoweredKernel lower_node(const ir::Node& node);

}  // namespace graft::codegen
