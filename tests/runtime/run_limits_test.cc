// Run limits: a cancellation flag set from another thread, a deadline, and
// the per-run memory limit all end a run with a clear error (cancelled,
// resource_exhausted) naming where it stopped, and the session runs again.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <thread>

#include "graft/core/error.h"
#include "graft/ops/type_inference.h"
#include "graft/runtime/session.h"
#include "support/graph_runner.h"
#include "support/scoped_env.h"

namespace graft::runtime {
namespace {

using namespace std::chrono_literals;

/// x[rows, 1024] -> `length` Sin nodes in a chain -> y: long enough on the
/// reference kernels to be stopped half-way.
std::unique_ptr<ir::Graph> sin_chain(int length, ir::Dim rows) {
  auto g = std::make_unique<ir::Graph>();
  g->opset_imports[""] = 17;
  ir::ValueType type;
  type.dtype = DType::float32;
  type.has_rank = true;
  type.dims = {rows, ir::Dim::known(1024)};
  ir::Value v = g->add_input("x", type)->output(0);
  for (int i = 0; i < length; ++i) v = g->add_node("Sin", {v}, 1, "sin" + std::to_string(i))->output(0);
  g->add_output(v, "y");
  ops::infer_types(*g);
  return g;
}

SessionOptions reference_only() {
  SessionOptions options;
  options.backends = {"ref"};
  options.fusion = false;
  options.num_threads = 2;
  return options;
}

TEST(RunLimits, ACancelFlagSetFromAnotherThreadStopsTheRunAndTheSessionRunsAgain) {
  Session session(sin_chain(400, ir::Dim::known(256)), reference_only());
  std::vector<Tensor> inputs{testing::random_tensor({256, 1024}, 1)};
  std::atomic<bool> cancel{false};
  backend::RunLimits limits;
  limits.cancel = &cancel;
  std::thread canceller([&] {
    std::this_thread::sleep_for(20ms);
    cancel = true;
  });
  auto start = std::chrono::steady_clock::now();
  try {
    session.run(inputs, limits);
    ADD_FAILURE() << "the run was not cancelled";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::cancelled);
    EXPECT_NE(std::string(e.what()).find("run cancelled before node 'sin"), std::string::npos) << e.what();
  }
  canceller.join();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  cancel = false;
  Session small(sin_chain(3, ir::Dim::known(256)), reference_only());
  EXPECT_EQ(small.run(inputs, limits).size(), 1u);
  EXPECT_EQ(session.run({testing::random_tensor({256, 1024}, 2)}, limits).size(), 1u);  // usable again
}

TEST(RunLimits, APassedDeadlineStopsTheRun) {
  Session session(sin_chain(200, ir::Dim::known(64)), reference_only());
  std::vector<Tensor> inputs{testing::random_tensor({64, 1024}, 3)};
  backend::RunLimits limits;
  limits.deadline = std::chrono::steady_clock::now() - 1ms;
  try {
    session.run(inputs, limits);
    ADD_FAILURE() << "the run passed its deadline without an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::cancelled);
    EXPECT_NE(std::string(e.what()).find("deadline"), std::string::npos) << e.what();
  }
  limits.deadline = std::chrono::steady_clock::now() + 60s;
  EXPECT_EQ(session.run(inputs, limits).size(), 1u);
}

/// y = x + 1 repeated `trips` times by a Loop whose trip count is an input.
std::unique_ptr<ir::Graph> counting_loop() {
  auto body = std::make_unique<ir::Graph>();
  body->opset_imports[""] = 17;
  body->add_input("i", ir::ValueType::of(DType::int64, {}));
  ir::Value cond = body->add_input("cond_in", ir::ValueType::of(DType::boolean, {}))->output(0);
  ir::Value acc = body->add_input("acc_in", ir::ValueType::of(DType::float32, {1}))->output(0);
  ir::Value one = body->add_constant("one", Tensor::from_vector<float>({1.0f}, {1}))->output(0);
  body->add_output(body->add_node("Identity", {cond}, 1, "keep")->output(0), "cond_out");
  body->add_output(body->add_node("Add", {acc, one}, 1, "step")->output(0), "acc_out");
  auto g = std::make_unique<ir::Graph>();
  g->opset_imports[""] = 17;
  ir::Value trips = g->add_input("trips", ir::ValueType::of(DType::int64, {}))->output(0);
  ir::Value x = g->add_input("x", ir::ValueType::of(DType::float32, {1}))->output(0);
  Tensor true_scalar(DType::boolean, {});
  true_scalar.data<bool>()[0] = true;
  ir::Value yes = g->add_constant("yes", true_scalar)->output(0);
  ir::Node* loop = g->add_node("Loop", {trips, yes, x}, 1, "loop");
  loop->attributes.set("body", std::shared_ptr<ir::Graph>(std::move(body)));
  g->add_output(loop->output(0), "y");
  ops::infer_types(*g);
  return g;
}

TEST(RunLimits, ALoopOfTwoToTheSixtyTwoTripsStopsAtTheDeadlineNamingTheLoop) {
  Session session(counting_loop(), reference_only());
  Tensor x = Tensor::from_vector<float>({0.0f}, {1});
  backend::RunLimits limits;
  limits.deadline = std::chrono::steady_clock::now() + 200ms;
  auto start = std::chrono::steady_clock::now();
  try {
    session.run({Tensor::scalar<int64_t>(int64_t{1} << 62), x}, limits);
    ADD_FAILURE() << "2^62 iterations ended";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::cancelled);
    EXPECT_NE(std::string(e.what()).find("in the body of node 'loop' (Loop)"), std::string::npos) << e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, 30s);
  limits.deadline = std::chrono::steady_clock::now() + 60s;
  std::vector<Tensor> y = session.run({Tensor::scalar<int64_t>(3), x}, limits);
  EXPECT_EQ(y.at(0).data<float>()[0], 3.0f);
}

