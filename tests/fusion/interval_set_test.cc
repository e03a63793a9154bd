#include "graft/fusion/interval_set.h"

#include <gtest/gtest.h>

#include <random>
#include <set>

using graft::fusion::IntervalSet;

TEST(IntervalSet, InsertMergesNeighbours) {
  IntervalSet s;
  for (uint32_t id : {5u, 7u, 6u, 1u, 2u, 9u}) s.insert(id);
  EXPECT_EQ(s.ids(), (std::vector<uint32_t>{1, 2, 5, 6, 7, 9}));
  EXPECT_EQ(s.num_intervals(), 3u);
  EXPECT_TRUE(s.contains(6));
  EXPECT_FALSE(s.contains(8));
  EXPECT_FALSE(s.contains(0));
  s.insert(UINT32_MAX);
  EXPECT_TRUE(s.contains(UINT32_MAX));
  s.insert(UINT32_MAX);
  EXPECT_EQ(s.num_intervals(), 4u);
}

TEST(IntervalSet, UnionIntersectAndCoarsenAgreeWithStdSet) {
  std::mt19937 rng(7);
  for (int round = 0; round < 500; ++round) {
    IntervalSet a, b;
    std::set<uint32_t> sa, sb;
    for (int i = 0; i < 20; ++i) {
      uint32_t x = rng() % 64, y = rng() % 64;
      a.insert(x);
      sa.insert(x);
      b.insert(y);
      sb.insert(y);
    }
    IntervalSet u;
    u.assign_union(a, b);
    std::set<uint32_t> su = sa;
    su.insert(sb.begin(), sb.end());
    EXPECT_EQ(u.ids(), std::vector<uint32_t>(su.begin(), su.end()));
    bool shared = false;
    for (uint32_t x : sa) shared = shared || sb.count(x);
    EXPECT_EQ(a.intersects(b), shared);
    EXPECT_EQ(b.intersects(a), shared);
    IntervalSet c = u;
    c.coarsen(3);
    EXPECT_LE(c.num_intervals(), 3u);
    for (uint32_t x : su) EXPECT_TRUE(c.contains(x));  // only ever adds ids
    EXPECT_EQ(c.intervals().back(), u.intervals().back());  // the newest ids stay exact
    // The same algorithms on caller-owned storage.
    std::vector<IntervalSet::Interval> out(a.num_intervals() + b.num_intervals());
    out.resize(IntervalSet::unite(a.intervals(), b.intervals(), out.data()));
    EXPECT_EQ(out, u.intervals());
    out.resize(IntervalSet::coarsen(out.data(), out.size(), 3));
    EXPECT_EQ(out, c.intervals());
    EXPECT_EQ(IntervalSet::intersects(a.intervals(), b.intervals()), shared);
    for (uint32_t x = 0; x < 64; ++x) EXPECT_EQ(IntervalSet::contains(u.intervals(), x), su.count(x) > 0);
  }
}
