/// \file
/// The one acyclicity/convexity utility shared by the partitioner, the region
/// merger and the pointwise fusion pass.
///
/// A set S of nodes is *convex* when no path leaves S and re-enters it; exactly
/// then replacing S by one node keeps the graph acyclic. When several disjoint
/// sets are contracted, each must be convex in the graph where the others are
/// already contracted (two individually convex sets A, B can still form the
/// cycle A -> B -> A after contraction).
///
/// ConvexGrouping keeps that invariant while groups are formed one at a time.
/// It maintains an order of all nodes that is topological for the graph in
/// which every group formed so far is contracted, with each group's members
/// contiguous. Checking a candidate set then costs one scan over the positions
/// between its first and last member (the only places a path out of S and back
/// can pass), with in-edges of those nodes: O(range + edges in range), never a
/// retry. Accepting a set reorders only that range (nodes not reachable from S
/// first, then S, then the nodes S reaches), which keeps the invariant.
/// Trimming a non-convex set removes, in one scan, every member reachable from
/// the set through an outside node; what remains is convex (a path that left it
/// and came back would make its end reachable through an outside node). When the
/// seed itself is such a member, the set is first cut to the members at or after
/// the seed's position, where nothing can reach the seed from outside.
///
/// check_contraction() answers the batch question (may these disjoint sets all be
/// contracted at once?) in O(V + E) with Kahn's algorithm on the quotient graph.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "graft/ir/indexed_graph.h"

namespace graft::partition {

/// Groups of nodes (by IndexedGraph id) formed one at a time, each convex in the
/// graph where the groups before it are contracted. Node ids are those of the
/// IndexedGraph given to the constructor, which must outlive this object.
class ConvexGrouping {
 public:
  static constexpr int32_t kNoGroup = -1;

  explicit ConvexGrouping(const ir::IndexedGraph& graph);

  const ir::IndexedGraph& graph() const { return graph_; }
  /// Group of a node, or kNoGroup.
  int32_t group_of(uint32_t node) const { return group_of_[node]; }
  /// Number of groups formed.
  size_t num_groups() const { return groups_.size(); }
  /// Members of a group, in the current (quotient-topological) order.
  const std::vector<uint32_t>& members(int32_t group) const { return groups_[static_cast<size_t>(group)]; }
  /// Every node once, topological for the graph with all groups contracted;
  /// each group's members are contiguous. The partitioner builds its result
  /// graph in this order.
  const std::vector<uint32_t>& order() const { return order_; }

  /// True when `nodes` (distinct, none in a group) can be contracted into one
  /// node without creating a cycle, given the groups formed so far.
  bool is_convex(std::span<const uint32_t> nodes);

  /// The largest subset this finds of `nodes` (none in a group) that contains
  /// `seed`, is convex given the groups formed so far, and is connected through
  /// edges between its members. `removed`, when given, receives the other
  /// nodes. Linear in the scanned range; never retries.
  std::vector<uint32_t> trim(std::span<const uint32_t> nodes, uint32_t seed, std::vector<uint32_t>* removed = nullptr);

  /// Records `nodes` as a new group and returns its id. Throws
  /// Error(internal) when they are not convex (call trim() first) or overlap
  /// a group.
  int32_t add_group(std::span<const uint32_t> nodes);

 private:
  // Scans positions [first, last] marking outside nodes reached from the set
  // (stamp == reached_stamp_). When `trim_reached` is set, members with a reached
  // input leave the set (their in_set_ stamp is cleared) and count as reached;
  // otherwise the scan stops at the first such member and returns false.
  bool scan(uint32_t first, uint32_t last, bool trim_reached);
  void mark_set(std::span<const uint32_t> nodes);
  std::pair<uint32_t, uint32_t> position_range(std::span<const uint32_t> nodes) const;

  const ir::IndexedGraph& graph_;
  std::vector<uint32_t> order_;     // position -> node
  std::vector<uint32_t> position_;  // node -> position
  std::vector<int32_t> group_of_;
  std::vector<std::vector<uint32_t>> groups_;
  // Scratch marks: a node is in the current set when in_set_[n] == set_stamp_,
  // reached when reached_[n] == reached_stamp_. Stamps avoid clearing per call.
  std::vector<uint32_t> in_set_;
  std::vector<uint32_t> reached_;
  uint32_t set_stamp_ = 0;
  uint32_t reached_stamp_ = 0;
};

/// True when `nodes` of `graph` form a convex set (no path leaves and re-enters).
/// O(range of their topological ids + edges in it).
bool is_convex(const ir::IndexedGraph& graph, std::span<const uint32_t> nodes);

/// True when `nodes` are connected through edges between members (ignoring direction).
bool is_connected(const ir::IndexedGraph& graph, std::span<const uint32_t> nodes);

/// The outcome of check_contraction().
struct ContractionCheck {
  bool acyclic = true;
  /// When not acyclic: the groups (and ungrouped nodes, as -1 - node id) that
  /// lie on cycles of the quotient graph.
  std::vector<int64_t> on_cycle;
};

/// Whether contracting every group at once leaves the graph acyclic.
/// `group_of_node[id]` is a group number >= 0, or negative for nodes that stay.
/// O(V + E).
ContractionCheck check_contraction(const ir::IndexedGraph& graph, std::span<const int32_t> group_of_node);

}  // namespace graft::partition
