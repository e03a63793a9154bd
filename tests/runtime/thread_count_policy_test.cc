// The decision to run on fewer threads, from synthetic loads seen while runs
// were in progress: when to reduce, when to return, and how /proc/stat's
// coarse ticks average out.
#include "graft/runtime/thread_count_policy.h"

#include <gtest/gtest.h>

namespace graft::runtime {
namespace {

/// A stretch of `seconds` of running in which other processes kept
/// `busy_elsewhere` cores busy and `waiting` of our threads waited for a
/// core, on average.
LoadWhileRunning stretch(double seconds, double busy_elsewhere, double waiting, int cores = 2) {
  LoadWhileRunning load;
  load.wall = seconds;
  load.busy_elsewhere = busy_elsewhere * seconds;
  load.own_waiting = waiting * seconds;
  load.cores = cores;
  return load;
}

TEST(ThreadCountPolicy, ThreadsAreTheCoresNotBusyElsewhereRoundedAtLeastOne) {
  EXPECT_EQ(threads_for_load(2, 2, 0.0), 2);
  EXPECT_EQ(threads_for_load(2, 2, 0.4), 2);  // a light co-tenant takes no core
  EXPECT_EQ(threads_for_load(2, 2, 0.6), 1);
  EXPECT_EQ(threads_for_load(2, 2, 1.0), 1);
  EXPECT_EQ(threads_for_load(2, 2, 3.0), 1);  // never below one
  EXPECT_EQ(threads_for_load(8, 16, 10.2), 6);
  EXPECT_EQ(threads_for_load(4, 16, 0.0), 4);  // never above the session's count
}

TEST(ThreadCountPolicy, FewerThreadsOnlyWhenOursWaitAndOthersKeepACoreBusy) {
  ThreadCountPolicy policy(0.1);
  EXPECT_EQ(policy.threads(2), 2);  // nothing seen yet
  policy.observe(stretch(0.1, 0.0, 0.0));
  EXPECT_EQ(policy.threads(2), 2);  // a quiet machine
  // Our threads wait, but no other process is busy (graft's own background
  // compiles, or lower-priority work that /proc/stat's count leaves out).
  policy.observe(stretch(0.1, 0.1, 0.6));
  EXPECT_EQ(policy.threads(2), 2);
  // Another process busy on a core we do not need: ours never wait.
  policy.observe(stretch(0.1, 1.0, 0.0, 4));
  EXPECT_EQ(policy.threads(2), 2);
  EXPECT_FALSE(policy.reduced());
  // A busy co-tenant on 2 cores: three runnable threads, ours wait. Seen
  // in two decisions in a row.
  policy.observe(stretch(0.1, 0.7, 0.6));
  EXPECT_FALSE(policy.reduced());
  policy.observe(stretch(0.1, 0.7, 0.6));
  EXPECT_TRUE(policy.reduced());
  EXPECT_EQ(policy.threads(2), 1);
  // On one thread ours no longer wait; the co-tenant still has its core.
  policy.observe(stretch(0.1, 1.0, 0.0));
  EXPECT_EQ(policy.threads(2), 1);
  // It left.
  policy.observe(stretch(0.1, 0.1, 0.0));
  EXPECT_FALSE(policy.reduced());
  EXPECT_EQ(policy.threads(2), 2);
}

TEST(ThreadCountPolicy, UsesTheCoresTheOthersLeaveFree) {
  ThreadCountPolicy policy(0.1);
  policy.observe(stretch(0.1, 3.0, 2.0, 8));
  policy.observe(stretch(0.1, 3.0, 2.0, 8));
  EXPECT_EQ(policy.threads(8), 5);
  EXPECT_EQ(policy.threads(4), 4);  // never above the session's count
  policy.observe(stretch(0.1, 9.0, 2.0, 8));
  EXPECT_EQ(policy.threads(8), 1);  // never below one
}

TEST(ThreadCountPolicy, DecidesOnlyOnceTheStretchesAddUpToTheDecisionTime) {
  ThreadCountPolicy policy(0.1);
  EXPECT_TRUE(policy.observe(stretch(0.1, 1.0, 0.7)).has_value());  // the first contended decision
  for (int i = 0; i < 9; ++i) {
    EXPECT_FALSE(policy.observe(stretch(0.01, 1.0, 0.7)).has_value());
    EXPECT_EQ(policy.threads(2), 2) << "after " << i + 1 << " stretches of 10 ms";
  }
  std::optional<ThreadCountDecision> decision = policy.observe(stretch(0.01, 1.0, 0.7));
  ASSERT_TRUE(decision.has_value());
  EXPECT_NEAR(decision->wall, 0.1, 1e-9);
  EXPECT_NEAR(decision->busy_elsewhere, 1.0, 1e-9);
  EXPECT_NEAR(decision->own_waiting, 0.7, 1e-9);
  EXPECT_EQ(decision->cores, 2);
  EXPECT_TRUE(decision->contended);
  EXPECT_TRUE(decision->reduced);
  EXPECT_EQ(policy.threads(2), 1);
  EXPECT_DOUBLE_EQ(policy.decision_seconds(), 0.1);
}

TEST(ThreadCountPolicy, TickErrorsOfShortStretchesCancelOut) {
  // Runs of 5 ms on two threads of a quiet machine: /proc/stat's 10 ms
  // ticks make every other stretch look 10 ms busier elsewhere and the
  // others 10 ms less busy. Summed, nobody else was busy.
  ThreadCountPolicy quiet(0.1);
  for (int i = 0; i < 40; ++i) {
    LoadWhileRunning load = stretch(0.005, 0.0, 0.3);
    load.busy_elsewhere = i % 2 ? 0.010 : -0.010;
    quiet.observe(load);
  }
  EXPECT_FALSE(quiet.reduced()) << "stretches that read below zero must count too";
  // The same with a co-tenant that keeps a core busy: 5 ms more per stretch.
  ThreadCountPolicy loaded(0.1);
  for (int i = 0; i < 80; ++i) {
    LoadWhileRunning load = stretch(0.005, 0.0, 0.6);
    load.busy_elsewhere = (i % 2 ? 0.010 : -0.010) + 0.005;
    loaded.observe(load);
  }
  EXPECT_TRUE(loaded.reduced());
}

TEST(ThreadCountPolicy, OneContendedDecisionAloneKeepsEveryThread) {
  // A quiet machine where one 100 ms window looks contended now and then:
  // another runtime's threads spinning down after its turn, or graft's own
  // background compile (its threads wait) with a tick count that errs
  // upwards.
  ThreadCountPolicy policy(0.1);
  for (int i = 0; i < 10; ++i) {
    std::optional<ThreadCountDecision> contended = policy.observe(stretch(0.1, 0.8, 0.6));
    ASSERT_TRUE(contended.has_value());
    EXPECT_TRUE(contended->contended);
    EXPECT_FALSE(contended->reduced) << "after " << i + 1 << " lone contended windows";
    EXPECT_EQ(policy.threads(2), 2);
    policy.observe(stretch(0.1, 0.1, 0.0));
    EXPECT_EQ(policy.threads(2), 2);
  }
  // Contention with no co-tenant between two contended windows breaks the
  // row too (graft's own compile thread keeps ours waiting).
  policy.observe(stretch(0.1, 0.8, 0.6));
  policy.observe(stretch(0.1, 0.1, 0.6));
  policy.observe(stretch(0.1, 0.8, 0.6));
  EXPECT_FALSE(policy.reduced());
  // A co-tenant with no contention between them as well.
  policy.observe(stretch(0.1, 1.0, 0.0));
  policy.observe(stretch(0.1, 0.8, 0.6));
  EXPECT_FALSE(policy.reduced());
  // Two in a row: a co-tenant that stays.
  policy.observe(stretch(0.1, 0.8, 0.6));
  EXPECT_TRUE(policy.reduced());
  EXPECT_EQ(policy.threads(2), 1);
}

TEST(ThreadCountPolicy, ReturnsAtTheFirstDecisionWithoutACoTenantAndCountsAgainFromZero) {
  ThreadCountPolicy policy(0.1);
  policy.observe(stretch(0.1, 0.7, 0.6));
  policy.observe(stretch(0.1, 0.7, 0.6));
  ASSERT_TRUE(policy.reduced());
  // On one thread ours no longer wait, the co-tenant keeps its core: stay.
  for (int i = 0; i < 5; ++i) {
    policy.observe(stretch(0.1, 1.0, 0.0));
    EXPECT_TRUE(policy.reduced());
  }
  // One window without it is enough to go back.
  std::optional<ThreadCountDecision> left = policy.observe(stretch(0.1, 0.2, 0.0));
  ASSERT_TRUE(left.has_value());
  EXPECT_FALSE(left->reduced);
  EXPECT_EQ(policy.threads(2), 2);
  // The contention seen before the reduction does not count towards the next one.
  policy.observe(stretch(0.1, 0.7, 0.6));
  EXPECT_FALSE(policy.reduced());
  policy.observe(stretch(0.1, 0.7, 0.6));
  EXPECT_TRUE(policy.reduced());
}

TEST(ThreadCountPolicy, EmptyStretchesChangeNothing) {
  ThreadCountPolicy policy(0.1);
  for (int i = 0; i < 10; ++i) policy.observe(stretch(0.0, 5.0, 5.0));
  policy.observe(stretch(-1.0, 5.0, 5.0));
  EXPECT_EQ(policy.threads(2), 2);
  policy.observe(stretch(0.1, 0.0, 0.0));
  EXPECT_FALSE(policy.reduced());
}

}  // namespace
}  // namespace graft::runtime
