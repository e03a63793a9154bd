// The cores a run can have: the arithmetic from CPU-time samples, when they
// are taken (around runs only), the counters read on this machine, and the
// switch.
#include "graft/runtime/core_availability.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <thread>
#include <vector>

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

TEST(CoreAvailability, BusyElsewhereIsTheMachinesBusyTimeLessOurOwnPerSecond) {
  CpuTimes before = times(10.0, 2.0, 0.0, 100.0, 2), after = times(13.0, 3.5, 0.0, 102.0, 2);
  EXPECT_DOUBLE_EQ(cores_busy_elsewhere(before, after), 0.75);  // (3 - 1.5) / 2
  EXPECT_DOUBLE_EQ(cores_busy_elsewhere(before, before), 0.0);
  CpuTimes only_us = times(12.0, 4.0, 0.0, 102.0, 2);
  EXPECT_DOUBLE_EQ(cores_busy_elsewhere(before, only_us), 0.0);  // never negative
}

TEST(CoreAvailability, TheLoadOfAStretchKeepsTickErrorsOfEitherSign) {
  CpuTimes before = times(10.0, 2.0, 1.0, 100.0, 2), after = times(10.01, 2.015, 1.004, 100.01, 2);
  LoadWhileRunning load = load_between(before, after);
  EXPECT_NEAR(load.wall, 0.01, 1e-9);
  EXPECT_NEAR(load.busy_elsewhere, -0.005, 1e-9);  // summed with others, the errors cancel
  EXPECT_NEAR(load.own_waiting, 0.004, 1e-9);
  EXPECT_EQ(load.cores, 2);
}

/// Runs that a test makes one after the other count as back to back even
/// when the test's thread loses its core between them (a loaded machine).
constexpr std::chrono::seconds kTestBackToBackGap{1};

/// A machine whose counters the test advances: while a run is in progress
/// and while graft is idle, other processes keep some cores busy and our
/// threads wait for some.
struct FakeMachine {
  double clock = 0, busy = 0, own = 0, waited = 0;
  int reads = 0;
  void advance(double seconds, double busy_elsewhere, double own_threads, double waiting) {
    clock += seconds;
    busy += (busy_elsewhere + own_threads) * seconds;
    own += own_threads * seconds;
    waited += waiting * seconds;
  }
  CoreAvailability::Reader reader() {
    return [this]() -> std::optional<CpuTimes> {
      ++reads;
      return times(busy, own, waited, clock, 2);
    };
  }
};

TEST(CoreAvailability, FewerThreadsWhileACoTenantTakesACoreAndAllAgainWhenItLeaves) {
  FakeMachine machine;
  CoreAvailability availability(std::chrono::milliseconds(0), 0.1, machine.reader(), kTestBackToBackGap);
  auto run = [&](double seconds, double busy_elsewhere, double waiting) {
    CoreAvailability::Run r(availability, 2);
    machine.advance(seconds, busy_elsewhere, r.threads(), waiting * r.threads() / 2);
    return r.threads();
  };
  EXPECT_EQ(run(0.05, 0.0, 0.0), 2);
  EXPECT_EQ(run(0.05, 0.0, 0.0), 2);  // quiet
  EXPECT_EQ(run(0.05, 0.7, 0.7), 2);  // yes > /dev/null: ours wait; half a decision
  EXPECT_EQ(run(0.05, 0.7, 0.7), 2);  // one contended decision
  EXPECT_FALSE(availability.reduced());
  EXPECT_EQ(run(0.05, 0.7, 0.7), 2);
  EXPECT_EQ(run(0.05, 0.7, 0.7), 2);  // the second in a row
  EXPECT_TRUE(availability.reduced());
  EXPECT_EQ(run(0.05, 1.0, 0.0), 1);
  EXPECT_EQ(run(0.05, 1.0, 0.0), 1);  // on one thread ours do not wait: still one
  EXPECT_TRUE(availability.reduced());
  EXPECT_EQ(run(0.05, 0.0, 0.0), 1);
  EXPECT_EQ(run(0.05, 0.0, 0.0), 1);  // it left: decided at the end of this run
  EXPECT_FALSE(availability.reduced());
  EXPECT_EQ(run(0.05, 0.0, 0.0), 2);
  EXPECT_EQ(machine.reads, 12);  // runs of 50 ms back to back: the first's start, and each run's end
}

