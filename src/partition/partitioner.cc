// The partitioner: backends in priority order claim convex subgraphs through
// their SubgraphProperty, then one pass builds the partitioned graph. The
// algorithm is described in include/graft/partition/partitioner.h; convexity
// (including cycles between subgraphs) is ConvexGrouping's job.
#include "graft/partition/partitioner.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <unordered_map>

#include "graft/ir/graph_rebuilder.h"
#include "graft/ir/indexed_graph.h"
#include "graft/ops/type_inference.h"
#include "graft/partition/convexity.h"

namespace graft::partition {
namespace {

constexpr uint8_t kMaxDrops = 4;   // times a node may be dropped from a set before a backend stops offering it
constexpr uint8_t kNoReason = 255;
constexpr int kFallback = -2;  // pinned to the fallback backend

bool is_source(const ir::Node& n) { return n.schema().category == ir::OpCategory::source; }

std::string quoted_list(const std::vector<std::string>& names) {
  std::string out;
  for (size_t i = 0; i < names.size() && i < 20; ++i) out += (i ? ", '" : "'") + names[i] + "'";
  if (names.size() > 20) out += ", ... (" + std::to_string(names.size()) + " in all)";
  return out;
}

class Partitioner {
 public:
  Partitioner(const ir::IndexedGraph& graph, const std::vector<BackendEntry>& backends, std::string fallback,
              bool detailed)
      : graph_(graph), backends_(backends), fallback_(std::move(fallback)), grouping_(graph), taken_by_(graph.num_nodes(), -1),
        pinned_(graph.num_nodes(), -1), detailed_(detailed), visit_(graph.num_nodes(), 0) {}

  void apply_annotations(const Annotations& annotations);
  void run_backend(int b);
  std::unique_ptr<ir::Graph> rebuild();
  PartitionReport report() const;

 private:
  struct Group {
    int backend;
    int id;  // per backend
    bool from_annotation;
    std::string region;
  };

  uint32_t node_id(const std::string& name, const std::string& what) const;
  int backend_index(const std::string& name, const std::string& what) const;
  bool forbidden(uint32_t id, int b) const {
    auto it = forbidden_.find(id);
    return it != forbidden_.end() && (it->second >> b) & 1;
  }
  // Not a source, not taken, and neither pinned elsewhere nor forbidden for backend `b`.
  bool free_for(uint32_t id, int b) const {
    return !is_source(graph_.node(id)) && taken_by_[id] < 0 && (pinned_[id] == -1 || pinned_[id] == b) &&
           !forbidden(id, b);
  }
  bool eligible(uint32_t id, int b) const { return free_for(id, b) && !excluded_[id]; }
  // A node that sets grown from earlier seeds dropped kMaxDrops times is no
  // longer offered to other sets, but may still seed its own when the walk
  // reaches it (its set grows over eligible nodes only): else everything
  // past a region the backend cannot take whole stayed on ref (maxvit_t:
  // the growths in its attention blocks reached past Einsums and were
  // trimmed back; 721 nodes). The walk stays linear: each node seeds once.
  bool may_seed(uint32_t id, int b) const { return free_for(id, b) && (!excluded_[id] || drops_[id] >= kMaxDrops); }
  // Records why `id` left a set: `argument` is the seed (convexity) or the
  // set's size (below_min_size); the words are made only for the report.
  void drop(uint32_t id, DeclineKind kind, uint32_t argument) {
    reason_[id] = static_cast<uint8_t>(kind);
    reason_argument_[id] = argument;
    if (++drops_[id] >= kMaxDrops) excluded_[id] = true;
  }
  std::string reason_words(uint32_t id, const BackendEntry& backend, size_t min_size) const;
  int32_t form_group(const std::vector<uint32_t>& nodes, int b, bool from_annotation, std::string region);
  void add_region(const Region& region, size_t index);
  std::vector<std::string> names(std::span<const uint32_t> ids) const {
    std::vector<std::string> out;
    for (uint32_t id : ids) out.push_back(graph_.node(id).name.empty() ? graph_.node(id).describe() : graph_.node(id).name);
    return out;
  }

