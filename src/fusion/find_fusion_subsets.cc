// Finding the fusion subsets in one topological walk (the algorithm of MXNet
// PR 19269, written anew for graft's IndexedGraph).
//
// Every fusible node ends up in a fusion subset: it joins the subsets of its
// fusible inputs when that is safe, or starts a new one. Subsets get ids in
// creation (hence topological) order and merge through union-find; an id
// stored anywhere stands for the subset find(id) it ended in.
//
// Safe means the graph stays acyclic once every subset is contracted to one
// node (checking each subset for convexity alone is not enough: two convex
// subsets can reach each other). The walk keeps, as IntervalSets of subset
// ids (few long runs, because ids follow the topological order):
//  - upstream(S) for each subset: the subsets that reach S in the contracted
//    graph, i.e. that S must never merge with;
//  - reach(u) for each node outside the subsets: the subsets that reach u.
//    A member of S is reached by S and upstream(S).
// A fusible node v tries the subsets of its fusible inputs that carry the
// same forward/backward mark and device, greedily, in input order. Merging a
// set T of them with v gives upstream = the union of their upstream sets and
// of what reaches v's other inputs; the merge is refused when a subset of T
// is in that union (it would reach itself through a node outside: a cycle).
//
// Reach sets are snapshots, so a subset whose members already have a
// consumer outside it ("observed") may not gain new upstream subsets later:
// the snapshots taken downstream of it would go stale and a later merge
// could close a cycle through them. Such a merge is refused too; v then
// joins another candidate or starts a new subset. This keeps every check
// local to v's inputs, so the walk is linear in the graph size times the
// (small) number of intervals per set.
//
// Sets are reference-counted and shared along chains (a node that adds
// nothing new shares its input's set); a node's reach set is freed as soon as
// its last consumer has been visited, so memory follows the graph's width.
#include <algorithm>
#include <span>

#include "graft/fusion/fusible.h"
#include "graft/fusion/fuse_pointwise.h"
#include "graft/fusion/interval_set.h"

namespace graft::fusion {

namespace {

constexpr uint32_t kNoSet = UINT32_MAX;
// Reach and upstream sets keep at most this many intervals: beyond it the
// oldest subsets are assumed to reach the node (an over-approximation, which
// can only refuse merges, never allow a wrong one). Subsets that can merge
// with a node are those of its inputs, recent ones, so little is lost; the
// bound keeps time and memory linear on graphs whose long edges would
// otherwise fragment the sets.
constexpr size_t kMaxIntervals = 8;
constexpr uint32_t kNoSubset = UINT32_MAX;
// How many nodes ahead sweeps over the graph's nodes prefetch.
constexpr uint32_t kSweepPrefetchDistance = 8;

using Interval = IntervalSet::Interval;

/// Reference-counted sets of at most kMaxIntervals intervals, each stored
/// inline in one slot of a flat array: the walk allocates nothing per set,
/// and the sets it reads lie side by side. Index kNoSet is the empty set.
class SetPool {
 public:
  std::span<const Interval> get(uint32_t index) const {
    if (index == kNoSet) return {};
    const Slot& slot = slots_[index];
    return {slot.intervals, slot.size};
  }

  /// A fresh, empty set with one reference.
  uint32_t acquire() {
    uint32_t index;
    if (!free_.empty()) {
      index = free_.back();
      free_.pop_back();
    } else {
      index = static_cast<uint32_t>(slots_.size());
      slots_.emplace_back();
    }
    slots_[index].size = 0;
    slots_[index].refs = 1;
    return index;
  }
  void retain(uint32_t index) {
    if (index != kNoSet) ++slots_[index].refs;
  }
  void release(uint32_t index) {
    if (index != kNoSet && --slots_[index].refs == 0) free_.push_back(index);
  }
  void prefetch(uint32_t index) const {
    const char* slot = reinterpret_cast<const char*>(&slots_[index]);
    graft::prefetch(slot);
    graft::prefetch(slot + 64);
  }
  bool is_shared(uint32_t index) const { return slots_[index].refs > 1; }

  /// Returns a set equal to get(target) ∪ get(other) (coarsened), consuming
  /// the caller's reference to `target` (reusing it when nobody else holds it).
  uint32_t unite(uint32_t target, uint32_t other) {
    if (other == kNoSet || other == target || slots_[other].size == 0) return target;
    if (target == kNoSet || slots_[target].size == 0) {
      release(target);
      retain(other);
      return other;
    }
    return store(target, IntervalSet::unite(get(target), get(other), scratch_));
  }

