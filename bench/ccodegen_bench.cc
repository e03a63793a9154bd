// ccodegen against ref (and fuse, when that backend is registered) on the
// pointwise and softmax subgraphs of the zoo BERT encoder, at its shapes
// (batch 1, sequence 128, hidden 768, FFN 3072, 12 heads):
//
//   1. FFN bias Add + erf GELU (Div, Erf, Add, Mul, Mul)  on [1,128,3072]
//   2. attention scores / sqrt(64) + Softmax(axis -1)      on [1,12,128,128]
//   3. residual Add + bias Add                             on [1,128,768]
//
//   ccodegen_bench [--repeat R] [--threads T]
//
// Each backend compiles the same body (compile time printed once), then runs
// it R times (default 200) after 5 warm-up runs; the median is printed.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <string>

#include "graft/core/parallel.h"
#include "graft/ops/type_inference.h"
#include "graft/backend/backend.h"

using namespace graft;
using Clock = std::chrono::steady_clock;

namespace {

double ms_since(Clock::time_point start) { return std::chrono::duration<double, std::milli>(Clock::now() - start).count(); }

Tensor random_tensor(const Shape& shape, uint64_t seed) {
  Tensor t(DType::float32, shape);
  std::mt19937_64 random(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = dist(random);
  return t;
}

struct Case {
  std::string name;
  std::unique_ptr<ir::Graph> body;
  std::vector<Tensor> inputs;
};

ir::Value scalar(ir::Graph& g, float v) { return g.add_constant("c" + std::to_string(g.num_nodes()), Tensor::scalar(v))->output(0); }

Case gelu_case() {
  Case c{"FFN bias + GELU [1,128,3072]", std::make_unique<ir::Graph>(), {}};
  ir::Graph& g = *c.body;
  g.opset_imports[""] = 17;
  ir::Value x = g.add_input("x", ir::ValueType::of(DType::float32, {1, 128, 3072}))->output(0);
  ir::Value bias = g.add_constant("bias", random_tensor({3072}, 2))->output(0);
  ir::Value h = g.add_node("Add", {x, bias})->output(0);
  ir::Value scaled = g.add_node("Div", {h, scalar(g, 1.41421354f)})->output(0);
  ir::Value erf = g.add_node("Erf", {scaled})->output(0);
  ir::Value one_plus = g.add_node("Add", {erf, scalar(g, 1.0f)})->output(0);
  ir::Value half = g.add_node("Mul", {h, scalar(g, 0.5f)})->output(0);
  g.add_output(g.add_node("Mul", {half, one_plus})->output(0), "y");
  c.inputs = {random_tensor({1, 128, 3072}, 1)};
  return c;
}

Case softmax_case() {
  Case c{"scores/8 + Softmax [1,12,128,128]", std::make_unique<ir::Graph>(), {}};
  ir::Graph& g = *c.body;
  g.opset_imports[""] = 17;
  ir::Value x = g.add_input("scores", ir::ValueType::of(DType::float32, {1, 12, 128, 128}))->output(0);
  ir::Value scaled = g.add_node("Div", {x, scalar(g, 8.0f)})->output(0);
  ir::Node* softmax = g.add_node("Softmax", {scaled});
  softmax->attributes.set("axis", int64_t{-1});
  g.add_output(softmax->output(0), "p");
  c.inputs = {random_tensor({1, 12, 128, 128}, 3)};
  return c;
}

Case residual_case() {
  Case c{"bias + residual Add [1,128,768]", std::make_unique<ir::Graph>(), {}};
  ir::Graph& g = *c.body;
  g.opset_imports[""] = 17;
  ir::Value x = g.add_input("dense", ir::ValueType::of(DType::float32, {1, 128, 768}))->output(0);
  ir::Value r = g.add_input("residual", ir::ValueType::of(DType::float32, {1, 128, 768}))->output(0);
  ir::Value bias = g.add_constant("bias", random_tensor({768}, 4))->output(0);
  g.add_output(g.add_node("Add", {g.add_node("Add", {x, bias})->output(0), r})->output(0), "y");
  c.inputs = {random_tensor({1, 128, 768}, 5), random_tensor({1, 128, 768}, 6)};
  return c;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int repeat = 200, threads = default_num_threads();
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--repeat")) repeat = std::max(1, std::atoi(argv[i + 1]));
    if (!std::strcmp(argv[i], "--threads")) threads = std::max(1, std::atoi(argv[i + 1]));
  }
  ScopedNumThreads scoped(threads);
  std::printf("threads %d, %d runs each (median)\n", threads, repeat);
  std::vector<Case> cases;
  cases.push_back(gelu_case());
  cases.push_back(softmax_case());
  cases.push_back(residual_case());
  for (Case& c : cases) {
    ops::infer_types(*c.body);
    std::printf("%s\n", c.name.c_str());
    for (const char* name : {"ref", "fuse", "ccodegen"}) {
      const backend::Backend* backend = backend::find_backend(name);
      if (!backend) continue;
      try {
        backend::CompileOptions options;
        options.num_threads = threads;
        auto start = Clock::now();
        auto module = backend->compile(*c.body, options);
        double compile_ms = ms_since(start);
        backend::BufferPool pool;
        backend::ModuleRunContext context{pool, threads, nullptr};
        for (int w = 0; w < 5; ++w) module->run(c.inputs, context);
        std::vector<double> times;
        for (int r = 0; r < repeat; ++r) {
          auto t0 = Clock::now();
          module->run(c.inputs, context);
          times.push_back(ms_since(t0));
        }
        std::printf("  %-9s compile %8.2f ms   run %8.4f ms\n", name, compile_ms, median(times));
      } catch (const Error& e) {
        std::printf("  %-9s not applicable: %s\n", name, e.what());
      }
    }
  }
  return 0;
}
