/// \file
/// SubgraphSelector: how a backend grows one subgraph, with the names and
/// semantics of MXNet's subgraph API (src/operator/subgraph/subgraph_property.h).
///
/// The partitioner visits every node no backend has taken, in topological
/// order; a node that Select() accepts seeds a subgraph, which grows breadth
/// first through SelectInput() (towards producers) and SelectOutput() (towards
/// consumers) over nodes not yet taken. Filter() may then drop candidates.
/// Whatever a selector answers, graft keeps every subgraph connected and convex
/// (it trims the set and says so in the partition report). Selectors see nodes
/// with inferred dtypes and shapes (Node::output_types, and the producers'
/// types of Node::inputs). Graph inputs and constants are never offered:
/// constants a subgraph reads are copied into its body.
#pragma once

#include <vector>

#include "graft/ir/graph.h"

namespace graft::partition {

/// Stateful; a fresh selector (or one just Reset()) grows each subgraph.
class SubgraphSelector {
 public:
  virtual ~SubgraphSelector() = default;
  /// May `n` start a subgraph?
  virtual bool Select(const ir::Node& n) = 0;
  /// Follow the edge from `cur` (in the subgraph) to its input's producer?
  virtual bool SelectInput(const ir::Node& cur, const ir::Node& producer) = 0;
  /// Follow the edge from `cur` (in the subgraph) to a consumer of its outputs?
  virtual bool SelectOutput(const ir::Node& cur, const ir::Node& consumer) = 0;
  /// Given every node the search reached, returns those to keep (a subset).
  virtual std::vector<const ir::Node*> Filter(std::vector<const ir::Node*> candidates) { return candidates; }
  /// Forgets the state of the previous search; called before a selector is reused.
  virtual void Reset() {}
};

}  // namespace graft::partition
