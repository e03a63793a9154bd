/// \file
/// Which nodes the pointwise fusion pass may put into a graft.FusedPointwise
/// node. The one place the pass asks; it follows the code generator's
/// op-to-expression table (graft/codegen/op_expressions.h).
#pragma once

#include "graft/ir/graph.h"

namespace graft::fusion {

/// True when `node` may be fused: is_fusible_op(node), and the code
/// generator's table accepts it with its inferred dtypes, ranks and attributes
/// (codegen::is_fusible).
bool is_fusible(const ir::Node& node);

/// The cheap half of is_fusible: the op is of category elementwise or
/// broadcast, implemented, has a pointwise expression in the code generator's
/// table, and the node is free to be fused (no backend claimed it: Node::backend
/// empty or "fuse"; one output; no body).
bool is_fusible_op(const ir::Node& node);

/// True when `node` is a Constant holding a single element, which a fused node
/// copies into its body instead of taking it as an input.
bool is_scalar_constant(const ir::Node& node);

}  // namespace graft::fusion
