#include "graft/runtime/core_availability.h"

#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>
#include <time.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "graft/core/error.h"
#include "graft/core/printable.h"

namespace graft::runtime {

namespace {

double seconds_of(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

}  // namespace

int adapt_threads_log_level() {
  const char* value = std::getenv("GRAFT_ADAPT_THREADS_LOG");
  if (!value || !*value) return 0;
  const std::string text(value);
  if (text == "0" || text == "1" || text == "2") return text[0] - '0';
  fail(ErrorKind::invalid_argument, "GRAFT_ADAPT_THREADS_LOG='", printable_excerpt(text),
       "' is not valid (expected 0, 1 or 2)");
}

std::optional<CpuTimes> read_cpu_times() {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  const bool have_mask = sched_getaffinity(0, sizeof(allowed), &allowed) == 0;
  std::ifstream stat("/proc/stat");
  if (!stat) return std::nullopt;
  static const double ticks_per_second = [] {
    long ticks = sysconf(_SC_CLK_TCK);
    return ticks > 0 ? static_cast<double>(ticks) : 100.0;
  }();
  errno = 0;
  const int priority = getpriority(PRIO_PROCESS, 0);
  const bool niced = errno == 0 && priority > 0;
  CpuTimes times;
  times.cores = 0;
  std::string line;
  while (std::getline(stat, line)) {
    // "cpuN user nice system idle iowait irq softirq steal guest guest_nice"
    if (line.compare(0, 3, "cpu") != 0) {
      if (times.cores > 0) break;  // the cpu lines come first; the rest (the long "intr" line) is not needed
      continue;
    }
    if (line.size() < 4 || !std::isdigit(static_cast<unsigned char>(line[3]))) continue;
    std::istringstream fields(line.substr(3));
    int cpu = -1;
    unsigned long long user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
    fields >> cpu >> user >> nice >> system >> idle >> iowait >> irq >> softirq >> steal;
    if (!fields && !fields.eof()) continue;
    if (cpu < 0 || (have_mask && (cpu >= CPU_SETSIZE || !CPU_ISSET(cpu, &allowed)))) continue;
    // Processes at a lower priority (nice > 0: background builds, batch
    // jobs) yield their cores to ours, so their time does not count, unless
    // this process runs at such a priority too.
    const unsigned long long lower_priority = niced ? nice : 0;
    times.cores_busy += static_cast<double>(user + lower_priority + system + irq + softirq + steal) / ticks_per_second;
    ++times.cores;
  }
  if (times.cores == 0) return std::nullopt;
  // "exec_runtime run_delay timeslices" (nanoseconds) of each thread.
  std::error_code error;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task", error)) {
    std::ifstream schedstat(task.path() / "schedstat");
    unsigned long long running = 0, waiting = 0;
    if (schedstat >> running >> waiting) times.own_waiting += static_cast<double>(waiting) * 1e-9;
  }
  times.own = seconds_of(CLOCK_PROCESS_CPUTIME_ID);
  times.wall = seconds_of(CLOCK_MONOTONIC);
  return times;
}

double cores_busy_elsewhere(const CpuTimes& before, const CpuTimes& after) {
  const double wall = after.wall - before.wall;
  if (!(wall > 0)) return 0;
  // /proc/stat counts in clock ticks (10 ms): over short intervals the
  // difference is coarse, which the rounding in threads_for_load absorbs.
  const double others = (after.cores_busy - before.cores_busy) - (after.own - before.own);
  return std::max(0.0, others / wall);
}

LoadWhileRunning load_between(const CpuTimes& before, const CpuTimes& after) {
  LoadWhileRunning load;
  load.wall = std::max(0.0, after.wall - before.wall);
  // Not clamped at zero: over a short stretch the 10 ms ticks of /proc/stat
  // err either way, and only the sum over many stretches is meaningful.
  load.busy_elsewhere = (after.cores_busy - before.cores_busy) - (after.own - before.own);
  load.own_waiting = std::max(0.0, after.own_waiting - before.own_waiting);
  load.cores = after.cores;
  return load;
}

CoreAvailability::CoreAvailability(std::chrono::milliseconds spacing, double decision_seconds, Reader reader,
                                   std::chrono::microseconds back_to_back_gap)
    : spacing_(spacing),
      reader_(std::move(reader)),
      back_to_back_gap_(back_to_back_gap),
      policy_(decision_seconds),
      log_level_(adapt_threads_log_level()) {}

CoreAvailability::Run::Run(CoreAvailability& availability, int threads)
    : availability_(availability), threads_(availability.run_started(threads)) {}

CoreAvailability::Run::~Run() { availability_.run_finished(); }

int CoreAvailability::run_started(int threads) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++runs_in_progress_;
  const auto now = std::chrono::steady_clock::now();
  if (short_stretch_end_) {
    // A stretch too short to end at the last run's end: this run continues
    // it when it follows at once, else it ends where that run ended.
    if (now - short_stretch_ended_ > back_to_back_gap_) end_stretch(*short_stretch_end_);
    short_stretch_end_.reset();
  }
  if (!stretch_start_ && chain_from_ && now - chained_at_ <= back_to_back_gap_) {
    // The last run was a stretch of its own and this one follows at once:
    // the reading that ended it starts this one, at no cost.
    stretch_opened_ = now;
    stretch_start_ = chain_from_;
  } else if (!stretch_start_ && (!stretch_opened_ || now - *stretch_opened_ >= spacing_)) {
    stretch_opened_ = now;
    stretch_start_ = reader_();
  }
  chain_from_.reset();
  if (stretch_start_) ++runs_in_stretch_;
  return policy_.threads(threads);
}

