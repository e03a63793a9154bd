/// \file
/// The partitioner: each backend, in priority order, claims disjoint, connected,
/// convex subgraphs through its SubgraphProperty; each subgraph is replaced by
/// one node (a graft.Subgraph by default) in a single pass that builds the new
/// graph. What nobody takes stays as it is and runs on the fallback backend
/// that the caller names. The partitioner reads no registry and names no
/// backend: it is handed the backends, in priority order, with their properties.
///
/// Per backend (the published MXNet algorithm, made cycle-safe): every node not
/// yet taken, in topological order, that the selector's Select() accepts seeds
/// a subgraph; a breadth-first search grows it through SelectInput() and
/// SelectOutput() over nodes not yet taken; the set is trimmed to a convex,
/// connected subset containing the seed (ConvexGrouping, which also accounts
/// for the subgraphs already formed, so that contracting all of them together
/// makes no cycle); Filter() prunes it (trimmed again if that broke it);
/// subgraphs below MinSubgraphSize() are dropped. Nodes trimmed away stay
/// available to later seeds; to stay near-linear whatever a selector answers,
/// a node dropped from a set four times is not offered to that backend again.
/// A subgraph none of whose values is read (dead code) is dropped with its nodes.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "graft/ir/graph.h"
#include "graft/partition/annotations.h"
#include "graft/partition/report.h"
#include "graft/partition/subgraph_property.h"

namespace graft::partition {

/// One backend taking part, with its property (nullptr: it takes nothing).
struct BackendEntry {
  std::string name;
  std::shared_ptr<const SubgraphProperty> property;
  std::string unavailable;  ///< non-empty: declines every node with this reason
};

/// Partitions `graph` in place among `backends`, in priority order (replacing
/// the graph by the partitioned graph when any subgraph is formed). Selectors
/// see dtypes and shapes: types are inferred first unless every value already
/// has a dtype. `fallback` names the backend that runs what no backend takes:
/// the report lists those nodes under it, and annotations may pin nodes to it
/// (the compiler passes backend::fallback_backend(); the partitioner names no
/// backend of its own). User annotations are `annotations` plus those carried
/// by node attributes. `detailed_report`: per-node placements and reasons (and
/// node names per subgraph) in the report; false keeps only the per-backend
/// counts and subgraph sizes. Throws graft::Error for invalid annotations
/// (naming the nodes).
PartitionReport partition_graph(std::unique_ptr<ir::Graph>& graph, const std::vector<BackendEntry>& backends,
                                const std::string& fallback, const Annotations& annotations = {},
                                bool detailed_report = true);

}  // namespace graft::partition
