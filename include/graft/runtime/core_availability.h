/// \file
/// How many cores a run can have. graft's intra-op threads meet at a barrier
/// after every parallel region (OpenMP, the runtime oneDNN uses too, splits
/// work evenly ahead of time), so one thread whose core a busy co-tenant
/// process takes makes every region wait for it: on 2 cores with one other
/// busy process, 2 threads run resnet50 about twice as slowly as 1 thread
/// does (docs/performance.md, "A busy co-tenant"). Comparing the CPU time the
/// machine's cores spent busy with this process's own CPU time over the same
/// interval tells how many cores other processes keep busy; a run then uses
/// the rest, at least one.
#pragma once

#include <chrono>
#include <functional>
#include <mutex>
#include <optional>

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
  /// (/proc/self/task/*/schedstat): contention while they run. Sleeping or
  /// spinning threads do not add to it.
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

/// The threads a run should use: `threads` at most, the cores not busy
/// elsewhere rounded to the nearest whole core (a co-tenant using under half
/// a core takes none), at least 1.
int threads_for_load(int threads, int cores, double busy_elsewhere);

/// Samples the counters at most once per interval and keeps the last
/// decision in between; safe to call from many threads. A run keeps the full
/// thread count until its threads wait for cores (on average a quarter of a
/// thread over an interval): other processes busy only while graft is idle
/// (a benchmark taking turns with it) cost nothing. Then it uses the cores
/// the others leave free, and returns to the full count once they keep less
/// than half a core busy.
class CoreAvailability {
 public:
  using Reader = std::function<std::optional<CpuTimes>()>;
  explicit CoreAvailability(std::chrono::milliseconds interval = std::chrono::milliseconds(100),
                            Reader reader = read_cpu_times);

  /// The threads a run starting now should use out of `threads`: `threads`
  /// until two samples an interval apart exist, or when none can be read.
  /// Reads a new sample when the last read is an interval old.
  int threads_for_run(int threads);

  /// The process-wide instance sessions share.
  static CoreAvailability& global();

 private:
  std::chrono::milliseconds interval_;
  Reader reader_;
  std::mutex mutex_;
  std::optional<std::chrono::steady_clock::time_point> last_read_;
  std::optional<CpuTimes> last_sample_;
  double busy_elsewhere_ = 0;
  int cores_ = 0;            ///< 0: no estimate yet
  bool contended_ = false;   ///< our threads waited for cores over the last interval
  bool reduced_ = false;     ///< runs use the cores the others leave free
};

/// Whether sessions adapt their thread count to the load: `option` when set,
/// else GRAFT_ADAPT_THREADS ("1" or "0"; anything else is an
/// invalid_argument Error naming it), else off (docs/performance.md, "A busy
/// co-tenant", says why not yet on).
bool adapt_threads_to_load(std::optional<bool> option);

}  // namespace graft::runtime
