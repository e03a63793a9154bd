// Property tests of the fusion pass on random graphs of elementwise,
// broadcast and opaque ops:
//  - the subsets it finds are convex, connected, fusible, of one kind
//    (forward or backward) and at least two nodes, checked by brute force;
//  - the fused graph computes exactly what the unfused one does.
#include <gtest/gtest.h>

#include <random>

#include "graft/codegen/compile_cache.h"
#include "graft/fusion/fuse_pointwise.h"
#include "graft/fusion/fusible.h"
#include "graft/ir/indexed_graph.h"
#include "graft/ir/verify.h"
#include "graft/partition/convexity.h"
#include "graft/passes/pass.h"
#include "support/graph_runner.h"

using namespace graft;
using namespace graft::ir;
using graft::testing::expect_close;
using graft::testing::random_tensor;

namespace {

/// A random graph: values of shape [2, 8]; fusible unary and binary ops,
/// broadcasts against [8] and scalar constants, and opaque ops (Softmax,
/// MatMul, ReduceMean) that fusion must route around. About a third of the
/// nodes after the middle are marked backward.
std::unique_ptr<Graph> random_graph(uint64_t seed, int num_ops) {
  std::mt19937_64 rng(seed);
  auto pick = [&](size_t n) { return static_cast<size_t>(rng() % n); };
  auto g = std::make_unique<Graph>();
  g->opset_imports[""] = 17;
  std::vector<Value> values;
  int num_inputs = 1 + static_cast<int>(pick(3));
  for (int i = 0; i < num_inputs; ++i)
    values.push_back(g->add_input("in" + std::to_string(i), ValueType::of(DType::float32, {2, 8}))->output(0));
  static const char* kUnary[] = {"Relu", "Neg", "Tanh", "Sigmoid", "Abs", "Sin"};
  static const char* kBinary[] = {"Add", "Sub", "Mul", "Max", "Min"};
  // Prefer recent values so that chains form, sometimes reach far back.
  auto operand = [&]() -> Value {
    if (pick(4) == 0) return values[pick(values.size())];
    size_t window = std::min<size_t>(values.size(), 4);
    return values[values.size() - 1 - pick(window)];
  };
  for (int i = 0; i < num_ops; ++i) {
    std::string name = "n" + std::to_string(i);
    Node* n = nullptr;
    switch (pick(10)) {
      case 0:
      case 1:
      case 2:
        n = g->add_node(kUnary[pick(6)], {operand()}, 1, name);
        break;
      case 3:
      case 4:
      case 5:
        n = g->add_node(kBinary[pick(5)], {operand(), operand()}, 1, name);
        break;
      case 6: {
        bool scalar = pick(2) == 0;
        Node* c = g->add_constant(name + "_c", random_tensor(scalar ? Shape{} : Shape{8}, rng()));
        n = g->add_node(kBinary[pick(3)], {operand(), c->output(0)}, 1, name);
        break;
      }
      case 7:
        n = g->add_node("Softmax", {operand()}, 1, name);
        break;
      case 8: {
        Node* w = g->add_constant(name + "_w", random_tensor({8, 8}, rng()));
        n = g->add_node("MatMul", {operand(), w->output(0)}, 1, name);
        break;
      }
      default: {  // a - mean(a): the classic trap, a reaches the Sub directly and through the mean
        Value a = operand();
        n = g->add_node("Sub", {a, g->add_node("ReduceMean", {a}, 1, name + "_r")->output(0)}, 1, name);
        break;
      }
    }
    n->output_names[0] = name;
    n->is_backward = i > num_ops / 2 && pick(3) != 0;
    values.push_back(n->output(0));
  }
  g->add_output(values.back(), "out");
  for (int k = 0; k < 2; ++k) {
    Value v = values[static_cast<size_t>(num_inputs) + pick(values.size() - static_cast<size_t>(num_inputs))];
    bool already = false;
    for (const Value& o : g->outputs()) already = already || o == v;
    if (!already) g->add_output(v, "extra" + std::to_string(k));
  }
  passes::PassContext ctx;
  passes::run_pipeline(g, {"verify", "infer"}, ctx);
  return g;
}

/// Brute-force check of every subset property on `graph`.
void check_subsets(const IndexedGraph& graph, const fusion::FusionSubsets& subsets) {
  const size_t n = graph.num_nodes();
  ASSERT_EQ(subsets.subset_of.size(), n);
  std::vector<uint32_t> count(subsets.num_subsets(), 0);
  std::vector<uint32_t> first(subsets.num_subsets(), UINT32_MAX);
  for (uint32_t id = 0; id < n; ++id) {
    uint32_t s = subsets.subset_of[id];
    if (s == fusion::FusionSubsets::kNone) continue;
    ASSERT_LT(s, subsets.num_subsets());
    ++count[s];
    EXPECT_TRUE(fusion::is_fusible(graph.node(id))) << graph.node(id).describe();
    if (first[s] == UINT32_MAX) first[s] = id;
    EXPECT_EQ(graph.node(id).is_backward, graph.node(first[s]).is_backward) << graph.node(id).describe();
  }
  for (size_t s = 0; s < count.size(); ++s) {
    EXPECT_GE(count[s], 2u);
    EXPECT_EQ(count[s], subsets.sizes[s]);
  }
  // The shared utility agrees: contracting every subset at once is acyclic.
  std::vector<int32_t> group_of_node(n, -1);
  for (uint32_t id = 0; id < n; ++id)
    if (subsets.subset_of[id] != fusion::FusionSubsets::kNone) group_of_node[id] = static_cast<int32_t>(subsets.subset_of[id]);
  EXPECT_TRUE(partition::check_contraction(graph, group_of_node).acyclic);
  // Convexity: no path from a subset through a node outside it back into it.
  // left[v] = subsets with a member that reaches v through a node outside them.
  std::vector<std::vector<bool>> reached(n, std::vector<bool>(subsets.num_subsets(), false));
  std::vector<std::vector<bool>> left(n, std::vector<bool>(subsets.num_subsets(), false));
  for (uint32_t id = 0; id < n; ++id) {
    uint32_t own = subsets.subset_of[id];
    for (const Entry& e : graph.inputs(id)) {
      if (!e.present()) continue;
      uint32_t p = e.node_id, ps = subsets.subset_of[p];
      for (size_t s = 0; s < subsets.num_subsets(); ++s) {
        if (left[p][s]) left[id][s] = true;
        // The path leaves s at p when p reached s but is not in it.
        if (reached[p][s] && ps != s) left[id][s] = true;
        if (reached[p][s]) reached[id][s] = true;
      }
    }
    if (own != fusion::FusionSubsets::kNone) {
      reached[id][own] = true;
      EXPECT_FALSE(left[id][own]) << "subset " << own << " is not convex at " << graph.node(id).describe();
    }
  }
  // Connectivity: members are weakly connected through edges inside the subset.
  std::vector<uint32_t> component(n);
  for (uint32_t id = 0; id < n; ++id) component[id] = id;
  std::function<uint32_t(uint32_t)> find = [&](uint32_t x) { return component[x] == x ? x : component[x] = find(component[x]); };
  for (uint32_t id = 0; id < n; ++id)
    for (const Entry& e : graph.inputs(id))
      if (e.present() && subsets.subset_of[id] != fusion::FusionSubsets::kNone &&
          subsets.subset_of[e.node_id] == subsets.subset_of[id])
        component[find(e.node_id)] = find(id);
  std::vector<uint32_t> root_of_subset(subsets.num_subsets(), UINT32_MAX);
  for (uint32_t id = 0; id < n; ++id) {
    uint32_t s = subsets.subset_of[id];
    if (s == fusion::FusionSubsets::kNone) continue;
    if (root_of_subset[s] == UINT32_MAX) root_of_subset[s] = find(id);
    EXPECT_EQ(find(id), root_of_subset[s]) << "subset " << s << " is not connected";
  }
}

}  // namespace