TEST(CoreAvailability, AProcessBusyOnlyWhileGraftIsIdleChangesNothing) {
  // make compare: the runtimes take turns, ONNX Runtime's 2 threads busy
  // (and graft's idle threads waiting behind them) between graft's runs.
  FakeMachine machine;
  CoreAvailability availability(std::chrono::milliseconds(0), 0.1, machine.reader());
  for (int turn = 0; turn < 20; ++turn) {
    for (int i = 0; i < 5; ++i) {
      CoreAvailability::Run r(availability, 2);
      EXPECT_EQ(r.threads(), 2) << "turn " << turn;
      machine.advance(0.02, 0.05, 2, 0.05);
    }
    machine.advance(0.1, 2.0, 0.0, 0.5);
    std::this_thread::sleep_for(2 * kBackToBackGap);  // the other runtime's turn takes time
  }
  EXPECT_FALSE(availability.reduced());
}

TEST(CoreAvailability, BackToBackRunsShorterThanATickMakeOneStretch) {
  // /proc/stat's 10 ms units: a stretch per 3 ms run would carry one
  // rounding error per run; four runs back to back carry one.
  testing::ScopedEnv env("GRAFT_ADAPT_THREADS_LOG", "2");
  FakeMachine machine;
  CoreAvailability availability(std::chrono::milliseconds(0), 0.1, machine.reader(), kTestBackToBackGap);
  ::testing::internal::CaptureStderr();
  for (int i = 0; i < 4; ++i) {
    CoreAvailability::Run r(availability, 2);
    machine.advance(0.003, 0.0, 2, 0.0);
  }
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(log.find("stretch 12.0 ms, others busy 0.0 ms"), std::string::npos) << log;
  EXPECT_EQ(log.find("stretch 3.0 ms"), std::string::npos) << log;
  EXPECT_EQ(machine.reads, 5);  // the start, and the end of each run while the stretch was short
}

TEST(CoreAvailability, AShortStretchEndsWhereItsLastRunEndedWhenTheNextComesLater) {
  // make compare with a model of 3 ms runs: ONNX Runtime's turn between
  // graft's keeps both cores busy; it must not count as graft's running.
  testing::ScopedEnv env("GRAFT_ADAPT_THREADS_LOG", "2");
  FakeMachine machine;
  CoreAvailability availability(std::chrono::milliseconds(0), 0.1, machine.reader());
  ::testing::internal::CaptureStderr();
  for (int turn = 0; turn < 40; ++turn) {
    {
      CoreAvailability::Run r(availability, 2);
      EXPECT_EQ(r.threads(), 2) << "turn " << turn;
      machine.advance(0.003, 0.0, 2, 0.4);  // our background compile keeps our threads waiting
    }
    machine.advance(0.3, 2.0, 0.0, 0.5);
    std::this_thread::sleep_for(2 * kBackToBackGap);
  }
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(log.find("stretch 3.0 ms, others busy 0.0 ms"), std::string::npos) << log;
  EXPECT_EQ(log.find("contended"), std::string::npos) << log;
  EXPECT_FALSE(availability.reduced());
}

TEST(CoreAvailability, BackToBackRunsOfTenMillisecondsOrMoreAreEachSampledAtOneReadPerRun) {
  // The spacing (an hour here) would sample only the first run; each run's
  // end sample starts the next run's stretch instead, so a co-tenant is
  // seen after 50 ms of running twice, not after 50 ms of sampled runs.
  FakeMachine machine;
  CoreAvailability availability(std::chrono::hours(1), 0.05, machine.reader(), kTestBackToBackGap);
  std::vector<int> threads;
  for (int i = 0; i < 8; ++i) {
    CoreAvailability::Run r(availability, 2);
    threads.push_back(r.threads());
    machine.advance(0.025, 0.7, r.threads(), 0.6);
  }
  EXPECT_EQ(machine.reads, 9);  // the first run's start, and every run's end
  // Decisions at the ends of runs 2 and 4: the second in a row reduces.
  EXPECT_EQ(threads, (std::vector<int>{2, 2, 2, 2, 1, 1, 1, 1}));
}

TEST(CoreAvailability, ShortRunsBackToBackKeepTheSpacing) {
  // Runs of 3 ms: a stretch of four runs (the first at least 10 ms long),
  // then none until the spacing (an hour) has passed: the reads stay
  // bounded however short the runs.
  FakeMachine machine;
  CoreAvailability availability(std::chrono::hours(1), 0.05, machine.reader(), kTestBackToBackGap);
  for (int i = 0; i < 40; ++i) {
    CoreAvailability::Run r(availability, 2);
    machine.advance(0.003, 0.0, 2, 0.0);
  }
  EXPECT_EQ(machine.reads, 5);
}

