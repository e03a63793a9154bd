// Fused pointwise kernels: bandwidth of fused chains against a plain copy
// loop in the same run, speedup over the unfused graph, JIT compile latency
// (cold, and loaded from the disk cache).
//
//   ./build/bench/codegen_bench [elements=16777216] [threads=2]
#include <unistd.h>

#include <ctime>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "graft/codegen/compile_cache.h"
#include "graft/codegen/interpreter.h"
#include "graft/codegen/op_expressions.h"
#include "graft/core/parallel.h"
#include "graft/ir/type_inference.h"
#include "graft/runtime/buffer_pool.h"
#include "graft/runtime/session.h"

using namespace graft;

namespace {

/// CPU seconds of the calling thread (JIT compiles run there; unlike wall
/// time, this does not depend on what else the machine is doing).
double thread_cpu_seconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

double seconds_of(const std::function<void()>& fn) {
  auto start = std::chrono::steady_clock::now();
  fn();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

/// Median time of `repeats` runs after one warm-up.
double median_seconds(int repeats, const std::function<void()>& fn) {
  fn();
  std::vector<double> times;
  for (int i = 0; i < repeats; ++i) times.push_back(seconds_of(fn));
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

/// A chain of k cheap pointwise ops on one float32 input of n elements:
/// Mul, Add, Max, Min with scalar constants, in turn. `salt` varies the
/// constants so that each salt gives a distinct kernel.
std::unique_ptr<ir::Graph> chain(int k, int64_t n, double salt = 0) {
  auto g = std::make_unique<ir::Graph>();
  g->opset_imports[""] = 17;
  ir::Value v = g->add_input("x", ir::ValueType::of(DType::float32, {n}))->output(0);
  static const char* ops[] = {"Mul", "Add", "Max", "Min"};
  static const float constants[] = {0.999f, 0.001f, -1.0f, 1.0f};
  for (int i = 0; i < k; ++i) {
    float c = constants[i % 4] + static_cast<float>(salt) * 1e-3f;
    ir::Value constant = g->add_constant("c" + std::to_string(i), Tensor::scalar<float>(c))->output(0);
    v = g->add_node(ops[i % 4], {v, constant})->output(0);
  }
  g->add_output(v, "y");
  ir::infer_types(*g);
  return g;
}

/// A typical activation block for the latency figures: x * sigmoid(x) + tanh(x) * c.
std::unique_ptr<ir::Graph> activation_block(double salt) {
  auto g = std::make_unique<ir::Graph>();
  g->opset_imports[""] = 17;
  ir::Value x = g->add_input("x", ir::ValueType::of(DType::float32, {1024}))->output(0);
  ir::Value s = g->add_node("Sigmoid", {x})->output(0);
  ir::Value m = g->add_node("Mul", {x, s})->output(0);
  ir::Value t = g->add_node("Tanh", {m})->output(0);
  ir::Value c = g->add_constant("c", Tensor::scalar<float>(static_cast<float>(0.5 + salt)))->output(0);
  ir::Value tc = g->add_node("Mul", {t, c})->output(0);
  ir::Value y = g->add_node("Add", {m, tc})->output(0);
  g->add_output(g->add_node("Erf", {y})->output(0), "y");
  ir::infer_types(*g);
  return g;
}

}  // namespace

int main(int argc, char** argv) {
  int64_t n = argc > 1 ? std::atoll(argv[1]) : int64_t(16) << 20;
  int threads = argc > 2 ? std::atoi(argv[2]) : 2;
  ScopedNumThreads scoped(threads);
  codegen::CompileCache& cache = codegen::CompileCache::global();

  Tensor x(DType::float32, {n});
  for (int64_t i = 0; i < n; ++i) x.data<float>()[i] = static_cast<float>((i % 1000) * 0.002 - 1.0);
  Tensor copy_target(DType::float32, {n});
  std::memset(copy_target.raw_data(), 1, copy_target.nbytes());  // touch the pages
  const int repeats = 9;
  double bytes = 2.0 * static_cast<double>(n) * 4;  // one read and one write per element

  auto copy_loop = [&] {
    parallel_for(n, 1 << 16, [&](int64_t b, int64_t e) {
      std::memcpy(copy_target.data<float>() + b, x.data<float>() + b, static_cast<size_t>(e - b) * 4);
    });
  };
  std::printf("elements %lld float32, threads %d; copy and fused runs alternate, medians of %d\n",
              static_cast<long long>(n), threads, repeats);
  std::printf("%4s %10s %12s %10s %14s %12s %10s %10s\n", "k", "copy GB/s", "fused GB/s", "vs copy", "interp GB/s",
              "unfused ms", "fused ms", "speedup");
  for (int k : {2, 4, 8, 16}) {
    auto g = chain(k, n);
    codegen::LoweredKernel lowered = codegen::lower_body(*g);
    auto runner = cache.cpu_runner(lowered.ir);
    codegen::Interpreter interpreter(lowered.ir);
    runtime::BufferPool pool;
    std::vector<Tensor> inputs = {x};
    auto fused_run = [&] { codegen::run_kernel(lowered.ir, *runner, inputs, pool); };
    copy_loop();
    fused_run();
    std::vector<double> copy_times, fused_times;
    for (int r = 0; r < repeats; ++r) {
      copy_times.push_back(seconds_of(copy_loop));
      fused_times.push_back(seconds_of(fused_run));
    }
    std::sort(copy_times.begin(), copy_times.end());
    std::sort(fused_times.begin(), fused_times.end());
    double copy = copy_times[repeats / 2], fused = fused_times[repeats / 2];
    double interpreted = median_seconds(3, [&] { codegen::run_kernel(lowered.ir, interpreter, inputs, pool); });
    runtime::SessionOptions options;
    options.passes = {"verify", "infer"};
    options.num_threads = threads;
    runtime::Session unfused_session(g->clone(), options);
    double unfused = median_seconds(repeats, [&] { unfused_session.run(inputs); });
    std::printf("%4d %10.2f %12.2f %10.2f %14.2f %12.2f %10.2f %10.2f\n", k, bytes / copy / 1e9, bytes / fused / 1e9,
                copy / fused, bytes / interpreted / 1e9, unfused * 1e3, fused * 1e3, unfused / fused);
    if (std::string(runner->kind()) != "llvm") std::printf("     (runner: %s)\n", runner->kind());
    if (k == 2) std::printf("     (streaming lanes: %lld)\n", static_cast<long long>(runner->streaming_lanes()));
  }

  // JIT latency: distinct kernels, cold (no disk cache), then from the disk
  // cache; wall time and the compiling thread's CPU time.
  const int kernels = 15;
  struct Latency {
    const char* name;
    std::function<std::unique_ptr<ir::Graph>(double)> make;
  };
  Latency latencies[] = {
      {"chain of 8 (Mul/Add/Max/Min)", [&](double salt) { return chain(8, 1024, salt); }},
      {"x*sigmoid(x) + c*tanh(x*sigmoid(x)), then erf", [](double salt) { return activation_block(salt); }},
  };
  std::printf("\nJIT latency, %d distinct kernels each (median, ms):\n", kernels);
  std::printf("%-48s %10s %10s %12s %12s\n", "kernel", "cold wall", "cold cpu", "disk wall", "disk cpu");
  for (const Latency& latency : latencies) {
    std::vector<codegen::KernelIR> irs;
    for (int i = 0; i < kernels; ++i) irs.push_back(codegen::lower_body(*latency.make(0.01 * (i + 1))).ir);
    auto measure = [&](std::vector<double>& wall, std::vector<double>& cpu) {
      for (const auto& ir : irs) {
        double c0 = thread_cpu_seconds();
        wall.push_back(seconds_of([&] { cache.cpu_runner(ir); }) * 1e3);
        cpu.push_back((thread_cpu_seconds() - c0) * 1e3);
      }
      std::sort(wall.begin(), wall.end());
      std::sort(cpu.begin(), cpu.end());
    };
    unsetenv("GRAFT_CACHE_DIR");
    cache.clear_memory();
    std::vector<double> cold_wall, cold_cpu, disk_wall, disk_cpu;
    measure(cold_wall, cold_cpu);
    char pattern[] = "/tmp/graft_bench_cache_XXXXXX";
    if (!mkdtemp(pattern)) return 1;
    setenv("GRAFT_CACHE_DIR", pattern, 1);
    cache.clear_memory();
    for (const auto& ir : irs) cache.cpu_runner(ir);  // fills the disk cache
    cache.clear_memory();
    uint64_t hits = cache.counters().disk_hits;
    measure(disk_wall, disk_cpu);
    std::filesystem::remove_all(pattern);
    unsetenv("GRAFT_CACHE_DIR");
    std::printf("%-48s %10.2f %10.2f %12.2f %12.2f%s\n", latency.name, cold_wall[kernels / 2], cold_cpu[kernels / 2],
                disk_wall[kernels / 2], disk_cpu[kernels / 2],
                cache.counters().disk_hits - hits == static_cast<uint64_t>(kernels) ? "" : "  (not all disk hits!)");
  }
  return 0;
}
