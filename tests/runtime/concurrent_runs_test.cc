// Session::run from many threads at once: 8 threads share one Session whose
// plans for new input shapes are made while the other threads run, and every
// result is bit-identical to the one a sequential run gives. The unit suite
// runs 8 x 25 runs; `make tsan` runs 8 x 500 under ThreadSanitizer
// (GRAFT_TEST_CONCURRENT_RUNS=500, docs/security.md).
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "graft/codegen/compile_cache.h"
#include "graft/runtime/session.h"
#include "support/graph_runner.h"

using namespace graft;
using namespace graft::ir;
using graft::testing::random_tensor;

namespace {

/// x [b?, t?, 8] -> MatMul(w [8, 16]) + bias -> Relu -> Reshape [b*t, 16] ->
/// Softmax -> tanh(s) * sigmoid(s) + s: a MatMul for dnnl, pointwise chains for
/// fused kernels, shape arithmetic that each input shape folds differently.
std::unique_ptr<Graph> model() {
  auto g = std::make_unique<Graph>();
  g->opset_imports[""] = 17;
  Value x = g->add_input("x", ValueType{DType::float32, true, {Dim::symbolic("b"), Dim::symbolic("t"), Dim::known(8)}})
                ->output(0);
  Value w = g->add_constant("w", random_tensor({8, 16}, 21))->output(0);
  Value bias = g->add_constant("bias", random_tensor({16}, 22))->output(0);
  Value h = g->add_node("MatMul", {x, w}, 1, "mm")->output(0);
  h = g->add_node("Relu", {g->add_node("Add", {h, bias}, 1, "add")->output(0)}, 1, "relu")->output(0);
  Value shape = g->add_node("Shape", {x}, 1, "shape")->output(0);
  Value b = g->add_node("Gather", {shape, g->add_constant("i0", Tensor::from_vector<int64_t>({0}, {1}))->output(0)}, 1,
                        "b")->output(0);
  Value t = g->add_node("Gather", {shape, g->add_constant("i1", Tensor::from_vector<int64_t>({1}, {1}))->output(0)}, 1,
                        "t")->output(0);
  Value rows = g->add_node("Mul", {b, t}, 1, "rows")->output(0);
  Node* target = g->add_node("Concat", {rows, g->add_constant("c16", Tensor::from_vector<int64_t>({16}, {1}))->output(0)},
                             1, "target");
  target->attributes.set("axis", int64_t{0});
  Value flat = g->add_node("Reshape", {h, target->output(0)}, 1, "flat")->output(0);
  Node* softmax = g->add_node("Softmax", {flat}, 1, "softmax");
  softmax->attributes.set("axis", int64_t{-1});
  Value s = softmax->output(0);
  Value tanh = g->add_node("Tanh", {s}, 1, "tanh")->output(0);
  Value sigmoid = g->add_node("Sigmoid", {s}, 1, "sigmoid")->output(0);
  Value product = g->add_node("Mul", {tanh, sigmoid}, 1, "product")->output(0);
  g->add_output(g->add_node("Add", {product, s}, 1, "y")->output(0), "y");
  return g;
}

runtime::SessionOptions options() {
  runtime::SessionOptions o;
  o.num_threads = 0;  // GRAFT_NUM_THREADS (1 under `make tsan`), else the cores
  o.max_specialized_plans = 64;  // every shape its own plan, in either session
  return o;
}

/// The input shapes the threads take turns with: each one a plan.
std::vector<Shape> shapes() {
  std::vector<Shape> out;
  for (int64_t b : {1, 2, 3})
    for (int64_t t : {1, 5, 7, 16}) out.push_back({b, t, 8});
  return out;
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
}

int runs_per_thread() {
  const char* value = std::getenv("GRAFT_TEST_CONCURRENT_RUNS");
  return value && std::atoi(value) > 0 ? std::atoi(value) : 25;
}

TEST(ConcurrentRuns, EightThreadsOnOneSessionMatchSequentialRunsBitForBit) {
  const std::vector<Shape> all_shapes = shapes();
  std::vector<Tensor> inputs, expected;
  {
    // Sequential reference, after the fused kernels compiled (a kernel that
    // is still compiling is interpreted, within the approximations' error).
    runtime::Session reference(model(), options());
    for (size_t i = 0; i < all_shapes.size(); ++i) inputs.push_back(random_tensor(all_shapes[i], 100 + i));
    for (const Tensor& x : inputs) reference.run(std::vector<Tensor>{x});
    codegen::CompileCache::global().wait_for_background_compiles();
    for (const Tensor& x : inputs) expected.push_back(reference.run(std::vector<Tensor>{x}).at(0));
  }

  runtime::Session session(model(), options());
  constexpr int kThreads = 8;
  const int runs = runs_per_thread();
  std::atomic<int> mismatches{0}, errors{0};
  std::vector<std::string> first_error(kThreads);
  std::vector<std::thread> threads;
  for (int thread = 0; thread < kThreads; ++thread) {
    threads.emplace_back([&, thread] {
      for (int run = 0; run < runs; ++run) {
        // Each thread walks the shapes from its own start: the first plans
        // of most shapes are made while other threads run other plans.
        const size_t which = static_cast<size_t>(thread * 5 + run) % inputs.size();
        try {
          std::vector<Tensor> out = session.run(std::vector<Tensor>{inputs[which]});
          if (out.size() != 1 || !same_bits(out[0], expected[which])) mismatches++;
        } catch (const std::exception& e) {
          if (errors++ == 0) first_error[static_cast<size_t>(thread)] = e.what();
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  std::string message;
  for (const std::string& e : first_error) message += e;
  EXPECT_EQ(errors.load(), 0) << message;
  EXPECT_EQ(mismatches.load(), 0) << "of " << kThreads * runs << " runs";
  EXPECT_EQ(session.num_plans(), all_shapes.size());
}

}  // namespace
