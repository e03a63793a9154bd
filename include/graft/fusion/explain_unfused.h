/// \file
/// Why pointwise nodes stayed out of the fused nodes: what `graft partition`
/// prints under a node that backend `fuse` did not take, like the reasons of
/// every other backend.
#pragma once

#include <string>
#include <vector>

#include "graft/ir/graph.h"
#include "graft/partition/report.h"

namespace graft::fusion {

/// A pointwise node (op category elementwise or broadcast) that no backend
/// claimed and that the fusion pass left as it was, and why.
struct UnfusedNode {
  enum class Reason {
    not_fusible,   ///< the code generator cannot compile it (dtype, rank, attributes, no expression)
    alone,         ///< no pointwise neighbour to join: a fused node holds two ops or more
    kind_differs,  ///< its pointwise neighbours are on the other side of the forward/backward line or on another device
    cycle,         ///< joining its neighbours would close a cycle through a node outside them
  };
  const ir::Node* node = nullptr;
  Reason reason = Reason::alone;
  std::string detail;  ///< one sentence for people
};

/// The unfused pointwise nodes of `fused_graph` (a graph after fuse_pointwise),
/// in topological order, with why each stayed out.
std::vector<UnfusedNode> explain_unfused(const ir::Graph& fused_graph);

/// Records fusion in `report` (PartitionReport::record_claimed_subgraphs of
/// backend `fuse`) and, under each pointwise node left on the fallback, why
/// `fuse` did not take it (a Decline of
/// backend "fuse": unsupported, below_min_size or convexity).
void record_fusion_in_report(const ir::Graph& fused_graph, partition::PartitionReport& report);

}  // namespace graft::fusion
