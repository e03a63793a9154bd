#include "graft/fusion/interval_set.h"

#include <algorithm>

#include "graft/core/error.h"

namespace graft::fusion {

bool IntervalSet::contains(std::span<const Interval> set, uint32_t id) {
  // First interval that starts after id; the one before it is the only candidate.
  auto it =
      std::upper_bound(set.begin(), set.end(), id, [](uint32_t value, const Interval& iv) { return value < iv.first; });
  return it != set.begin() && (it - 1)->last >= id;
}

bool IntervalSet::intersects(std::span<const Interval> a, std::span<const Interval> b) {
  std::span<const Interval> small = a.size() <= b.size() ? a : b;
  std::span<const Interval> large = a.size() <= b.size() ? b : a;
  auto from = large.begin();
  for (const Interval& iv : small) {
    // First interval of `large` that ends at or after iv.first.
    from =
        std::lower_bound(from, large.end(), iv.first, [](const Interval& x, uint32_t value) { return x.last < value; });
    if (from == large.end()) return false;
    if (from->first <= iv.last) return true;
  }
  return false;
}

size_t IntervalSet::unite(std::span<const Interval> a, std::span<const Interval> b, Interval* out) {
  size_t size = 0;
  auto ia = a.begin(), ea = a.end();
  auto ib = b.begin(), eb = b.end();
  while (ia != ea || ib != eb) {
    const Interval& next = (ib == eb || (ia != ea && ia->first <= ib->first)) ? *ia++ : *ib++;
    // Coalesce with the last interval when they overlap or touch (first <= last + 1, without overflow).
    if (size > 0 && next.first <= uint64_t{out[size - 1].last} + 1) {
      out[size - 1].last = std::max(out[size - 1].last, next.last);
    } else {
      out[size++] = next;
    }
  }
  return size;
}

size_t IntervalSet::coarsen(Interval* set, size_t size, size_t max_intervals) {
  if (size <= max_intervals) return size;
  size_t join = size - max_intervals + 1;  // the first `join` intervals become one
  set[join - 1].first = set[0].first;
  std::copy(set + join - 1, set + size, set);
  return max_intervals;
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
  intervals_.resize(a.intervals_.size() + b.intervals_.size());
  intervals_.resize(unite(a.intervals_, b.intervals_, intervals_.data()));
}

bool IntervalSet::coarsen(size_t max_intervals) {
  if (max_intervals == 0 || intervals_.size() <= max_intervals) return false;
  intervals_.resize(coarsen(intervals_.data(), intervals_.size(), max_intervals));
  return true;
}

std::vector<uint32_t> IntervalSet::ids() const {
  std::vector<uint32_t> out;
  for (const Interval& iv : intervals_)
    for (uint64_t id = iv.first; id <= iv.last; ++id) out.push_back(static_cast<uint32_t>(id));
  return out;
}

}  // namespace graft::fusion
