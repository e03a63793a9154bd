/// \file
/// Structural checks on a graph.
#pragma once

#include "graft/ir/graph.h"

namespace graft::ir {

/// Checks that the graph is acyclic, every input is produced inside the graph,
/// every node's arity fits its op table row, output names are unique and every
/// graph output exists. Throws invalid_model naming the first offending node.
void verify(const Graph& graph);

}  // namespace graft::ir