/// One reference Conv of about 5 GFLOP (a second or more on the reference
/// kernels): a run stopped inside it names it.
std::unique_ptr<ir::Graph> one_big_conv() {
  auto g = std::make_unique<ir::Graph>();
  g->opset_imports[""] = 17;
  ir::Value x = g->add_input("x", ir::ValueType::of(DType::float32, {2, 64, 192, 192}))->output(0);
  ir::Value w = g->add_constant("w", testing::random_tensor({64, 64, 3, 3}, 9))->output(0);
  ir::Node* conv = g->add_node("Conv", {x, w}, 1, "conv");
  conv->attributes.set("pads", std::vector<int64_t>{1, 1, 1, 1});
  g->add_output(conv->output(0), "y");
  ops::infer_types(*g);
  return g;
}

TEST(RunLimits, ADeadlinePassingInsideALongKernelStopsItThere) {
  Session session(one_big_conv(), reference_only());
  std::vector<Tensor> inputs{testing::random_tensor({2, 64, 192, 192}, 4)};
  session.run(inputs);  // plans, so that the limited run starts at the Conv at once
  const auto full_start = std::chrono::steady_clock::now();
  session.run(inputs);
  const auto full = std::chrono::steady_clock::now() - full_start;
  backend::RunLimits limits;
  const auto start = std::chrono::steady_clock::now();
  limits.deadline = start + full / 20;
  try {
    session.run(inputs, limits);
    ADD_FAILURE() << "the run passed its deadline without an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::cancelled);
    EXPECT_NE(std::string(e.what()).find("run passed its deadline inside node 'conv' (Conv)"), std::string::npos)
        << e.what();
  }
  limits.deadline = std::chrono::steady_clock::now() + 600s;
  EXPECT_EQ(session.run(inputs, limits).size(), 1u);  // usable again
}

TEST(RunLimits, AnAllocationPastTheMemoryLimitNamesTheNodeAndTheSessionRunsAgain) {
  SessionOptions options = reference_only();
  options.max_memory = 1u << 20;  // 1 MiB of intermediates
  Session session(sin_chain(3, ir::Dim::symbolic("rows")), options);
  EXPECT_EQ(session.run({testing::random_tensor({64, 1024}, 4)}).size(), 1u);  // 256 KiB values fit
  try {
    session.run({testing::random_tensor({1024, 1024}, 5)});  // 4 MiB values do not
    ADD_FAILURE() << "4 MiB values fit a 1 MiB limit";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::resource_exhausted);
    std::string message = e.what();
    EXPECT_NE(message.find("node 'sin0' (Sin)"), std::string::npos) << message;
    EXPECT_NE(message.find("float32[1024,1024]"), std::string::npos) << message;
    EXPECT_NE(message.find("memory limit of 1 MiB"), std::string::npos) << message;
  }
  EXPECT_EQ(session.run({testing::random_tensor({64, 1024}, 6)}).size(), 1u);
}

TEST(RunLimits, MemorySizesParseAndNonsenseIsRefused) {
  EXPECT_EQ(parse_byte_size("4096", "x"), 4096u);
  EXPECT_EQ(parse_byte_size("512M", "x"), 512ull << 20);
  EXPECT_EQ(parse_byte_size("2G", "x"), 2ull << 30);
  EXPECT_EQ(parse_byte_size("1.5KiB", "x"), 1536u);
  EXPECT_EQ(parse_byte_size("3gb", "x"), 3ull << 30);
  for (const char* bad : {"", "abc", "-1", "12Q", "1e30", "nan"})
    EXPECT_THROW(parse_byte_size(bad, "--max-memory"), Error) << bad;
  EXPECT_EQ(max_memory(uint64_t{77}), 77u);
  {
    testing::ScopedEnv env("GRAFT_MAX_MEMORY", "lots");
    try {
      Session session(sin_chain(1, ir::Dim::known(4)), reference_only());
      ADD_FAILURE() << "GRAFT_MAX_MEMORY=lots was taken";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::invalid_argument);
      EXPECT_NE(std::string(e.what()).find("GRAFT_MAX_MEMORY 'lots'"), std::string::npos) << e.what();
    }
  }
  EXPECT_GT(max_memory(std::nullopt), 0u);  // the machine's memory
}

}  // namespace
}  // namespace graft::runtime
