// Convexity and acyclic contraction; the algorithm is explained in
// include/graft/partition/convexity.h.
#include "graft/partition/convexity.h"

#include <algorithm>
#include <unordered_map>

#include "graft/core/error.h"

namespace graft::partition {

ConvexGrouping::ConvexGrouping(const ir::IndexedGraph& graph)
    : graph_(graph),
      order_(graph.num_nodes()),
      position_(graph.num_nodes()),
      group_of_(graph.num_nodes(), kNoGroup),
      in_set_(graph.num_nodes(), 0),
      reached_(graph.num_nodes(), 0) {
  for (uint32_t id = 0; id < graph.num_nodes(); ++id) order_[id] = position_[id] = id;
}

void ConvexGrouping::mark_set(std::span<const uint32_t> nodes) {
  ++set_stamp_;
  for (uint32_t n : nodes) {
    GRAFT_CHECK(n < graph_.num_nodes(), "node id ", n, " out of range");
    GRAFT_CHECK(group_of_[n] == kNoGroup, graph_.node(n).describe(), " is already in group ", group_of_[n]);
    in_set_[n] = set_stamp_;
  }
}

std::pair<uint32_t, uint32_t> ConvexGrouping::position_range(std::span<const uint32_t> nodes) const {
  uint32_t first = UINT32_MAX, last = 0;
  for (uint32_t n : nodes) {
    first = std::min(first, position_[n]);
    last = std::max(last, position_[n]);
  }
  return {first, last};
}

bool ConvexGrouping::scan(uint32_t first, uint32_t last, bool trim_reached) {
  ++reached_stamp_;
  auto in_set = [&](uint32_t n) { return in_set_[n] == set_stamp_; };
  auto reached = [&](uint32_t n) { return reached_[n] == reached_stamp_; };
  for (uint32_t p = first; p <= last; ++p) {
    uint32_t n = order_[p];
    int32_t group = group_of_[n];
    if (group != kNoGroup) {
      // A contracted group is one node: reached when any member reads the set
      // or a reached node. Its members occupy positions p .. p + size - 1 and
      // read nothing from between them that is not a member.
      const std::vector<uint32_t>& block = groups_[static_cast<size_t>(group)];
      bool block_reached = false;
      for (uint32_t m : block)
        for (const ir::Entry& e : graph_.inputs(m))
          if (e.present() && (in_set(e.node_id) || reached(e.node_id))) block_reached = true;
      if (block_reached)
        for (uint32_t m : block) reached_[m] = reached_stamp_;
      p += static_cast<uint32_t>(block.size()) - 1;
      continue;
    }
    if (in_set(n)) {
      bool reads_reached = false;
      for (const ir::Entry& e : graph_.inputs(n))
        if (e.present() && reached(e.node_id)) reads_reached = true;
      if (!reads_reached) continue;
      if (!trim_reached) return false;
      in_set_[n] = 0;
      reached_[n] = reached_stamp_;
    } else {
      for (const ir::Entry& e : graph_.inputs(n))
        if (e.present() && (in_set(e.node_id) || reached(e.node_id))) {
          reached_[n] = reached_stamp_;
          break;
        }
    }
  }
  return true;
}

bool ConvexGrouping::is_convex(std::span<const uint32_t> nodes) {
  if (nodes.empty()) return true;
  mark_set(nodes);
  auto [first, last] = position_range(nodes);
  return scan(first, last, false);
}

std::vector<uint32_t> ConvexGrouping::trim(std::span<const uint32_t> nodes, uint32_t seed,
                                           std::vector<uint32_t>* removed) {
  if (removed) removed->clear();
  if (nodes.empty()) return {};
  mark_set(nodes);
  GRAFT_CHECK(in_set_[seed] == set_stamp_, "trim: the seed ", graph_.node(seed).describe(), " is not in the set");
  auto [first, last] = position_range(nodes);
  scan(first, last, true);
  if (in_set_[seed] != set_stamp_) {
    // The seed is reachable from the set through an outside node. Nothing at
    // or after the seed's position can reach the seed, so cut the set there.
    ++set_stamp_;
    uint32_t seed_position = position_[seed];
    for (uint32_t n : nodes)
      if (position_[n] >= seed_position) in_set_[n] = set_stamp_;
    scan(seed_position, last, true);
    GRAFT_CHECK(in_set_[seed] == set_stamp_, "trim lost its seed");
  }
  // The connected component of the seed among what remains (a component of a
  // convex set is convex).
  ++reached_stamp_;
  std::vector<uint32_t> component{seed};
  reached_[seed] = reached_stamp_;
  for (size_t i = 0; i < component.size(); ++i) {
    uint32_t n = component[i];
    auto visit = [&](uint32_t m) {
      if (in_set_[m] == set_stamp_ && reached_[m] != reached_stamp_) {
        reached_[m] = reached_stamp_;
        component.push_back(m);
      }
    };
    for (const ir::Entry& e : graph_.inputs(n))
      if (e.present()) visit(e.node_id);
    for (uint32_t c : graph_.consumers(n)) visit(c);
  }
  std::sort(component.begin(), component.end(),
            [&](uint32_t a, uint32_t b) { return position_[a] < position_[b]; });
  if (removed)
    for (uint32_t n : nodes)
      if (reached_[n] != reached_stamp_) removed->push_back(n);
  return component;
}

int32_t ConvexGrouping::add_group(std::span<const uint32_t> nodes) {
  GRAFT_CHECK(!nodes.empty(), "add_group: empty set");
  mark_set(nodes);
  auto [first, last] = position_range(nodes);
  GRAFT_CHECK(scan(first, last, false), "add_group: the set of ", nodes.size(), " nodes starting at ",
              graph_.node(nodes[0]).describe(), " is not convex");
  // Reorder the range: nodes the set does not reach, then the set, then the
  // nodes it reaches. Each part keeps its relative order, so the order stays
  // topological for the quotient and group blocks stay contiguous.
  std::vector<uint32_t> before, inside, after;
  for (uint32_t p = first; p <= last; ++p) {
    uint32_t n = order_[p];
    if (in_set_[n] == set_stamp_)
      inside.push_back(n);
    else if (reached_[n] == reached_stamp_)
      after.push_back(n);
    else
      before.push_back(n);
  }
  uint32_t p = first;
  for (const auto* part : {&before, &inside, &after})
    for (uint32_t n : *part) {
      order_[p] = n;
      position_[n] = p++;
    }
  int32_t group = static_cast<int32_t>(groups_.size());
  for (uint32_t n : inside) group_of_[n] = group;
  groups_.push_back(std::move(inside));
  return group;
}

bool is_convex(const ir::IndexedGraph& graph, std::span<const uint32_t> nodes) {
  if (nodes.empty()) return true;
  auto [lo_it, hi_it] = std::minmax_element(nodes.begin(), nodes.end());
  uint32_t lo = *lo_it, hi = *hi_it;
  // 1 = member, 2 = outside node reached from the set.
  std::vector<uint8_t> mark(hi - lo + 1, 0);
  for (uint32_t n : nodes) mark[n - lo] = 1;
  for (uint32_t n = lo; n <= hi; ++n) {
    bool reads_set = false, reads_reached = false;
    for (const ir::Entry& e : graph.inputs(n)) {
      if (!e.present() || e.node_id < lo) continue;
      reads_set = reads_set || mark[e.node_id - lo] == 1;
      reads_reached = reads_reached || mark[e.node_id - lo] == 2;
    }
    if (mark[n - lo] == 1) {
      if (reads_reached) return false;
    } else if (reads_set || reads_reached) {
      mark[n - lo] = 2;
    }
  }
  return true;
}

bool is_connected(const ir::IndexedGraph& graph, std::span<const uint32_t> nodes) {
  if (nodes.empty()) return true;
  std::unordered_map<uint32_t, bool> visited;
  for (uint32_t n : nodes) visited[n] = false;
  std::vector<uint32_t> stack{nodes[0]};
  visited[nodes[0]] = true;
  size_t count = 1;
  while (!stack.empty()) {
    uint32_t n = stack.back();
    stack.pop_back();
    auto visit = [&](uint32_t m) {
      auto it = visited.find(m);
      if (it != visited.end() && !it->second) {
        it->second = true;
        ++count;
        stack.push_back(m);
      }
    };
    for (const ir::Entry& e : graph.inputs(n))
      if (e.present()) visit(e.node_id);
    for (uint32_t c : graph.consumers(n)) visit(c);
  }
  return count == visited.size();
}

ContractionCheck check_contraction(const ir::IndexedGraph& graph, std::span<const int32_t> group_of_node) {
  GRAFT_CHECK(group_of_node.size() == graph.num_nodes(), "check_contraction: ", group_of_node.size(),
              " group numbers for ", graph.num_nodes(), " nodes");
  // Quotient ids: groups keep their number, ungrouped nodes follow.
  int32_t num_groups = 0;
  for (int32_t g : group_of_node) num_groups = std::max(num_groups, g + 1);
  const size_t n_nodes = graph.num_nodes();
  std::vector<uint32_t> quotient(n_nodes);
  uint32_t next = static_cast<uint32_t>(num_groups);
  for (uint32_t id = 0; id < n_nodes; ++id)
    quotient[id] = group_of_node[id] >= 0 ? static_cast<uint32_t>(group_of_node[id]) : next++;
  const uint32_t q_count = next;
  std::vector<std::vector<uint32_t>> successors(q_count);
  std::vector<uint32_t> in_degree(q_count, 0), out_degree(q_count, 0);
  for (uint32_t id = 0; id < n_nodes; ++id)
    for (const ir::Entry& e : graph.inputs(id)) {
      if (!e.present() || quotient[e.node_id] == quotient[id]) continue;
      successors[quotient[e.node_id]].push_back(quotient[id]);
      ++in_degree[quotient[id]];
      ++out_degree[quotient[e.node_id]];
    }
  std::vector<uint32_t> ready;
  for (uint32_t q = 0; q < q_count; ++q)
    if (in_degree[q] == 0) ready.push_back(q);
  std::vector<bool> removed(q_count, false);
  size_t done = 0;
  while (!ready.empty()) {
    uint32_t q = ready.back();
    ready.pop_back();
    removed[q] = true;
    ++done;
    for (uint32_t s : successors[q])
      if (--in_degree[s] == 0) ready.push_back(s);
  }
  ContractionCheck result;
  if (done == q_count) return result;
  result.acyclic = false;
  // Peel nodes downstream of the cycles (no successor left) so that what
  // remains lies on or between cycles.
  std::vector<std::vector<uint32_t>> predecessors(q_count);
  for (uint32_t q = 0; q < q_count; ++q)
    for (uint32_t s : successors[q])
      if (!removed[q] && !removed[s]) predecessors[s].push_back(q);
  std::vector<uint32_t> live_out(q_count, 0);
  for (uint32_t q = 0; q < q_count; ++q)
    if (!removed[q])
      for (uint32_t s : successors[q])
        if (!removed[s]) ++live_out[q];
  for (uint32_t q = 0; q < q_count; ++q)
    if (!removed[q] && live_out[q] == 0) ready.push_back(q);
  while (!ready.empty()) {
    uint32_t q = ready.back();
    ready.pop_back();
    removed[q] = true;
    for (uint32_t p : predecessors[q])
      if (--live_out[p] == 0 && !removed[p]) ready.push_back(p);
  }
  std::vector<uint32_t> node_of_quotient(q_count, UINT32_MAX);
  for (uint32_t id = 0; id < n_nodes; ++id)
    if (group_of_node[id] < 0) node_of_quotient[quotient[id]] = id;
  for (uint32_t q = 0; q < q_count; ++q)
    if (!removed[q])
      result.on_cycle.push_back(q < static_cast<uint32_t>(num_groups) ? int64_t{q}
                                                                      : -1 - int64_t{node_of_quotient[q]});
  return result;
}

}  // namespace graft::partition
