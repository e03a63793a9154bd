/// \file
/// How many cores a run can have. graft's intra-op threads meet at a barrier
/// after every parallel region (OpenMP, the runtime oneDNN uses too, splits
/// work evenly ahead of time), so one thread whose core a busy co-tenant
/// process takes makes every region wait for it: on 2 cores with one other
/// busy process, 2 threads run resnet50 about twice as slowly as 1 thread
/// does (docs/performance.md, "A busy co-tenant"). Comparing the CPU time the
/// machine's cores spent busy with this process's own CPU time, while its
/// runs are in progress, tells how many cores other processes keep busy;
/// the threads' run-queue delay tells whether that costs this process
/// anything. ThreadCountPolicy decides from both.
#pragma once

#include <chrono>
#include <functional>
#include <mutex>
#include <optional>

#include "graft/runtime/thread_count_policy.h"

namespace graft::runtime {

/// CPU time counters, in seconds.
struct CpuTimes {
  /// Busy time (user, system, irq, softirq, steal) summed over the cores
  /// this process may run on (/proc/stat). The time of processes at a lower
  /// priority (nice > 0), which yield their cores to this one, counts only
  /// when this process runs at such a priority too.
  double cores_busy = 0;
  /// This process's CPU time, all threads.
  double own = 0;
  /// Time this process's threads spent runnable but waiting for a core
  /// (/proc/self/task/*/schedstat): contention while they run. Sleeping
  /// threads do not add to it (spinning ones do, once another task holds
  /// their core).
  double own_waiting = 0;
  /// A monotonic clock.
  double wall = 0;
  /// The cores this process may run on (its affinity mask).
  int cores = 1;
};

/// Reads the counters; nullopt where /proc/stat cannot be read (not Linux).
std::optional<CpuTimes> read_cpu_times();

/// Cores that other processes kept busy between two samples (0 when the
/// interval is empty).
double cores_busy_elsewhere(const CpuTimes& before, const CpuTimes& after);

/// What happened between two samples taken while runs were in progress.
LoadWhileRunning load_between(const CpuTimes& before, const CpuTimes& after);

/// /proc/stat counts in 10 ms units, so each stretch's busy time errs by up
/// to 10 ms per core either way: a stretch shorter than this is not ended
/// at its run's end but continued by a run that follows at once (within
/// kBackToBackGap), so that back-to-back runs of a few milliseconds make
/// one stretch, and one error, per 10 ms rather than one per run.
inline constexpr double kShortestStretchSeconds = 0.010;
/// A run that starts within this time of the last one's end continues a
/// stretch that is still too short; after a longer pause (another process's
/// turn) the stretch ends where the last run ended.
inline constexpr std::chrono::milliseconds kBackToBackGap{1};

/// Samples the counters around runs and keeps the decision of a
/// ThreadCountPolicy; safe to call from many threads. A sample is taken
/// when a run starts, at most once per `spacing`, and the next when runs
/// stop being in progress (or at a run's end once the stretch is
/// `decision_seconds` long, for runs that overlap without a pause), so that
/// only time in which this process ran counts. A stretch shorter than
/// kShortestStretchSeconds at a run's end is kept open for a run that
/// follows at once, and samples are then also taken at the ends of those
/// runs. A run of 10 ms or more that ends its own stretch hands its end
/// sample to a run that follows at once, which starts the next stretch
/// with it whatever the spacing, so back-to-back runs that long are all
/// sampled. Reads of /proc: one per run of 10 ms or more back to back,
/// else two per `spacing` and one per run while a stretch is shorter than
/// 10 ms.
class CoreAvailability {
 public:
  using Reader = std::function<std::optional<CpuTimes>()>;
  /// `back_to_back_gap`: the pause after a run within which the next run
  /// counts as following it at once (kBackToBackGap; tests widen it).
  explicit CoreAvailability(std::chrono::milliseconds spacing = std::chrono::milliseconds(25),
                            double decision_seconds = 0.05, Reader reader = read_cpu_times,
                            std::chrono::microseconds back_to_back_gap = kBackToBackGap);

  /// One run: the threads it should use out of `threads` while it is in
  /// progress. Ends the stretch being sampled when it is the last run in
  /// progress.
  class Run {
   public:
    Run(CoreAvailability& availability, int threads);
    ~Run();
    Run(const Run&) = delete;
    Run& operator=(const Run&) = delete;
    /// The threads this run should use: the session's count until enough
    /// stretches have been seen, or when the counters cannot be read.
    int threads() const { return threads_; }

   private:
    CoreAvailability& availability_;
    int threads_;
  };

  /// True while runs use the cores the others leave free.
  bool reduced() const;

  /// The process-wide instance sessions share.
  static CoreAvailability& global();

 private:
  int run_started(int threads);
  void run_finished();
  void end_stretch(const CpuTimes& end);  // observes stretch_start_ .. end; the mutex is held

  std::chrono::milliseconds spacing_;
  Reader reader_;
  std::chrono::microseconds back_to_back_gap_;
  mutable std::mutex mutex_;
  ThreadCountPolicy policy_;
  int runs_in_progress_ = 0;
  std::optional<CpuTimes> stretch_start_;  // a stretch being sampled
  std::optional<std::chrono::steady_clock::time_point> stretch_opened_;
  std::optional<CpuTimes> short_stretch_end_;  // the counters at the end of a stretch too short to end yet
  std::chrono::steady_clock::time_point short_stretch_ended_;
  int runs_in_stretch_ = 0;               // runs that started in the stretch being sampled
  std::optional<CpuTimes> chain_from_;    // the end of a one-run stretch, for a run that follows at once
  std::chrono::steady_clock::time_point chained_at_;
  int log_level_;
};

/// GRAFT_ADAPT_THREADS_LOG: 1 writes each decision with what it was made
/// from to stderr, 2 each stretch sampled too; 0 or unset nothing (anything
/// else is an invalid_argument Error naming it).
int adapt_threads_log_level();

/// Whether sessions adapt their thread count to the load: `option` when set,
/// else GRAFT_ADAPT_THREADS ("1" or "0"; anything else is an
/// invalid_argument Error naming it), else on (docs/performance.md, "A busy
/// co-tenant").
bool adapt_threads_to_load(std::optional<bool> option);

}  // namespace graft::runtime
