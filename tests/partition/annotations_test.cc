// User annotations: pins, forbidden backends, regions (from JSON and from node
// attributes), and every way they can be wrong.
#include "graft/ops/type_inference.h"
#include "graft/partition/annotations.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

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

namespace {

// x -> a = Relu(x) -> b = Neg(a) -> c = Add(a, b) -> d = Relu(c) -> y; e = Abs(x) -> f = Add(e, d) -> z
std::unique_ptr<Graph> diamond_graph() {
  auto g = std::make_unique<Graph>();
  g->opset_imports[""] = 17;
  Node* x = g->add_input("x", ValueType::of(DType::float32, {4}));
  Node* a = g->add_node("Relu", {x->output(0)}, 1, "a");
  Node* b = g->add_node("Neg", {a->output(0)}, 1, "b");
  Node* c = g->add_node("Add", {a->output(0), b->output(0)}, 1, "c");
  Node* d = g->add_node("Relu", {c->output(0)}, 1, "d");
  Node* e = g->add_node("Abs", {x->output(0)}, 1, "e");
  Node* f = g->add_node("Add", {e->output(0), d->output(0)}, 1, "f");
  g->add_output(d->output(0), "y");
  g->add_output(f->output(0), "z");
  ops::infer_types(*g);
  return g;
}

std::vector<BackendEntry> backends() {
  return {BackendEntry{"one", predicate_property("one", [](const Node& n) { return n.op_type() == "Relu"; }), {}},
          BackendEntry{"two", predicate_property("two", [](const Node&) { return true; }), {}}};
}

const partition::NodePlacement& placement(const partition::PartitionReport& r, const std::string& name) {
  for (const auto& p : r.nodes)
    if (p.name == name) return p;
  throw std::runtime_error("no node " + name);
}

template <typename F>
std::string error_of(F&& f, ErrorKind expected_kind = ErrorKind::invalid_argument) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), expected_kind) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "expected a graft::Error";
  return {};
}

partition::PartitionReport partition_with(std::unique_ptr<Graph>& g, const std::string& json) {
  return partition::partition_graph(g, backends(), "ref", partition::parse_annotations(json, "test.json"));
}

}  // namespace

TEST(Annotations, ParsesPinsForbidsAndRegions) {
  auto a = partition::parse_annotations(
      R"({"pin": {"a": "one"}, "forbid": {"b": ["two"], "c": "one"},
          "regions": [{"backend": "two", "name": "r", "nodes": ["c", "d"]}]})");
  EXPECT_EQ(a.pinned.at("a"), "one");
  EXPECT_EQ(a.forbidden.at("b"), std::set<std::string>{"two"});
  EXPECT_EQ(a.forbidden.at("c"), std::set<std::string>{"one"});
  ASSERT_EQ(a.regions.size(), 1u);
  EXPECT_EQ(a.regions[0].nodes, (std::vector<std::string>{"c", "d"}));
}

TEST(Annotations, MalformedFilesAreErrorsNamingTheFile) {
  for (const char* bad : {"{", "[]", R"({"pin": ["a"]})", R"({"pin": {"a": 3}})", R"({"forbid": {"a": [1]}})",
                          R"({"regions": {}})", R"({"regions": [{"nodes": ["a"]}]})",
                          R"({"regions": [{"backend": "one"}]})", R"({"regions": [{"backend": "one", "nodes": "a"}]})",
                          R"({"regions": [{"backend": "one", "nodes": ["a"], "colour": 1}]})", R"({"pins": {}})"}) {
    std::string message = error_of([&] { partition::parse_annotations(bad, "bad.json"); });
    EXPECT_NE(message.find("bad.json"), std::string::npos) << bad << ": " << message;
  }
}

TEST(Annotations, UnreadableFilesAreIoErrors) {
  std::string message = error_of([] { partition::load_annotations("/nonexistent/annotations.json"); }, ErrorKind::io);
  EXPECT_NE(message.find("/nonexistent/annotations.json"), std::string::npos);
  error_of([] { partition::load_annotations(std::filesystem::temp_directory_path().string()); }, ErrorKind::io);
  auto path = std::filesystem::temp_directory_path() / "graft_partition_annotations_test.json";
  std::ofstream(path) << R"({"pin": {"a": "one"}})";
  EXPECT_EQ(partition::load_annotations(path.string()).pinned.at("a"), "one");
  std::filesystem::remove(path);
}

TEST(Annotations, UnknownNodesAreNamed) {
  auto g = diamond_graph();
  std::string message = error_of([&] { partition_with(g, R"({"pin": {"ghost": "one"}, "forbid": {"phantom": "two"}})"); });
  EXPECT_NE(message.find("'ghost'"), std::string::npos) << message;
  EXPECT_NE(message.find("'phantom'"), std::string::npos) << message;
}

TEST(Annotations, UnknownBackendIsNamed) {
  auto g = diamond_graph();
  std::string message = error_of([&] { partition_with(g, R"({"pin": {"a": "gpu9"}})"); });
  EXPECT_NE(message.find("'gpu9'"), std::string::npos) << message;
  EXPECT_NE(message.find("one, two"), std::string::npos) << message;
}

