/// \file
/// Dtype and shape inference over a whole graph.
#pragma once

#include "graft/ir/graph.h"

namespace graft::ops {

/// Runs every node's inference in topological order, overwriting output types
/// (Input and Constant types are kept). Symbolic dimensions propagate.
/// Throws invalid_model naming the node whose inputs are inconsistent.
void infer_types(ir::Graph& graph);

}  // namespace graft::ops
