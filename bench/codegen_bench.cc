// Fused pointwise kernels: bandwidth of fused chains against a plain copy
// loop in the same run, speedup over the unfused graph, throughput of
// kernels with transcendental functions and broadcasting, JIT compile
// latency (cold, and loaded from the disk cache) for a representative set.
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
#include "graft/ops/type_inference.h"
#include "graft/backend/buffer_pool.h"
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
  ops::infer_types(*g);
  return g;
}

ir::Value constant(ir::Graph& g, const std::string& name, double value) {
  return g.add_constant(name, Tensor::scalar<float>(static_cast<float>(value)))->output(0);
}

/// x * sigmoid(x) + c * tanh(x * sigmoid(x)), then erf.
std::unique_ptr<ir::Graph> activation_block(double salt, int64_t n) {
  auto g = std::make_unique<ir::Graph>();
  g->opset_imports[""] = 17;
  ir::Value x = g->add_input("x", ir::ValueType::of(DType::float32, {n}))->output(0);
  ir::Value s = g->add_node("Sigmoid", {x})->output(0);
  ir::Value m = g->add_node("Mul", {x, s})->output(0);
  ir::Value t = g->add_node("Tanh", {m})->output(0);
  ir::Value tc = g->add_node("Mul", {t, constant(*g, "c", 0.5 + salt)})->output(0);
  ir::Value y = g->add_node("Add", {m, tc})->output(0);
  g->add_output(g->add_node("Erf", {y})->output(0), "y");
  ops::infer_types(*g);
  return g;
}

/// GELU with erf, as exporters write it: x * 0.5 * (1 + erf(x / sqrt 2)).
std::unique_ptr<ir::Graph> gelu_erf(double salt, int64_t n) {
  auto g = std::make_unique<ir::Graph>();
  g->opset_imports[""] = 17;
  ir::Value x = g->add_input("x", ir::ValueType::of(DType::float32, {n}))->output(0);
  ir::Value scaled = g->add_node("Div", {x, constant(*g, "sqrt2", 1.4142135623730951 + salt * 1e-3)})->output(0);
  ir::Value e = g->add_node("Erf", {scaled})->output(0);
  ir::Value one_plus = g->add_node("Add", {e, constant(*g, "one", 1.0)})->output(0);
  ir::Value half_x = g->add_node("Mul", {x, constant(*g, "half", 0.5)})->output(0);
  g->add_output(g->add_node("Mul", {half_x, one_plus})->output(0), "y");
  ops::infer_types(*g);
  return g;
}

/// The pointwise tail of a LayerNorm over rows of `columns` elements:
/// (x - mean) / sqrt(var + eps) * gamma + beta, with mean and var [rows, 1]
/// and gamma and beta [columns] broadcast.
std::unique_ptr<ir::Graph> layer_norm_tail(double salt, int64_t n) {
  const int64_t columns = 1024;
  int64_t rows = std::max<int64_t>(1, n / columns);
  auto g = std::make_unique<ir::Graph>();
  g->opset_imports[""] = 17;
  ir::Value x = g->add_input("x", ir::ValueType::of(DType::float32, {rows, columns}))->output(0);
  ir::Value mean = g->add_input("mean", ir::ValueType::of(DType::float32, {rows, 1}))->output(0);
  ir::Value var = g->add_input("var", ir::ValueType::of(DType::float32, {rows, 1}))->output(0);
  ir::Value gamma = g->add_input("gamma", ir::ValueType::of(DType::float32, {columns}))->output(0);
  ir::Value beta = g->add_input("beta", ir::ValueType::of(DType::float32, {columns}))->output(0);
  ir::Value centered = g->add_node("Sub", {x, mean})->output(0);
  ir::Value deviation =
      g->add_node("Sqrt", {g->add_node("Add", {var, constant(*g, "eps", 1e-5 + salt * 1e-6)})->output(0)})->output(0);
  ir::Value normalized = g->add_node("Div", {centered, deviation})->output(0);
  ir::Value scaled = g->add_node("Mul", {normalized, gamma})->output(0);
  g->add_output(g->add_node("Add", {scaled, beta})->output(0), "y");
  ops::infer_types(*g);
  return g;
}