TEST(FusionRandomGraphs, SubsetsAreConvexConnectedAndHomogeneous) {
  size_t fused = 0;
  for (uint64_t seed = 0; seed < 3000; ++seed) {
    auto g = random_graph(seed, 6 + static_cast<int>(seed % 40));
    IndexedGraph indexed(*g);
    fusion::FusionSubsets subsets = fusion::find_fusion_subsets(indexed);
    fused += subsets.num_subsets();
    check_subsets(indexed, subsets);
    if (::testing::Test::HasFailure()) {
      ADD_FAILURE() << "seed " << seed;
      return;
    }
    auto out = fusion::build_fused_graph(indexed, subsets);
    verify(*out);
  }
  EXPECT_GT(fused, 3000u);  // the generator does produce fusible groups
}

// The pass's graph, its fused nodes run on the reference kernels, computes
// exactly what the original does; run through a Session with fusion on
// (fused nodes compiled by backend `fuse`), closely.
TEST(FusionRandomGraphs, FusedGraphsComputeTheSameOutputs) {
  runtime::SessionOptions off;
  off.passes = {"verify", "infer"};
  off.num_threads = 1;
  off.verify_after_each_pass = true;
  off.backends = {"ref"};
  off.fusion = false;
  runtime::SessionOptions on = off;
  on.fusion = true;
  for (uint64_t seed = 0; seed < 1000; ++seed) {
    auto g = random_graph(1000000 + seed, 4 + static_cast<int>(seed % 30));
    std::vector<Tensor> inputs;
    for (size_t i = 0; i < g->inputs().size(); ++i) inputs.push_back(random_tensor({2, 8}, seed * 7 + i));
    auto fused_graph = g->clone();
    fusion::fuse_pointwise(fused_graph);
    for (const auto& n : fused_graph->nodes())
      if (n->op_type() == "graft.FusedPointwise") n->backend = "ref";
    runtime::Session reference(std::move(fused_graph), off);
    runtime::Session plain(g->clone(), off);
    auto got = reference.run(inputs);
    auto want = plain.run(inputs);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) expect_close(got[i], want[i], 0, 0);
    if (seed % 5 == 0) {
      runtime::Session compiled(g->clone(), on);
      compiled.run(inputs);  // interprets the fused kernels while they compile
      codegen::CompileCache::global().wait_for_background_compiles();
      auto close = compiled.run(inputs);
      ASSERT_EQ(close.size(), want.size());
      for (size_t i = 0; i < close.size(); ++i) expect_close(close[i], want[i], 1e-5, 1e-6);
    }
    if (::testing::Test::HasFailure()) {
      ADD_FAILURE() << "seed " << seed;
      return;
    }
  }
}

// Large graphs: the interval sets exceed their bound and are coarsened; the
// result must stay valid (coarsening only ever refuses merges).
TEST(FusionRandomGraphs, LargeGraphsStayAcyclicWhenSetsAreCoarsened) {
  for (uint64_t seed = 0; seed < 8; ++seed) {
    auto g = random_graph(5000000 + seed, 1500);
    IndexedGraph indexed(*g);
    fusion::FusionSubsets subsets = fusion::find_fusion_subsets(indexed);
    EXPECT_GT(subsets.num_subsets(), 50u);
    check_subsets(indexed, subsets);
    auto out = fusion::build_fused_graph(indexed, subsets);
    verify(*out);
    if (::testing::Test::HasFailure()) {
      ADD_FAILURE() << "seed " << seed;
      return;
    }
  }
}
