#include "graft/ops/type_inference.h"
#include "graft/partition/partitioner.h"

#include <gtest/gtest.h>

#include "graft/partition/contain_op_selector.h"
#include "partition_test_util.h"
#include "support/graph_runner.h"

using namespace graft;
using namespace graft::ir;
using graft::partition::BackendEntry;
using graft::partition::DeclineKind;
using graft::testing::execute;
using graft::testing::expect_close;
using graft::testing::expect_partition_guarantees;
using graft::testing::predicate_property;
using graft::testing::random_tensor;

namespace {

bool named(const Node& n, std::initializer_list<const char*> names) {
  for (const char* s : names)
    if (n.name == s) return true;
  return false;
}

// x -> r1 = Relu(x) -> a1 = Add(r1, x) -> ng = Neg(a1) -> r2 = Relu(ng) -> y
std::unique_ptr<Graph> chain_graph() {
  auto g = std::make_unique<Graph>();
  g->opset_imports[""] = 17;
  Node* x = g->add_input("x", ValueType::of(DType::float32, {2, 3}));
  Node* r1 = g->add_node("Relu", {x->output(0)}, 1, "r1");
  Node* a1 = g->add_node("Add", {r1->output(0), x->output(0)}, 1, "a1");
  Node* ng = g->add_node("Neg", {a1->output(0)}, 1, "ng");
  Node* r2 = g->add_node("Relu", {ng->output(0)}, 1, "r2");
  g->add_output(r2->output(0), "y");
  ops::infer_types(*g);
  return g;
}

std::vector<BackendEntry> relu_add_backend(size_t min_size = 1) {
  auto property = std::make_shared<partition::ContainOpProperty>(std::set<std::string, std::less<>>{"Relu", "Add"},
                                                                partition::OpSupportTable{}, min_size);
  property->set_backend_name("reluadd");
  return {BackendEntry{"reluadd", property, {}}};
}

const Node* find_node(const Graph& g, const std::string& op) {
  for (const auto& n : g.nodes())
    if (n->op_type() == op) return n.get();
  return nullptr;
}

}  // namespace

TEST(Partitioner, ContainOpSelectorMakesSubgraphNodesThatComputeTheSame) {
  auto original = chain_graph();
  auto graph = original->clone();
  auto report = partition::partition_graph(graph, relu_add_backend(), "ref");
  expect_partition_guarantees(*original, *graph, report);
  ASSERT_EQ(report.subgraphs.size(), 2u);
  EXPECT_EQ(report.subgraphs[0].nodes, (std::vector<std::string>{"r1", "a1"}));
  EXPECT_EQ(report.subgraphs[1].nodes, (std::vector<std::string>{"r2"}));
  const Node* sub = find_node(*graph, "graft.Subgraph");
  ASSERT_NE(sub, nullptr);
  EXPECT_EQ(sub->attributes.get_string("backend"), "reluadd");
  EXPECT_EQ(sub->backend, "reluadd");
  EXPECT_EQ(sub->attributes.get_int("id"), 0);
  // The body's Input nodes carry the boundary dtype and shape.
  ASSERT_EQ(sub->subgraph->inputs().size(), 1u);
  EXPECT_EQ(sub->subgraph->inputs()[0]->output_types[0], ValueType::of(DType::float32, {2, 3}));
  std::vector<Tensor> in = {random_tensor({2, 3}, 7)};
  expect_close(execute(*graph, in)[0], execute(*original, in)[0]);
  EXPECT_EQ(report.nodes_per_backend().at("reluadd"), 3u);
  EXPECT_EQ(report.nodes_per_backend().at("ref"), 1u);
  EXPECT_EQ(report.summary_line(), "partition: reluadd 3 nodes in 2 subgraphs, ref 1 node");
}

TEST(Partitioner, ReportsWhyANodeWasNotTaken) {
  auto graph = chain_graph();
  auto report = partition::partition_graph(graph, relu_add_backend(), "ref");
  const auto& ng = report.nodes[3];
  ASSERT_EQ(ng.name, "ng");
  EXPECT_EQ(ng.backend, "ref");
  ASSERT_EQ(ng.declined.size(), 1u);
  EXPECT_EQ(ng.declined[0].kind, DeclineKind::unsupported);
  EXPECT_EQ(ng.declined[0].detail, "op Neg is not supported");
  EXPECT_NE(report.to_text().find("ng (Neg) -> ref"), std::string::npos);
  EXPECT_NE(report.to_json().find("\"reason\": \"unsupported\""), std::string::npos);
  EXPECT_NE(report.to_dot().find("cluster_0"), std::string::npos);
}