  const ir::IndexedGraph& graph_;
  const std::vector<BackendEntry>& backends_;
  const std::string fallback_;  // the backend that runs what no backend takes
  ConvexGrouping grouping_;
  std::vector<int> taken_by_;
  std::vector<int> pinned_;  // backend index, kFallback, or -1
  bool detailed_ = true;     // per-node reasons and names in the report
  std::unordered_map<uint32_t, uint64_t> forbidden_;  // node -> bit per backend index
  std::vector<Group> groups_;
  std::vector<int> subgraphs_per_backend_ = std::vector<int>(backends_.size(), 0);
  std::vector<std::vector<Decline>> declined_ = std::vector<std::vector<Decline>>(detailed_ ? graph_.num_nodes() : 0);
  std::unordered_map<std::string, uint32_t> by_name_;
  // Per-backend scratch.
  std::vector<uint8_t> reason_, drops_;
  std::vector<bool> excluded_ = std::vector<bool>(graph_.num_nodes(), false);
  std::vector<uint32_t> reason_argument_;
  std::vector<const ir::Node*> offered_;
  std::vector<ir::Value> inner_;  // rebuild scratch, per source entry
  std::vector<uint32_t> inner_seen_;
  uint32_t inner_stamp_ = 0;
  std::vector<uint32_t> visit_;
  uint32_t visit_stamp_ = 0;
};

uint32_t Partitioner::node_id(const std::string& name, const std::string& what) const {
  auto it = by_name_.find(name);
  if (it == by_name_.end()) fail(ErrorKind::invalid_argument, what, " names node '", name, "', which the graph does not have");
  return it->second;
}

int Partitioner::backend_index(const std::string& name, const std::string& what) const {
  if (name == fallback_) return kFallback;
  for (size_t b = 0; b < backends_.size(); ++b)
    if (backends_[b].name == name) return static_cast<int>(b);
  std::string order;
  for (const auto& e : backends_) order += (order.empty() ? "" : ", ") + e.name;
  fail(ErrorKind::invalid_argument, what, " names backend '", name, "', which is not in the backend order (",
       order.empty() ? "none" : order, ")");
}

void Partitioner::apply_annotations(const Annotations& annotations) {
  if (annotations.empty()) return;
  if (backends_.size() > 64) fail(ErrorKind::invalid_argument, "annotations support at most 64 backends");
  for (uint32_t id = 0; id < graph_.num_nodes(); ++id)
    if (!graph_.node(id).name.empty()) by_name_.emplace(graph_.node(id).name, id);
  std::vector<std::string> unknown;
  auto check_known = [&](const std::string& name) {
    if (!by_name_.count(name)) unknown.push_back(name);
  };
  for (const auto& [name, backend] : annotations.pinned) check_known(name);
  for (const auto& [name, backends] : annotations.forbidden) check_known(name);
  for (const Region& region : annotations.regions)
    for (const std::string& name : region.nodes) check_known(name);
  if (!unknown.empty())
    fail(ErrorKind::invalid_argument, "annotations name nodes the graph does not have: ", quoted_list(unknown),
         " (names are node names of the model; passes may have removed or folded some nodes)");
  for (const auto& [name, backend] : annotations.pinned)
    pinned_[node_id(name, "a pin")] = backend_index(backend, "the pin of node '" + name + "'");
  for (const auto& [name, backends] : annotations.forbidden)
    for (const std::string& backend : backends) {
      int b = backend_index(backend, "the forbid list of node '" + name + "'");
      if (b >= 0) forbidden_[node_id(name, "a forbid list")] |= uint64_t{1} << b;
    }
  for (size_t r = 0; r < annotations.regions.size(); ++r) add_region(annotations.regions[r], r);
}

void Partitioner::add_region(const Region& region, size_t index) {
  std::string what = region.name.empty() ? "region " + std::to_string(index) : "region '" + region.name + "'";
  if (region.nodes.empty()) fail(ErrorKind::invalid_argument, what, " has no nodes");
  int b = backend_index(region.backend, what);
  if (b < 0) fail(ErrorKind::invalid_argument, what, " must name a backend other than ", fallback_);
  if (!backends_[static_cast<size_t>(b)].property)
    fail(ErrorKind::invalid_argument, what, ": backend '", region.backend, "' takes no subgraphs (it has no SubgraphProperty)");
  std::vector<uint32_t> ids;
  for (const std::string& name : region.nodes) {
    uint32_t id = node_id(name, what);
    const ir::Node& n = graph_.node(id);
    if (is_source(n)) fail(ErrorKind::invalid_argument, what, " holds ", n.describe(), ": graph inputs and constants cannot be in a region");
    if (taken_by_[id] >= 0) fail(ErrorKind::invalid_argument, what, " holds node '", name, "', which another region already holds");
    if (pinned_[id] != -1 && pinned_[id] != b)
      fail(ErrorKind::invalid_argument, what, " holds node '", name, "', which is pinned to another backend");
    if (forbidden(id, b)) fail(ErrorKind::invalid_argument, what, " holds node '", name, "', for which backend '", region.backend, "' is forbidden");
    if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
  }
  if (!is_connected(graph_, ids))
    fail(ErrorKind::invalid_argument, what, " is not connected: ", quoted_list(names(ids)));
  if (!grouping_.is_convex(ids)) {
    // Name the outside nodes on paths that leave the region and re-enter it.
    auto [lo_it, hi_it] = std::minmax_element(ids.begin(), ids.end());
    uint32_t lo = *lo_it, hi = *hi_it;
    std::vector<uint8_t> mark(hi - lo + 1, 0);  // bit 0 member, bit 1 reached forward, bit 2 reaches backward
    for (uint32_t id : ids) mark[id - lo] = 1;
    for (uint32_t n = lo; n <= hi; ++n)
      for (const ir::Entry& e : graph_.inputs(n))
        if (e.present() && e.node_id >= lo && (mark[e.node_id - lo] & 3) && !(mark[n - lo] & 1)) mark[n - lo] |= 2;
    for (uint32_t n = hi + 1; n-- > lo;)
      for (uint32_t c : graph_.consumers(n))
        if (c <= hi && (mark[c - lo] & 5) && !(mark[n - lo] & 1)) mark[n - lo] |= 4;
    std::vector<uint32_t> between;
    for (uint32_t n = lo; n <= hi; ++n)
      if ((mark[n - lo] & 6) == 6) between.push_back(n);
    if (between.empty())
      fail(ErrorKind::invalid_argument, what, " (", quoted_list(names(ids)),
           ") would form a cycle with an earlier region or subgraph");
    fail(ErrorKind::invalid_argument, what, " is not convex: paths leave it and re-enter through ",
         quoted_list(names(between)), " (region: ", quoted_list(names(ids)), ")");
  }
  form_group(ids, b, true, region.name.empty() ? std::to_string(index) : region.name);
}

int32_t Partitioner::form_group(const std::vector<uint32_t>& nodes, int b, bool from_annotation, std::string region) {
  int32_t g = grouping_.add_group(nodes);
  for (uint32_t id : nodes) taken_by_[id] = b;
  groups_.push_back(Group{b, subgraphs_per_backend_[static_cast<size_t>(b)]++, from_annotation, std::move(region)});
  return g;
}

std::string Partitioner::reason_words(uint32_t id, const BackendEntry& backend, size_t min_size) const {
  switch (static_cast<DeclineKind>(reason_[id])) {
    case DeclineKind::convexity:
      return "would break convexity of the " + backend.name + " subgraph grown from '" +
             graph_.node(reason_argument_[id]).name + "'";
    case DeclineKind::filtered: return "dropped by the " + backend.name + " selector's Filter";
    case DeclineKind::below_min_size:
      return "its subgraph of " + std::to_string(reason_argument_[id]) + " nodes is below the minimum of " +
             std::to_string(min_size);
    default: return {};
  }
}

void Partitioner::run_backend(int b) {
  const BackendEntry& backend = backends_[static_cast<size_t>(b)];
  const size_t n = graph_.num_nodes();
  auto record_rest = [&](auto&& why) {
    if (!detailed_) return;
    for (uint32_t id = 0; id < n; ++id) {
      if (is_source(graph_.node(id)) || taken_by_[id] == b) continue;
      if (taken_by_[id] >= 0) {
        declined_[id].push_back({backend.name, DeclineKind::taken, "taken by " + backends_[static_cast<size_t>(taken_by_[id])].name});
        continue;
      }
      if (pinned_[id] != -1 && pinned_[id] != b) {
        declined_[id].push_back({backend.name, DeclineKind::pinned_elsewhere,
                                 "pinned to " + (pinned_[id] == kFallback ? fallback_ : backends_[static_cast<size_t>(pinned_[id])].name)});
        continue;
      }
      if (forbidden(id, b)) {
        declined_[id].push_back({backend.name, DeclineKind::forbidden, "forbidden by an annotation"});
        continue;
      }
      declined_[id].push_back(why(id));
    }
  };
  if (backend.name == fallback_) return;  // it takes what nobody else takes
  if (!backend.property) return;  // it takes nothing; the report's per-backend summary says so once
  if (!backend.unavailable.empty()) {
    record_rest([&](uint32_t) { return Decline{backend.name, DeclineKind::unavailable, backend.unavailable}; });
    return;
  }
  const SubgraphProperty& property = *backend.property;
  reason_.assign(n, kNoReason);
  drops_.assign(n, 0);
  excluded_.assign(n, false);
  reason_argument_.assign(n, 0);
  const size_t min_size = std::max<size_t>(property.MinSubgraphSize(), 1);

  std::unique_ptr<SubgraphSelector> selector;
  bool selector_dirty = false;
  std::vector<uint32_t> candidates, removed, kept;
  for (uint32_t seed = 0; seed < n; ++seed) {
    if (!may_seed(seed, b)) continue;
    if (!selector) {
      selector = property.CreateSubgraphSelector();
      GRAFT_CHECK(selector, "the ", backend.name, " property created no selector");
    } else if (selector_dirty) {
      selector->Reset();
    }
    selector_dirty = true;
    if (!selector->Select(graph_.node(seed))) continue;

    // Breadth-first growth over eligible nodes.
    ++visit_stamp_;
    candidates.assign(1, seed);
    visit_[seed] = visit_stamp_;
    for (size_t i = 0; i < candidates.size(); ++i) {
      uint32_t cur = candidates[i];
      const ir::Node& cur_node = graph_.node(cur);
      for (const ir::Entry& e : graph_.inputs(cur)) {
        if (!e.present() || visit_[e.node_id] == visit_stamp_ || !eligible(e.node_id, b)) continue;
        if (!selector->SelectInput(cur_node, graph_.node(e.node_id))) continue;
        visit_[e.node_id] = visit_stamp_;
        candidates.push_back(e.node_id);
      }
      for (uint32_t c : graph_.consumers(cur)) {
        if (visit_[c] == visit_stamp_ || !eligible(c, b)) continue;
        if (!selector->SelectOutput(cur_node, graph_.node(c))) continue;
        visit_[c] = visit_stamp_;
        candidates.push_back(c);
      }
    }
    kept = grouping_.trim(candidates, seed, &removed);
    for (uint32_t id : removed) drop(id, DeclineKind::convexity, seed);

    // Filter, then trim again if it broke connectivity or convexity.
    offered_.clear();
    for (uint32_t id : kept) offered_.push_back(&graph_.node(id));
    std::vector<const ir::Node*> filtered = selector->Filter(offered_);
    if (filtered.size() != kept.size() || !std::equal(filtered.begin(), filtered.end(), offered_.begin())) {
      ++visit_stamp_;
      for (uint32_t id : kept) visit_[id] = visit_stamp_;
      std::vector<uint32_t> chosen;
      uint32_t new_seed = UINT32_MAX;
      const uint32_t chosen_stamp = ++visit_stamp_;
      for (const ir::Node* node : filtered) {
        if (!node || &node->graph() != &graph_.graph())
          fail(ErrorKind::internal, "the Filter of backend '", backend.name, "' returned a node of another graph");
        uint32_t id = graph_.id_of(*node);
        if (visit_[id] == chosen_stamp) continue;
        if (visit_[id] != chosen_stamp - 1)
          fail(ErrorKind::internal, "the Filter of backend '", backend.name, "' returned ", node->describe(),
               ", which was not among its candidates");
        visit_[id] = chosen_stamp;
        chosen.push_back(id);
        if (id == seed || new_seed == UINT32_MAX) new_seed = id == seed ? seed : std::min(new_seed, id);
      }
      for (uint32_t id : kept)
        if (visit_[id] != chosen_stamp) drop(id, DeclineKind::filtered, 0);
      if (chosen.empty()) continue;
      if (std::find(chosen.begin(), chosen.end(), seed) != chosen.end()) new_seed = seed;
      kept = grouping_.trim(chosen, new_seed, &removed);
      for (uint32_t id : removed) drop(id, DeclineKind::convexity, seed);
    }
    if (kept.size() < min_size) {
      for (uint32_t id : kept) {
        reason_[id] = static_cast<uint8_t>(DeclineKind::below_min_size);
        reason_argument_[id] = static_cast<uint32_t>(kept.size());
        excluded_[id] = true;
      }
      continue;
    }
    form_group(kept, b, false, {});
    selector.reset();  // a fresh selector for the next subgraph
  }
  excluded_.assign(n, false);
  record_rest([&](uint32_t id) {
    if (reason_[id] != kNoReason)
      return Decline{backend.name, static_cast<DeclineKind>(reason_[id]), reason_words(id, backend, min_size)};
    return Decline{backend.name, DeclineKind::unsupported, property.ExplainRejection(graph_.node(id))};
  });
}

std::unique_ptr<ir::Graph> Partitioner::rebuild() {
  const ir::Graph& source = graph_.graph();
  const size_t n = graph_.num_nodes();
  // Values of a group read outside it, values of ungrouped nodes read by
  // ungrouped nodes, and graph outputs: what the new outer graph must carry.
  std::vector<bool> used_outside(graph_.num_entries(), false);
  for (uint32_t id = 0; id < n; ++id)
    for (const ir::Entry& e : graph_.inputs(id)) {
      if (!e.present()) continue;
      int32_t producer_group = grouping_.group_of(e.node_id), consumer_group = grouping_.group_of(id);
      if (producer_group >= 0 ? producer_group != consumer_group : consumer_group < 0)
        used_outside[graph_.entry_id(e)] = true;
    }
  for (const ir::Entry& e : graph_.outputs())
    if (e.present()) used_outside[graph_.entry_id(e)] = true;

  inner_.assign(graph_.num_entries(), ir::Value{});
  inner_seen_.assign(graph_.num_entries(), 0);
  ir::GraphRebuilder rebuilder(graph_);
  for (uint32_t id : grouping_.order()) {
    const ir::Node& node = graph_.node(id);
    int32_t g = grouping_.group_of(id);
    if (g == ConvexGrouping::kNoGroup) {
      if (node.op() == ir::OpId::Constant) {
        bool needed = false;
        for (int k = 0; k < node.num_outputs(); ++k) needed = needed || used_outside[graph_.entry_id(id, k)];
        if (!needed) continue;  // read only inside subgraphs, which hold their own copy
      }
      rebuilder.copy(id);
      continue;
    }
    const std::vector<uint32_t>& members = grouping_.members(g);
    if (members.front() != id) continue;  // the group's node was made at its first member
    const Group& group = groups_[static_cast<size_t>(g)];
    auto body = std::make_shared<ir::Graph>();
    body->opset_imports = source.opset_imports;
    body->name = backends_[static_cast<size_t>(group.backend)].name + "_subgraph_" + std::to_string(group.id);
    ++inner_stamp_;  // inner_[entry] is the body's value for a source entry when inner_seen_[entry] == inner_stamp_
    std::vector<ir::Value> outer_inputs;
    for (uint32_t m : members) {
      std::vector<ir::Value> inputs;
      for (const ir::Entry& e : graph_.inputs(m)) {
        if (!e.present()) {
          inputs.push_back({});
          continue;
        }
        uint32_t entry = graph_.entry_id(e);
        if (inner_seen_[entry] != inner_stamp_) {
          GRAFT_CHECK(grouping_.group_of(e.node_id) != g, "member read before it was copied");
          const ir::Node& producer = graph_.node(e.node_id);
          ir::Value value;
          if (producer.op() == ir::OpId::Constant) {
            value = body->copy_node(producer, {})->output(static_cast<int>(e.index));
          } else {
            ir::Value outer{const_cast<ir::Node*>(&producer), static_cast<int>(e.index)};
            std::string name = source.value_name(outer);
            ir::Node* in = body->add_input(name, source.type_of(outer));
            in->name = std::move(name);
            value = in->output(0);
            outer_inputs.push_back(rebuilder.map(e));
          }
          inner_[entry] = value;
          inner_seen_[entry] = inner_stamp_;
        }
        inputs.push_back(inner_[entry]);
      }
      ir::Node* copy = body->copy_node(graph_.node(m), inputs);
      for (int k = 0; k < copy->num_outputs(); ++k) {
        uint32_t entry = graph_.entry_id(m, static_cast<uint32_t>(k));
        inner_[entry] = copy->output(k);
        inner_seen_[entry] = inner_stamp_;
      }
    }
    std::vector<std::pair<uint32_t, uint32_t>> outputs;  // (member, index)
    for (uint32_t m : members)
      for (int k = 0; k < graph_.node(m).num_outputs(); ++k)
        if (used_outside[graph_.entry_id(m, static_cast<uint32_t>(k))]) {
          ir::Value v = inner_[graph_.entry_id(m, static_cast<uint32_t>(k))];
          body->add_output(v, source.value_name(ir::Value{const_cast<ir::Node*>(&graph_.node(m)), k}));
          outputs.emplace_back(m, static_cast<uint32_t>(k));
        }
    if (outputs.empty()) continue;  // nothing reads the subgraph: dead code, dropped like the nodes it holds
    const SubgraphProperty& property = *backends_[static_cast<size_t>(group.backend)].property;
    ir::Node* sub = property.CreateSubgraphNode(rebuilder.target(), body, outer_inputs, group.id);
    GRAFT_CHECK(sub && sub->num_outputs() == static_cast<int>(outputs.size()), "the ",
                backends_[static_cast<size_t>(group.backend)].name, " property made a subgraph node with ",
                sub ? sub->num_outputs() : 0, " outputs for a body with ", outputs.size());
    for (size_t i = 0; i < outputs.size(); ++i) {
      const ir::Node& producer = graph_.node(outputs[i].first);
      sub->output_names[i] = producer.output_names[outputs[i].second];
      rebuilder.alias(outputs[i].first, outputs[i].second, sub->output(static_cast<int>(i)));
    }
  }
  return rebuilder.finish();
}

PartitionReport Partitioner::report() const {
  PartitionReport report;
  for (const BackendEntry& e : backends_) report.backends.push_back(e.name);
  std::vector<int> subgraph_index(grouping_.num_groups());
  for (size_t g = 0; g < grouping_.num_groups(); ++g) {
    const Group& group = groups_[g];
    SubgraphInfo info;
    info.backend = backends_[static_cast<size_t>(group.backend)].name;
    info.id = group.id;
    info.node_name = info.backend + "_subgraph_" + std::to_string(group.id);
    info.size = grouping_.members(static_cast<int32_t>(g)).size();
    if (detailed_) info.nodes = names(grouping_.members(static_cast<int32_t>(g)));
    info.from_annotation = group.from_annotation;
    subgraph_index[g] = static_cast<int>(report.subgraphs.size());
    report.subgraphs.push_back(std::move(info));
  }
  std::vector<size_t> taken(backends_.size(), 0);
  size_t on_fallback = 0;
  for (uint32_t id = 0; id < graph_.num_nodes(); ++id) {
    const ir::Node& node = graph_.node(id);
    if (!is_source(node)) (taken_by_[id] >= 0 ? taken[static_cast<size_t>(taken_by_[id])] : on_fallback)++;
    if (!detailed_) continue;
    NodePlacement p;
    p.name = node.name.empty() ? node.describe() : node.name;
    p.op_type = node.op_type();
    p.is_source = is_source(node);
    p.backend = taken_by_[id] >= 0 ? backends_[static_cast<size_t>(taken_by_[id])].name : fallback_;
    int32_t g = grouping_.group_of(id);
    if (g >= 0) p.subgraph = subgraph_index[static_cast<size_t>(g)];
    p.declined = declined_[id];
    report.nodes.push_back(std::move(p));
    for (uint32_t c : graph_.consumers(id)) report.edges.emplace_back(id, c);
  }
  bool fallback_listed = false;
  for (size_t b = 0; b < backends_.size(); ++b) {
    BackendSummary s;
    s.backend = backends_[b].name;
    s.has_property = backends_[b].property != nullptr;
    s.unavailable = backends_[b].unavailable;
    s.nodes = s.backend == fallback_ ? on_fallback : taken[b];
    fallback_listed = fallback_listed || s.backend == fallback_;
    report.summaries.push_back(std::move(s));
  }
  if (!fallback_listed) report.summaries.push_back(BackendSummary{fallback_, false, {}, on_fallback, {}});
  report.fallback = fallback_;
  for (const SubgraphInfo& info : report.subgraphs)
    for (BackendSummary& s : report.summaries)
      if (s.backend == info.backend) s.subgraph_sizes.push_back(info.size);
  return report;
}

}  // namespace

PartitionReport partition_graph(std::unique_ptr<ir::Graph>& graph, const std::vector<BackendEntry>& backends,
                                const std::string& fallback, const Annotations& annotations, bool detailed_report) {
  GRAFT_CHECK(graph, "partition_graph needs a graph");
  auto start = std::chrono::steady_clock::now();
  Annotations all = annotations;
  all.merge(annotations_from_attributes(*graph));
  bool any_property = false;
  for (const BackendEntry& e : backends) any_property = any_property || (e.property && e.unavailable.empty());
  // Selectors see inferred types; infer unless every value already has a dtype
  // (as after the Session's pipeline, which ends with `infer`).
  bool typed = true;
  for (const auto& node : graph->nodes())
    for (const ir::ValueType& t : node->output_types) typed = typed && t.dtype != DType::undefined;
  if (any_property && !typed) ops::infer_types(*graph);
  std::unique_ptr<ir::Graph> result;
  PartitionReport report;
  PartitionReport::Timings timings;
  auto lap = [last = std::chrono::steady_clock::now()]() mutable {
    auto now = std::chrono::steady_clock::now();
    double ms = std::chrono::duration<double, std::milli>(now - last).count();
    last = now;
    return ms;
  };
  {
    ir::IndexedGraph indexed(*graph);
    timings.index = lap();
    Partitioner partitioner(indexed, backends, fallback, detailed_report);
    partitioner.apply_annotations(all);
    for (size_t b = 0; b < backends.size(); ++b) partitioner.run_backend(static_cast<int>(b));
    timings.select = lap();
    report = partitioner.report();
    timings.report = lap();
    if (!report.subgraphs.empty()) result = partitioner.rebuild();
  }
  if (result) graph = std::move(result);
  timings.rebuild = lap();
  report.timings = timings;
  report.milliseconds = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return report;
}

}  // namespace graft::partition