  /// Adds `id` to `target` (coarsened), consuming the caller's reference as unite does.
  uint32_t insert(uint32_t target, uint32_t id) {
    const Interval single{id, id};
    size_t size = IntervalSet::unite(get(target), {&single, 1}, scratch_);
    if (target == kNoSet) target = acquire();
    return store(target, size);
  }

 private:
  struct Slot {
    uint32_t size;
    uint32_t refs;
    Interval intervals[kMaxIntervals];
  };

  /// Moves the first `size` intervals of scratch_ (coarsened) into `target`
  /// or, when others hold it, into a new set.
  uint32_t store(uint32_t target, size_t size) {
    size = IntervalSet::coarsen(scratch_, size, kMaxIntervals);
    // Often nothing was added (the other set lies upstream already): keep
    // the target, shared or not, so callers also see an unchanged index.
    if (size == slots_[target].size && std::equal(scratch_, scratch_ + size, slots_[target].intervals)) return target;
    if (is_shared(target)) {
      release(target);
      target = acquire();
    }
    Slot& slot = slots_[target];
    std::copy(scratch_, scratch_ + size, slot.intervals);
    slot.size = static_cast<uint32_t>(size);
    return target;
  }

  std::vector<Slot> slots_;
  std::vector<uint32_t> free_;
  Interval scratch_[2 * kMaxIntervals];
};

class SubsetFinder {
 public:
  explicit SubsetFinder(const ir::IndexedGraph& graph) : graph_(graph) {
    const size_t n = graph.num_nodes();
    nodes_.assign(n, NodeState{});
    for (uint32_t id = 0; id < n; ++id) nodes_[id].pending_consumers = static_cast<uint32_t>(graph.consumers(id).size());
    classify_nodes();
  }

  FusionSubsets run() {
    const uint32_t n = static_cast<uint32_t>(graph_.num_nodes());
    for (uint32_t id = 0; id < n; ++id) {
      // A node's producers lie anywhere before it: fetch their states, then
      // their subsets' and sets' entries, ahead of the visit.
      if (id + 2 * kSweepPrefetchDistance < n) prefetch_producer_states(id + 2 * kSweepPrefetchDistance);
      if (id + kSweepPrefetchDistance < n) prefetch_producer_sets(id + kSweepPrefetchDistance);
      visit(id);
    }
    return result();
  }

 private:
  uint32_t find(uint32_t subset) {
    while (parent_[subset] != subset) {
      parent_[subset] = parent_[parent_[subset]];
      subset = parent_[subset];
    }
    return subset;
  }

  void prefetch_producer_states(uint32_t id) const {
    for (const ir::Entry& e : graph_.inputs(id))
      if (e.present()) graft::prefetch(&nodes_[e.node_id]);
  }

  /// Read at the visit: the producer's subset (its union-find entry) or its
  /// reach set.
  void prefetch_producer_sets(uint32_t id) const {
    for (const ir::Entry& e : graph_.inputs(id)) {
      if (!e.present()) continue;
      const NodeState& state = nodes_[e.node_id];
      if (state.subset != kNoSubset && state.subset < parent_.size()) {
        graft::prefetch(&parent_[state.subset]);
      } else if (state.reach != kNoSet) {
        pool_.prefetch(state.reach);
      }
    }
  }

  uint32_t root_of_node(uint32_t node) { return nodes_[node].subset == kNoSubset ? kNoSubset : find(nodes_[node].subset); }

  /// True when `set` holds an id of the subset whose root is `root`.
  bool holds(std::span<const Interval> set, uint32_t root) const {
    if (set.empty()) return false;
    if (member_ids_[root] == kNoSet) return IntervalSet::contains(set, root);
    return IntervalSet::intersects(set, pool_.get(member_ids_[root]));
  }

