// The check long kernels make: nothing without one installed, the installed
// one on the calling thread and, through parallel_for, on its workers; the
// previous one back when a guard ends.
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <set>
#include <thread>

#include "graft/core/error.h"
#include "graft/core/kernel_interrupt.h"
#include "graft/core/parallel.h"

namespace graft {
namespace {

struct Counter {
  std::atomic<int> calls{0};
  std::mutex mutex;
  std::set<std::thread::id> threads;
  bool stop = false;
};

void count_and_maybe_stop(const void* state) {
  Counter& counter = *static_cast<Counter*>(const_cast<void*>(state));
  ++counter.calls;
  {
    std::lock_guard<std::mutex> lock(counter.mutex);
    counter.threads.insert(std::this_thread::get_id());
  }
  if (counter.stop) fail(ErrorKind::cancelled, "stop");
}

TEST(KernelInterrupt, WithoutACheckNothingHappens) {
  EXPECT_EQ(current_kernel_interrupt().check, nullptr);
  EXPECT_NO_THROW(check_kernel_interrupt());
}

TEST(KernelInterrupt, AGuardInstallsItsCheckAndRestoresThePreviousOne) {
  Counter outer, inner;
  {
    ScopedKernelInterrupt a({&count_and_maybe_stop, &outer});
    check_kernel_interrupt();
    {
      ScopedKernelInterrupt b({&count_and_maybe_stop, &inner});
      check_kernel_interrupt();
      check_kernel_interrupt();
    }
    check_kernel_interrupt();
  }
  check_kernel_interrupt();
  EXPECT_EQ(outer.calls, 2);
  EXPECT_EQ(inner.calls, 2);
  EXPECT_EQ(current_kernel_interrupt().check, nullptr);
}

TEST(KernelInterrupt, ParallelForWorkersCheckTheCallersRunAndItsErrorReachesTheCaller) {
  ScopedNumThreads threads(2);
  Counter counter;
  ScopedKernelInterrupt guard({&count_and_maybe_stop, &counter});
  std::mutex mutex;
  std::set<std::thread::id> ran;  // the threads that ran a chunk
  parallel_for(64, 1, [&](int64_t begin, int64_t end) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      ran.insert(std::this_thread::get_id());
    }
    for (int64_t i = begin; i < end; ++i) check_kernel_interrupt();
  });
  EXPECT_EQ(counter.calls, 64);
  EXPECT_EQ(counter.threads, ran) << "a worker thread did not see the caller's check";
  counter.stop = true;
  try {
    parallel_for(64, 1, [](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) check_kernel_interrupt();
    });
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::cancelled);
  }
}

}  // namespace
}  // namespace graft
