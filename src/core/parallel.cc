#include "graft/core/parallel.h"

#include <omp.h>

#include <algorithm>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <string>
#include <thread>

#include "graft/core/error.h"
#include "graft/core/kernel_interrupt.h"
#include "graft/core/printable.h"

namespace graft {

namespace {
thread_local int tls_num_threads = 0;
}  // namespace

int default_num_threads() {
  const char* env = std::getenv("GRAFT_NUM_THREADS");
  if (env && *env) {
    char* end = nullptr;
    long v = std::strtol(env, &end, 10);
    if (*end != '\0' || v < 1 || v > 1024)
      fail(ErrorKind::invalid_argument, "GRAFT_NUM_THREADS='", printable_excerpt(env), "' is not a thread count (expected 1..1024)");
    return static_cast<int>(v);
  }
  unsigned hw = std::thread::hardware_concurrency();
  return hw == 0 ? 1 : static_cast<int>(std::min(hw, 1024u));
}

int current_num_threads() {
  if (tls_num_threads <= 0) tls_num_threads = default_num_threads();
  return tls_num_threads;
}

ScopedNumThreads::ScopedNumThreads(int n) : previous_(tls_num_threads) { tls_num_threads = n; }
ScopedNumThreads::~ScopedNumThreads() { tls_num_threads = previous_; }

void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  grain = std::max<int64_t>(grain, 1);
  int threads = current_num_threads();
  int64_t chunks = std::min<int64_t>((n + grain - 1) / grain, threads);
  if (chunks <= 1 || omp_in_parallel()) {
    fn(0, n);
    return;
  }
  std::exception_ptr error;
  std::mutex error_mutex;
  const KernelInterrupt interrupt = current_kernel_interrupt();  // the workers check the caller's run
#pragma omp parallel num_threads(static_cast<int>(chunks))
  {
    int64_t t = omp_get_thread_num();
    int64_t nt = omp_get_num_threads();
    int64_t begin = n * t / nt, end = n * (t + 1) / nt;
    if (begin < end) {
      try {
        ScopedKernelInterrupt worker_interrupt(interrupt);
        fn(begin, end);
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mutex);
        if (!error) error = std::current_exception();
      }
    }
  }
  if (error) std::rethrow_exception(error);
}

}  // namespace graft
