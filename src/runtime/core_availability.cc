#include "graft/runtime/core_availability.h"

#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>
#include <time.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
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
    if (line.size() < 4 || line.compare(0, 3, "cpu") != 0 || !std::isdigit(static_cast<unsigned char>(line[3]))) continue;
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

int threads_for_load(int threads, int cores, double busy_elsewhere) {
  const double free_cores = static_cast<double>(cores) - busy_elsewhere;
  const int usable = static_cast<int>(std::floor(free_cores + 0.5));
  return std::clamp(usable, 1, std::max(threads, 1));
}

CoreAvailability::CoreAvailability(std::chrono::milliseconds interval, Reader reader)
    : interval_(interval), reader_(std::move(reader)) {}

int CoreAvailability::threads_for_run(int threads) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto now = std::chrono::steady_clock::now();
  if (!last_read_ || now - *last_read_ >= interval_) {
    last_read_ = now;
    if (std::optional<CpuTimes> sample = reader_()) {
      if (last_sample_ && sample->wall > last_sample_->wall) {
        const double wall = sample->wall - last_sample_->wall;
        busy_elsewhere_ = cores_busy_elsewhere(*last_sample_, *sample);
        contended_ = (sample->own_waiting - last_sample_->own_waiting) / wall >= 0.25;
        cores_ = sample->cores;
        // Fewer threads only once ours wait for cores; every core again once
        // the others keep less than half a core busy.
        if (!reduced_ && contended_) reduced_ = true;
        else if (reduced_ && busy_elsewhere_ < 0.5) reduced_ = false;
      }
      last_sample_ = sample;
    }
  }
  if (cores_ == 0 || !reduced_) return threads;
  return threads_for_load(threads, cores_, busy_elsewhere_);
}

CoreAvailability& CoreAvailability::global() {
  static CoreAvailability instance;
  return instance;
}

bool adapt_threads_to_load(std::optional<bool> option) {
  if (option) return *option;
  const char* value = std::getenv("GRAFT_ADAPT_THREADS");
  if (!value || !*value) return false;
  const std::string text(value);
  if (text == "1") return true;
  if (text == "0") return false;
  fail(ErrorKind::invalid_argument, "GRAFT_ADAPT_THREADS='", printable_excerpt(text),
       "' is not valid (expected 0 or 1)");
}

}  // namespace graft::runtime
