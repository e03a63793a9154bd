/// \file
/// GraphRebuilder: the way passes build their result graph in one pass over
/// the topological view of the source graph, copying, replacing or dropping
/// nodes and remapping values as they go.
#pragma once

#include <memory>
#include <vector>

#include "graft/ir/indexed_graph.h"

namespace graft::ir {

class GraphRebuilder {
 public:
  /// Starts a new graph with the source's name, opsets and inputs (same order).
  explicit GraphRebuilder(const IndexedGraph& source);

  /// The new graph being built (to add replacement nodes).
  Graph& target() { return *target_; }
  /// The new value standing for a source entry (absent stays absent).
  Value map(Entry e) const;
  /// New values for the inputs of source node `id`.
  std::vector<Value> mapped_inputs(uint32_t id) const;
  /// Copies source node `id` with mapped inputs; records its outputs. Input
  /// nodes were copied by the constructor and are returned as they are.
  Node* copy(uint32_t id);
  /// Makes source entry (id, index) stand for `value` in the new graph.
  void alias(uint32_t id, uint32_t index, Value value);
  /// Puts `replacement`, a node of target() with as many outputs as source
  /// node `id`, in that node's place: it takes the node's output types and
  /// names, and its outputs stand for the node's.
  void replace(uint32_t id, Node* replacement);
  /// Sets the graph outputs (source outputs, mapped, same names) and returns
  /// the graph.
  std::unique_ptr<Graph> finish();

 private:
  const IndexedGraph& source_;
  std::unique_ptr<Graph> target_;
  std::vector<Value> map_;  // per source entry
};

}  // namespace graft::ir
