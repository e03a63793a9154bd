#include "graft/fusion/interval_set.h"

#include <algorithm>

#include "graft/core/error.h"

namespace graft::fusion {

bool IntervalSet::contains(uint32_t id) const {
  // First interval that starts after id; the one before it is the only candidate.
  auto it = std::upper_bound(intervals_.begin(), intervals_.end(), id,
                             [](uint32_t value, const Interval& iv) { return value < iv.first; });
  return it != intervals_.begin() && (it - 1)->last >= id;
}

bool IntervalSet::intersects(const IntervalSet& other) const {
  const auto& small = intervals_.size() <= other.intervals_.size() ? intervals_ : other.intervals_;
  const auto& large = intervals_.size() <= other.intervals_.size() ? other.intervals_ : intervals_;
  auto from = large.begin();
  for (const Interval& iv : small) {
    // First interval of `large` that ends at or after iv.first.
    from = std::lower_bound(from, large.end(), iv.first, [](const Interval& x, uint32_t value) { return x.last < value; });
    if (from == large.end()) return false;
    if (from->first <= iv.last) return true;
  }
  return false;
}

void IntervalSet::insert(uint32_t id) {
  auto it = std::upper_bound(intervals_.begin(), intervals_.end(), id,
                             [](uint32_t value, const Interval& iv) { return value < iv.first; });
  bool joins_previous = it != intervals_.begin() && uint64_t{(it - 1)->last} + 1 >= id;
  if (joins_previous && (it - 1)->last >= id) return;  // already present
  bool joins_next = it != intervals_.end() && uint64_t{id} + 1 == it->first;
  if (joins_previous && joins_next) {
    (it - 1)->last = it->last;
    intervals_.erase(it);
  } else if (joins_previous) {
    (it - 1)->last = id;
  } else if (joins_next) {
    it->first = id;
  } else {
    intervals_.insert(it, Interval{id, id});
  }
}

void IntervalSet::assign_union(const IntervalSet& a, const IntervalSet& b) {
  GRAFT_CHECK(&a != this && &b != this, "IntervalSet::assign_union may not alias its result");
  intervals_.clear();
  intervals_.reserve(a.intervals_.size() + b.intervals_.size());
  auto ia = a.intervals_.begin(), ea = a.intervals_.end();
  auto ib = b.intervals_.begin(), eb = b.intervals_.end();
  while (ia != ea || ib != eb) {
    const Interval& next = (ib == eb || (ia != ea && ia->first <= ib->first)) ? *ia++ : *ib++;
    // Coalesce with the last interval when they overlap or touch (first <= last + 1, without overflow).
    if (!intervals_.empty() && next.first <= uint64_t{intervals_.back().last} + 1) {
      intervals_.back().last = std::max(intervals_.back().last, next.last);
    } else {
      intervals_.push_back(next);
    }
  }
}

bool IntervalSet::coarsen(size_t max_intervals) {
  if (max_intervals == 0 || intervals_.size() <= max_intervals) return false;
  size_t join = intervals_.size() - max_intervals + 1;  // the first `join` intervals become one
  intervals_[join - 1].first = intervals_[0].first;
  intervals_.erase(intervals_.begin(), intervals_.begin() + static_cast<std::ptrdiff_t>(join - 1));
  return true;
}

std::vector<uint32_t> IntervalSet::ids() const {
  std::vector<uint32_t> out;
  for (const Interval& iv : intervals_)
    for (uint64_t id = iv.first; id <= iv.last; ++id) out.push_back(static_cast<uint32_t>(id));
  return out;
}

}  // namespace graft::fusion
