// Finding the fusion subsets in linear time (the algorithm of MXNet PR 19269,
// written anew for graft's IndexedGraph).
//
// Walk the nodes in topological order. Every fusible node ends up in a fusion
// subset: it joins the subsets of its fusible inputs when that is safe, or
// starts a new subset. Subsets are identified by ids handed out in creation
// (hence topological) order and merged through union-find; the id recorded
// for a node stays valid because find() maps it to the subset it ended in.
//
// Two sets of subset ids drive the decision, both kept as IntervalSets of
// original ids (a stored id x stands for the subset find(x)):
//  - reach(v): the subsets with a member that is v or an ancestor of v. It is
//    the union of the inputs' reach sets, plus v's own subset. Because ids are
//    assigned in topological order, this is a few long runs of ids.
//  - excluded(S), per subset: the subsets other than S that reach some member
//    of S through a path that leaves them. S must never merge with one of
//    those: the merged subset would have a path out of it and back in.
//
// A fusible node v looks at the subsets X of its fusible inputs that have the
// same forward/backward mark and device. X is a candidate when no input w of
// v outside X is reached by X (otherwise X -> ... -> w -> v leaves X before
// reaching v). Candidates are then accepted greedily, in input order, while
// no accepted subset is in the exclusion set of another. The accepted ones
// merge with v into one subset whose exclusion set is the union of theirs and
// of the reach sets of v's inputs outside it. Every path out of the merged
// subset and back into it would have to re-enter through one of its members,
// and each such path was recorded in that member's exclusion set or in v's
// inputs' reach sets, so the merged subset stays convex.
//
// Reach sets are shared between a node and its single input whenever the
// node adds nothing new (chains), held in a reference-counted pool and freed
// as soon as the last consumer of their node has been visited, so memory is
// proportional to the graph's width, not its size.
#include <algorithm>

#include "graft/fusion/fusible.h"
#include "graft/fusion/fuse_pointwise.h"
#include "graft/fusion/interval_set.h"

namespace graft::fusion {

namespace {

constexpr uint32_t kNoSet = UINT32_MAX;
constexpr uint32_t kNoSubset = UINT32_MAX;

/// Reference-counted IntervalSets. Index kNoSet is the empty set.
class SetPool {
 public:
  const IntervalSet& get(uint32_t index) const { return index == kNoSet ? empty_ : sets_[index]; }
  IntervalSet& mutable_set(uint32_t index) { return sets_[index]; }
  bool is_empty(uint32_t index) const { return index == kNoSet || sets_[index].empty(); }

  /// A fresh, empty set with one reference.
  uint32_t acquire() {
    uint32_t index;
    if (!free_.empty()) {
      index = free_.back();
      free_.pop_back();
      sets_[index].clear();
    } else {
      index = static_cast<uint32_t>(sets_.size());
      sets_.emplace_back();
      refs_.push_back(0);
    }
    refs_[index] = 1;
    return index;
  }
  void retain(uint32_t index) {
    if (index != kNoSet) ++refs_[index];
  }
  void release(uint32_t index) {
    if (index != kNoSet && --refs_[index] == 0) free_.push_back(index);
  }
  bool is_shared(uint32_t index) const { return refs_[index] > 1; }

  /// Returns a set equal to get(target) ∪ get(other), consuming the caller's
  /// reference to `target` (reusing it when nobody else holds it).
  uint32_t unite(uint32_t target, uint32_t other) {
    if (other == kNoSet || other == target || sets_[other].empty()) return target;
    if (target == kNoSet || sets_[target].empty()) {
      release(target);
      retain(other);
      return other;
    }
    scratch_.assign_union(sets_[target], sets_[other]);
    if (is_shared(target)) {
      release(target);
      target = acquire();
    }
    std::swap(sets_[target], scratch_);
    return target;
  }

