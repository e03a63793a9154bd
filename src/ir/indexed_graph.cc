// IndexedGraph construction: Kahn's algorithm over the nodes in insertion
// order (so the order is deterministic and equals insertion order when that is
// already topological), then flat CSR arrays for inputs and consumers.
#include "graft/ir/indexed_graph.h"

#include <algorithm>

namespace graft::ir {

IndexedGraph::IndexedGraph(const Graph& graph) : graph_(graph) {
  const auto& nodes = graph.nodes();
  const size_t n = nodes.size();
  // In-degree counts distinct producer edges (an input used twice counts twice).
  std::vector<uint32_t> indegree(n, 0);
  std::vector<uint32_t> succ_offsets(n + 1, 0);
  for (const auto& node : nodes) {
    for (const Value& v : node->inputs) {
      if (!v.node) continue;
      if (&v.node->graph() != &graph || v.node->index() >= n || nodes[v.node->index()].get() != v.node)
        fail(ErrorKind::invalid_model, node->describe(), " reads a value of a node outside its graph");
      if (v.index < 0 || v.index >= v.node->num_outputs())
        fail(ErrorKind::invalid_model, node->describe(), " reads output ", v.index, " of ", v.node->describe(),
             " which has ", v.node->num_outputs(), " outputs");
      ++indegree[node->index()];
      ++succ_offsets[v.node->index() + 1];
    }
  }
  for (size_t i = 0; i < n; ++i) succ_offsets[i + 1] += succ_offsets[i];
  std::vector<uint32_t> succ(succ_offsets[n]);
  {
    std::vector<uint32_t> fill(succ_offsets.begin(), succ_offsets.end() - 1);
    for (const auto& node : nodes)
      for (const Value& v : node->inputs)
        if (v.node) succ[fill[v.node->index()]++] = node->index();
  }
  nodes_.reserve(n);
  std::vector<uint32_t> queue;
  queue.reserve(n);
  for (uint32_t i = 0; i < n; ++i)
    if (indegree[i] == 0) queue.push_back(i);
  for (size_t head = 0; head < queue.size(); ++head) {
    uint32_t i = queue[head];
    nodes_.push_back(nodes[i].get());
    for (uint32_t k = succ_offsets[i]; k < succ_offsets[i + 1]; ++k)
      if (--indegree[succ[k]] == 0) queue.push_back(succ[k]);
  }
  if (nodes_.size() != n) {
    std::string names;
    int listed = 0;
    for (uint32_t i = 0; i < n && listed < 10; ++i)
      if (indegree[i] > 0) {
        names += (listed++ ? ", " : "") + nodes[i]->describe();
      }
    fail(ErrorKind::invalid_model, "the graph has a cycle through ", n - nodes_.size(), " nodes, including ", names);
  }
  id_of_index_.assign(n, 0);
  for (uint32_t id = 0; id < n; ++id) id_of_index_[nodes_[id]->index()] = id;

  input_offsets_.assign(n + 1, 0);
  entry_offsets_.assign(n + 1, 0);
  for (uint32_t id = 0; id < n; ++id) {
    input_offsets_[id + 1] = input_offsets_[id] + static_cast<uint32_t>(nodes_[id]->inputs.size());
    entry_offsets_[id + 1] = entry_offsets_[id] + static_cast<uint32_t>(nodes_[id]->num_outputs());
  }
  input_entries_.resize(input_offsets_[n]);
  std::vector<uint32_t> consumer_count(n, 0);
  for (uint32_t id = 0; id < n; ++id) {
    uint32_t k = input_offsets_[id];
    for (const Value& v : nodes_[id]->inputs) input_entries_[k++] = entry_of(v);
  }
  // Distinct consumers per producer, ascending (consumers are visited in id order).
  std::vector<uint32_t> last_seen(n, Entry::kAbsent);
  for (uint32_t id = 0; id < n; ++id)
    for (const Entry& e : inputs(id))
      if (e.present() && last_seen[e.node_id] != id) {
        last_seen[e.node_id] = id;
        ++consumer_count[e.node_id];
      }
  consumer_offsets_.assign(n + 1, 0);
  for (uint32_t id = 0; id < n; ++id) consumer_offsets_[id + 1] = consumer_offsets_[id] + consumer_count[id];
  consumer_ids_.resize(consumer_offsets_[n]);
  std::vector<uint32_t> fill(consumer_offsets_.begin(), consumer_offsets_.end() - 1);
  std::fill(last_seen.begin(), last_seen.end(), Entry::kAbsent);
  for (uint32_t id = 0; id < n; ++id)
    for (const Entry& e : inputs(id))
      if (e.present() && last_seen[e.node_id] != id) {
        last_seen[e.node_id] = id;
        consumer_ids_[fill[e.node_id]++] = id;
      }
  for (const Value& v : graph.outputs()) {
    if (!v.node || &v.node->graph() != &graph)
      fail(ErrorKind::invalid_model, "graph output '", graph.value_name(v), "' is not produced in the graph");
    outputs_.push_back(entry_of(v));
  }
}

}  // namespace graft::ir
