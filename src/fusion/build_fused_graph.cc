// Building the fused graph in one pass over the source's topological order.
//
// Every node outside a subset is copied; each subset becomes one
// graft.FusedPointwise node, created where its first member is met, whose
// body holds copies of the members. A node's inputs may come from a fused
// node created later in that walk (a subset's first member can precede the
// producer of another member's input), so nodes are created first and their
// inputs filled in afterwards, once every source value has its new value. The
// result is a valid graph whose node list need not be topological; the
// IndexedGraph of any consumer orders it.
#include <string>

#include "graft/fusion/fuse_pointwise.h"
#include "graft/fusion/fusible.h"

namespace graft::fusion {

namespace {

class FusedGraphBuilder {
 public:
  /// `consume_source`: the source graph is discarded afterwards, so node
  /// names, attributes and constants are moved rather than copied.
  FusedGraphBuilder(const ir::IndexedGraph& source, const FusionSubsets& subsets, bool consume_source)
      : source_(source), subsets_(subsets), consume_source_(consume_source), map_(source.num_entries()) {}

  /// graft.FusedPointwise nodes created by build().
  size_t num_fused() const { return fused_.size(); }

  std::unique_ptr<ir::Graph> build() {
    mark_values_used_outside();
    const ir::Graph& g = source_.graph();
    target_ = std::make_unique<ir::Graph>();
    target_->opset_imports = g.opset_imports;
    target_->name = g.name;
    for (const ir::Node* in : g.inputs()) {
      ir::Node* n = target_->add_input(in->output_names[0], in->output_types[0]);
      n->name = in->name;
      map_[source_.entry_id(source_.id_of(*in), 0)] = n->output(0);
    }
    std::vector<bool> subset_created(subsets_.num_subsets(), false);
    // A subset none of whose values is read outside it is dead code; its
    // nodes are copied as they are (the pass removes nothing).
    std::vector<bool> subset_live(subsets_.num_subsets(), false);
    for (uint32_t id = 0; id < source_.num_nodes(); ++id) {
      uint32_t subset = subsets_.subset_of[id];
      if (subset == FusionSubsets::kNone) continue;
      for (int k = 0; k < source_.node(id).num_outputs(); ++k)
        if (used_outside_[source_.entry_id(id, static_cast<uint32_t>(k))]) subset_live[subset] = true;
    }
    body_input_stamp_.assign(source_.num_entries(), FusionSubsets::kNone);
    body_values_.resize(source_.num_entries());
    members_by_subset();
    for (uint32_t id = 0; id < source_.num_nodes(); ++id) {
      const ir::Node& src = source_.node(id);
      uint32_t subset = subsets_.subset_of[id];
      if (subset == FusionSubsets::kNone || !subset_live[subset]) {
        if (map_[source_.entry_id(id, 0)].node && src.schema().name == "Input") continue;  // a graph input
        ir::Node* n = transfer(*target_, id, {});
        for (int k = 0; k < n->num_outputs(); ++k) map_[source_.entry_id(id, static_cast<uint32_t>(k))] = n->output(k);
        copied_.push_back({n, id});
      } else if (!subset_created[subset]) {
        subset_created[subset] = true;
        create_fused_node(subset);
      }
    }
    for (const auto& [node, id] : copied_) {
      node->inputs.clear();
      for (const ir::Entry& e : source_.inputs(id)) node->inputs.push_back(map(e));
    }
    for (auto& [node, external] : fused_) {
      node->inputs.clear();
      for (const ir::Entry& e : external) node->inputs.push_back(map(e));
    }
    for (size_t i = 0; i < g.outputs().size(); ++i) target_->add_output(map(source_.outputs()[i]), g.output_names()[i]);
    return std::move(target_);
  }

 private:
  ir::Value map(ir::Entry e) const {
    if (!e.present()) return {};
    ir::Value v = map_[source_.entry_id(e)];
    GRAFT_CHECK(v.node, "fusion: value of ", source_.node(e.node_id).describe(), " has no counterpart");
    return v;
  }

