/// \file
/// IntervalSet: a set of 32-bit ids kept as sorted, disjoint, non-adjacent
/// closed intervals. The fusion pass stores the fusion subsets a node must not
/// join this way: subset ids are handed out in topological order, so the
/// subsets upstream of a node form few, long runs of ids.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace graft::fusion {

class IntervalSet {
 public:
  /// One closed interval [first, last].
  struct Interval {
    uint32_t first;
    uint32_t last;
    bool operator==(const Interval&) const = default;
  };

  bool empty() const { return intervals_.empty(); }
  void clear() { intervals_.clear(); }
  /// Number of intervals (not of ids).
  size_t num_intervals() const { return intervals_.size(); }
  const std::vector<Interval>& intervals() const { return intervals_; }

  /// True when `id` is in the set. O(log intervals).
  bool contains(uint32_t id) const { return contains(intervals_, id); }
  /// True when the two sets share an id. O(min · log max intervals).
  bool intersects(const IntervalSet& other) const { return intersects(intervals_, other.intervals_); }
  /// Adds one id, merging with neighbouring intervals. O(intervals).
  void insert(uint32_t id);
  /// Sets *this to a ∪ b (neither may alias *this). O(a + b intervals).
  void assign_union(const IntervalSet& a, const IntervalSet& b);
  /// Keeps at most `max_intervals` intervals by joining the lowest ones into
  /// one (adding the ids between them). Returns whether ids were added.
  bool coarsen(size_t max_intervals);
  /// Every id in the set, ascending (for tests).
  std::vector<uint32_t> ids() const;

  bool operator==(const IntervalSet&) const = default;

  /// The algorithms on interval lists (sorted, disjoint, non-adjacent), for
  /// callers that keep the intervals in storage of their own.
  /// True when `id` is in `set`.
  static bool contains(std::span<const Interval> set, uint32_t id);
  /// True when `a` and `b` share an id.
  static bool intersects(std::span<const Interval> a, std::span<const Interval> b);
  /// Writes a ∪ b to `out` (room for a.size() + b.size() intervals, aliasing
  /// neither) and returns its number of intervals.
  static size_t unite(std::span<const Interval> a, std::span<const Interval> b, Interval* out);
  /// Joins the lowest intervals of `set` (`size` of them) into one until at
  /// most `max_intervals` (> 0) remain; returns the new size.
  static size_t coarsen(Interval* set, size_t size, size_t max_intervals);

 private:
  std::vector<Interval> intervals_;
};

}  // namespace graft::fusion
