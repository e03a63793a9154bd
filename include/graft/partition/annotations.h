/// \file
/// User annotations that steer partitioning: pin a node to a backend, forbid
/// backends for a node, or declare a region (nodes that must form one subgraph
/// on one backend).
///
/// From a JSON file (`graft partition --annotations FILE`):
///
///   {
///     "pin":     {"conv1": "dnnl"},
///     "forbid":  {"relu3": ["dnnl", "ccodegen"]},
///     "regions": [{"backend": "dnnl", "nodes": ["conv2", "relu2", "add2"]}]
///   }
///
/// or from node attributes in the graph: `graft_backend` (string: pin),
/// `graft_forbid` (string, comma-separated backends) and `graft_region`
/// (string: region name; the region's nodes must all carry the same
/// `graft_backend`).
///
/// A pinned node may be taken only by its backend (if that backend's selector
/// declines it, it runs on `ref` and the report says why). A region is
/// contracted as declared before any selector runs; a region whose nodes do
/// not exist, are not connected, or are not convex is an error naming them.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "graft/ir/graph.h"

namespace graft::partition {

/// Nodes that must form one subgraph on one backend.
struct Region {
  std::string name;               ///< for messages ("region 2" when unnamed)
  std::string backend;
  std::vector<std::string> nodes;  ///< node names
};

struct Annotations {
  std::map<std::string, std::string> pinned;            ///< node name -> backend
  std::map<std::string, std::set<std::string>> forbidden;  ///< node name -> backends it must not go to
  std::vector<Region> regions;

  bool empty() const { return pinned.empty() && forbidden.empty() && regions.empty(); }
  /// Adds `other`'s entries; a node pinned to two different backends is invalid_argument.
  void merge(const Annotations& other);
};

/// Parses the JSON form; `source` names the file in error messages. Throws
/// invalid_argument on malformed JSON or entries of the wrong type.
Annotations parse_annotations(const std::string& json_text, const std::string& source = "annotations");
/// Reads and parses an annotation file (io error when it cannot be read).
Annotations load_annotations(const std::string& path);
/// The annotations carried by node attributes (graft_backend, graft_forbid, graft_region).
Annotations annotations_from_attributes(const ir::Graph& graph);

}  // namespace graft::partition
