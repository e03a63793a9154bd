/// \file
/// Which nodes the pointwise fusion pass may put into a graft.FusedPointwise
/// node. The one place the pass asks; it follows each op's pointwise
/// expression (OpSchema::pointwise, read by graft/codegen/op_expressions.h).
#pragma once

#include <string_view>

#include "graft/ir/graph.h"

namespace graft::fusion {

/// The backend that runs the fused nodes (Node::backend of every
/// graft.FusedPointwise node the pass makes, and the name its report entries carry).
inline constexpr std::string_view kFuseBackend = "fuse";

/// True when `node` may be fused: is_fusible_op(node), and its op's pointwise
/// expression accepts it with its inferred dtypes, ranks and attributes
/// (codegen::is_fusible).
bool is_fusible(const ir::Node& node);

/// The cheap half of is_fusible: the op is of category elementwise or
/// broadcast, implemented, has a pointwise expression, and the node is free to
/// be fused (no backend claimed it: Node::backend empty or kFuseBackend; one output;
/// no body).
bool is_fusible_op(const ir::Node& node);

/// True when `node` is a Constant holding a single element, which a fused node
/// copies into its body instead of taking it as an input; not a constant that
/// a training step updates in place (ir::is_updated_in_place), whose value the
/// kernel must read on every run.
bool is_scalar_constant(const ir::Node& node);

}  // namespace graft::fusion
