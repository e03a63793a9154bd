/// \file
/// Intra-op parallelism on OpenMP (the runtime oneDNN uses too), with the
/// thread count of the calling run.
#pragma once

#include <cstdint>
#include <functional>

namespace graft {

/// Thread count used by parallel_for on this thread (default: the value of
/// GRAFT_NUM_THREADS, else the number of cores).
int current_num_threads();
/// Sets the count for this thread until the guard is destroyed.
class ScopedNumThreads {
 public:
  explicit ScopedNumThreads(int n);
  ~ScopedNumThreads();
  ScopedNumThreads(const ScopedNumThreads&) = delete;
  ScopedNumThreads& operator=(const ScopedNumThreads&) = delete;

 private:
  int previous_;
};

/// The default thread count: GRAFT_NUM_THREADS if set (validated: an integer in
/// 1..1024, else throws invalid_argument naming the variable), else the number
/// of cores.
int default_num_threads();

/// Calls fn(begin, end) over [0, n) split into chunks of at least `grain`
/// items, on up to current_num_threads() threads. Runs inline when the work is
/// small or already inside a parallel region. Exceptions thrown by fn are
/// rethrown on the calling thread.
void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t begin, int64_t end)>& fn);

}  // namespace graft
