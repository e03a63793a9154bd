// Fusion inside a Session: the option, GRAFT_FUSION, and zoo models fused
// against unfused.
#include <gtest/gtest.h>

#include <cstdlib>

#include "support/scoped_env.h"

#include "graft/frontend/onnx_import.h"
#include "graft/fusion/fusion_options.h"
#include "graft/backend/backend.h"
#include "graft/runtime/session.h"
#include "graft/zoo/zoo.h"
#include "support/graph_runner.h"

using namespace graft;
using graft::testing::expect_close;
using graft::testing::random_tensor;

namespace {

size_t count_fused(const ir::Graph& g) {
  size_t n = 0;
  for (const auto& node : g.nodes()) n += node->op_type() == "graft.FusedPointwise";
  return n;
}

std::unique_ptr<ir::Graph> small_chain() {
  auto g = std::make_unique<ir::Graph>();
  g->opset_imports[""] = 17;
  ir::Node* x = g->add_input("x", ir::ValueType::of(DType::float32, {4, 4}));
  ir::Node* a = g->add_node("Relu", {x->output(0)}, 1, "a");
  ir::Node* b = g->add_node("Sigmoid", {a->output(0)}, 1, "b");
  g->add_output(b->output(0), "y");
  return g;
}

using graft::testing::ScopedEnv;

}  // namespace

/// Only the reference backend partitions, so that no other backend (oneDNN
/// takes Relu and Sigmoid) claims the pointwise nodes before fusion.
runtime::SessionOptions ref_only() {
  runtime::SessionOptions options;
  options.backends = {"ref"};
  return options;
}

TEST(FusionControl, SessionOptionWins) {
  ScopedEnv env("GRAFT_FUSION", "0");
  runtime::SessionOptions options = ref_only();
  options.fusion = true;
  runtime::Session on(small_chain(), options);
  EXPECT_EQ(count_fused(on.graph()), 1u);
  options.fusion = false;
  ScopedEnv env1("GRAFT_FUSION", "1");
  runtime::Session off(small_chain(), options);
  EXPECT_EQ(count_fused(off.graph()), 0u);
}

TEST(FusionControl, EnvironmentVariable) {
  {
    ScopedEnv env("GRAFT_FUSION", "0");
    EXPECT_EQ(count_fused(runtime::Session(small_chain(), ref_only()).graph()), 0u);
  }
  {
    ScopedEnv env("GRAFT_FUSION", "1");
    EXPECT_EQ(count_fused(runtime::Session(small_chain(), ref_only()).graph()), 1u);
  }
  {
    ScopedEnv env("GRAFT_FUSION", nullptr);
    EXPECT_TRUE(fusion::fusion_enabled(std::nullopt));  // on by default
    EXPECT_EQ(count_fused(runtime::Session(small_chain(), ref_only()).graph()), 1u);
  }
}

TEST(FusionControl, BadEnvironmentValueIsAClearError) {
  ScopedEnv env("GRAFT_FUSION", "yes");
  try {
    runtime::Session session(small_chain());
    FAIL() << "GRAFT_FUSION=yes was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("GRAFT_FUSION"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("'yes'"), std::string::npos) << e.what();
  }
}

TEST(FusionControl, FusedNodesRunInASession) {
  // Through backend `fuse` when it is built in, else on the reference kernels.
  runtime::SessionOptions options = ref_only();
  options.fusion = true;
  runtime::Session session(small_chain(), options);
  EXPECT_EQ(count_fused(session.graph()), 1u);
  Tensor x = random_tensor({4, 4}, 1);
  Tensor y = session.run({x})[0];
  options.fusion = false;
  runtime::Session plain(small_chain(), options);
  expect_close(y, plain.run({x})[0], 1e-5, 1e-6);
}

class FusionZoo : public ::testing::TestWithParam<std::string> {};

TEST_P(FusionZoo, FusedMatchesUnfused) {
#if defined(__SANITIZE_ADDRESS__)
  // The large models take minutes under the sanitizers; the Release run covers them.
  if (GetParam() == "bert" || GetParam() == "mobilenet_v2") GTEST_SKIP() << GetParam() << " is too slow under ASan";
#endif
  std::string bytes = zoo::build_zoo_model(GetParam(), 3);
  runtime::SessionOptions options = ref_only();
  options.num_threads = 2;
  options.fusion = true;
  runtime::Session fused(frontend::load_onnx_from_memory(bytes), options);
  options.fusion = false;
  runtime::Session plain(frontend::load_onnx_from_memory(bytes), options);
  EXPECT_EQ(count_fused(plain.graph()), 0u);
  if (GetParam() == "bert") {  // GELU and the attention scaling are pointwise chains
    EXPECT_GT(count_fused(fused.graph()), 0u) << "nothing fused in " << GetParam();
  }
  if (GetParam() == "gru_cell") {
    EXPECT_EQ(count_fused(fused.graph()), 2u) << "one kernel per step's gate arithmetic";
  }
  std::vector<Tensor> inputs;
  for (const auto& info : plain.inputs()) {
    Shape shape;
    for (const ir::Dim& d : info.type.dims) shape.push_back(d.is_known() ? d.value : 1);
    if (info.type.dtype == DType::int64) {
      Tensor t(DType::int64, shape);
      for (int64_t i = 0; i < t.numel(); ++i) t.data<int64_t>()[i] = (i * 7919) % 1000;
      inputs.push_back(t);
    } else {
      inputs.push_back(random_tensor(shape, 17));
    }
  }
  auto got = fused.run(inputs);
  auto want = plain.run(inputs);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) expect_close(got[i], want[i], 1e-4, 1e-5);
}

INSTANTIATE_TEST_SUITE_P(Models, FusionZoo, ::testing::Values("mlp", "gru", "gru_cell", "bert", "mobilenet_v2"),
                         [](const auto& info) { return info.param; });

// The partition report shows fused nodes like any backend's: members of a
// graft.FusedPointwise node move from ref to fuse, in a subgraph named after
// it, and the summary counts them (with fuse in the order or not).
TEST(FusionReport, FusedNodesAppearUnderFuse) {
  for (std::vector<std::string> backends : {std::vector<std::string>{"ref"}, std::vector<std::string>{"fuse", "ref"}}) {
    runtime::SessionOptions options;
    options.backends = backends;
    options.fusion = true;
    runtime::Session session(small_chain(), options);
    const partition::PartitionReport& report = session.partition_report();
    std::map<std::string, std::string> backend_of;
    for (const auto& n : report.nodes) backend_of[n.name] = n.backend;
    EXPECT_EQ(backend_of["a"], "fuse");
    EXPECT_EQ(backend_of["b"], "fuse");
    auto per_backend = report.nodes_per_backend();
    EXPECT_EQ(per_backend["fuse"], 2u);
    EXPECT_EQ(per_backend["ref"], 0u);
    EXPECT_NE(report.summary_line().find("fuse 2 nodes in 1 subgraph"), std::string::npos) << report.summary_line();
    ASSERT_FALSE(report.subgraphs.empty());
    EXPECT_EQ(report.subgraphs.back().backend, "fuse");
    EXPECT_EQ(report.subgraphs.back().size, 2u);
    EXPECT_NE(report.to_text().find("fuse: 2 nodes in 1 subgraphs (sizes 2) [claimed after partitioning]"), std::string::npos);

    options.fusion = false;
    runtime::Session unfused(small_chain(), options);
    EXPECT_EQ(unfused.partition_report().nodes_per_backend()["ref"], 2u);
  }
}