 private:
  std::vector<IntervalSet> sets_;
  std::vector<uint32_t> refs_;
  std::vector<uint32_t> free_;
  IntervalSet scratch_;
  IntervalSet empty_;
};

class SubsetFinder {
 public:
  explicit SubsetFinder(const ir::IndexedGraph& graph) : graph_(graph) {
    const size_t n = graph.num_nodes();
    subset_of_.assign(n, kNoSubset);
    reach_.assign(n, kNoSet);
    pending_consumers_.resize(n);
    last_consumer_seen_.assign(n, kNoSubset);
    for (uint32_t id = 0; id < n; ++id) pending_consumers_[id] = static_cast<uint32_t>(graph.consumers(id).size());
  }

  FusionSubsets run() {
    for (uint32_t id = 0; id < graph_.num_nodes(); ++id) visit(id);
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

  /// True when `set` holds an id of the subset whose root is `root`.
  bool holds(const IntervalSet& set, uint32_t root) const {
    if (set.empty()) return false;
    if (member_ids_[root] == kNoSet) return set.contains(root);
    return set.intersects(pool_.get(member_ids_[root]));
  }

  uint32_t root_of_node(uint32_t node) { return subset_of_[node] == kNoSubset ? kNoSubset : find(subset_of_[node]); }

  bool compatible(const ir::Node& a, const ir::Node& b) const {
    return a.is_backward == b.is_backward && a.device == b.device;
  }

  uint32_t new_subset() {
    uint32_t id = static_cast<uint32_t>(parent_.size());
    parent_.push_back(id);
    member_ids_.push_back(kNoSet);
    member_count_.push_back(1);
    excluded_.push_back(kNoSet);
    return id;
  }

  /// Merges subset root `from` into root `into`.
  void merge(uint32_t into, uint32_t from) {
    parent_[from] = into;
    if (member_ids_[into] == kNoSet) {
      member_ids_[into] = pool_.acquire();
      pool_.mutable_set(member_ids_[into]).insert(into);
    }
    if (member_ids_[from] == kNoSet) {
      pool_.mutable_set(member_ids_[into]).insert(from);
    } else {
      member_ids_[into] = pool_.unite(member_ids_[into], member_ids_[from]);
      pool_.release(member_ids_[from]);
      member_ids_[from] = kNoSet;
    }
    member_count_[into] += member_count_[from];
    excluded_[into] = pool_.unite(excluded_[into], excluded_[from]);
    pool_.release(excluded_[from]);
    excluded_[from] = kNoSet;
  }

  void visit(uint32_t id) {
    const ir::Node& node = graph_.node(id);
    // Distinct producers of the node's inputs.
    producers_.clear();
    for (const ir::Entry& e : graph_.inputs(id))
      if (e.present() && last_consumer_seen_[e.node_id] != id) {
        last_consumer_seen_[e.node_id] = id;
        producers_.push_back(e.node_id);
      }

    if (node.schema().category != ir::OpCategory::source && is_fusible(node)) visit_fusible(id, node);
    else reach_[id] = union_of_producers();

    for (uint32_t p : producers_)
      if (--pending_consumers_[p] == 0) {
        pool_.release(reach_[p]);
        reach_[p] = kNoSet;
      }
    if (pending_consumers_[id] == 0) {
      pool_.release(reach_[id]);
      reach_[id] = kNoSet;
    }
  }

  void visit_fusible(uint32_t id, const ir::Node& node) {
    // Candidate subsets: those of compatible fusible inputs that no input
    // outside them is reached by.
    candidates_.clear();
    for (uint32_t p : producers_) {
      uint32_t root = root_of_node(p);
      if (root == kNoSubset || !compatible(graph_.node(p), node)) continue;
      if (std::find(candidates_.begin(), candidates_.end(), root) != candidates_.end()) continue;
      bool reaches_outside = false;
      for (uint32_t q : producers_)
        if (root_of_node(q) != root && holds(pool_.get(reach_[q]), root)) {
          reaches_outside = true;
          break;
        }
      if (!reaches_outside) candidates_.push_back(root);
    }
    // Accept greedily while no accepted subset excludes another.
    accepted_.clear();
    for (uint32_t x : candidates_) {
      bool conflict = false;
      for (uint32_t a : accepted_)
        if (holds(pool_.get(excluded_[a]), x) || holds(pool_.get(excluded_[x]), a)) {
          conflict = true;
          break;
        }
      if (!conflict) accepted_.push_back(x);
    }

    if (accepted_.empty()) {
      uint32_t s = new_subset();
      subset_of_[id] = s;
      uint32_t reach = union_of_producers();
      excluded_[s] = reach;
      pool_.retain(reach);
      reach_[id] = with_id(reach, s);
      return;
    }
    uint32_t root = *std::max_element(accepted_.begin(), accepted_.end(),
                                      [&](uint32_t a, uint32_t b) { return member_count_[a] < member_count_[b]; });
    for (uint32_t a : accepted_)
      if (a != root) merge(root, a);
    ++member_count_[root];
    // The node records the id of an input in the subset: that input's reach
    // set already holds it, so a chain can share one reach set.
    uint32_t joined_input = kNoSubset;
    for (uint32_t p : producers_) {
      if (root_of_node(p) == root) {
        if (joined_input == kNoSubset) joined_input = p;
      } else {
        excluded_[root] = pool_.unite(excluded_[root], reach_[p]);
      }
    }
    subset_of_[id] = subset_of_[joined_input];
    reach_[id] = union_of_producers();
  }

  /// The union of the producers' reach sets, as a new reference. When all
  /// non-empty ones are the same set it is shared.
  uint32_t union_of_producers() {
    uint32_t result = kNoSet;
    for (uint32_t p : producers_) {
      uint32_t set = reach_[p];
      if (pool_.is_empty(set) || set == result) continue;
      if (result == kNoSet) {
        result = set;
        pool_.retain(set);
      } else {
        result = pool_.unite(result, set);
      }
    }
    return result;
  }

  /// `set` (a reference the caller gives up) with `id` added, as a new reference.
  uint32_t with_id(uint32_t set, uint32_t id) {
    if (set != kNoSet && pool_.get(set).contains(id)) return set;
    if (set == kNoSet || pool_.is_shared(set)) {
      uint32_t fresh = pool_.acquire();
      if (set != kNoSet) pool_.mutable_set(fresh) = pool_.get(set);
      pool_.release(set);
      set = fresh;
    }
    pool_.mutable_set(set).insert(id);
    return set;
  }

  FusionSubsets result() {
    FusionSubsets out;
    const size_t n = graph_.num_nodes();
    out.subset_of.assign(n, FusionSubsets::kNone);
    std::vector<uint32_t> dense(parent_.size(), FusionSubsets::kNone);
    for (uint32_t id = 0; id < n; ++id) {
      if (subset_of_[id] == kNoSubset) continue;
      uint32_t root = find(subset_of_[id]);
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
  std::vector<uint32_t> subset_of_;  // id recorded when the node was visited (kNoSubset: not fusible)
  std::vector<uint32_t> reach_;      // pool index
  std::vector<uint32_t> pending_consumers_;
  std::vector<uint32_t> last_consumer_seen_;  // dedupes a node's producers
  // Per subset id (meaningful at roots, except parent_).
  std::vector<uint32_t> parent_;
  std::vector<uint32_t> member_ids_;  // pool index of the ids merged into a root; kNoSet: only the root's own
  std::vector<uint32_t> member_count_;  // nodes in the subset
  std::vector<uint32_t> excluded_;      // pool index
  // Scratch.
  std::vector<uint32_t> producers_;
  std::vector<uint32_t> candidates_;
  std::vector<uint32_t> accepted_;
};

}  // namespace

FusionSubsets find_fusion_subsets(const ir::IndexedGraph& graph) { return SubsetFinder(graph).run(); }

}  // namespace graft::fusion
