/// \file
/// The pointwise fusion pass: replaces each maximal group of connected
/// fusible nodes (see fusible.h) by one `graft.FusedPointwise` node that owns
/// the group as its body, in time linear in the graph size. The algorithm is
/// described at the top of src/fusion/fuse_pointwise.cc and in
/// docs/fusion-pass.md.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "graft/ir/graph.h"
#include "graft/ir/indexed_graph.h"

namespace graft::fusion {

/// Which fusion subset each node of an IndexedGraph joins.
struct FusionSubsets {
  static constexpr uint32_t kNone = UINT32_MAX;
  /// Per topological node id: the index of its subset in [0, num_subsets()),
  /// or kNone for nodes that stay as they are (not fusible, or alone in their
  /// subset). Subsets are numbered in the order of their first node.
  std::vector<uint32_t> subset_of;
  /// Number of nodes in each subset (always at least 2).
  std::vector<uint32_t> sizes;
  size_t num_subsets() const { return sizes.size(); }
};

/// What the pass did.
struct FusionStats {
  size_t fused_nodes = 0;     ///< graft.FusedPointwise nodes created
  size_t nodes_replaced = 0;  ///< nodes moved into their bodies
};

/// Finds the fusion subsets of `graph`. Every subset has at least two nodes,
/// all fusible, all forward or all backward (Node::is_backward), all on one
/// device; is weakly connected; and is convex (no path leaves it and comes
/// back), so that replacing it by one node keeps the graph acyclic.
FusionSubsets find_fusion_subsets(const ir::IndexedGraph& graph);


/// Builds the graph in which every subset of `subsets` (found on `source`) is
/// one graft.FusedPointwise node: domain "graft", Node::backend "fuse", body
/// Input nodes carrying the boundary dtypes and shapes, scalar Constant inputs
/// copied into the body, and one output per value of the subset that is read
/// outside it or is a graph output (named as that value was). A subset none of
/// whose values is used is dead code and stays as it is. Fills `stats` when given.
std::unique_ptr<ir::Graph> build_fused_graph(const ir::IndexedGraph& source, const FusionSubsets& subsets,
                                             FusionStats* stats = nullptr);

/// Runs the whole pass on `graph`, replacing it when anything was fused.
/// Returns whether the graph changed; fills `stats` when given.
bool fuse_pointwise(std::unique_ptr<ir::Graph>& graph, FusionStats* stats = nullptr);

}  // namespace graft::fusion
