#include "graft/runtime/profile_report.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>

#include "support/graph_runner.h"

using namespace graft;
using namespace graft::ir;

namespace {

backend::NodeTiming timing(const std::string& name, const std::string& op, const std::string& backend, double us,
                           std::chrono::steady_clock::time_point start) {
  return {name, op, backend, us, start};
}

/// Two runs of a three-node plan: conv (dnnl), relu (ref), unnamed add (ref).
std::vector<runtime::ProfiledRun> two_runs() {
  auto t0 = std::chrono::steady_clock::now();
  std::vector<runtime::ProfiledRun> runs;
  for (int r = 0; r < 2; ++r) {
    auto start = t0 + std::chrono::milliseconds(10 * r);
    double scale = r == 0 ? 1.0 : 3.0;
    runs.push_back({start,
                    1000.0,
                    {timing("conv", "Conv", "dnnl", 300 * scale, start),
                     timing("relu", "Relu", "ref", 20 * scale, start + std::chrono::microseconds(400)),
                     timing("", "Add", "ref", 50 * scale, start + std::chrono::microseconds(500))}});
  }
  return runs;
}

std::unique_ptr<Graph> relu_chain() {
  auto g = std::make_unique<Graph>();
  g->opset_imports[""] = 17;
  Node* x = g->add_input("x", ValueType::of(DType::float32, {4, 8}));
  Node* r = g->add_node("Relu", {x->output(0)}, 1, "r");
  Node* n = g->add_node("Neg", {r->output(0)}, 1, "n");
  Node* a = g->add_node("Add", {r->output(0), n->output(0)}, 1, "a");
  g->add_output(a->output(0), "y");
  return g;
}

}  // namespace

TEST(ProfileReport, SummarizesPerRunMeansSortedByTime) {
  auto runs = two_runs();
  runtime::ProfileSummary s = runtime::summarize_profile(runs);
  EXPECT_EQ(s.runs, 2u);
  EXPECT_EQ(s.nodes_per_run, 3u);
  EXPECT_DOUBLE_EQ(s.wall_microseconds, 1000.0);
  EXPECT_DOUBLE_EQ(s.node_microseconds, (370.0 + 1110.0) / 2);
  ASSERT_EQ(s.by_node.size(), 3u);
  EXPECT_EQ(s.by_node[0].name, "conv");
  EXPECT_DOUBLE_EQ(s.by_node[0].microseconds, 600.0);
  EXPECT_EQ(s.by_node[0].count, 1);
  EXPECT_EQ(s.by_node[1].name, "#2");  // unnamed nodes are named by position
  EXPECT_EQ(s.by_node[1].op_type, "Add");
  ASSERT_EQ(s.by_backend.size(), 2u);
  EXPECT_EQ(s.by_backend[0].name, "dnnl");
  EXPECT_EQ(s.by_backend[1].name, "ref");
  EXPECT_EQ(s.by_backend[1].count, 2);
  EXPECT_DOUBLE_EQ(s.by_backend[1].microseconds, 140.0);
  ASSERT_EQ(s.by_op_type.size(), 3u);
  EXPECT_EQ(s.by_op_type[2].name, "Relu");

  std::string text = runtime::format_profile(s, 2);
  EXPECT_NE(text.find("profile: 2 runs, 3 nodes per run"), std::string::npos) << text;
  EXPECT_NE(text.find("by backend:"), std::string::npos) << text;
  EXPECT_NE(text.find("by op type:"), std::string::npos) << text;
  EXPECT_NE(text.find("slowest nodes (2 of 3)"), std::string::npos) << text;
  EXPECT_NE(text.find("0.600"), std::string::npos) << text;
  EXPECT_EQ(text.find("relu "), std::string::npos) << "the third node is beyond top 2: " << text;
}

TEST(ProfileReport, RefusesAnEmptyRunList) {
  EXPECT_THROW(runtime::summarize_profile({}), Error);
}

TEST(ProfileReport, ChromeTraceHasOneCompleteEventPerNodeExecution) {
  auto runs = two_runs();
  nlohmann::json trace = nlohmann::json::parse(runtime::chrome_trace_json(runs));
  ASSERT_TRUE(trace.contains("traceEvents"));
  int nodes = 0, run_events = 0;
  std::set<int> node_rows;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] == "M") continue;
    EXPECT_EQ(e["ph"], "X");
    EXPECT_GE(e["ts"].get<double>(), 0.0);
    EXPECT_GE(e["dur"].get<double>(), 0.0);
    if (e["cat"] == "node") {
      ++nodes;
      node_rows.insert(e["tid"].get<int>());
      EXPECT_TRUE(e["args"].contains("backend"));
    } else if (e["cat"] == "run") {
      ++run_events;
      EXPECT_EQ(e["tid"], 0);
    }
  }
  EXPECT_EQ(nodes, 6);
  EXPECT_EQ(run_events, 2);
  EXPECT_EQ(node_rows.size(), 2u) << "one row per backend";
  // The second run starts 10 ms after the first: its conv is at ts 10000.
  bool found = false;
  for (const auto& e : trace["traceEvents"])
    if (e["name"] == "Conv" && e["args"]["run"] == 1) found = std::abs(e["ts"].get<double>() - 10000.0) < 1e-6;
  EXPECT_TRUE(found);
}

TEST(ProfileReport, SessionRecordsEveryNodeInOrder) {
  runtime::SessionOptions options;
  options.passes = {"verify", "infer"};
  options.profile = true;
  options.num_threads = 1;
  options.backends = {"ref"};  // one timing per node: no backend subgraphs,
  options.fusion = false;      // no fused nodes
  runtime::Session session(relu_chain(), options);
  backend::RunStats stats;
  session.run({graft::testing::random_tensor({4, 8}, 3)}, &stats);
  ASSERT_EQ(stats.timings.size(), 3u);
  EXPECT_EQ(stats.timings[0].op_type, "Relu");
  EXPECT_EQ(stats.timings[2].op_type, "Add");
  for (size_t i = 0; i < stats.timings.size(); ++i) {
    EXPECT_EQ(stats.timings[i].backend, "ref");
    if (i > 0) {
      EXPECT_GE(stats.timings[i].start, stats.timings[i - 1].start);
      EXPECT_GE(stats.timings[i].start - stats.timings[i - 1].start,
                std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                    std::chrono::duration<double, std::micro>(stats.timings[i - 1].microseconds * 0.999)));
    }
  }
}
