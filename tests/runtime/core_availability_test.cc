// The cores a run can have: the arithmetic from CPU-time samples, the
// sampling interval, the counters read on this machine, and the switch.
#include "graft/runtime/core_availability.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <thread>

#include "graft/core/error.h"
#include "support/scoped_env.h"

namespace graft::runtime {
namespace {

CpuTimes times(double cores_busy, double own, double own_waiting, double wall, int cores) {
  CpuTimes t;
  t.cores_busy = cores_busy;
  t.own = own;
  t.own_waiting = own_waiting;
  t.wall = wall;
  t.cores = cores;
  return t;
}

TEST(CoreAvailability, ThreadsAreTheCoresNotBusyElsewhereRoundedAtLeastOne) {
  EXPECT_EQ(threads_for_load(2, 2, 0.0), 2);
  EXPECT_EQ(threads_for_load(2, 2, 0.4), 2);  // a light co-tenant takes no core
  EXPECT_EQ(threads_for_load(2, 2, 0.6), 1);
  EXPECT_EQ(threads_for_load(2, 2, 1.0), 1);
  EXPECT_EQ(threads_for_load(2, 2, 3.0), 1);  // never below one
  EXPECT_EQ(threads_for_load(8, 16, 10.2), 6);
  EXPECT_EQ(threads_for_load(4, 16, 0.0), 4);  // never above the session's count
}

TEST(CoreAvailability, BusyElsewhereIsTheMachinesBusyTimeLessOurOwnPerSecond) {
  CpuTimes before = times(10.0, 2.0, 0.0, 100.0, 2), after = times(13.0, 3.5, 0.0, 102.0, 2);
  EXPECT_DOUBLE_EQ(cores_busy_elsewhere(before, after), 0.75);  // (3 - 1.5) / 2
  EXPECT_DOUBLE_EQ(cores_busy_elsewhere(before, before), 0.0);
  CpuTimes only_us = times(12.0, 4.0, 0.0, 102.0, 2);
  EXPECT_DOUBLE_EQ(cores_busy_elsewhere(before, only_us), 0.0);  // never negative
}

TEST(CoreAvailability, FewerThreadsOnlyOnceOursWaitForCoresAndAllAgainWhenTheOthersLeave) {
  // Per one-second step of the clock: cores other processes keep busy, and
  // how many of our threads wait for a core on average.
  double busy_elsewhere = 1.0, waiting = 0.0;
  double clock = 0, busy = 0, waited = 0;
  int reads = 0;
  CoreAvailability availability(std::chrono::milliseconds(0), [&]() -> std::optional<CpuTimes> {
    ++reads;
    clock += 1.0;
    busy += busy_elsewhere;
    waited += waiting;
    return times(busy, 0.0, waited, clock, 2);
  });
  EXPECT_EQ(availability.threads_for_run(2), 2);  // one sample: no estimate
  // Busy while we are idle (a benchmark taking turns): our threads never
  // wait, so runs keep both.
  EXPECT_EQ(availability.threads_for_run(2), 2);
  EXPECT_EQ(availability.threads_for_run(2), 2);
  // A co-tenant while we run: our threads wait, so one core is ours.
  waiting = 0.6;
  EXPECT_EQ(availability.threads_for_run(2), 1);
  waiting = 0.0;  // on one thread, ours no longer wait; the co-tenant is still there
  EXPECT_EQ(availability.threads_for_run(2), 1);
  busy_elsewhere = 0.2;  // it left
  EXPECT_EQ(availability.threads_for_run(2), 2);
  EXPECT_EQ(reads, 6);
}

TEST(CoreAvailability, SamplesAtMostOncePerInterval) {
  int reads = 0;
  CoreAvailability availability(std::chrono::hours(1), [&]() -> std::optional<CpuTimes> {
    ++reads;
    return times(0.0, 0.0, 0.0, static_cast<double>(reads), 2);
  });
  for (int i = 0; i < 100; ++i) EXPECT_EQ(availability.threads_for_run(2), 2);
  EXPECT_EQ(reads, 1);
}

TEST(CoreAvailability, UnreadableCountersKeepTheSessionsCount) {
  CoreAvailability availability(std::chrono::milliseconds(0), []() -> std::optional<CpuTimes> { return std::nullopt; });
  for (int i = 0; i < 3; ++i) EXPECT_EQ(availability.threads_for_run(4), 4);
}

TEST(CoreAvailability, ThisMachinesCountersCountOurOwnWork) {
  std::optional<CpuTimes> before = read_cpu_times();
  ASSERT_TRUE(before.has_value()) << "/proc/stat could not be read";
  EXPECT_GE(before->cores, 1);
  // Spin until this process has used 0.2 s of CPU (however loaded the machine).
  std::optional<CpuTimes> after;
  const auto start = std::chrono::steady_clock::now();
  volatile double sink = 0;
  do {
    for (int i = 0; i < 100000; ++i) sink = sink + 1.0;
    after = read_cpu_times();
    ASSERT_TRUE(after.has_value());
  } while (after->own - before->own < 0.2 && std::chrono::steady_clock::now() - start < std::chrono::seconds(60));
  EXPECT_GE(after->own - before->own, 0.2);
  EXPECT_GT(after->wall - before->wall, 0.19);
  // The cores' busy time includes ours (in 10 ms ticks).
  EXPECT_GE(after->cores_busy - before->cores_busy, 0.15);
  EXPECT_GE(after->own_waiting, before->own_waiting);
}

TEST(CoreAvailability, TheSwitchReadsGraftAdaptThreads) {
  EXPECT_TRUE(adapt_threads_to_load(true));
  EXPECT_FALSE(adapt_threads_to_load(false));
  {
    testing::ScopedEnv env("GRAFT_ADAPT_THREADS", "0");
    EXPECT_FALSE(adapt_threads_to_load(std::nullopt));
    EXPECT_TRUE(adapt_threads_to_load(true));  // the option wins
  }
  {
    testing::ScopedEnv env("GRAFT_ADAPT_THREADS", "1");
    EXPECT_TRUE(adapt_threads_to_load(std::nullopt));
  }
  {
    testing::ScopedEnv env("GRAFT_ADAPT_THREADS", nullptr);
    EXPECT_FALSE(adapt_threads_to_load(std::nullopt));  // off unless asked for
  }
  {
    testing::ScopedEnv env("GRAFT_ADAPT_THREADS", "sometimes");
    try {
      adapt_threads_to_load(std::nullopt);
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::invalid_argument);
      EXPECT_NE(std::string(e.what()).find("GRAFT_ADAPT_THREADS='sometimes'"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace graft::runtime
