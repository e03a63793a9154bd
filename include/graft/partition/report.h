/// \file
/// PartitionReport: where every node went and, for every backend that did not
/// take it, why not. Nothing falls back silently: `graft partition` prints it,
/// `graft run --report` prints its summary line, Session::partition_report()
/// returns it.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace graft::ir {
class Graph;
}

namespace graft::partition {

/// Why a backend did not take a node.
enum class DeclineKind {
  unsupported,        ///< the backend's selector or checker declined (detail: its reason)
  filtered,           ///< the selector's Filter dropped it
  convexity,          ///< taking it would break convexity (a path would leave the subgraph and re-enter)
  below_min_size,     ///< its subgraph was smaller than the backend's minimum
  taken,              ///< a higher-priority backend took it (detail: which)
  forbidden,          ///< a user annotation forbids this backend
  pinned_elsewhere,   ///< a user annotation pins it to another backend
  unavailable,        ///< the backend cannot run on this machine (detail: why)
};

/// "unsupported", "convexity", ...
const char* to_string(DeclineKind kind);

struct Decline {
  std::string backend;
  DeclineKind kind;
  std::string detail;
};

/// One node of the graph as it was before partitioning.
struct NodePlacement {
  std::string name;
  std::string op_type;
  std::string backend;     ///< the backend that runs it (PartitionReport::fallback when nobody took it)
  int subgraph = -1;       ///< index into PartitionReport::subgraphs, or -1
  bool is_source = false;  ///< Input/Constant: not partitioned (constants are copied into the bodies that read them)
  std::vector<Decline> declined;  ///< per backend before the one that took it, in priority order
};

/// One subgraph made by partitioning.
struct SubgraphInfo {
  std::string backend;
  int id = 0;                      ///< the subgraph node's `id` attribute
  std::string node_name;           ///< name of the graft.Subgraph node standing for it
  size_t size = 0;                 ///< number of nodes it holds
  std::vector<std::string> nodes;  ///< names of the nodes it holds (detailed reports)
  bool from_annotation = false;    ///< a user-declared region
};

/// What one backend ended up with.
struct BackendSummary {
  std::string backend;
  bool has_property = false;     ///< false: the backend takes no nodes by partitioning
  std::string unavailable;       ///< why it cannot run here, or empty
  size_t nodes = 0;
  std::vector<size_t> subgraph_sizes;
};

/// A value crossing a device boundary: the copy node placement inserted.
struct DeviceCopy {
  std::string value;  ///< the value copied (its name in the partitioned graph)
  std::string from;   ///< "cpu:0", "opencl:0"
  std::string to;
  std::string node;   ///< the graft.CopyToDevice / graft.CopyToHost node's name
};

struct PartitionReport {
  std::vector<std::string> backends;  ///< the priority order used
  std::vector<NodePlacement> nodes;   ///< every node, in topological order (detailed reports)
  std::vector<SubgraphInfo> subgraphs;
  std::vector<BackendSummary> summaries;  ///< one per backend in `backends`, then the fallback
  std::string fallback;                   ///< the backend that runs what no backend took (set by the partitioner)
  double milliseconds = 0;                ///< time spent partitioning, in all (wall clock)
  /// Where the time went (wall clock, ms): building the indexed view,
  /// selecting and trimming (all backends), the report, and building the
  /// partitioned graph (old graph released included).
  struct Timings {
    double index = 0, select = 0, report = 0, rebuild = 0;
  } timings;

  /// Compute nodes (not Input/Constant) per backend, including the fallback.
  std::map<std::string, size_t> nodes_per_backend() const;
  /// One line: "partition: dnnl 40 nodes in 3 subgraphs, ref 5 nodes".
  std::string summary_line() const;
  /// Human-readable: the summary, then one line per node with its backend or reasons.
  std::string to_text() const;
  /// The whole report as a JSON document.
  std::string to_json() const;
  /// A Graphviz picture of the original graph, nodes coloured by backend and
  /// clustered by subgraph. Needs the original graph's edges: pass them as
  /// (producer, consumer) pairs of indices into `nodes`.
  std::string to_dot(const std::vector<std::pair<size_t, size_t>>& edges) const;
  /// Records what a backend claimed after partitioning
  /// (backend::Backend::claim_remaining): each node of `graph` that owns a
  /// body and whose Node::backend is `backend` becomes a subgraph of that
  /// backend named after it, and the nodes of its body (matched by name and
  /// op among those left on the fallback) move from the fallback to
  /// `backend`, so the report shows them like any other backend's. Returns
  /// how many nodes moved.
  size_t record_claimed_subgraphs(const ir::Graph& graph, const std::string& backend);
  /// Adds `decline` to the node named `name` with op `op_type` that is still
  /// on the fallback and has no decline of that backend yet (the first in
  /// topological order, when a name repeats). Returns false when there is
  /// none. For backends that decide after partitioning.
  bool record_decline(const std::string& name, const std::string& op_type, Decline decline);
  /// Copies at device boundaries, in the order placement inserted them
  /// (empty when everything runs on the host).
  std::vector<DeviceCopy> copies;
  /// Edges of the original graph as indices into `nodes` (filled by the partitioner).
  std::vector<std::pair<size_t, size_t>> edges;
  /// to_dot(edges).
  std::string to_dot() const { return to_dot(edges); }
};

}  // namespace graft::partition
