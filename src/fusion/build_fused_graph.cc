// Building the fused graph in one pass over the source's topological order.
//
// Every node outside a subset is copied; each subset becomes one
// graft.FusedPointwise node, created where its first member is met, whose
// body holds copies of the members. A copied node's producers all precede it,
// so its inputs are set as it is created. A fused node's inputs may come from
// a node created later in that walk (a subset's first member can precede the
// producer of another member's input), so fused nodes get their inputs once
// every source value has its new value. The result is a valid graph whose
// node list need not be topological; the IndexedGraph of any consumer orders
// it. Nodes of the source are moved, not copied, when the pass owns it.
#include <algorithm>
#include <span>
#include <string>

#include "graft/fusion/fuse_pointwise.h"
#include "graft/fusion/fusible.h"

namespace graft::fusion {

namespace {

// How many nodes ahead the walk over the source prefetches.
constexpr uint32_t kPrefetchDistance = 8;

const ir::OpSchema& fused_pointwise_op() {
  return ir::op_schema(ir::OpId::FusedPointwise);
}

class FusedGraphBuilder {
 public:
  /// `consume_source`: the source graph is discarded afterwards, so its node
  /// objects move into the new graph rather than being copied.
  FusedGraphBuilder(const ir::IndexedGraph& source, const FusionSubsets& subsets, bool consume_source)
      : source_(source), subsets_(subsets), consume_source_(consume_source), map_(source.num_entries()) {}

  /// graft.FusedPointwise nodes created by build().
  size_t num_fused() const { return fused_.size(); }

