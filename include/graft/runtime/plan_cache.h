/// \file
/// PlanCache: which plan serves a run, for a model whose input shapes vary
/// (docs/dynamic-shapes.md). A plan specialized to one set of input shapes is
/// the fastest (shape computations folded, every subgraph compiled for those
/// shapes) but costs milliseconds to make and keeps its own compiled modules
/// and converted weights. A generation loop, whose past length grows by one
/// every step, would make and keep one per step. So a session keeps at most
/// `max_specialized` specialized plans; shapes beyond them run on one
/// shape-generic plan. A shape that keeps coming back takes the place of a
/// specialized plan that has not been used for a while.
///
/// The cache decides and keeps plans; the caller makes them. Not thread-safe
/// (Session holds its mutex around it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>

namespace graft::runtime {

template <class Plan>
class PlanCache {
 public:
  /// A shape running on the generic plan is specialized when it has run
  /// kPromoteAfterRuns times within kStaleAfterRuns lookups (it is frequent)
  /// and there is room, or the least recently used specialized plan has not
  /// served any of the last kStaleAfterRuns lookups (then that plan is
  /// dropped). A shape that comes back less often than that stays generic:
  /// no plan is made only to be dropped again.
  static constexpr uint32_t kPromoteAfterRuns = 3;
  static constexpr uint64_t kStaleAfterRuns = 64;
  /// Generic-plan run counts kept at most (all are forgotten beyond it).
  static constexpr size_t kMaxTrackedShapes = 4096;

  /// How a lookup is to be served.
  enum class Choice {
    cached,      ///< `plan` is the specialized plan of this signature
    specialize,  ///< make a specialized plan and insert() it
    generic,     ///< run on the shape-generic plan
  };
  struct Lookup {
    Choice choice;
    std::shared_ptr<Plan> plan;  ///< when cached
  };

  explicit PlanCache(size_t max_specialized) : max_specialized_(max_specialized) {}

  /// One run with inputs of `signature`: its plan, or what to do.
  Lookup lookup(const std::string& signature) {
    ++clock_;
    if (auto it = plans_.find(signature); it != plans_.end()) {
      it->second.last_use = clock_;
      return {Choice::cached, it->second.plan};
    }
    if (plans_.size() < max_specialized_) return {Choice::specialize, nullptr};
    if (max_specialized_ == 0) return {Choice::generic, nullptr};
    if (generic_runs_.size() >= kMaxTrackedShapes) generic_runs_.clear();
    Recurrence& seen = generic_runs_[signature];
    if (seen.runs == 0 || seen.window_start + kStaleAfterRuns < clock_) seen = Recurrence{0, clock_};
    if (++seen.runs >= kPromoteAfterRuns && least_recent_use() + kStaleAfterRuns < clock_) {
      generic_runs_.erase(signature);
      return {Choice::specialize, nullptr};
    }
    return {Choice::generic, nullptr};
  }

  /// Keeps `plan` for `signature`, dropping the least recently used plan
  /// when max_specialized (at least one) are kept already. Runs in progress
  /// keep a dropped plan alive until they end.
  void insert(const std::string& signature, std::shared_ptr<Plan> plan) {
    const size_t capacity = max_specialized_ > 0 ? max_specialized_ : 1;
    if (!plans_.count(signature))
      while (plans_.size() >= capacity) plans_.erase(least_recent());
    plans_[signature] = Entry{std::move(plan), ++clock_};
  }

  /// Specialized plans kept.
  size_t size() const { return plans_.size(); }
  size_t max_specialized() const { return max_specialized_; }
  bool contains(const std::string& signature) const { return plans_.count(signature) != 0; }

 private:
  struct Entry {
    std::shared_ptr<Plan> plan;
    uint64_t last_use = 0;
  };
  /// Generic runs of one shape since `window_start` (a lookup's clock).
  struct Recurrence {
    uint32_t runs = 0;
    uint64_t window_start = 0;
  };
  using Map = std::unordered_map<std::string, Entry>;

  typename Map::iterator least_recent() {
    auto oldest = plans_.begin();
    for (auto it = plans_.begin(); it != plans_.end(); ++it)
      if (it->second.last_use < oldest->second.last_use) oldest = it;
    return oldest;
  }
  uint64_t least_recent_use() { return plans_.empty() ? 0 : least_recent()->second.last_use; }

  size_t max_specialized_;
  uint64_t clock_ = 0;
  Map plans_;
  std::unordered_map<std::string, Recurrence> generic_runs_;
};

}  // namespace graft::runtime
