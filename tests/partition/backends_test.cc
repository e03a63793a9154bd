// Op support checkers and the generic property built from them, the backend
// priority order, Session integration, and the example backend of
// docs/backends.md (compiled into this test binary from examples/).
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>

#include "graft/ops/type_inference.h"
#include "graft/backend/backend.h"
#include "graft/compiler/compiler.h"
#include "graft/partition/contain_op_selector.h"
#include "graft/partition/op_support.h"
#include "graft/runtime/session.h"
#include "partition_test_util.h"
#include "support/graph_runner.h"

using namespace graft;
using namespace graft::ir;
using graft::partition::BackendEntry;
using graft::testing::execute;
using graft::testing::expect_close;
using graft::testing::expect_partition_guarantees;
using graft::testing::random_tensor;

namespace {

// "evenodd" supports Relu and Neg, but only nodes whose name ends in an even digit.
partition::Support even_name(const Node& n) {
  if (!n.name.empty() && (n.name.back() - '0') % 2 == 0) return partition::Support::yes();
  return partition::Support::no("odd name '" + n.name + "'");
}
GRAFT_REGISTER_OP_SUPPORT("evenodd", "Relu", even_name);
GRAFT_REGISTER_OP_SUPPORT("evenodd", "Neg", even_name);

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// x -> n0 Relu -> n1 Neg -> n2 Relu -> n3 Sigmoid -> n4 Neg -> y
std::unique_ptr<Graph> chain() {
  auto g = std::make_unique<Graph>();
  g->opset_imports[""] = 17;
  Value v = g->add_input("x", ValueType::of(DType::float32, {2, 2}))->output(0);
  const char* ops[] = {"Relu", "Neg", "Relu", "Sigmoid", "Neg"};
  for (int i = 0; i < 5; ++i) v = g->add_node(ops[i], {v}, 1, "n" + std::to_string(i))->output(0);
  g->add_output(v, "y");
  ops::infer_types(*g);
  return g;
}

template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid_argument) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "expected a graft::Error";
  return {};
}

}  // namespace

TEST(OpSupport, CheckersBecomeAPropertyAndGiveTheirReasons) {
  ASSERT_NE(partition::find_op_support("evenodd"), nullptr);
  ASSERT_NE(backend::find_backend("evenodd"), nullptr);  // the default executor backend
  auto original = chain();
  auto g = original->clone();
  compiler::CompileOptions options;
  options.backends = {"evenodd"};
  options.fusion = false;
  auto report = compiler::partition(g, options);
  expect_partition_guarantees(*original, *g, report);
  ASSERT_EQ(report.subgraphs.size(), 3u);  // {n0}, {n2}, {n4}
  EXPECT_EQ(report.nodes[2].declined[0].detail, "odd name 'n1'");
  EXPECT_EQ(report.nodes[4].declined[0].detail, "op Sigmoid is not supported");
}

TEST(OpSupport, OneConvexSupportedRegionGivesExactlyOneSubgraph) {
  // On random DAGs, support exactly S = descendants(s) ∩ ancestors(t): a convex,
  // connected set. The generic property must take it as one subgraph.
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 1000; ++trial) {
    auto g = std::make_unique<Graph>();
    g->opset_imports[""] = 17;
    std::vector<Value> values = {g->add_input("x", ValueType::of(DType::float32, {3}))->output(0)};
    int n = 3 + static_cast<int>(rng() % 25);
    for (int i = 0; i < n; ++i) {
      Value a = values[rng() % values.size()];
      Value b = values[values.size() - 1 - rng() % std::min<size_t>(values.size(), 3)];
      values.push_back(rng() % 2 ? g->add_node("Add", {a, b}, 1, "v" + std::to_string(i))->output(0)
                                 : g->add_node("Neg", {b}, 1, "v" + std::to_string(i))->output(0));
    }
    for (size_t i = 1; i < values.size(); ++i) g->add_output(values[i], "y" + std::to_string(i));
    ops::infer_types(*g);
    IndexedGraph indexed(*g);
    uint32_t s = 1 + static_cast<uint32_t>(rng() % n), t = 1 + static_cast<uint32_t>(rng() % n);
    if (s > t) std::swap(s, t);
    std::vector<bool> down(indexed.num_nodes()), up(indexed.num_nodes());
    down[s] = true;
    for (uint32_t id = s; id < indexed.num_nodes(); ++id)
      for (const Entry& e : indexed.inputs(id)) down[id] = down[id] || down[e.node_id];
    up[t] = true;
    for (uint32_t id = t + 1; id-- > 0;)
      for (uint32_t c : indexed.consumers(id)) up[id] = up[id] || (c <= t && up[c]);
    auto wanted = std::make_shared<std::set<std::string>>();
    for (uint32_t id = 0; id < indexed.num_nodes(); ++id)
      if (down[id] && up[id]) wanted->insert(indexed.node(id).name);
    if (wanted->empty()) continue;  // s does not reach t
    partition::OpSupportTable table;
    auto checker = [wanted](const Node& node) {
      return wanted->count(node.name) ? partition::Support::yes() : partition::Support::no("outside the region");
    };
    table["Add"] = checker;
    table["Neg"] = checker;
    auto property = std::make_shared<partition::ContainOpProperty>(std::set<std::string, std::less<>>{"Add", "Neg"}, table);
    property->set_backend_name("region");
    auto original = g->clone();
    auto report = partition::partition_graph(g, {BackendEntry{"region", property, {}}}, "ref");
    expect_partition_guarantees(*original, *g, report);
    ASSERT_EQ(report.subgraphs.size(), 1u) << "trial " << trial;
    ASSERT_EQ(report.subgraphs[0].nodes.size(), wanted->size()) << "trial " << trial;
  }
}