void CoreAvailability::run_finished() {
  std::lock_guard<std::mutex> lock(mutex_);
  --runs_in_progress_;
  if (!stretch_start_) return;
  if (runs_in_progress_ > 0) {
    // Runs that overlap without a pause: end the stretch once it is long
    // enough for a decision.
    const std::chrono::duration<double> open = std::chrono::steady_clock::now() - *stretch_opened_;
    if (open.count() < policy_.decision_seconds()) return;
  }
  std::optional<CpuTimes> end = reader_();
  if (!end) {
    stretch_start_.reset();
    runs_in_stretch_ = 0;
    return;
  }
  if (end->wall - stretch_start_->wall < kShortestStretchSeconds) {
    short_stretch_end_ = end;
    short_stretch_ended_ = std::chrono::steady_clock::now();
    return;
  }
  const bool one_run = runs_in_stretch_ == 1;
  end_stretch(*end);
  if (one_run && runs_in_progress_ == 0) {
    // Runs of 10 ms or more: one read per run samples every run back to
    // back (fewer runs would pass between two decisions otherwise; shorter
    // runs keep the spacing, which bounds the reads).
    chain_from_ = end;
    chained_at_ = std::chrono::steady_clock::now();
  }
}

void CoreAvailability::end_stretch(const CpuTimes& end) {
  if (end.wall > stretch_start_->wall) {
    const LoadWhileRunning stretch = load_between(*stretch_start_, end);
    if (log_level_ >= 2)
      std::fprintf(stderr, "graft adapt_threads: %.3f s: stretch %.1f ms, others busy %.1f ms, own waiting %.1f ms\n",
                   end.wall, stretch.wall * 1e3, stretch.busy_elsewhere * 1e3, stretch.own_waiting * 1e3);
    if (std::optional<ThreadCountDecision> decision = policy_.observe(stretch); decision && log_level_ >= 1)
      std::fprintf(stderr,
                   "graft adapt_threads: %.3f s: decided over %.0f ms of running: others kept %.2f of %d cores busy, "
                   "own threads waited %.2f threads: %s\n",
                   end.wall, decision->wall * 1e3, decision->busy_elsewhere, decision->cores, decision->own_waiting,
                   decision->reduced ? "fewer threads" : decision->contended ? "contended, every thread" : "every thread");
  }
  stretch_start_.reset();
  runs_in_stretch_ = 0;
}

bool CoreAvailability::reduced() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return policy_.reduced();
}

CoreAvailability& CoreAvailability::global() {
  static CoreAvailability instance;
  return instance;
}

bool adapt_threads_to_load(std::optional<bool> option) {
  if (option) return *option;
  const char* value = std::getenv("GRAFT_ADAPT_THREADS");
  if (!value || !*value) return true;
  const std::string text(value);
  if (text == "1") return true;
  if (text == "0") return false;
  fail(ErrorKind::invalid_argument, "GRAFT_ADAPT_THREADS='", printable_excerpt(text),
       "' is not valid (expected 0 or 1)");
}

}  // namespace graft::runtime