TEST(Partitioner, MinimumSubgraphSizeLeavesSmallSubgraphs) {
  auto original = chain_graph();
  auto graph = original->clone();
  auto report = partition::partition_graph(graph, relu_add_backend(2), "ref");
  expect_partition_guarantees(*original, *graph, report);
  ASSERT_EQ(report.subgraphs.size(), 1u);
  EXPECT_EQ(report.nodes[4].name, "r2");
  EXPECT_EQ(report.nodes[4].backend, "ref");
  EXPECT_EQ(report.nodes[4].declined[0].kind, DeclineKind::below_min_size);
}

// A selector that wants {a, c} of a -> b -> c, a -> c: graft trims it.
TEST(Partitioner, NonConvexSelectionIsTrimmedAndReported) {
  auto original = std::make_unique<Graph>();
  Node* x = original->add_input("x", ValueType::of(DType::float32, {4}));
  Node* a = original->add_node("Relu", {x->output(0)}, 1, "a");
  Node* b = original->add_node("Neg", {a->output(0)}, 1, "b");
  Node* c = original->add_node("Add", {a->output(0), b->output(0)}, 1, "c");
  original->add_output(c->output(0), "y");
  ops::infer_types(*original);
  auto graph = original->clone();
  auto property = predicate_property("ac", [](const Node& n) { return named(n, {"a", "c"}); });
  auto report = partition::partition_graph(graph, {BackendEntry{"ac", property, {}}}, "ref");
  expect_partition_guarantees(*original, *graph, report);
  ASSERT_EQ(report.subgraphs.size(), 2u);  // {a}, then {c} on its own
  EXPECT_EQ(report.subgraphs[0].nodes, std::vector<std::string>{"a"});
  EXPECT_EQ(report.subgraphs[1].nodes, std::vector<std::string>{"c"});
  std::vector<Tensor> in = {random_tensor({4}, 3)};
  expect_close(execute(*graph, in)[0], execute(*original, in)[0]);
}

// Residual blocks y = x + Relu(Neg(Relu(x))) in a chain, Neg unsupported
// (maxvit_t's attention blocks, whose Einsums dnnl does not take): every
// set grows past a Neg into the later blocks and is trimmed back, so the
// later blocks' nodes are dropped again and again until they are no longer
// offered. They must still seed sets of their own: every Relu and Add ends
// up on the backend, none on ref.
TEST(Partitioner, NodesDroppedByManyEarlierSetsStillSeedTheirOwn) {
  auto original = std::make_unique<Graph>();
  original->opset_imports[""] = 17;
  Value x = original->add_input("x", ValueType::of(DType::float32, {2, 3}))->output(0);
  for (int block = 0; block < 12; ++block) {
    std::string b = std::to_string(block);
    Value p = original->add_node("Relu", {x}, 1, "p" + b)->output(0);
    Value u = original->add_node("Neg", {p}, 1, "u" + b)->output(0);
    Value q = original->add_node("Relu", {u}, 1, "q" + b)->output(0);
    x = original->add_node("Add", {x, q}, 1, "add" + b)->output(0);
  }
  original->add_output(x, "y");
  ops::infer_types(*original);
  auto graph = original->clone();
  auto report = partition::partition_graph(graph, relu_add_backend(), "ref");
  expect_partition_guarantees(*original, *graph, report);
  auto per_backend = report.nodes_per_backend();
  EXPECT_EQ(per_backend["reluadd"], 36u) << report.to_text();
  EXPECT_EQ(per_backend["ref"], 12u);  // the Negs
  std::vector<Tensor> in = {random_tensor({2, 3}, 5)};
  expect_close(execute(*graph, in)[0], execute(*original, in)[0]);
}

// Two backends whose subgraphs, each convex, would form a cycle together.
TEST(Partitioner, SubgraphsOfTwoBackendsFormNoCycle) {
  auto original = graft::testing::crossed_graph();
  auto graph = original->clone();
  auto first = predicate_property("A", [](const Node& n) { return named(n, {"x", "a1", "a2"}); });
  auto second = predicate_property("B", [](const Node& n) { return named(n, {"y", "b1", "b2", "b3"}); });
  auto report = partition::partition_graph(graph, {BackendEntry{"A", first, {}}, BackendEntry{"B", second, {}}}, "ref");
  expect_partition_guarantees(*original, *graph, report);
  // B's first subgraph {y, b2} had to leave b1 and b3 out (with A contracted,
  // A -> B -> A would be a cycle); they form a second B subgraph.
  ASSERT_EQ(report.subgraphs.size(), 3u);
  EXPECT_EQ(report.subgraphs[1].nodes, (std::vector<std::string>{"y", "b2"}));
  EXPECT_EQ(report.subgraphs[2].nodes, (std::vector<std::string>{"b1", "b3"}));
  std::vector<Tensor> inputs = {random_tensor({4}, 5)};
  auto got = execute(*graph, inputs);
  auto want = execute(*original, inputs);
  expect_close(got[0], want[0]);
  expect_close(got[1], want[1]);
}