  /// One sequential sweep caches what the walk asks about each node: whether
  /// it is fusible, and a kind key (backward mark and device) that the nodes of
  /// one fused node must share.
  void classify_nodes() {
    const uint32_t n = static_cast<uint32_t>(graph_.num_nodes());
    for (uint32_t id = 0; id < n; ++id) {
      // Nodes are scattered on the heap: fetch them, then their inputs, ahead.
      if (id + 2 * kSweepPrefetchDistance < n) graph_.node(id + 2 * kSweepPrefetchDistance).prefetch();
      if (id + kSweepPrefetchDistance < n) {
        const ir::Node& ahead = graph_.node(id + kSweepPrefetchDistance);
        graft::prefetch(ahead.inputs.data());  // (a single output's type is inside the node, fetched above)
        // The op table's attribute checks ask whether there are any.
        graft::prefetch(&ahead.attributes.all());
        graft::prefetch(reinterpret_cast<const char*>(&ahead.attributes.all()) + 40);
      }
      const ir::Node& node = graph_.node(id);
      nodes_[id].kind = (static_cast<uint64_t>(node.device.type) << 33) |
                        (static_cast<uint64_t>(static_cast<uint32_t>(node.device.id)) << 1) | (node.is_backward ? 1u : 0u);
      nodes_[id].fusible = is_fusible(node);
    }
  }

  /// upstream(root) plus the root's own id: what a consumer of a member is
  /// reached by. Cached; the cache is dropped when upstream grows.
  uint32_t closed_set(uint32_t root) {
    if (closed_[root] == kNoSet) {
      pool_.retain(upstream_[root]);
      closed_[root] = pool_.insert(upstream_[root], root);
    }
    return closed_[root];
  }

  /// The subsets that reach node p's value (borrowed reference).
  uint32_t reached_by(uint32_t p) {
    uint32_t root = root_of_node(p);
    return root == kNoSubset ? nodes_[p].reach : closed_set(root);
  }

  /// The upstream set of `trial` (roots) merged with the node being visited,
  /// as a new reference, or kNoSet with *valid false when the merge would
  /// make a cycle or change what an observed subset's consumers were told.
  uint32_t upstream_if_merged(const std::vector<uint32_t>& trial, bool* valid) {
    uint32_t up = kNoSet;
    for (uint32_t y : trial) up = pool_.unite(up, upstream_[y]);
    for (uint32_t p : producers_) {
      uint32_t root = root_of_node(p);
      if (root != kNoSubset && std::find(trial.begin(), trial.end(), root) != trial.end()) continue;
      up = pool_.unite(up, reached_by(p));
    }
    *valid = true;
    for (uint32_t y : trial)
      if (holds(pool_.get(up), y) ||
          (observed_[y] && !(up == upstream_[y] || std::ranges::equal(pool_.get(up), pool_.get(upstream_[y]))))) {
        *valid = false;
        break;
      }
    return up;
  }

  uint32_t new_subset() {
    uint32_t id = static_cast<uint32_t>(parent_.size());
    parent_.push_back(id);
    member_ids_.push_back(kNoSet);
    member_count_.push_back(1);
    upstream_.push_back(kNoSet);
    closed_.push_back(kNoSet);
    observed_.push_back(false);
    return id;
  }

  /// Merges subset root `from` into root `into` (upstream sets are set by the caller).
  void merge(uint32_t into, uint32_t from) {
    parent_[from] = into;
    if (member_ids_[into] == kNoSet) member_ids_[into] = pool_.insert(kNoSet, into);
    if (member_ids_[from] == kNoSet) {
      member_ids_[into] = pool_.insert(member_ids_[into], from);
    } else {
      member_ids_[into] = pool_.unite(member_ids_[into], member_ids_[from]);
      pool_.release(member_ids_[from]);
      member_ids_[from] = kNoSet;
    }
    member_count_[into] += member_count_[from];
    if (observed_[from] && !observed_[into]) {
      std::swap(closed_[into], closed_[from]);
      observed_[into] = true;
    }
    pool_.release(closed_[from]);
    closed_[from] = kNoSet;
    pool_.release(upstream_[from]);
    upstream_[from] = kNoSet;
  }

  void visit(uint32_t id) {
    producers_.clear();
    for (const ir::Entry& e : graph_.inputs(id))
      if (e.present() && nodes_[e.node_id].last_consumer_seen != id) {
        nodes_[e.node_id].last_consumer_seen = id;
        producers_.push_back(e.node_id);
      }

    if (nodes_[id].fusible) {
      visit_fusible(id);
    } else {
      uint32_t reach = kNoSet;
      for (uint32_t p : producers_) reach = pool_.unite(reach, reached_by(p));
      nodes_[id].reach = reach;
    }
    // The producers' subsets now have a consumer outside them.
    uint32_t own = root_of_node(id);
    for (uint32_t p : producers_) {
      uint32_t root = root_of_node(p);
      if (root != kNoSubset && root != own) observed_[root] = true;
    }
    for (uint32_t p : producers_)
      if (--nodes_[p].pending_consumers == 0) {
        pool_.release(nodes_[p].reach);
        nodes_[p].reach = kNoSet;
      }
    if (nodes_[id].pending_consumers == 0) {
      pool_.release(nodes_[id].reach);
      nodes_[id].reach = kNoSet;
    }
  }

