// IndexedGraph construction. The topological order is the insertion order
// when that is already topological (every producer inserted before its
// consumers: what the ONNX importer and most builders produce), found in the
// validating sweep, which also fills the flat input arrays; otherwise Kahn's
// algorithm over the nodes in insertion order (deterministic) and a second
// sweep. Consumers come from the flat inputs. A node reading one producer
// several times is found by scanning its own inputs (a few, usually), which
// keeps the sweeps sequential.
#include "graft/ir/indexed_graph.h"

#include <algorithm>

namespace graft::ir {

namespace {

// How many nodes ahead the sweeps over the graph's nodes prefetch.
constexpr uint32_t kPrefetchDistance = 8;

/// Finds a producer that one node reads twice: by scanning the node's
/// earlier inputs (a few, usually), or with a stamp per producer for nodes
/// with many inputs, so that no node costs more than linear time.
class RepeatFinder {
 public:
  explicit RepeatFinder(size_t num_nodes) : num_nodes_(num_nodes) {}
  void start(uint32_t node, size_t num_inputs) {
    node_ = node;
    wide_ = num_inputs > kScanLimit;
    if (wide_ && stamp_.empty()) stamp_.assign(num_nodes_, Entry::kAbsent);
  }
  /// True when `producer` is among `earlier`, the node's inputs before this one.
  bool repeated(uint32_t producer, std::span<const Entry> earlier) {
    if (wide_) {
      if (stamp_[producer] == node_) return true;
      stamp_[producer] = node_;
      return false;
    }
    for (const Entry& e : earlier)
      if (e.node_id == producer) return true;
    return false;
  }

