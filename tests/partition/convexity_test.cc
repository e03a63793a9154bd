#include "graft/partition/convexity.h"

#include <gtest/gtest.h>

#include <algorithm>

using namespace graft;
using namespace graft::ir;
using graft::partition::check_contraction;
using graft::partition::ConvexGrouping;

namespace {

std::vector<uint32_t> ids(const IndexedGraph& g, std::initializer_list<const Node*> nodes) {
  std::vector<uint32_t> out;
  for (const Node* n : nodes) out.push_back(g.id_of(*n));
  return out;
}

std::vector<uint32_t> sorted(std::vector<uint32_t> v) {
  std::sort(v.begin(), v.end());
  return v;
}

}  // namespace

// x -> a -> b -> c, a -> c: {a, c} is not convex (a -> b -> c leaves and re-enters).
TEST(Convexity, DetectsPathLeavingAndReentering) {
  Graph g;
  Node* x = g.add_input("x", ValueType::of(DType::float32, {4}));
  Node* a = g.add_node("Relu", {x->output(0)}, 1, "a");
  Node* b = g.add_node("Neg", {a->output(0)}, 1, "b");
  Node* c = g.add_node("Add", {a->output(0), b->output(0)}, 1, "c");
  g.add_output(c->output(0), "y");
  IndexedGraph ig(g);
  EXPECT_FALSE(partition::is_convex(ig, ids(ig, {a, c})));
  EXPECT_TRUE(partition::is_convex(ig, ids(ig, {a, b, c})));
  EXPECT_TRUE(partition::is_convex(ig, ids(ig, {b, c})));
  EXPECT_FALSE(partition::is_connected(ig, ids(ig, {x, c})));
  EXPECT_TRUE(partition::is_connected(ig, ids(ig, {a, c})));

  ConvexGrouping grouping(ig);
  EXPECT_FALSE(grouping.is_convex(ids(ig, {a, c})));
  std::vector<uint32_t> removed;
  auto kept = grouping.trim(ids(ig, {a, c}), ig.id_of(*a), &removed);
  EXPECT_EQ(kept, ids(ig, {a}));
  EXPECT_EQ(removed, ids(ig, {c}));
  // Seeded at c, the trimmed set must keep c and drop a.
  kept = grouping.trim(ids(ig, {a, c}), ig.id_of(*c), &removed);
  EXPECT_EQ(kept, ids(ig, {c}));
  EXPECT_EQ(removed, ids(ig, {a}));
}

// Two sets, each convex alone, whose contraction makes the cycle A -> B -> A:
// x -> a1 -> b1, y -> b2 -> a2, with A = {x, a1, a2}, B = {y, b1, b2}.
TEST(Convexity, CrossedGroupsAreRejectedAfterTheFirstIsContracted) {
  Graph g;
  Node* in = g.add_input("in", ValueType::of(DType::float32, {4}));
  Node* x = g.add_node("Relu", {in->output(0)}, 1, "x");
  Node* y = g.add_node("Neg", {in->output(0)}, 1, "y");
  Node* a1 = g.add_node("Relu", {x->output(0)}, 1, "a1");
  Node* b1 = g.add_node("Relu", {a1->output(0)}, 1, "b1");
  Node* b2 = g.add_node("Neg", {y->output(0)}, 1, "b2");
  Node* a2 = g.add_node("Add", {x->output(0), b2->output(0)}, 1, "a2");
  Node* b3 = g.add_node("Add", {b1->output(0), y->output(0)}, 1, "b3");
  g.add_output(a2->output(0), "o1");
  g.add_output(b3->output(0), "o2");
  IndexedGraph ig(g);
  auto A = ids(ig, {x, a1, a2});
  auto B = ids(ig, {y, b1, b2, b3});
  EXPECT_TRUE(partition::is_convex(ig, A));
  EXPECT_TRUE(partition::is_convex(ig, B));

  std::vector<int32_t> group_of(ig.num_nodes(), -1);
  for (uint32_t n : A) group_of[n] = 0;
  for (uint32_t n : B) group_of[n] = 1;
  auto check = check_contraction(ig, group_of);
  EXPECT_FALSE(check.acyclic);
  EXPECT_EQ(check.on_cycle, (std::vector<int64_t>{0, 1}));

  ConvexGrouping grouping(ig);
  EXPECT_TRUE(grouping.is_convex(A));
  grouping.add_group(A);
  EXPECT_FALSE(grouping.is_convex(B));
  auto kept = grouping.trim(B, ig.id_of(*y));
  EXPECT_TRUE(grouping.is_convex(kept));
  grouping.add_group(kept);
  std::vector<int32_t> final_groups(ig.num_nodes(), -1);
  for (uint32_t n = 0; n < ig.num_nodes(); ++n) final_groups[n] = grouping.group_of(n);
  EXPECT_TRUE(check_contraction(ig, final_groups).acyclic);
}

TEST(Convexity, OrderStaysTopologicalForTheQuotient) {
  // A chain with a side branch; grouping the ends of a diamond moves the side
  // node out of the way.
  Graph g;
  Node* x = g.add_input("x", ValueType::of(DType::float32, {4}));
  Node* a = g.add_node("Relu", {x->output(0)}, 1, "a");
  Node* side = g.add_node("Neg", {x->output(0)}, 1, "side");
  Node* b = g.add_node("Relu", {a->output(0)}, 1, "b");
  Node* c = g.add_node("Add", {b->output(0), side->output(0)}, 1, "c");
  g.add_output(c->output(0), "y");
  IndexedGraph ig(g);
  ConvexGrouping grouping(ig);
  grouping.add_group(ids(ig, {a, b}));
  const auto& order = grouping.order();
  std::vector<uint32_t> position(order.size());
  for (uint32_t p = 0; p < order.size(); ++p) position[order[p]] = p;
  for (uint32_t n = 0; n < ig.num_nodes(); ++n)
    for (const Entry& e : ig.inputs(n)) EXPECT_LT(position[e.node_id], position[n]);
  EXPECT_EQ(position[ig.id_of(*b)], position[ig.id_of(*a)] + 1);
  EXPECT_EQ(sorted(grouping.members(0)), sorted(ids(ig, {a, b})));
}
