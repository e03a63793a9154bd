// The compiler driver below the Session: prepare() runs the passes and
// partitions (backends in order, then their claims after partitioning),
// specialize() and generic_plan() compile plans; the plans run with the
// backend component's executor and compute what the reference kernels compute.
#include <gtest/gtest.h>

#include "graft/backend/backend.h"
#include "graft/backend/executor.h"
#include "graft/compiler/compiler.h"
#include "graft/ops/type_inference.h"
#include "support/graph_runner.h"

using namespace graft;
using graft::testing::expect_close;
using graft::testing::random_tensor;

namespace {

/// x [rows, 8] -> MatMul w [8, 8] -> Add b -> Tanh -> Mul 0.5 -> Sigmoid -> y
std::unique_ptr<ir::Graph> dense_block(ir::Dim rows) {
  auto g = std::make_unique<ir::Graph>();
  g->opset_imports[""] = 17;
  ir::ValueType x_type;
  x_type.dtype = DType::float32;
  x_type.has_rank = true;
  x_type.dims = {rows, ir::Dim::known(8)};
  ir::Value x = g->add_input("x", x_type)->output(0);
  ir::Value w = g->add_constant("w", random_tensor({8, 8}, 1))->output(0);
  ir::Value b = g->add_constant("b", random_tensor({8}, 2))->output(0);
  ir::Value half = g->add_constant("half", Tensor::scalar<float>(0.5f))->output(0);
  ir::Value v = g->add_node(ir::OpId::MatMul, {x, w}, 1, "matmul")->output(0);
  v = g->add_node(ir::OpId::Add, {v, b}, 1, "add")->output(0);
  v = g->add_node(ir::OpId::Tanh, {v}, 1, "tanh")->output(0);
  v = g->add_node(ir::OpId::Mul, {v, half}, 1, "scale")->output(0);
  v = g->add_node(ir::OpId::Sigmoid, {v}, 1, "sigmoid")->output(0);
  g->add_output(v, "y");
  ops::infer_types(*g);
  return g;
}

std::vector<Tensor> run_plan(const compiler::Plan& plan, const std::vector<Tensor>& inputs) {
  backend::Executor executor(*plan.graph, plan.modules);
  backend::BufferPool pool;
  backend::RunOptions options;
  return executor.run(inputs, pool, options);
}

size_t count_nodes(const ir::Graph& g, ir::OpId op) {
  size_t n = 0;
  for (const auto& node : g.nodes()) n += node->op() == op;
  return n;
}

}  // namespace

TEST(Compiler, PreparedPlanRunsAsTheReference) {
  auto model = dense_block(ir::Dim::known(4));
  compiler::CompileOptions options;
  options.backends = {"ref"};
  options.fusion = true;
  compiler::PreparedGraph prepared = compiler::prepare(model->clone(), options);
  ASSERT_TRUE(prepared.graph);
  EXPECT_FALSE(prepared.unpartitioned);  // fixed shapes: partitioned once
  // The pointwise chain after the MatMul was claimed by `fuse` after partitioning.
  EXPECT_EQ(count_nodes(*prepared.graph, ir::OpId::FusedPointwise), 1u);
  EXPECT_EQ(prepared.report.nodes_per_backend()["fuse"], 4u);
  EXPECT_EQ(prepared.report.fallback, backend::fallback_backend().name());
  const std::string text = prepared.report.to_text();
  EXPECT_NE(text.find("fuse: 4 nodes in 1 subgraphs (sizes 4) [claimed after partitioning]"), std::string::npos) << text;
  EXPECT_NE(text.find("ref: 1 nodes\n"), std::string::npos) << text;  // the MatMul; the fallback claims nothing itself

  compiler::Plan plan = compiler::specialize(prepared, {model->inputs()[0]->output_types[0]}, options);
  EXPECT_FALSE(plan.generic);
  EXPECT_EQ(plan.num_compiles, 1u);  // the fused kernel
  EXPECT_TRUE(plan.fallbacks.empty());
  Tensor x = random_tensor({4, 8}, 3);
  std::vector<Tensor> got = run_plan(plan, {x});
  std::vector<Tensor> want = graft::testing::run_graph(*model, {x});
  expect_close(got[0], want[0], 1e-5, 1e-6);
}

TEST(Compiler, FusionOffLeavesThePointwiseChainToTheFallback) {
  auto model = dense_block(ir::Dim::known(2));
  compiler::CompileOptions options;
  options.backends = {"ref"};
  options.fusion = false;
  compiler::PreparedGraph prepared = compiler::prepare(model->clone(), options);
  EXPECT_EQ(count_nodes(*prepared.graph, ir::OpId::FusedPointwise), 0u);
  EXPECT_EQ(prepared.report.nodes_per_backend()["ref"], 5u);
}

TEST(Compiler, SymbolicInputsArePartitionedAgainPerPlan) {
  auto model = dense_block(ir::Dim::symbolic("rows"));
  compiler::CompileOptions options;
  options.backends = {"ref"};
  compiler::PreparedGraph prepared = compiler::prepare(model->clone(), options);
  ASSERT_TRUE(prepared.unpartitioned);
  compiler::Plan plan =
      compiler::specialize(prepared, {ir::ValueType::of(DType::float32, {3, 8})}, options);
  ASSERT_TRUE(plan.report.has_value());  // the plan's own partition, with concrete shapes
  EXPECT_EQ(plan.graph->inputs()[0]->output_types[0].to_string(), "float32[3,8]");
  Tensor x = random_tensor({3, 8}, 4);
  expect_close(run_plan(plan, {x})[0], graft::testing::run_graph(*model, {x})[0], 1e-5, 1e-6);

  compiler::Plan generic = compiler::generic_plan(prepared, {DType::float32}, options);
  EXPECT_TRUE(generic.generic);
  Tensor x5 = random_tensor({5, 8}, 5);
  expect_close(run_plan(generic, {x5})[0], graft::testing::run_graph(*model, {x5})[0], 1e-5, 1e-6);
}

TEST(Compiler, UnknownBackendIsAnErrorNamingTheAvailableOnes) {
  auto model = dense_block(ir::Dim::known(2));
  compiler::CompileOptions options;
  options.backends = {"tpu"};
  try {
    compiler::prepare(model->clone(), options);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("'tpu'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("ref"), std::string::npos) << e.what();
  }
}

TEST(BackendRegistry, OneBackendRunsTheRestAndBackendsSayWhatTheyTake) {
  EXPECT_EQ(backend::fallback_backend().name(), "ref");
  EXPECT_EQ(backend::get_backend("ref").property(), nullptr);   // takes nothing through the partitioner
  EXPECT_EQ(backend::get_backend("fuse").property(), nullptr);  // claims after partitioning instead
  for (const backend::Backend* b : backend::all_backends())
    EXPECT_EQ(b->runs_the_rest(), b == &backend::fallback_backend()) << b->name();
}
