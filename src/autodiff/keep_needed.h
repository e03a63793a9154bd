// Pruning a graph to what its outputs need, for autodiff's results.
#pragma once

#include <memory>

#include "graft/ir/graph.h"

namespace graft::autodiff {

/// A copy of `graph` with only the nodes its outputs depend on, and every
/// graph input (which callers feed, read or not), in topological order.
std::unique_ptr<ir::Graph> keep_needed(const ir::Graph& graph);

}  // namespace graft::autodiff
