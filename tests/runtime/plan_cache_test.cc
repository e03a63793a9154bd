// PlanCache's policy: which input shapes get a specialized plan, which run
// on the generic plan, and which specialized plan makes room.
#include "graft/runtime/plan_cache.h"

#include <gtest/gtest.h>

#include <string>

using graft::runtime::PlanCache;
using Cache = PlanCache<int>;
using Choice = Cache::Choice;

namespace {
/// Looks `key` up and, when told to specialize, inserts a plan holding `value`.
Choice run(Cache& cache, const std::string& key, int value = 0) {
  Cache::Lookup found = cache.lookup(key);
  if (found.choice == Choice::specialize) cache.insert(key, std::make_shared<int>(value));
  return found.choice;
}
}  // namespace

TEST(PlanCache, SpecializesTheFirstShapesThenRunsTheRestGeneric) {
  Cache cache(2);
  EXPECT_EQ(run(cache, "a", 1), Choice::specialize);
  EXPECT_EQ(run(cache, "b", 2), Choice::specialize);
  EXPECT_EQ(run(cache, "c"), Choice::generic);
  EXPECT_EQ(run(cache, "d"), Choice::generic);
  Cache::Lookup a = cache.lookup("a");
  ASSERT_EQ(a.choice, Choice::cached);
  EXPECT_EQ(*a.plan, 1);
  EXPECT_EQ(*cache.lookup("b").plan, 2);
  EXPECT_EQ(cache.size(), 2u);
  // A generation loop: every step a new shape, never a new plan.
  for (int step = 0; step < 500; ++step) EXPECT_EQ(run(cache, "step" + std::to_string(step)), Choice::generic);
  EXPECT_EQ(cache.size(), 2u);
}

TEST(PlanCache, ZeroSpecializedPlansRunsEverythingGeneric) {
  Cache cache(0);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(run(cache, "a"), Choice::generic);
  EXPECT_EQ(cache.size(), 0u);
  // A plan required anyway (an artifact's) is kept, one at a time.
  cache.insert("a", std::make_shared<int>(1));
  cache.insert("b", std::make_shared<int>(2));
  EXPECT_EQ(cache.size(), 1u);
  EXPECT_TRUE(cache.contains("b"));
}

TEST(PlanCache, ARecurringShapeTakesTheSlotOfAStalePlan) {
  Cache cache(1);
  EXPECT_EQ(run(cache, "old"), Choice::specialize);
  // "new" recurs, but "old" was used recently: no churn.
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(run(cache, "new"), Choice::generic);
    EXPECT_EQ(run(cache, "old"), Choice::cached);
  }
  // "old" goes unused for kStaleAfterRuns lookups: "new" takes its place.
  int generic_runs = 0;
  Choice last = Choice::generic;
  for (uint64_t i = 0; i <= Cache::kStaleAfterRuns + 1 && last == Choice::generic; ++i) {
    last = run(cache, "new");
    generic_runs += last == Choice::generic;
  }
  EXPECT_EQ(last, Choice::specialize);
  EXPECT_GE(generic_runs, static_cast<int>(Cache::kStaleAfterRuns) - 1);
  EXPECT_EQ(run(cache, "new"), Choice::cached);
  EXPECT_FALSE(cache.contains("old"));
  EXPECT_EQ(cache.size(), 1u);
  // A shape seen fewer than kPromoteAfterRuns times is not specialized even
  // when the slot is stale.
  for (uint64_t i = 0; i < Cache::kStaleAfterRuns + 2; ++i) run(cache, "filler" + std::to_string(i));
  EXPECT_EQ(run(cache, "once"), Choice::generic);
  EXPECT_EQ(run(cache, "once"), Choice::generic);
  EXPECT_EQ(run(cache, "once"), Choice::specialize);
}

TEST(PlanCache, AShapeThatComesBackRarelyStaysGeneric) {
  // Repeated generation loops: every shape comes back once a loop, 100
  // lookups apart. The specialized plans go stale, but no shape is frequent
  // enough to replace them: no plan is made and dropped again and again.
  Cache cache(2);
  for (int loop = 0; loop < 10; ++loop)
    for (int step = 0; step < 100; ++step) {
      Choice choice = run(cache, "step" + std::to_string(step));
      if (loop == 0 && step < 2)
        EXPECT_EQ(choice, Choice::specialize);
      else if (step < 2)
        EXPECT_EQ(choice, Choice::cached);
      else
        EXPECT_EQ(choice, Choice::generic) << "loop " << loop << ", step " << step;
    }
}

TEST(PlanCache, InsertDropsTheLeastRecentlyUsedPlan) {
  Cache cache(2);
  run(cache, "a", 1);
  run(cache, "b", 2);
  cache.lookup("a");                            // b is now the least recently used
  cache.insert("c", std::make_shared<int>(3));  // forced (an artifact's plan)
  EXPECT_TRUE(cache.contains("a"));
  EXPECT_FALSE(cache.contains("b"));
  EXPECT_TRUE(cache.contains("c"));
  cache.insert("c", std::make_shared<int>(4));  // replacing keeps the others
  EXPECT_TRUE(cache.contains("a"));
  EXPECT_EQ(*cache.lookup("c").plan, 4);
}
