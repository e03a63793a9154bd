/// \file
/// Which nodes the pointwise fusion pass may put into a graft.FusedPointwise
/// node. The one place that answers it, so that it can follow the code
/// generator's op-to-expression table once that exists.
#pragma once

#include "graft/ir/graph.h"

namespace graft::fusion {

/// True when `node` may be fused: its op is in category elementwise or
/// broadcast, has a pointwise expression (today: a fixed list of float ops,
/// see fusible.cc), is implemented, its value types are known and float32, and
/// no backend has claimed it yet (Node::backend empty or "fuse").
/// Equal to is_fusible_op(node) and is_fusible_type() of every input and output.
bool is_fusible(const ir::Node& node);

/// The op-level half of is_fusible: the op has a pointwise expression and the
/// node is free to be fused (no backend claimed it, one output, no body).
bool is_fusible_op(const ir::Node& node);

/// The type-level half of is_fusible: a value of this type may flow into or
/// out of a fused node.
bool is_fusible_type(const ir::ValueType& type);

/// True when `node` is a Constant holding a single element, which a fused node
/// copies into its body instead of taking it as an input.
bool is_scalar_constant(const ir::Node& node);

}  // namespace graft::fusion