/// A GRU cell's gates from precomputed projections (x and h parts of the
/// reset, update and new gates) and the previous state:
/// r = sigmoid(xr + hr), z = sigmoid(xz + hz), c = tanh(xn + r * hn),
/// h = (1 - z) * c + z * h_prev.
std::unique_ptr<ir::Graph> gru_gates(double salt, int64_t n) {
  auto g = std::make_unique<ir::Graph>();
  g->opset_imports[""] = 17;
  auto input = [&](const char* name) { return g->add_input(name, ir::ValueType::of(DType::float32, {n}))->output(0); };
  ir::Value xr = input("xr"), hr = input("hr"), xz = input("xz"), hz = input("hz"), xn = input("xn"), hn = input("hn"),
            h_prev = input("h_prev");
  ir::Value r = g->add_node("Sigmoid", {g->add_node("Add", {xr, hr})->output(0)})->output(0);
  ir::Value z = g->add_node("Sigmoid", {g->add_node("Add", {xz, hz})->output(0)})->output(0);
  ir::Value c =
      g->add_node("Tanh", {g->add_node("Add", {xn, g->add_node("Mul", {r, hn})->output(0)})->output(0)})->output(0);
  ir::Value keep = g->add_node("Sub", {constant(*g, "one", 1.0 + salt * 1e-3), z})->output(0);
  ir::Value h =
      g->add_node("Add", {g->add_node("Mul", {keep, c})->output(0), g->add_node("Mul", {z, h_prev})->output(0)})
          ->output(0);
  g->add_output(h, "h");
  ops::infer_types(*g);
  return g;
}

/// Inputs for a graph: values in [-2, 2) (variances in [0.5, 2.5)).
std::vector<Tensor> inputs_for(const ir::Graph& g) {
  std::vector<Tensor> inputs;
  for (const ir::Node* node : g.inputs()) {
    Tensor t(DType::float32, *node->output_types[0].concrete_shape());
    float* data = t.data<float>();
    bool positive = node->name == "var" || (!node->output_names.empty() && node->output_names[0] == "var");
    for (int64_t i = 0; i < t.numel(); ++i) {
      float v = static_cast<float>((i * 7919 % 1000) * 0.004 - 2.0);
      data[i] = positive ? std::abs(v) + 0.5f : v;
    }
    inputs.push_back(t);
  }
  return inputs;
}