TEST(BackendOrder, ExplicitEnvironmentAndDefault) {
  EXPECT_EQ(backend::resolve_backend_order({"reluadd", "ref"}), (std::vector<std::string>{"reluadd", "ref"}));
  std::string message = error_of([] { backend::resolve_backend_order({"reluadd", "tpu"}); });
  EXPECT_NE(message.find("'tpu'"), std::string::npos) << message;
  EXPECT_NE(message.find("ref"), std::string::npos) << message;  // lists the available ones
  EXPECT_NE(error_of([] { backend::resolve_backend_order({"ref", "ref"}); }).find("twice"), std::string::npos);

  setenv("GRAFT_BACKENDS", "evenodd,ref", 1);
  EXPECT_EQ(backend::resolve_backend_order({}), (std::vector<std::string>{"evenodd", "ref"}));
  setenv("GRAFT_BACKENDS", "evenodd,,ref", 1);
  EXPECT_NE(error_of([] { backend::resolve_backend_order({}); }).find("GRAFT_BACKENDS"), std::string::npos);
  setenv("GRAFT_BACKENDS", "nope", 1);
  EXPECT_NE(error_of([] { backend::resolve_backend_order({}); }).find("'nope'"), std::string::npos);
  unsetenv("GRAFT_BACKENDS");
  auto all = backend::resolve_backend_order({});
  EXPECT_EQ(all.back(), "ref");  // default order: by rank, ref last
  EXPECT_NE(std::find(all.begin(), all.end(), "reluadd"), all.end());
}

TEST(BackendOrder, SessionRejectsUnknownBackends) {
  runtime::SessionOptions options;
  options.backends = {"nonesuch"};
  std::string message = error_of([&] { runtime::Session session(chain(), options); });
  EXPECT_NE(message.find("'nonesuch'"), std::string::npos) << message;
}

TEST(BackendOrder, OnlyRefChangesNothing) {
  runtime::SessionOptions options;
  options.backends = {"ref"};
  options.fusion = false;  // partitioning alone
  auto g = chain();
  size_t nodes = g->num_nodes();
  runtime::Session session(std::move(g), options);
  EXPECT_EQ(session.graph().num_nodes(), nodes);
  EXPECT_TRUE(session.partition_report().subgraphs.empty());
  EXPECT_EQ(session.partition_report().summary_line(), "partition: ref 5 nodes");
}

TEST(ExampleBackend, RunsReluAddChainsInASession) {
  auto g = std::make_unique<Graph>();
  g->opset_imports[""] = 17;
  Node* x = g->add_input("x", ValueType::of(DType::float32, {8}));
  Node* w = g->add_constant("w", random_tensor({8}, 4));
  Node* r1 = g->add_node("Relu", {x->output(0)}, 1, "r1");
  Node* a1 = g->add_node("Add", {r1->output(0), w->output(0)}, 1, "a1");
  Node* s = g->add_node("Sigmoid", {a1->output(0)}, 1, "s");
  Node* a2 = g->add_node("Add", {s->output(0), a1->output(0)}, 1, "a2");
  Node* r2 = g->add_node("Relu", {a2->output(0)}, 1, "r2");
  Node* b = g->add_node("Add", {r2->output(0), g->add_constant("one", Tensor::scalar<float>(1))->output(0)}, 1, "b");
  g->add_output(b->output(0), "y");
  auto reference = g->clone();

  runtime::SessionOptions options;
  options.backends = {"reluadd", "ref"};
  runtime::Session session(std::move(g), options);
  const auto& report = session.partition_report();
  ASSERT_EQ(report.subgraphs.size(), 2u);
  EXPECT_EQ(report.subgraphs[0].nodes, (std::vector<std::string>{"r1", "a1"}));
  EXPECT_EQ(report.subgraphs[1].nodes, (std::vector<std::string>{"a2", "r2"}));
  bool broadcast_reported = false;
  for (const auto& p : report.nodes)
    if (p.name == "b")
      for (const auto& d : p.declined) broadcast_reported = broadcast_reported || d.detail == "no broadcasting";
  EXPECT_TRUE(broadcast_reported) << report.to_text();
  EXPECT_EQ(report.summary_line(), "partition: reluadd 4 nodes in 2 subgraphs, ref 2 nodes");

  runtime::SessionOptions ref_only;
  ref_only.backends = {"ref"};
  runtime::Session want(std::move(reference), ref_only);
  Tensor in = random_tensor({8}, 11);
  expect_close(session.run({in})[0], want.run({in})[0]);
}

TEST(ExampleBackend, DocumentationShowsTheCompiledFileVerbatim) {
  std::string doc = read_text(std::string(GRAFT_SOURCE_DIR) + "/docs/backends.md");
  std::string example = read_text(std::string(GRAFT_SOURCE_DIR) + "/examples/relu_add_backend.cc");
  ASSERT_FALSE(example.empty());
  EXPECT_NE(doc.find("```cpp\n" + example + "```"), std::string::npos)
      << "docs/backends.md must quote examples/relu_add_backend.cc verbatim";
}