TEST(Partitioner, FilterIsAppliedAndReported) {
  auto original = chain_graph();
  auto graph = original->clone();
  class DropAdd : public graft::testing::PredicateSelector {
   public:
    DropAdd()
        : PredicateSelector([](const Node& n) { return n.op_type() != "Neg"; },
                            [](const Node&, const Node& p) { return p.op_type() != "Neg"; },
                            [](const Node&, const Node& c) { return c.op_type() != "Neg"; }) {}
    std::vector<const Node*> Filter(std::vector<const Node*> candidates) override {
      std::vector<const Node*> out;
      for (const Node* n : candidates)
        if (n->op_type() != "Add") out.push_back(n);
      return out;
    }
  };
  auto property = std::make_shared<graft::testing::LambdaProperty>([] { return std::make_unique<DropAdd>(); });
  property->set_backend_name("noadd");
  auto report = partition::partition_graph(graph, {BackendEntry{"noadd", property, {}}}, "ref");
  expect_partition_guarantees(*original, *graph, report);
  EXPECT_EQ(report.nodes[2].name, "a1");
  EXPECT_EQ(report.nodes[2].backend, "ref");
  EXPECT_EQ(report.nodes[2].declined[0].kind, DeclineKind::filtered);
  std::vector<Tensor> in = {random_tensor({2, 3}, 9)};
  expect_close(execute(*graph, in)[0], execute(*original, in)[0]);
}

TEST(Partitioner, ConstantsAreCopiedIntoTheBodies) {
  auto original = std::make_unique<Graph>();
  Node* x = original->add_input("x", ValueType::of(DType::float32, {3}));
  Node* w = original->add_constant("w", Tensor::from_vector<float>({1, 2, 3}, {3}));
  Node* add = original->add_node("Add", {x->output(0), w->output(0)}, 1, "add");
  Node* relu = original->add_node("Relu", {add->output(0)}, 1, "relu");
  original->add_output(relu->output(0), "y");
  ops::infer_types(*original);
  auto graph = original->clone();
  auto report = partition::partition_graph(graph, relu_add_backend(), "ref");
  expect_partition_guarantees(*original, *graph, report);
  EXPECT_EQ(find_node(*graph, "Constant"), nullptr);  // only the body reads it
  const Node* sub = find_node(*graph, "graft.Subgraph");
  ASSERT_NE(sub, nullptr);
  EXPECT_EQ(sub->inputs.size(), 1u);
  ASSERT_NE(find_node(*sub->subgraph, "Constant"), nullptr);
  std::vector<Tensor> in = {random_tensor({3}, 1)};
  expect_close(execute(*graph, in)[0], execute(*original, in)[0]);
}

TEST(Partitioner, LaterBackendsSeeOnlyUntakenNodes) {
  auto original = chain_graph();
  auto graph = original->clone();
  auto relu_only = predicate_property("first", [](const Node& n) { return n.op_type() == "Relu"; });
  auto everything = predicate_property("second", [](const Node&) { return true; });
  auto report = partition::partition_graph(
      graph, {BackendEntry{"first", relu_only, {}}, BackendEntry{"second", everything, {}}}, "ref");
  expect_partition_guarantees(*original, *graph, report);
  auto counts = report.nodes_per_backend();
  EXPECT_EQ(counts["first"], 2u);
  EXPECT_EQ(counts["second"], 2u);
  EXPECT_EQ(counts["ref"], 0u);
  EXPECT_EQ(report.nodes[1].declined.back().kind, DeclineKind::taken);
}

TEST(Partitioner, UnavailableBackendDeclinesEverythingWithItsReason) {
  auto graph = chain_graph();
  auto entries = relu_add_backend();
  entries[0].unavailable = "no such device";
  auto report = partition::partition_graph(graph, entries, "ref");
  EXPECT_TRUE(report.subgraphs.empty());
  EXPECT_EQ(report.nodes[1].declined[0].kind, DeclineKind::unavailable);
  EXPECT_EQ(report.nodes[1].declined[0].detail, "no such device");
}
