// The decision to run on fewer threads. Two signals, each over the time
// graft's runs were in progress only:
//
// * contention: this process's threads were runnable but waited for a core
//   (their run-queue delay, exact to the nanosecond). It is what costs: an
//   OpenMP region split evenly over the threads waits for the one without
//   a core. It alone cannot say when to return, since a run on fewer threads
//   no longer waits;
// * the cores other processes kept busy (/proc/stat's busy time less this
//   process's own, in 10 ms units, so only meaningful summed over tens of
//   milliseconds). It says how many cores are left, and when the others
//   leave.
//
// Runs use fewer threads once both say so in two decisions in a row (each
// over 50 ms of running), and every thread again at the first decision in
// which the others keep less than half a core busy while graft runs. One
// decision alone is not enough evidence: on a quiet machine one window can
// hold another runtime's threads spinning down after its turn, or graft's
// own background compile (its threads then wait) together with a count of
// 10 ms units that errs upwards, and a wrong reduction halves the speed
// until the next decision. Two windows of 50 ms react as fast as one of
// 100 ms did, and a false reading must happen twice in a row. Looking only
// at the time of graft's own runs keeps a benchmark whose runtimes take
// turns (make compare) from reading the other runtime's turn as a
// co-tenant.
#include "graft/runtime/thread_count_policy.h"

#include <algorithm>
#include <cmath>

namespace graft::runtime {

int threads_for_load(int threads, int cores, double busy_elsewhere) {
  const double free_cores = static_cast<double>(cores) - busy_elsewhere;
  const int usable = static_cast<int>(std::floor(free_cores + 0.5));
  return std::clamp(usable, 1, std::max(threads, 1));
}

std::optional<ThreadCountDecision> ThreadCountPolicy::observe(const LoadWhileRunning& stretch) {
  if (!(stretch.wall > 0)) return std::nullopt;
  pending_.wall += stretch.wall;
  pending_.busy_elsewhere += stretch.busy_elsewhere;  // may be negative: tick counts err either way
  pending_.own_waiting += std::max(0.0, stretch.own_waiting);
  pending_.cores = stretch.cores;
  if (pending_.wall < decision_seconds_ * (1 - 1e-9)) return std::nullopt;  // sums of seconds round
  const double busy_elsewhere = std::max(0.0, pending_.busy_elsewhere / pending_.wall);
  const double waiting = pending_.own_waiting / pending_.wall;
  const bool co_tenant = busy_elsewhere >= kCoTenantCores;
  const bool contended = co_tenant && waiting >= kContendedWaitingThreads;
  contended_in_a_row_ = contended ? contended_in_a_row_ + 1 : 0;
  reduced_ = reduced_ ? co_tenant : contended_in_a_row_ >= kContendedDecisionsToReduce;
  busy_elsewhere_ = busy_elsewhere;
  cores_ = pending_.cores;
  ThreadCountDecision decision{pending_.wall, busy_elsewhere, waiting, cores_, contended, reduced_};
  pending_ = LoadWhileRunning{};
  return decision;
}

int ThreadCountPolicy::threads(int threads) const {
  if (!reduced_ || cores_ <= 0) return threads;
  return threads_for_load(threads, cores_, busy_elsewhere_);
}

}  // namespace graft::runtime
