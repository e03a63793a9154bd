#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "graft/ir/graph.h"
#include "graft/ir/symbol.h"

using namespace graft;
using namespace graft::ir;

TEST(Symbol, EqualNamesShareOneEntry) {
  Symbol a("batch");
  Symbol b(std::string("bat") + "ch");
  Symbol c("seq");
  EXPECT_EQ(a, b);
  EXPECT_EQ(&a.str(), &b.str());  // interned: one stored string
  EXPECT_FALSE(a == c);
  EXPECT_EQ(a.str(), "batch");
  EXPECT_TRUE(a == "batch");
  EXPECT_TRUE(a == std::string("batch"));
}

TEST(Symbol, EmptyNameIsTheEmptySymbol) {
  Symbol none;
  Symbol from_empty("");
  EXPECT_TRUE(none.empty());
  EXPECT_TRUE(from_empty.empty());
  EXPECT_EQ(none, from_empty);
  EXPECT_EQ(none.str(), "");
  EXPECT_FALSE(Symbol("n").empty());
}

TEST(Symbol, DimsStayPlainValues) {
  ValueType t{DType::float32, true, {Dim::symbolic("N"), Dim::known(3)}};
  ValueType copy = t;
  EXPECT_EQ(copy, t);
  EXPECT_EQ(copy.dims[0].symbol, Symbol("N"));
  EXPECT_EQ(t.to_string(), "float32[N,3]");
  EXPECT_FALSE(Dim::symbolic("N") == Dim::symbolic("M"));
  EXPECT_EQ(Dim::symbolic(""), Dim{});
}

TEST(Symbol, InterningIsThreadSafe) {
  // Threads intern overlapping names at once; each name ends up with one entry.
  std::vector<std::thread> threads;
  std::vector<std::vector<const std::string*>> seen(4);
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([t, &seen] {
      for (int i = 0; i < 500; ++i) seen[t].push_back(&Symbol("dim" + std::to_string(i)).str());
    });
  for (auto& th : threads) th.join();
  for (int t = 1; t < 4; ++t) EXPECT_EQ(seen[t], seen[0]);
}
