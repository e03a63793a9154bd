#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "graft/core/small_vector.h"

using graft::SmallVector;

namespace {

/// Counts live objects, to check that every element built is destroyed once.
struct Tracked {
  static inline int live = 0;
  std::string value;
  Tracked() { ++live; }
  Tracked(std::string v) : value(std::move(v)) { ++live; }  // NOLINT
  Tracked(const Tracked& o) : value(o.value) { ++live; }
  Tracked(Tracked&& o) noexcept : value(std::move(o.value)) { ++live; }
  Tracked& operator=(const Tracked&) = default;
  Tracked& operator=(Tracked&&) noexcept = default;
  ~Tracked() { --live; }
  bool operator==(const Tracked& o) const { return value == o.value; }
};

std::vector<std::string> values(const SmallVector<Tracked, 2>& v) {
  std::vector<std::string> out;
  for (const Tracked& t : v) out.push_back(t.value);
  return out;
}

}  // namespace

TEST(SmallVector, StaysInlineUpToItsCapacityThenMovesToTheHeap) {
  SmallVector<int, 2> v;
  const int* inline_data = v.data();
  v.push_back(1);
  v.push_back(2);
  EXPECT_EQ(v.data(), inline_data);
  EXPECT_EQ(v.capacity(), 2u);
  v.push_back(3);
  EXPECT_NE(v.data(), inline_data);
  EXPECT_EQ(v, (std::vector<int>{1, 2, 3}));
  v.resize(5);
  EXPECT_EQ(v, (std::vector<int>{1, 2, 3, 0, 0}));
  v.resize(1);
  EXPECT_EQ(v.size(), 1u);
  EXPECT_EQ(v.back(), 1);
}

TEST(SmallVector, CopiesMovesAndDestroysEveryElementOnce) {
  {
    SmallVector<Tracked, 2> a{Tracked("x")};
    SmallVector<Tracked, 2> b = a;  // inline copy
    a.push_back(Tracked("y"));
    a.push_back(Tracked("z"));  // to the heap
    SmallVector<Tracked, 2> c = std::move(a);  // steals the heap buffer
    EXPECT_TRUE(a.empty());
    EXPECT_EQ(values(c), (std::vector<std::string>{"x", "y", "z"}));
    SmallVector<Tracked, 2> d = std::move(b);  // moves inline elements
    EXPECT_EQ(values(d), (std::vector<std::string>{"x"}));
    d = c;
    EXPECT_EQ(values(d), values(c));
    c = std::move(d);
    c.erase(c.begin() + 1);
    EXPECT_EQ(values(c), (std::vector<std::string>{"x", "z"}));
    c.insert(c.begin(), Tracked("w"));
    EXPECT_EQ(values(c), (std::vector<std::string>{"w", "x", "z"}));
    c.pop_back();
    c.clear();
    EXPECT_TRUE(c.empty());
  }
  EXPECT_EQ(Tracked::live, 0);
}

TEST(SmallVector, PushingAnElementOfItselfWhileGrowing) {
  SmallVector<std::string, 1> v{"first"};
  v.push_back(v[0]);  // the argument lives in the buffer being replaced
  v.push_back(v[1]);
  EXPECT_EQ(v, (std::vector<std::string>{"first", "first", "first"}));
  v.resize(6, v[0]);
  EXPECT_EQ(v.size(), 6u);
  EXPECT_EQ(v[5], "first");
}

TEST(SmallVector, ConvertsToAndFromStdVector) {
  std::vector<std::string> names{"a", "b"};
  SmallVector<std::string, 1> v = names;
  EXPECT_EQ(v, names);
  std::vector<std::string> back = v;
  EXPECT_EQ(back, names);
  v = std::vector<std::string>{"c"};
  EXPECT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0], "c");
  v.assign(names.begin(), names.end());
  EXPECT_EQ(v, names);
  EXPECT_THROW(v.at(2), graft::Error);
}
