/// \file
/// IndexedGraph: an immutable topological view of a Graph with integer ids and
/// flat input/consumer arrays, built in O(V + E). Passes read this view and
/// build their result graph in one pass.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "graft/ir/graph.h"

namespace graft::ir {

/// A value in the indexed view: output `index` of node `node_id`.
struct Entry {
  static constexpr uint32_t kAbsent = UINT32_MAX;
  uint32_t node_id = kAbsent;
  uint32_t index = 0;
  bool present() const { return node_id != kAbsent; }
  bool operator==(const Entry&) const = default;
};

class IndexedGraph {
 public:
  /// Builds the view; throws invalid_model naming nodes on a cycle, or an input
  /// that refers to a node of another graph or a missing output.
  explicit IndexedGraph(const Graph& graph);

  const Graph& graph() const { return graph_; }
  size_t num_nodes() const { return nodes_.size(); }
  /// Node with topological id `id` (inputs have smaller ids than consumers).
  const Node& node(uint32_t id) const { return *nodes_[id]; }
  Node& mutable_node(uint32_t id) const { return *nodes_[id]; }
  /// Topological id of a node of the graph.
  uint32_t id_of(const Node& node) const { return id_of_index_[node.index()]; }
  /// Inputs of node `id` (absent optional inputs have node_id == kAbsent).
  std::span<const Entry> inputs(uint32_t id) const {
    return {input_entries_.data() + input_offsets_[id], input_entries_.data() + input_offsets_[id + 1]};
  }
  /// Distinct consumer node ids of node `id`, ascending.
  std::span<const uint32_t> consumers(uint32_t id) const {
    return {consumer_ids_.data() + consumer_offsets_[id], consumer_ids_.data() + consumer_offsets_[id + 1]};
  }
  /// Dense id of a value, in [0, num_entries()).
  uint32_t entry_id(Entry e) const { return entry_offsets_[e.node_id] + e.index; }
  uint32_t entry_id(uint32_t node_id, uint32_t index) const { return entry_offsets_[node_id] + index; }
  size_t num_entries() const { return entry_offsets_.back(); }
  /// Graph outputs as entries.
  const std::vector<Entry>& outputs() const { return outputs_; }
  /// Entry of a Value of the graph.
  Entry entry_of(Value v) const { return v.node ? Entry{id_of(*v.node), static_cast<uint32_t>(v.index)} : Entry{}; }

 private:
  void order_by_kahn();
  void fill_inputs(std::vector<uint32_t>& consumer_count);
  void fill_consumers(std::vector<uint32_t>& consumer_count);

  const Graph& graph_;
  std::vector<Node*> nodes_;
  std::vector<uint32_t> id_of_index_;
  std::vector<uint32_t> input_offsets_;
  std::vector<Entry> input_entries_;
  std::vector<uint32_t> consumer_offsets_;
  std::vector<uint32_t> consumer_ids_;
  std::vector<uint32_t> entry_offsets_;
  std::vector<Entry> outputs_;
};

}  // namespace graft::ir