  void mark_values_used_outside() {
    used_outside_.assign(source_.num_entries(), false);
    for (uint32_t id = 0; id < source_.num_nodes(); ++id)
      for (const ir::Entry& e : source_.inputs(id)) {
        if (!e.present()) continue;
        uint32_t producer_subset = subsets_.subset_of[e.node_id];
        if (producer_subset != FusionSubsets::kNone && producer_subset != subsets_.subset_of[id])
          used_outside_[source_.entry_id(e)] = true;
      }
    for (const ir::Entry& e : source_.outputs())
      if (subsets_.subset_of[e.node_id] != FusionSubsets::kNone) used_outside_[source_.entry_id(e)] = true;
  }

  /// Members of each subset in topological order (a counting sort).
  void members_by_subset() {
    member_offsets_.assign(subsets_.num_subsets() + 1, 0);
    for (size_t s = 0; s < subsets_.num_subsets(); ++s) member_offsets_[s + 1] = member_offsets_[s] + subsets_.sizes[s];
    members_.resize(member_offsets_.back());
    std::vector<uint32_t> fill(member_offsets_.begin(), member_offsets_.end() - 1);
    for (uint32_t id = 0; id < source_.num_nodes(); ++id)
      if (subsets_.subset_of[id] != FusionSubsets::kNone) members_[fill[subsets_.subset_of[id]]++] = id;
  }

  /// Copies (or moves, when consuming the source) source node `id` into `graph`.
  /// Output types, names and constant values are always copied: boundary
  /// values and scalar constants of later fused nodes read them.
  ir::Node* transfer(ir::Graph& graph, uint32_t id, const std::vector<ir::Value>& inputs) {
    if (!consume_source_) return graph.copy_node(source_.node(id), inputs);
    ir::Node& src = source_.mutable_node(id);
    ir::Node* n = graph.add_node(src.schema().name, inputs, 0, std::move(src.name), src.schema().domain);
    n->attributes = std::move(src.attributes);
    n->attributes.set_owner(n->describe());
    n->output_types = src.output_types;
    n->output_names = src.output_names;
    n->opset_version = src.opset_version;
    n->device = src.device;
    n->backend = std::move(src.backend);
    n->is_backward = src.is_backward;
    n->constant_value = src.constant_value;  // shares storage; a body may still copy a scalar constant
    n->subgraph = std::move(src.subgraph);
    n->num_captured_inputs = src.num_captured_inputs;
    return n;
  }

  bool in_subset(ir::Entry e, uint32_t subset) const { return e.present() && subsets_.subset_of[e.node_id] == subset; }

