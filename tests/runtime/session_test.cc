#include <gtest/gtest.h>

#include <thread>

#include "support/graph_runner.h"

using namespace graft;
using namespace graft::ir;
using graft::testing::expect_close;
using graft::testing::random_tensor;

namespace {
std::unique_ptr<Graph> relu_add_graph(ValueType input_type) {
  auto g = std::make_unique<Graph>();
  g->opset_imports[""] = 17;
  Node* x = g->add_input("x", input_type);
  Node* r = g->add_node("Relu", {x->output(0)}, 1, "r");
  Node* n = g->add_node("Neg", {x->output(0)}, 1, "n");
  Node* a = g->add_node("Add", {r->output(0), n->output(0)}, 1, "a");
  Node* e = g->add_node("Exp", {a->output(0)}, 1, "e");
  g->add_output(e->output(0), "y");
  return g;
}

Tensor expected(const Tensor& x) {
  Tensor y(DType::float32, x.shape());
  for (int64_t i = 0; i < x.numel(); ++i) {
    float v = x.data<float>()[i];
    y.data<float>()[i] = std::exp(std::max(v, 0.0f) - v);
  }
  return y;
}
}  // namespace

TEST(Session, RunsAndValidatesInputs) {
  runtime::Session s(relu_add_graph(ValueType::of(DType::float32, {2, 3})));
  Tensor x = random_tensor({2, 3}, 7);
  expect_close(s.run({x})[0], expected(x));
  try {
    s.run({random_tensor({3, 2}, 1)});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("'x'"), std::string::npos) << e.what();
  }
  EXPECT_THROW(s.run({Tensor::from_vector<int64_t>({1, 2, 3, 4, 5, 6}, {2, 3})}), Error);
  EXPECT_THROW(s.run(std::vector<Tensor>{}), Error);
  EXPECT_THROW(s.run({random_tensor({2, 3, 1}, 1)}), Error);
}

TEST(Session, PlansPerShapeSignature) {
  runtime::Session s(relu_add_graph(ValueType{DType::float32, true, {Dim::symbolic("batch"), Dim::known(3)}}));
  for (int64_t batch : {1, 4, 1, 4, 9}) {
    Tensor x = random_tensor({batch, 3}, static_cast<uint64_t>(batch));
    expect_close(s.run({x})[0], expected(x));
  }
  EXPECT_EQ(s.num_plans(), 3u);
}

TEST(Session, ConcurrentRunsAreIndependent) {
  runtime::Session s(relu_add_graph(ValueType{DType::float32, true, {Dim::symbolic("n")}}));
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        Tensor x = random_tensor({static_cast<int64_t>(100 + t * 10 + i % 3)}, static_cast<uint64_t>(t * 1000 + i));
        Tensor y = s.run({x})[0];
        Tensor want = expected(x);
        for (int64_t k = 0; k < y.numel(); ++k)
          if (std::abs(y.data<float>()[k] - want.data<float>()[k]) > 1e-5f) ++failures;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
}

TEST(Session, ReusesBuffersAndReportsPeak) {
  // A chain of 8 elementwise ops on 1 MiB: the first allocates (the caller's
  // input must not be overwritten), the other seven run in place.
  auto g = std::make_unique<Graph>();
  g->opset_imports[""] = 17;
  Node* x = g->add_input("x", ValueType::of(DType::float32, {262144}));
  Value v = x->output(0);
  for (int i = 0; i < 8; ++i) v = g->add_node(i % 2 ? "Neg" : "Exp", {v}, 1, "op" + std::to_string(i))->output(0);
  g->add_output(v, "y");
  runtime::SessionOptions options;
  options.fusion = false;      // the executor's in-place reuse, not one fused kernel
  options.backends = {"ref"};  // nor a backend's subgraph
  runtime::Session s(std::move(g), options);
  backend::RunStats stats;
  s.run({random_tensor({262144}, 3)}, &stats);
  EXPECT_EQ(stats.memory.allocations, 1u);
  EXPECT_EQ(stats.memory.total_allocated_bytes, 1048576u);
  EXPECT_EQ(stats.memory.peak_bytes, 1048576u);
}

TEST(Session, RejectsBadThreadCount) {
  runtime::SessionOptions o;
  o.num_threads = -3;
  EXPECT_THROW(runtime::Session(relu_add_graph(ValueType::of(DType::float32, {2})), o), Error);
}