  void visit_fusible(uint32_t id) {
    candidates_.clear();
    for (uint32_t p : producers_) {
      uint32_t root = root_of_node(p);
      if (root == kNoSubset || nodes_[p].kind != nodes_[id].kind) continue;
      if (std::find(candidates_.begin(), candidates_.end(), root) == candidates_.end()) candidates_.push_back(root);
    }
    // Accept candidates greedily while the merged subset stays valid.
    accepted_.clear();
    uint32_t up = kNoSet;
    for (uint32_t x : candidates_) {
      trial_ = accepted_;
      trial_.push_back(x);
      bool valid = false;
      uint32_t trial_up = upstream_if_merged(trial_, &valid);
      if (valid) {
        pool_.release(up);
        up = trial_up;
        accepted_.swap(trial_);
      } else {
        pool_.release(trial_up);
      }
    }
    if (accepted_.empty()) {
      uint32_t s = new_subset();
      nodes_[id].subset = s;
      bool valid = false;
      upstream_[s] = upstream_if_merged(accepted_, &valid);
      return;
    }
    uint32_t root = *std::max_element(accepted_.begin(), accepted_.end(),
                                      [&](uint32_t a, uint32_t b) { return member_count_[a] < member_count_[b]; });
    for (uint32_t a : accepted_)
      if (a != root) merge(root, a);
    ++member_count_[root];
    if (up != upstream_[root]) {
      pool_.release(upstream_[root]);
      upstream_[root] = up;
      if (!observed_[root]) {  // an observed subset's upstream set is unchanged (checked above)
        pool_.release(closed_[root]);
        closed_[root] = kNoSet;
      }
    } else {
      pool_.release(up);
    }
    nodes_[id].subset = root;
  }

  FusionSubsets result() {
    FusionSubsets out;
    const size_t n = graph_.num_nodes();
    out.subset_of.assign(n, FusionSubsets::kNone);
    std::vector<uint32_t> dense(parent_.size(), FusionSubsets::kNone);
    for (uint32_t id = 0; id < n; ++id) {
      if (nodes_[id].subset == kNoSubset) continue;
      uint32_t root = find(nodes_[id].subset);
      if (member_count_[root] < 2) continue;
      if (dense[root] == FusionSubsets::kNone) {
        dense[root] = static_cast<uint32_t>(out.sizes.size());
        out.sizes.push_back(0);
      }
      out.subset_of[id] = dense[root];
      ++out.sizes[dense[root]];
    }
    return out;
  }

  const ir::IndexedGraph& graph_;
  SetPool pool_;
  // Per node.
  /// Everything the walk keeps per node, in one place (one cache line to
  /// fetch per producer).
  struct NodeState {
    uint64_t kind = 0;                        // nodes of one fused node share it: device and backward mark
    uint32_t subset = kNoSubset;              // a subset id (find() gives its subset); kNoSubset: not fusible
    uint32_t reach = kNoSet;                  // nodes outside subsets: pool index of the subsets that reach them
    uint32_t pending_consumers = 0;           // consumers not visited yet
    uint32_t last_consumer_seen = kNoSubset;  // dedupes a node's producers
    bool fusible = false;
  };
  std::vector<NodeState> nodes_;
  // Per subset id (meaningful at roots, except parent_).
  std::vector<uint32_t> parent_;
  std::vector<uint32_t> member_ids_;    // pool index of the ids merged into a root; kNoSet: only the root's own
  std::vector<uint32_t> member_count_;  // nodes in the subset
  std::vector<uint32_t> upstream_;      // pool index: subsets that reach the subset
  std::vector<uint32_t> closed_;        // pool index: upstream_ plus the subset's id (cache)
  std::vector<bool> observed_;          // a node outside the subset reads one of its members
  // Scratch.
  std::vector<uint32_t> producers_;
  std::vector<uint32_t> candidates_;
  std::vector<uint32_t> accepted_;
  std::vector<uint32_t> trial_;
};

}  // namespace

FusionSubsets find_fusion_subsets(const ir::IndexedGraph& graph) { return SubsetFinder(graph).run(); }

}  // namespace graft::fusion