TEST(Annotations, PinnedNodeGoesOnlyToItsBackend) {
  auto original = diamond_graph();
  auto g = original->clone();
  auto report = partition_with(g, R"({"pin": {"a": "two"}, "forbid": {"d": ["one", "two"]}})");
  expect_partition_guarantees(*original, *g, report);
  EXPECT_EQ(placement(report, "a").backend, "two");
  EXPECT_EQ(placement(report, "a").declined[0].kind, DeclineKind::pinned_elsewhere);
  EXPECT_EQ(placement(report, "d").backend, "ref");
  EXPECT_EQ(placement(report, "d").declined[0].kind, DeclineKind::forbidden);
  EXPECT_EQ(placement(report, "d").declined[1].kind, DeclineKind::forbidden);
  std::vector<Tensor> in = {graft::testing::random_tensor({4}, 2)};
  auto got = execute(*g, in), want = execute(*original, in);
  expect_close(got[0], want[0]);
  expect_close(got[1], want[1]);
}

TEST(Annotations, PinnedToRefMeansNoBackendTakesIt) {
  auto original = diamond_graph();
  auto g = original->clone();
  auto report = partition_with(g, R"({"pin": {"a": "ref", "c": "ref"}})");
  expect_partition_guarantees(*original, *g, report);
  EXPECT_EQ(placement(report, "a").backend, "ref");
  EXPECT_EQ(placement(report, "c").backend, "ref");
  ASSERT_EQ(placement(report, "a").declined.size(), 2u);
  EXPECT_EQ(placement(report, "a").declined[1].kind, DeclineKind::pinned_elsewhere);
  EXPECT_EQ(placement(report, "a").declined[1].detail, "pinned to ref");
  EXPECT_EQ(placement(report, "b").backend, "two");
}

TEST(Annotations, RegionBecomesOneSubgraph) {
  auto original = diamond_graph();
  auto g = original->clone();
  auto report = partition_with(g, R"({"regions": [{"backend": "one", "nodes": ["b", "c"]}]})");
  expect_partition_guarantees(*original, *g, report);
  ASSERT_FALSE(report.subgraphs.empty());
  EXPECT_TRUE(report.subgraphs[0].from_annotation);
  EXPECT_EQ(report.subgraphs[0].backend, "one");
  EXPECT_EQ(report.subgraphs[0].nodes, (std::vector<std::string>{"b", "c"}));
  std::vector<Tensor> in = {graft::testing::random_tensor({4}, 3)};
  expect_close(execute(*g, in)[1], execute(*original, in)[1]);
}

TEST(Annotations, DisconnectedRegionIsAnErrorNamingItsNodes) {
  auto g = diamond_graph();
  std::string message = error_of([&] { partition_with(g, R"({"regions": [{"backend": "one", "nodes": ["b", "e"]}]})"); });
  EXPECT_NE(message.find("not connected"), std::string::npos) << message;
  EXPECT_NE(message.find("'b'"), std::string::npos) << message;
  EXPECT_NE(message.find("'e'"), std::string::npos) << message;
}

TEST(Annotations, NonConvexRegionIsAnErrorNamingThePath) {
  auto g = diamond_graph();
  std::string message = error_of([&] { partition_with(g, R"({"regions": [{"backend": "one", "nodes": ["a", "c"]}]})"); });
  EXPECT_NE(message.find("not convex"), std::string::npos) << message;
  EXPECT_NE(message.find("'b'"), std::string::npos) << message;
}

TEST(Annotations, RegionsThatWouldFormACycleTogetherAreAnError) {
  // Each region alone is convex; contracted together they form a cycle.
  auto g = graft::testing::crossed_graph();
  std::string message = error_of([&] {
    partition_with(g, R"({"regions": [{"backend": "one", "nodes": ["x", "a1", "a2"]},
                                      {"backend": "two", "nodes": ["y", "b1", "b2", "b3"]}]})");
  });
  EXPECT_NE(message.find("cycle"), std::string::npos) << message;
  EXPECT_NE(message.find("'b1'"), std::string::npos) << message;
}

TEST(Annotations, InvalidRegionContentsAreErrors) {
  auto g = diamond_graph();
  EXPECT_NE(error_of([&] { partition_with(g, R"({"regions": [{"backend": "one", "nodes": ["x", "a"]}]})"); })
                .find("graph inputs and constants"),
            std::string::npos);
  EXPECT_NE(error_of([&] { partition_with(g, R"({"regions": [{"backend": "ref", "nodes": ["a"]}]})"); })
                .find("other than ref"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              partition_with(g, R"({"regions": [{"backend": "one", "nodes": ["a"]}, {"backend": "two", "nodes": ["a"]}]})");
            }).find("another region"),
            std::string::npos);
  EXPECT_NE(error_of([&] { partition_with(g, R"({"pin": {"a": "two"}, "regions": [{"backend": "one", "nodes": ["a"]}]})"); })
                .find("pinned"),
            std::string::npos);
}

TEST(Annotations, NodeAttributesPinAndDeclareRegions) {
  auto original = diamond_graph();
  for (const auto& node : original->nodes()) {
    if (node->name == "b" || node->name == "c") {
      node->attributes.set("graft_region", std::string("mine"));
      node->attributes.set("graft_backend", std::string("one"));
    }
    if (node->name == "e") node->attributes.set("graft_forbid", std::string("one,two"));
  }
  auto g = original->clone();
  auto report = partition::partition_graph(g, backends(), "ref");
  expect_partition_guarantees(*original, *g, report);
  EXPECT_EQ(report.subgraphs[0].nodes, (std::vector<std::string>{"b", "c"}));
  EXPECT_EQ(placement(report, "e").backend, "ref");

  // A region whose nodes name different backends is invalid.
  for (const auto& node : original->nodes())
    if (node->name == "c") node->attributes.set("graft_backend", std::string("two"));
  auto bad = original->clone();
  std::string message = error_of([&] { partition::partition_graph(bad, backends(), "ref"); }, ErrorKind::invalid_model);
  EXPECT_NE(message.find("'mine'"), std::string::npos) << message;
}
