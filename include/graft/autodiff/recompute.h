/// \file
/// Recomputing cheap pointwise activations in the backward part of a
/// gradient graph instead of keeping them alive from the forward part until
/// their backward use: less memory held across the step for a few more
/// pointwise ops, which fuse into the backward kernels that read them.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "graft/ir/graph.h"

namespace graft::autodiff {

/// Returns `gradient_graph` (a forward+backward graph: backward nodes marked
/// is_backward, as autodiff::gradient makes it) where the backward nodes
/// read recomputed copies of cheap pointwise forward values instead of the
/// forward values themselves, wherever that keeps fewer bytes alive across
/// the step. The copies are backward nodes (so they fuse with the backward
/// pointwise chains that read them, never with forward nodes), placed just
/// before their first backward reader, and compute from values that the
/// backward part reads anyway, or from fewer bytes than they replace.
/// Outputs, their names and values are those of `gradient_graph`.
std::unique_ptr<ir::Graph> recompute_pointwise_activations(const ir::Graph& gradient_graph);

/// The activations a gradient graph keeps for its backward part: the values
/// of forward nodes (not inputs or constants) that a backward node reads,
/// in topological order.
std::vector<ir::Value> activations_kept_for_backward(const ir::Graph& gradient_graph);

/// Bytes of `values` whose shapes are known (the others count 0).
size_t bytes_of(const ir::Graph& graph, const std::vector<ir::Value>& values);

}  // namespace graft::autodiff