  std::unique_ptr<ir::Graph> build() {
    mark_values_used_outside();
    members_by_subset();
    const ir::Graph& g = source_.graph();
    target_ = std::make_unique<ir::Graph>();
    target_->opset_imports = g.opset_imports;
    target_->name = g.name;
    size_t fused_members = 0, live_subsets = 0;
    for (size_t s = 0; s < subsets_.num_subsets(); ++s)
      if (subset_live_[s]) {
        fused_members += subsets_.sizes[s];
        ++live_subsets;
      }
    target_->reserve_nodes(source_.num_nodes() - fused_members + live_subsets);
    fused_.reserve(live_subsets);
    fused_input_offsets_.reserve(live_subsets + 1);
    fused_input_offsets_.push_back(0);
    for (const ir::Node* in : g.inputs()) {
      ir::Node* n = target_->add_input(in->output_names[0], in->output_types[0]);
      n->name = in->name;
      map_[source_.entry_id(source_.id_of(*in), 0)] = n->output(0);
    }
    std::vector<bool> subset_created(subsets_.num_subsets(), false);
    body_input_stamp_.assign(source_.num_entries(), FusionSubsets::kNone);
    body_values_.resize(source_.num_entries());
    std::vector<ir::Value> inputs;
    const uint32_t num_nodes = static_cast<uint32_t>(source_.num_nodes());
    for (uint32_t id = 0; id < num_nodes; ++id) {
      if (id + 2 * kPrefetchDistance < num_nodes) source_.node(id + 2 * kPrefetchDistance).prefetch();
      if (id + kPrefetchDistance < num_nodes) graft::prefetch(source_.node(id + kPrefetchDistance).inputs.data());
      for (uint32_t stage = 0; stage < 3; ++stage) {
        const uint32_t ahead = id + (3 - stage) * kPrefetchDistance;
        if (ahead < num_nodes) prefetch_subset_at(ahead, stage);
      }
      uint32_t subset = subsets_.subset_of[id];
      if (subset == FusionSubsets::kNone || !subset_live_[subset]) {
        // Every producer precedes `id` and has its new value: a copied node,
        // or a fused node created at its subset's first member, earlier still.
        const ir::Node& src = source_.node(id);
        if (map_[source_.entry_id(id, 0)].node && src.op() == ir::OpId::Input) continue;  // a graph input
        ir::Node* n = transfer(*target_, id);
        std::span<const ir::Entry> entries = source_.inputs(id);
        n->inputs.resize(entries.size());
        for (size_t k = 0; k < entries.size(); ++k) n->inputs[k] = map(entries[k]);
        for (int k = 0; k < n->num_outputs(); ++k) map_[source_.entry_id(id, static_cast<uint32_t>(k))] = n->output(k);
      } else if (!subset_created[subset]) {
        subset_created[subset] = true;
        create_fused_node(subset, inputs);
      }
    }
    // A fused node may read a value produced after its subset's first member:
    // its inputs are filled in once every value has its counterpart.
    for (size_t f = 0; f < fused_.size(); ++f) {
      if (f + kPrefetchDistance < fused_.size()) fused_[f + kPrefetchDistance]->prefetch();
      ir::Node* node = fused_[f];
      node->inputs.resize(fused_input_offsets_[f + 1] - fused_input_offsets_[f]);
      for (uint32_t k = fused_input_offsets_[f]; k < fused_input_offsets_[f + 1]; ++k)
        node->inputs[k - fused_input_offsets_[f]] = map(fused_inputs_[k]);
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

  /// Which values of subset members are read outside their subset (or are
  /// graph outputs), and which subsets have any such value: a subset with
  /// none is dead code and its nodes are copied as they are (the pass removes
  /// nothing).
  void mark_values_used_outside() {
    used_outside_.assign(source_.num_entries(), false);
    subset_live_.assign(subsets_.num_subsets(), false);
    auto mark = [&](ir::Entry e) {
      used_outside_[source_.entry_id(e)] = true;
      subset_live_[subsets_.subset_of[e.node_id]] = true;
    };
    for (uint32_t id = 0; id < source_.num_nodes(); ++id) {
      const uint32_t own_subset = subsets_.subset_of[id];
      for (const ir::Entry& e : source_.inputs(id)) {
        if (!e.present()) continue;
        uint32_t producer_subset = subsets_.subset_of[e.node_id];
        if (producer_subset != FusionSubsets::kNone && producer_subset != own_subset) mark(e);
      }
    }
    for (const ir::Entry& e : source_.outputs())
      if (subsets_.subset_of[e.node_id] != FusionSubsets::kNone) mark(e);
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

  /// Copies source node `id` into `graph` (its inputs are set by the caller),
  /// or moves the node object itself when consuming the source (it keeps its
  /// name, attributes, types and constant; later boundary values still read
  /// its types through it).
  ir::Node* transfer(ir::Graph& graph, uint32_t id) {
    if (!consume_source_) return graph.copy_node(source_.node(id), {});
    ir::Node& node = source_.mutable_node(id);
    graph.take_node(const_cast<ir::Graph&>(source_.graph()), node);
    return &node;
  }

  /// When `id` is the first member of a live subset, prefetches what
  /// create_fused_node will read of it, one level of pointers per stage:
  /// stage 0 the members and the producers of the body's inputs, stage 1 their
  /// type and name arrays, stage 2 the dimensions (the members lie anywhere
  /// after `id`, the producers anywhere before it).
  void prefetch_subset_at(uint32_t id, uint32_t stage) const {
    const uint32_t subset = subsets_.subset_of[id];
    if (subset == FusionSubsets::kNone || !subset_live_[subset] || members_[member_offsets_[subset]] != id) return;
    for (uint32_t k = member_offsets_[subset]; k < member_offsets_[subset + 1]; ++k) {
      if (stage == 0) {
        source_.node(members_[k]).prefetch();
        graft::prefetch(&source_.node(members_[k]).name);  // names the body's outputs
      }
      for (const ir::Entry& e : source_.inputs(members_[k])) {
        if (!e.present() || in_subset(e, subset)) continue;
        const ir::Node& producer = source_.node(e.node_id);
        if (stage == 0) {
          producer.prefetch();
          graft::prefetch(&producer.name);  // value_name reads it
        } else if (stage == 1) {
          graft::prefetch(producer.output_types.data() + e.index);
          if (e.index < producer.output_names.size()) graft::prefetch(producer.output_names.data() + e.index);
        } else if (e.index < producer.output_types.size()) {
          graft::prefetch(producer.output_types[e.index].dims.data());
        }
      }
    }
  }

  bool in_subset(ir::Entry e, uint32_t subset) const { return e.present() && subsets_.subset_of[e.node_id] == subset; }

  /// Whether the one-element constant `constant`, read by member `member`,
  /// gives the member's result a higher rank than its other operands do
  /// (x[3] + c[1,1] is [1,3]): a kernel's constants are scalars, so such a
  /// constant stays an input of the fused node, where its shape counts.
  /// Unknown ranks count as raising.
  bool raises_rank(uint32_t member, ir::Entry constant) const {
    const size_t rank = source_.node(constant.node_id).constant_value.shape().size();
    if (rank == 0) return false;
    size_t others = 0;
    for (const ir::Entry& e : source_.inputs(member)) {
      if (!e.present() || e == constant) continue;
      const ir::Node& producer = source_.node(e.node_id);
      const ir::ValueType& type = producer.output_types[e.index];
      if (!type.has_rank) return true;
      others = std::max(others, type.dims.size());
    }
    return rank > others;
  }

  void create_fused_node(uint32_t subset, std::vector<ir::Value>& inputs) {
    const ir::Graph& g = source_.graph();
    const uint32_t* begin = members_.data() + member_offsets_[subset];
    const uint32_t* end = members_.data() + member_offsets_[subset + 1];
    // Scalar constants go into the body, unless the body would then have no
    // input at all (graft.FusedPointwise takes at least one).
    bool has_non_constant_input = false;
    size_t boundary_reads = 0, num_outputs = 0;
    rank_raising_constants_.clear();
    for (const uint32_t* m = begin; m != end; ++m) {
      for (const ir::Entry& e : source_.inputs(*m))
        if (e.present() && !in_subset(e, subset)) {
          ++boundary_reads;
          const ir::Node& producer = source_.node(e.node_id);
          if (!is_scalar_constant(producer))
            has_non_constant_input = true;
          else if (raises_rank(*m, e))
            rank_raising_constants_.push_back(source_.entry_id(e));
        }
      const uint32_t first_entry = source_.entry_id(*m, 0), last_entry = source_.entry_id(*m + 1, 0);
      for (uint32_t entry = first_entry; entry < last_entry; ++entry) num_outputs += used_outside_[entry];
    }

    auto body = std::make_shared<ir::Graph>();
    body->opset_imports = g.opset_imports;
    body->reserve_nodes(static_cast<size_t>(end - begin) + boundary_reads);
    body->mutable_outputs().reserve(num_outputs);
    body->mutable_output_names().reserve(num_outputs);
    auto body_value = [&](ir::Entry e) -> ir::Value {
      if (!e.present()) return {};
      uint32_t entry = source_.entry_id(e);
      if (in_subset(e, subset) || body_input_stamp_[entry] == subset) return body_values_[entry];
      const ir::Node& producer = source_.node(e.node_id);
      ir::Value v;
      ir::Value outer{&source_.mutable_node(e.node_id), static_cast<int>(e.index)};
      if (has_non_constant_input && is_scalar_constant(producer) &&
          std::find(rank_raising_constants_.begin(), rank_raising_constants_.end(), entry) ==
              rank_raising_constants_.end()) {
        v = body->add_constant(g.value_name(outer), producer.constant_value)->output(0);
      } else {
        v = body->add_input(g.value_name(outer), g.type_of(outer))->output(0);
        fused_inputs_.push_back(e);
      }
      body_input_stamp_[entry] = subset;
      body_values_[entry] = v;
      return v;
    };
    for (const uint32_t* m = begin; m != end; ++m) {
      inputs.clear();
      for (const ir::Entry& e : source_.inputs(*m)) inputs.push_back(body_value(e));
      ir::Node* copy = transfer(*body, *m);
      copy->inputs.assign(inputs.begin(), inputs.end());
      copy->backend.clear();
      for (int k = 0; k < copy->num_outputs(); ++k)
        body_values_[source_.entry_id(*m, static_cast<uint32_t>(k))] = copy->output(k);
    }
    const ir::Node& first = source_.node(*begin);
    ir::Node* fused = target_->add_node(fused_pointwise_op(), {}, 0, "fused_pointwise_" + std::to_string(subset));
    fused->output_types.reserve(num_outputs);
    fused->output_names.reserve(num_outputs);
    for (const uint32_t* m = begin; m != end; ++m) {
      const ir::Node& member = source_.node(*m);
      for (int k = 0; k < member.num_outputs(); ++k) {
        uint32_t entry = source_.entry_id(*m, static_cast<uint32_t>(k));
        if (!used_outside_[entry]) continue;
        body->add_output(body_values_[entry], g.value_name(ir::Value{&source_.mutable_node(*m), k}));
        map_[entry] = fused->output(fused->num_outputs());
        fused->output_types.push_back(member.output_types[static_cast<size_t>(k)]);
        fused->output_names.push_back(member.output_names[static_cast<size_t>(k)]);
      }
    }
    GRAFT_CHECK(fused->num_outputs() > 0, "fusion: subset of ", first.describe(), " has no output used outside");
    fused->subgraph = std::move(body);
    fused->backend = kFuseBackend;
    fused->is_backward = first.is_backward;
    fused->device = first.device;
    fused_.push_back(fused);
    fused_input_offsets_.push_back(static_cast<uint32_t>(fused_inputs_.size()));
  }

  const ir::IndexedGraph& source_;
  const FusionSubsets& subsets_;
  const bool consume_source_;
  std::unique_ptr<ir::Graph> target_;
  std::vector<ir::Value> map_;  // per source entry: its value in the new graph
  std::vector<bool> used_outside_;
  std::vector<bool> subset_live_;
  std::vector<uint32_t> member_offsets_;
  std::vector<uint32_t> members_;
  std::vector<uint32_t> body_input_stamp_;  // per source entry: subset whose body already has it
  std::vector<ir::Value> body_values_;      // per source entry: its value in the body being built
  std::vector<ir::Node*> fused_;            // the fused nodes, in creation order
  std::vector<ir::Entry> fused_inputs_;     // their inputs (source values), flat
  std::vector<uint32_t> fused_input_offsets_;
  std::vector<uint32_t> rank_raising_constants_;  // of the subset being built: entries kept as inputs
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
