// Recomputing cheap pointwise activations in the backward part.
//
// A gradient graph keeps every forward value that a backward node reads
// alive from the forward node that makes it to its last backward reader:
// most of a training step's peak memory. Where such a value is made by a
// cheap pointwise op (the op table's elementwise or broadcast category, with
// a pointwise expression: what the fusion pass compiles), the backward part
// can compute it again from the values it came from, and those may be kept
// anyway (ReLU's gradient reads its input, so its output, which the next
// layer's weight gradient reads, can be recomputed from it for free) or be
// fewer bytes (a GELU written in Erf, Mul and Add keeps four values of the
// input's size for its gradient and the next layer's; its input alone
// gives them all back).
//
// The forward nodes that qualify (single output, known shape, not random,
// not a graph output) are grouped into connected regions. For each region,
// the kept values are its members that a backward node reads; their cone
// inside the region is what would be recomputed, and the cone's inputs from
// outside the region are its sources. Recomputing costs the bytes of the
// sources that nothing keeps yet (not read by a backward node, not a graph
// input, constant or output) and saves the bytes of the kept values; a
// region is recomputed when it saves more than it costs, and its sources
// then count as kept for the regions after it.
//
// The graph is rebuilt in its topological order, with a backward copy of
// each cone node (named "<name>.recomputed") emitted just before the first
// backward node that reads it, and every backward reader of a kept value
// reading the copy. Forward readers keep the forward value; a forward value
// that only backward nodes read dies with the copy, and the nodes no output
// needs any more are dropped.
#include "graft/autodiff/recompute.h"

#include <algorithm>
#include <numeric>
#include <string>
#include <tuple>
#include <unordered_set>

#include "graft/ir/graph_rebuilder.h"
#include "graft/ir/indexed_graph.h"
#include "keep_needed.h"

namespace graft::autodiff {
namespace {

size_t value_bytes(const ir::ValueType& type) {
  if (!type.is_tensor() || type.dtype == DType::undefined) return 0;
  std::optional<Shape> shape = type.concrete_shape();
  return shape ? static_cast<size_t>(shape_numel(*shape)) * dtype_size(type.dtype) : 0;
}

bool is_source(const ir::Node& node) { return node.schema().category == ir::OpCategory::source; }

/// A forward node whose output may be recomputed in the backward part.
bool is_cheap_pointwise(const ir::Node& node) {
  const ir::OpSchema& schema = node.schema();
  return !node.is_backward && node.num_outputs() == 1 && !node.subgraph && schema.pointwise &&
         (schema.category == ir::OpCategory::elementwise || schema.category == ir::OpCategory::broadcast) &&
         !ir::is_random_op(node.op()) && node.output_types[0].concrete_shape();
}

/// Union-find over node ids.
class Regions {
 public:
  explicit Regions(size_t count) : parent_(count) { std::iota(parent_.begin(), parent_.end(), 0u); }
  uint32_t root(uint32_t id) {
    while (parent_[id] != id) id = parent_[id] = parent_[parent_[id]];
    return id;
  }
  void join(uint32_t a, uint32_t b) { parent_[root(a)] = root(b); }

 private:
  std::vector<uint32_t> parent_;
};

/// Which nodes to recompute (by topological id), region by region.
std::vector<char> choose_recomputed(const ir::IndexedGraph& indexed) {
  const uint32_t count = static_cast<uint32_t>(indexed.num_nodes());
  std::vector<char> kept(indexed.num_entries(), 0), is_output(indexed.num_entries(), 0);
  for (const ir::Entry& e : indexed.outputs())
    if (e.present()) is_output[indexed.entry_id(e)] = 1;
  for (uint32_t id = 0; id < count; ++id) {
    if (!indexed.node(id).is_backward) continue;
    for (const ir::Entry& e : indexed.inputs(id))
      if (e.present() && !indexed.node(e.node_id).is_backward) kept[indexed.entry_id(e)] = 1;
  }
  std::vector<char> candidate(count, 0);
  for (uint32_t id = 0; id < count; ++id)
    candidate[id] = is_cheap_pointwise(indexed.node(id)) && !is_output[indexed.entry_id(id, 0)];

  Regions regions(count);
  for (uint32_t id = 0; id < count; ++id)
    if (candidate[id])
      for (const ir::Entry& e : indexed.inputs(id))
        if (e.present() && candidate[e.node_id]) regions.join(id, e.node_id);
  // The kept members of each region, regions in the order of their first kept member.
  std::vector<std::vector<uint32_t>> kept_members;
  std::vector<int64_t> slot(count, -1);
  for (uint32_t id = 0; id < count; ++id) {
    if (!candidate[id] || !kept[indexed.entry_id(id, 0)]) continue;
    uint32_t root = regions.root(id);
    if (slot[root] < 0) slot[root] = static_cast<int64_t>(kept_members.size()), kept_members.emplace_back();
    kept_members[static_cast<size_t>(slot[root])].push_back(id);
  }

  std::vector<char> recompute(count, 0), in_cone(count, 0);
  for (const std::vector<uint32_t>& members : kept_members) {
    std::vector<uint32_t> cone, stack(members.begin(), members.end());
    for (uint32_t id : members) in_cone[id] = 1;
    std::vector<ir::Entry> sources;
    while (!stack.empty()) {
      uint32_t id = stack.back();
      stack.pop_back();
      cone.push_back(id);
      for (const ir::Entry& e : indexed.inputs(id)) {
        if (!e.present()) continue;
        if (candidate[e.node_id]) {
          if (!in_cone[e.node_id]) in_cone[e.node_id] = 1, stack.push_back(e.node_id);
        } else if (std::find(sources.begin(), sources.end(), e) == sources.end()) {
          sources.push_back(e);
        }
      }
    }
    size_t saved = 0, cost = 0;
    for (uint32_t id : members) saved += value_bytes(indexed.node(id).output_types[0]);
    for (const ir::Entry& e : sources) {
      const ir::Node& producer = indexed.node(e.node_id);
      if (is_source(producer) || kept[indexed.entry_id(e)] || is_output[indexed.entry_id(e)]) continue;
      cost += value_bytes(producer.output_types[e.index]);
    }
    for (uint32_t id : cone) in_cone[id] = 0;
    if (saved <= cost) continue;
    for (uint32_t id : cone) recompute[id] = 1;
    for (const ir::Entry& e : sources) kept[indexed.entry_id(e)] = 1;
  }
  return recompute;
}

/// A name no value of the graph has yet.
class FreshNames {
 public:
  explicit FreshNames(const ir::Graph& graph) {
    for (const auto& n : graph.nodes())
      for (const std::string& name : n->output_names) taken_.insert(name);
    for (const std::string& name : graph.output_names()) taken_.insert(name);
  }
  std::string make(const std::string& base) {
    std::string name = base;
    for (int k = 2; !taken_.insert(name).second; ++k) name = base + "." + std::to_string(k);
    return name;
  }