 private:
  static constexpr size_t kScanLimit = 16;
  size_t num_nodes_;
  uint32_t node_ = 0;
  bool wide_ = false;
  std::vector<uint32_t> stamp_;
};

}  // namespace

IndexedGraph::IndexedGraph(const Graph& graph) : graph_(graph) {
  const auto& nodes = graph.nodes();
  const size_t n = nodes.size();
  // One sweep validates every input and, assuming that insertion order is
  // topological (every producer inserted before its consumers), fills the
  // flat arrays with ids equal to indices. When a producer turns out to come
  // later, the ids come from Kahn's algorithm and the arrays are filled again.
  nodes_.resize(n);
  input_offsets_.resize(n + 1);
  entry_offsets_.resize(n + 1);
  input_entries_.reserve(2 * n);
  std::vector<uint32_t> consumer_count(n + 1, 0);  // per producer id, then the fill positions
  bool inserted_in_order = true;
  uint32_t entry_offset = 0;
  RepeatFinder repeats(n);
  for (uint32_t i = 0; i < n; ++i) {
    // Nodes are scattered on the heap: fetch them, then their inputs, ahead.
    if (i + 2 * kPrefetchDistance < n) nodes[i + 2 * kPrefetchDistance]->prefetch();
    if (i + kPrefetchDistance < n) graft::prefetch(nodes[i + kPrefetchDistance]->inputs.data());
    const Node& node = *nodes[i];
    nodes_[i] = nodes[i].get();
    input_offsets_[i] = static_cast<uint32_t>(input_entries_.size());
    entry_offsets_[i] = entry_offset;
    entry_offset += static_cast<uint32_t>(node.output_types.size());
    const size_t first_input = input_entries_.size();
    repeats.start(i, node.inputs.size());
    for (const Value& v : node.inputs) {
      if (!v.node) {
        input_entries_.push_back(Entry{});
        continue;
      }
      const Node& producer = *v.node;
      const uint32_t p = producer.index();
      if (&producer.graph() != &graph || p >= n || nodes[p].get() != &producer)
        fail(ErrorKind::invalid_model, node.describe(), " reads a value of a node outside its graph");
      if (v.index < 0 || v.index >= producer.num_outputs())
        fail(ErrorKind::invalid_model, node.describe(), " reads output ", v.index, " of ", producer.describe(),
             " which has ", producer.num_outputs(), " outputs");
      if (p >= i) inserted_in_order = false;
      // Distinct consumers: a node reading a producer twice counts once.
      if (!repeats.repeated(p, {input_entries_.data() + first_input, input_entries_.data() + input_entries_.size()}))
        ++consumer_count[p];
      input_entries_.push_back(Entry{p, static_cast<uint32_t>(v.index)});
    }
  }
  input_offsets_[n] = static_cast<uint32_t>(input_entries_.size());
  entry_offsets_[n] = entry_offset;
  if (inserted_in_order) {
    id_of_index_.resize(n);
    for (uint32_t i = 0; i < n; ++i) id_of_index_[i] = i;
  } else {
    order_by_kahn();
    fill_inputs(consumer_count);
  }
  fill_consumers(consumer_count);
  outputs_.reserve(graph.outputs().size());
  for (const Value& v : graph.outputs()) {
    if (!v.node || &v.node->graph() != &graph)
      fail(ErrorKind::invalid_model, "graph output '", graph.value_name(v), "' is not produced in the graph");
    outputs_.push_back(entry_of(v));
  }
}

void IndexedGraph::fill_inputs(std::vector<uint32_t>& consumer_count) {
  const size_t n = nodes_.size();
  std::fill(consumer_count.begin(), consumer_count.end(), 0);
  uint32_t input_offset = 0, entry_offset = 0;
  RepeatFinder repeats(n);
  for (uint32_t id = 0; id < n; ++id) {
    const Node& node = *nodes_[id];
    input_offsets_[id] = input_offset;
    entry_offsets_[id] = entry_offset;
    entry_offset += static_cast<uint32_t>(node.output_types.size());
    repeats.start(id, node.inputs.size());
    for (const Value& v : node.inputs) {
      Entry e = entry_of(v);
      if (e.present() &&
          !repeats.repeated(e.node_id, {input_entries_.data() + input_offsets_[id], input_entries_.data() + input_offset}))
        ++consumer_count[e.node_id];
      input_entries_[input_offset++] = e;
    }
  }
  input_offsets_[n] = input_offset;
  entry_offsets_[n] = entry_offset;
}

void IndexedGraph::fill_consumers(std::vector<uint32_t>& consumer_count) {
  const size_t n = nodes_.size();
  consumer_offsets_.resize(n + 1);
  uint32_t consumer_offset = 0;
  for (uint32_t id = 0; id <= n; ++id) {
    consumer_offsets_[id] = consumer_offset;
    consumer_offset += consumer_count[id];
  }
  consumer_ids_.resize(consumer_offset);
  // Consumers are visited in id order, so each list comes out ascending.
  std::vector<uint32_t>& fill = consumer_count;
  std::copy(consumer_offsets_.begin(), consumer_offsets_.end(), fill.begin());
  RepeatFinder repeats(n);
  for (uint32_t id = 0; id < n; ++id) {
    const uint32_t first = input_offsets_[id], last = input_offsets_[id + 1];
    repeats.start(id, last - first);
    for (uint32_t k = first; k < last; ++k) {
      const Entry e = input_entries_[k];
      if (e.present() && !repeats.repeated(e.node_id, {input_entries_.data() + first, input_entries_.data() + k}))
        consumer_ids_[fill[e.node_id]++] = id;
    }
  }
}

void IndexedGraph::order_by_kahn() {
  const auto& nodes = graph_.nodes();
  const size_t n = nodes.size();
  // In-degree counts producer edges (an input used twice counts twice).
  std::vector<uint32_t> indegree(n, 0);
  std::vector<uint32_t> succ_offsets(n + 1, 0);
  for (const auto& node : nodes)
    for (const Value& v : node->inputs) {
      if (!v.node) continue;
      ++indegree[node->index()];
      ++succ_offsets[v.node->index() + 1];
    }
  for (size_t i = 0; i < n; ++i) succ_offsets[i + 1] += succ_offsets[i];
  std::vector<uint32_t> succ(succ_offsets[n]);
  {
    std::vector<uint32_t> fill(succ_offsets.begin(), succ_offsets.end() - 1);
    for (const auto& node : nodes)
      for (const Value& v : node->inputs)
        if (v.node) succ[fill[v.node->index()]++] = node->index();
  }
  nodes_.clear();
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
}

}  // namespace graft::ir
