// What a run adapted to fewer threads costs (SessionOptions::adapt_threads,
// docs/performance.md "A busy co-tenant"), in one process, the variants
// taking turns:
//
//   thread_adaptation_bench [--rounds R] [--block B] [--threads T] MODEL.onnx...
//
// For each model (float32 inputs, random values) it builds three sessions:
//   full     T threads (default 2), adaptation off;
//   adapted  T threads, adaptation on, told that other processes keep T-1
//            cores busy and that its threads wait for cores, so every run
//            after the second (two contended decisions in a row) uses 1 thread;
//   one      1 thread.
// After two warm-up runs each, the variants take turns running B runs
// (default 5) for R rounds (default 6), rotating who goes first, and it
// prints the median per variant and the ratios adapted / one and
// full / one. An adapted run should cost what a 1-thread session costs
// (ratio about 1); run it with and without a busy co-tenant
// (`yes > /dev/null &`). Also prints what one read of the CPU-time counters
// (runtime::read_cpu_times) costs.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "graft/core/error.h"
#include "graft/frontend/load_model.h"
#include "graft/runtime/core_availability.h"
#include "graft/runtime/session.h"
#include "graft/runtime/simulated_load.h"

using namespace graft;
using Clock = std::chrono::steady_clock;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

std::vector<Tensor> random_inputs(const runtime::Session& session) {
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.f, 1.f);
  std::vector<Tensor> inputs;
  for (const auto& info : session.inputs()) {
    std::optional<Shape> shape = info.type.concrete_shape();
    if (info.type.dtype != DType::float32 || !shape)
      fail(ErrorKind::unsupported, "input '", info.name, "' is not a float32 tensor of known shape");
    Tensor t(DType::float32, *shape);
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = normal(rng);
    inputs.push_back(t);
  }
  return inputs;
}

int bench(int argc, char** argv) {
  int rounds = 6, block = 5, threads = 2;
  std::vector<std::string> models;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--rounds") == 0 && i + 1 < argc)
      rounds = std::stoi(argv[++i]);
    else if (std::strcmp(argv[i], "--block") == 0 && i + 1 < argc)
      block = std::stoi(argv[++i]);
    else if (std::strcmp(argv[i], "--threads") == 0 && i + 1 < argc)
      threads = std::stoi(argv[++i]);
    else
      models.push_back(argv[i]);
  }
  if (models.empty() || threads < 2) {
    std::fprintf(stderr, "usage: thread_adaptation_bench [--rounds R] [--block B] [--threads T>=2] MODEL.onnx...\n");
    return 2;
  }
  {
    // What one sample of the counters costs (two per adapted run at most).
    const int reads = 1000;
    auto begin = Clock::now();
    for (int i = 0; i < reads; ++i) runtime::read_cpu_times();
    std::printf("reading the CPU-time counters: %.1f us\n",
                std::chrono::duration<double, std::micro>(Clock::now() - begin).count() / reads);
    std::fflush(stdout);
  }
  for (const std::string& model : models) {
    runtime::SessionOptions full;
    full.num_threads = threads;
    full.adapt_threads = false;
    runtime::SessionOptions adapted = full;
    adapted.adapt_threads = true;
    adapted.core_availability = runtime::simulated_load(threads, threads - 1);
    runtime::SessionOptions one = full;
    one.num_threads = 1;
    const char* names[] = {"full", "adapted", "one"};
    std::vector<std::unique_ptr<runtime::Session>> sessions;
    for (const runtime::SessionOptions& options : {full, adapted, one})
      sessions.push_back(frontend::load_model(model, options));
    std::vector<Tensor> inputs = random_inputs(*sessions[0]);
    int adapted_threads = 0;
    for (auto& session : sessions)
      for (int warmup = 0; warmup < 2; ++warmup) {
        backend::RunStats stats;
        session->run(inputs, &stats);
        if (session == sessions[1]) adapted_threads = stats.num_threads;
      }
    std::vector<std::vector<double>> times(sessions.size());
    for (int round = 0; round < rounds; ++round)
      for (size_t turn = 0; turn < sessions.size(); ++turn) {
        size_t v = (turn + static_cast<size_t>(round)) % sessions.size();
        for (int r = 0; r < block; ++r) {
          auto begin = Clock::now();
          sessions[v]->run(inputs);
          times[v].push_back(std::chrono::duration<double, std::milli>(Clock::now() - begin).count());
        }
      }
    std::printf("%s (adapted runs on %d thread%s)\n", model.c_str(), adapted_threads, adapted_threads == 1 ? "" : "s");
    for (size_t v = 0; v < sessions.size(); ++v)
      std::printf("  %-8s median %8.2f ms  min %8.2f ms\n", names[v], median(times[v]),
                  *std::min_element(times[v].begin(), times[v].end()));
    std::printf("  adapted / one %.2f   full / one %.2f\n", median(times[1]) / median(times[2]),
                median(times[0]) / median(times[2]));
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return bench(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