double median_of(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
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
    backend::BufferPool pool;
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
    // The unfused baseline: one reference kernel per op, one pass over memory
    // each (fusion off, and no backend that would fuse the chain itself).
    runtime::SessionOptions options;
    options.passes = {"verify", "infer"};
    options.num_threads = threads;
    options.fusion = false;
    options.backends = {"ref"};
    runtime::Session unfused_session(g->clone(), options);
    double unfused = median_seconds(repeats, [&] { unfused_session.run(inputs); });
    std::printf("%4d %10.2f %12.2f %10.2f %14.2f %12.2f %10.2f %10.2f\n", k, bytes / copy / 1e9, bytes / fused / 1e9,
                copy / fused, bytes / interpreted / 1e9, unfused * 1e3, fused * 1e3, unfused / fused);
    if (std::string(runner->kind()) != "llvm") std::printf("     (runner: %s)\n", runner->kind());
    if (k == 2) std::printf("     (streaming lanes: %lld)\n", static_cast<long long>(runner->streaming_lanes()));
  }

  // Kernels with transcendental functions and broadcasting: time per run of
  // n elements, and bandwidth counting every input and output once.
  struct Kernel {
    const char* name;
    std::function<std::unique_ptr<ir::Graph>(double salt, int64_t n)> make;
  };
  const Kernel kernels[] = {
      {"chain of 8 (Mul/Add/Max/Min)", [](double salt, int64_t size) { return chain(8, size, salt); }},
      {"x*sigmoid(x) + c*tanh(x*sigmoid(x)), then erf", activation_block},
      {"GELU, erf form: x*0.5*(1+erf(x/sqrt2))", gelu_erf},
      {"LayerNorm tail (x-m)/sqrt(v+eps)*g+b, [n/1024,1024]", layer_norm_tail},
      {"GRU gates (sigmoid, tanh, Mul, Add, Sub), 7 inputs", gru_gates},
  };
  std::printf("\nkernels on %lld elements, threads %d (median of %d runs):\n", static_cast<long long>(n), threads,
              repeats);
  std::printf("%-52s %10s %10s %12s %14s\n", "kernel", "ms", "GB/s", "Gelem/s", "1-thread cpu");
  for (const Kernel& kernel : kernels) {
    auto g = kernel.make(0, n);
    codegen::LoweredKernel lowered = codegen::lower_body(*g);
    auto runner = cache.cpu_runner(lowered.ir);
    std::vector<Tensor> inputs = inputs_for(*g);
    double traffic = static_cast<double>(n) * 4;  // the output
    for (const Tensor& t : inputs) traffic += static_cast<double>(t.nbytes());
    backend::BufferPool pool;
    double seconds = median_seconds(repeats, [&] { codegen::run_kernel(lowered.ir, *runner, inputs, pool); });
    // CPU time of one thread doing all the work: what the machine's load
    // changes least.
    double cpu_seconds;
    {
      ScopedNumThreads one(1);
      std::vector<double> times;
      for (int r = 0; r <= repeats / 2; ++r) {
        double c0 = thread_cpu_seconds();
        codegen::run_kernel(lowered.ir, *runner, inputs, pool);
        if (r > 0) times.push_back(thread_cpu_seconds() - c0);
      }
      cpu_seconds = median_of(times);
    }
    std::printf("%-52s %10.2f %10.2f %12.2f %11.2f ms%s\n", kernel.name, seconds * 1e3, traffic / seconds / 1e9,
                static_cast<double>(n) / seconds / 1e9, cpu_seconds * 1e3,
                std::string(runner->kind()) == "llvm" ? "" : "  (interpreted)");
  }

  // JIT latency: distinct kernels (the salt changes a constant), cold (no
  // disk cache), then from the disk cache; wall time and the compiling
  // thread's CPU time. Compiling includes linking into the process.
  const int distinct = 15;
  std::printf("\nJIT latency, %d distinct kernels each (median, ms):\n", distinct);
  std::printf("%-52s %10s %10s %12s %12s\n", "kernel", "cold wall", "cold cpu", "disk wall", "disk cpu");
  std::vector<double> all_cold_wall, all_cold_cpu, all_disk_wall, all_disk_cpu;
  for (const Kernel& kernel : kernels) {
    std::vector<ir::KernelIR> irs;
    for (int i = 0; i < distinct; ++i) irs.push_back(codegen::lower_body(*kernel.make(0.01 * (i + 1), 4096)).ir);
    auto measure = [&](std::vector<double>& wall, std::vector<double>& cpu) {
      for (const auto& ir : irs) {
        double c0 = thread_cpu_seconds();
        wall.push_back(seconds_of([&] { cache.cpu_runner(ir); }) * 1e3);
        cpu.push_back((thread_cpu_seconds() - c0) * 1e3);
      }
    };
    unsetenv("GRAFT_CACHE_DIR");
    cache.clear_memory();
    uint64_t compiles = cache.counters().compiles;
    std::vector<double> cold_wall, cold_cpu, disk_wall, disk_cpu;
    measure(cold_wall, cold_cpu);
    bool all_compiled = cache.counters().compiles - compiles == static_cast<uint64_t>(distinct);
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
    std::printf("%-52s %10.2f %10.2f %12.2f %12.2f%s%s\n", kernel.name, median_of(cold_wall), median_of(cold_cpu),
                median_of(disk_wall), median_of(disk_cpu), all_compiled ? "" : "  (not all compiled!)",
                cache.counters().disk_hits - hits == static_cast<uint64_t>(distinct) ? "" : "  (not all disk hits!)");
    all_cold_wall.insert(all_cold_wall.end(), cold_wall.begin(), cold_wall.end());
    all_cold_cpu.insert(all_cold_cpu.end(), cold_cpu.begin(), cold_cpu.end());
    all_disk_wall.insert(all_disk_wall.end(), disk_wall.begin(), disk_wall.end());
    all_disk_cpu.insert(all_disk_cpu.end(), disk_cpu.begin(), disk_cpu.end());
  }
  std::printf("%-52s %10.2f %10.2f %12.2f %12.2f\n", "median over all of them", median_of(all_cold_wall),
              median_of(all_cold_cpu), median_of(all_disk_wall), median_of(all_disk_cpu));
  return 0;
}
