/// \file
/// When a session runs on fewer threads than it was made for, decided from
/// what the machine's CPU-time counters say about the time graft's own runs
/// took (runtime::CoreAvailability takes those samples). Only time in which
/// a run was in progress counts: a process busy while graft is idle (a
/// benchmark whose runtimes take turns) takes no core from graft's runs and
/// changes nothing. Runs use fewer threads once both hold while they run,
/// in two decisions in a row (one alone may be a moment: another runtime's
/// threads spinning down, graft's own background compile beside the
/// counters' 10 ms ticks): graft's threads wait for cores (a quarter of a
/// thread on average), and other processes keep at least half a core busy.
/// They then use the cores the others leave free, at least one, and every
/// thread again at the first decision in which the others keep less than
/// half a core busy while graft runs.
#pragma once

#include <optional>

namespace graft::runtime {

/// What the counters saw over one stretch of time in which a run of this
/// process was in progress (or the sum over several such stretches).
struct LoadWhileRunning {
  double wall = 0;            ///< seconds
  double busy_elsewhere = 0;  ///< core-seconds that other processes kept cores busy (in ticks: may err below zero)
  double own_waiting = 0;     ///< thread-seconds that this process's threads waited for a core
  int cores = 0;              ///< cores this process may run on
};

/// One decision and what it was made from: the stretches since the last
/// decision, averaged (CoreAvailability logs these with
/// GRAFT_ADAPT_THREADS_LOG=1).
struct ThreadCountDecision {
  double wall = 0;            ///< seconds of running the decision looked at
  double busy_elsewhere = 0;  ///< cores other processes kept busy, on average (at least 0)
  double own_waiting = 0;     ///< threads of this process waiting for a core, on average
  int cores = 0;              ///< cores this process may run on
  bool contended = false;     ///< this decision saw contention and a co-tenant
  bool reduced = false;       ///< runs from now on use the cores the others leave free
};

/// A run keeps its threads unless its threads wait for cores at least this
/// many threads' worth on average: contention while it runs.
inline constexpr double kContendedWaitingThreads = 0.25;
/// Decisions in a row that must see contention and a co-tenant before runs
/// use fewer threads.
inline constexpr int kContendedDecisionsToReduce = 2;
/// Other processes that keep fewer cores busy than this, while graft runs,
/// take no core from it (threads_for_load rounds to whole cores).
inline constexpr double kCoTenantCores = 0.5;

/// The threads a run should use: `threads` at most, the cores not busy
/// elsewhere rounded to the nearest whole core (a co-tenant using under half
/// a core takes none), at least 1.
int threads_for_load(int threads, int cores, double busy_elsewhere);

/// The decision, from the load seen while runs were in progress. Not
/// thread-safe (CoreAvailability holds a lock around it).
class ThreadCountPolicy {
 public:
  /// Decides again each time the stretches observed add up to
  /// `decision_seconds` of running (fewer seconds: more noise, as /proc/stat
  /// counts in 10 ms units).
  explicit ThreadCountPolicy(double decision_seconds = 0.05) : decision_seconds_(decision_seconds) {}

  /// Adds one stretch; decides once they add up to decision_seconds, and
  /// then returns the decision.
  std::optional<ThreadCountDecision> observe(const LoadWhileRunning& stretch);

  /// The threads a run starting now should use out of `threads`.
  int threads(int threads) const;

  /// True while runs use the cores the others leave free.
  bool reduced() const { return reduced_; }

  /// Seconds of running between decisions.
  double decision_seconds() const { return decision_seconds_; }

 private:
  double decision_seconds_;
  LoadWhileRunning pending_;  // stretches since the last decision
  bool reduced_ = false;
  int contended_in_a_row_ = 0;  // decisions in a row that saw contention and a co-tenant
  double busy_elsewhere_ = 0;  // cores, at the last decision
  int cores_ = 0;
};

}  // namespace graft::runtime