TEST(CoreAvailability, ARunAfterAPauseDoesNotContinueFromTheLastRunsSample) {
  // make compare: ONNX Runtime's turn between two of graft's keeps both
  // cores busy; a run after it opens its own stretch.
  FakeMachine machine;
  CoreAvailability availability(std::chrono::milliseconds(0), 0.05, machine.reader());
  for (int turn = 0; turn < 20; ++turn) {
    {
      CoreAvailability::Run r(availability, 2);
      EXPECT_EQ(r.threads(), 2) << "turn " << turn;
      machine.advance(0.02, 0.0, 2, 0.5);
    }
    machine.advance(0.3, 2.0, 0.0, 0.5);
    std::this_thread::sleep_for(2 * kBackToBackGap);
  }
  EXPECT_FALSE(availability.reduced());
  EXPECT_EQ(machine.reads, 40);
}

TEST(CoreAvailability, RunsWithPausesBetweenThemAreSampledAtMostOncePerSpacing) {
  FakeMachine machine;
  CoreAvailability availability(std::chrono::hours(1), 0.1, machine.reader());
  for (int i = 0; i < 20; ++i) {
    {
      CoreAvailability::Run r(availability, 2);
      EXPECT_EQ(r.threads(), 2);
      machine.advance(0.02, 1.0, 2, 1.0);
    }
    std::this_thread::sleep_for(2 * kBackToBackGap);
  }
  EXPECT_EQ(machine.reads, 2);  // one stretch: the first run
}

TEST(CoreAvailability, RunsThatOverlapWithoutAPauseEndTheirStretchOnceItIsLongEnough) {
  FakeMachine machine;
  CoreAvailability availability(std::chrono::milliseconds(0), 0.0, machine.reader());
  // Two threads running one after the other with no moment without a run:
  // the stretch is ended at a run's end although another is in progress.
  auto first = std::make_unique<CoreAvailability::Run>(availability, 2);
  for (int i = 0; i < 4; ++i) {
    auto next = std::make_unique<CoreAvailability::Run>(availability, 2);
    machine.advance(0.05, 0.7, 2, 0.7);  // both in progress
    first = std::move(next);             // the earlier run ends while the next is in progress
  }
  EXPECT_TRUE(availability.reduced());
  EXPECT_EQ(first->threads(), 1);
}

TEST(CoreAvailability, UnreadableCountersKeepTheSessionsCount) {
  CoreAvailability availability(std::chrono::milliseconds(0), 0.1,
                                []() -> std::optional<CpuTimes> { return std::nullopt; });
  for (int i = 0; i < 3; ++i) {
    CoreAvailability::Run r(availability, 4);
    EXPECT_EQ(r.threads(), 4);
  }
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
    EXPECT_TRUE(adapt_threads_to_load(std::nullopt));  // on unless turned off
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

TEST(CoreAvailability, TheDecisionLogReadsGraftAdaptThreadsLog) {
  {
    testing::ScopedEnv env("GRAFT_ADAPT_THREADS_LOG", nullptr);
    EXPECT_EQ(adapt_threads_log_level(), 0);
  }
  for (const char* level : {"0", "1", "2"}) {
    testing::ScopedEnv env("GRAFT_ADAPT_THREADS_LOG", level);
    EXPECT_EQ(adapt_threads_log_level(), level[0] - '0');
  }
  testing::ScopedEnv env("GRAFT_ADAPT_THREADS_LOG", "verbose");
  try {
    adapt_threads_log_level();
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("GRAFT_ADAPT_THREADS_LOG='verbose'"), std::string::npos) << e.what();
  }
}

TEST(CoreAvailability, TheDecisionLogNamesEachDecisionWithItsInputs) {
  testing::ScopedEnv env("GRAFT_ADAPT_THREADS_LOG", "1");
  FakeMachine machine;
  CoreAvailability availability(std::chrono::milliseconds(0), 0.1, machine.reader());
  ::testing::internal::CaptureStderr();
  for (int i = 0; i < 2; ++i) {
    CoreAvailability::Run r(availability, 2);
    machine.advance(0.1, 0.75, 2, 0.5);
  }
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(log.find("others kept 0.75 of 2 cores busy, own threads waited 0.50 threads: contended, every thread"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("0.50 threads: fewer threads"), std::string::npos) << log;
}

}  // namespace
}  // namespace graft::runtime