 private:
  std::unordered_set<std::string> taken_;
};

}  // namespace

std::unique_ptr<ir::Graph> recompute_pointwise_activations(const ir::Graph& gradient_graph) {
  ir::IndexedGraph indexed(gradient_graph);
  const std::vector<char> recompute = choose_recomputed(indexed);
  const uint32_t count = static_cast<uint32_t>(indexed.num_nodes());
  ir::GraphRebuilder rebuilder(indexed);
  FreshNames names(gradient_graph);
  std::vector<ir::Value> copies(count);

  // The backward copy of node `id` and of the cone nodes it reads (inputs first).
  auto copy_of = [&](uint32_t top) {
    std::vector<uint32_t> stack{top};
    while (!stack.empty()) {
      uint32_t id = stack.back();
      if (copies[id]) {
        stack.pop_back();
        continue;
      }
      bool ready = true;
      for (const ir::Entry& e : indexed.inputs(id))
        if (e.present() && recompute[e.node_id] && !copies[e.node_id]) ready = false, stack.push_back(e.node_id);
      if (!ready) continue;
      stack.pop_back();
      std::vector<ir::Value> inputs;
      for (const ir::Entry& e : indexed.inputs(id))
        inputs.push_back(e.present() && recompute[e.node_id] ? copies[e.node_id] : rebuilder.map(e));
      const ir::Node& original = indexed.node(id);
      ir::Node* copy = rebuilder.target().copy_node(original, inputs);
      copy->is_backward = true;
      copy->name = (original.name.empty() ? original.op_type() : original.name) + ".recomputed";
      if (!original.output_names[0].empty())
        copy->output_names[0] = names.make(original.output_names[0] + ".recomputed");
      copies[id] = copy->output(0);
    }
    return copies[top];
  };

  for (uint32_t id = 0; id < count; ++id) {
    const ir::Node& n = indexed.node(id);
    bool reads_recomputed = false;
    if (n.is_backward)
      for (const ir::Entry& e : indexed.inputs(id))
        reads_recomputed = reads_recomputed || (e.present() && recompute[e.node_id]);
    if (!reads_recomputed) {
      rebuilder.copy(id);
      continue;
    }
    std::vector<ir::Value> inputs;
    for (const ir::Entry& e : indexed.inputs(id))
      inputs.push_back(e.present() && recompute[e.node_id] ? copy_of(e.node_id) : rebuilder.map(e));
    ir::Node* copy = rebuilder.target().copy_node(n, inputs);
    for (int k = 0; k < copy->num_outputs(); ++k) rebuilder.alias(id, static_cast<uint32_t>(k), copy->output(k));
  }
  std::unique_ptr<ir::Graph> rebuilt = rebuilder.finish();
  return keep_needed(*rebuilt);
}

std::vector<ir::Value> activations_kept_for_backward(const ir::Graph& gradient_graph) {
  ir::IndexedGraph indexed(gradient_graph);
  std::vector<char> seen(indexed.num_entries(), 0);
  std::vector<ir::Entry> kept;
  for (uint32_t id = 0; id < indexed.num_nodes(); ++id) {
    if (!indexed.node(id).is_backward) continue;
    for (const ir::Entry& e : indexed.inputs(id)) {
      if (!e.present() || seen[indexed.entry_id(e)]) continue;
      const ir::Node& producer = indexed.node(e.node_id);
      if (producer.is_backward || is_source(producer)) continue;
      seen[indexed.entry_id(e)] = 1;
      kept.push_back(e);
    }
  }
  std::sort(kept.begin(), kept.end(), [](const ir::Entry& a, const ir::Entry& b) {
    return std::tie(a.node_id, a.index) < std::tie(b.node_id, b.index);
  });
  std::vector<ir::Value> values;
  for (const ir::Entry& e : kept) values.push_back(indexed.mutable_node(e.node_id).output(static_cast<int>(e.index)));
  return values;
}

size_t bytes_of(const ir::Graph& graph, const std::vector<ir::Value>& values) {
  size_t total = 0;
  for (const ir::Value& v : values) total += value_bytes(graph.type_of(v));
  return total;
}

}  // namespace graft::autodiff