  void create_fused_node(uint32_t subset) {
    const ir::Graph& g = source_.graph();
    const uint32_t* begin = members_.data() + member_offsets_[subset];
    const uint32_t* end = members_.data() + member_offsets_[subset + 1];
    // Scalar constants go into the body, unless the body would then have no
    // input at all (graft.FusedPointwise takes at least one).
    bool has_non_constant_input = false;
    for (const uint32_t* m = begin; m != end && !has_non_constant_input; ++m)
      for (const ir::Entry& e : source_.inputs(*m))
        if (e.present() && !in_subset(e, subset) && !is_scalar_constant(source_.node(e.node_id)))
          has_non_constant_input = true;

    auto body = std::make_shared<ir::Graph>();
    body->opset_imports = g.opset_imports;
    std::vector<ir::Entry> external;
    auto body_value = [&](ir::Entry e) -> ir::Value {
      if (!e.present()) return {};
      uint32_t entry = source_.entry_id(e);
      if (in_subset(e, subset) || body_input_stamp_[entry] == subset) return body_values_[entry];
      const ir::Node& producer = source_.node(e.node_id);
      ir::Value v;
      ir::Value outer{&source_.mutable_node(e.node_id), static_cast<int>(e.index)};
      if (has_non_constant_input && is_scalar_constant(producer)) {
        v = body->add_constant(g.value_name(outer), producer.constant_value)->output(0);
      } else {
        v = body->add_input(g.value_name(outer), g.type_of(outer))->output(0);
        external.push_back(e);
      }
      body_input_stamp_[entry] = subset;
      body_values_[entry] = v;
      return v;
    };
    std::vector<ir::Value> inputs;
    for (const uint32_t* m = begin; m != end; ++m) {
      inputs.clear();
      for (const ir::Entry& e : source_.inputs(*m)) inputs.push_back(body_value(e));
      ir::Node* copy = transfer(*body, *m, inputs);
      copy->backend.clear();
      for (int k = 0; k < copy->num_outputs(); ++k)
        body_values_[source_.entry_id(*m, static_cast<uint32_t>(k))] = copy->output(k);
    }
    const ir::Node& first = source_.node(*begin);
    ir::Node* fused = target_->add_node("FusedPointwise", {}, 0, "fused_pointwise_" + std::to_string(subset), "graft");
    for (const uint32_t* m = begin; m != end; ++m) {
      const ir::Node& member = source_.node(*m);
      for (int k = 0; k < member.num_outputs(); ++k) {
        uint32_t entry = source_.entry_id(*m, static_cast<uint32_t>(k));
        if (!used_outside_[entry]) continue;
        std::string name = g.value_name(ir::Value{&source_.mutable_node(*m), k});
        body->add_output(body_values_[entry], name);
        map_[entry] = fused->output(fused->num_outputs());
        fused->output_types.push_back(member.output_types[static_cast<size_t>(k)]);
        fused->output_names.push_back(member.output_names[static_cast<size_t>(k)]);
      }
    }
    GRAFT_CHECK(fused->num_outputs() > 0, "fusion: subset of ", first.describe(), " has no output used outside");
    fused->subgraph = std::move(body);
    fused->backend = "fuse";
    fused->is_backward = first.is_backward;
    fused->device = first.device;
    fused_.push_back({fused, std::move(external)});
  }

  const ir::IndexedGraph& source_;
  const FusionSubsets& subsets_;
  const bool consume_source_;
  std::unique_ptr<ir::Graph> target_;
  std::vector<ir::Value> map_;  // per source entry: its value in the new graph
  std::vector<bool> used_outside_;
  std::vector<uint32_t> member_offsets_;
  std::vector<uint32_t> members_;
  std::vector<uint32_t> body_input_stamp_;  // per source entry: subset whose body already has it
  std::vector<ir::Value> body_values_;      // per source entry: its value in the body being built
  std::vector<std::pair<ir::Node*, uint32_t>> copied_;
  std::vector<std::pair<ir::Node*, std::vector<ir::Entry>>> fused_;
};

}  // namespace

std::unique_ptr<ir::Graph> build_fused_graph(const ir::IndexedGraph& source, const FusionSubsets& subsets,
                                             FusionStats* stats) {
  GRAFT_CHECK(subsets.subset_of.size() == source.num_nodes(), "fusion subsets do not belong to this graph");
  FusedGraphBuilder builder(source, subsets, false);
  auto graph = builder.build();
  if (stats) {
    stats->fused_nodes = builder.num_fused();
    stats->nodes_replaced = graph ? source.num_nodes() + builder.num_fused() - graph->num_nodes() : 0;
  }
  return graph;
}

bool fuse_pointwise(std::unique_ptr<ir::Graph>& graph, FusionStats* stats) {
  ir::IndexedGraph indexed(*graph);
  FusionSubsets subsets = find_fusion_subsets(indexed);
  FusionStats local;
  if (!stats) stats = &local;
  *stats = FusionStats{};
  if (subsets.num_subsets() == 0) return false;
  FusedGraphBuilder builder(indexed, subsets, true);
  auto fused = builder.build();
  stats->fused_nodes = builder.num_fused();
  stats->nodes_replaced = indexed.num_nodes() + builder.num_fused() - fused->num_nodes();
  // Every subset may have been dead code; the rebuilt graph is then the same
  // graph (the source was consumed, so it replaces it all the same).
  graph = std::move(fused);
  return stats->fused_nodes > 0;
}

}  // namespace graft::fusion
