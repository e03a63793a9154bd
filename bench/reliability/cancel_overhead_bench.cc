// The cost of run limits (backend::RunLimits, docs/security.md): each zoo
// model run with no limits against the same session run with a far deadline
// and a cancellation flag (never set), so that every check before a node and
// every Loop/Scan body check reads the clock and the flag. Rounds alternate
// (A B A B ...) so drift of the machine hits both alike; the figure is the
// ratio of the medians (and of the minima), limits / none, with the CPU and
// ISA it ran on; and, as a bound that the noise of a shared machine does not
// blur, the checks a run makes times the cost of one check, against the run.
//
//   build/bench/cancel_overhead_bench [--rounds N] [--threads T] [--models a,b]
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "graft/frontend/onnx_import.h"
#include "graft/ir/op_schema.h"
#include "graft/runtime/session.h"
#include "graft/zoo/zoo.h"

using namespace graft;

namespace {

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "unknown CPU";
}

std::string widest_isa() {
  std::ifstream in("/proc/cpuinfo");
  std::string flags;
  for (std::string line; std::getline(in, line);)
    if (line.rfind("flags", 0) == 0) {
      flags = " " + line + " ";
      break;
    }
  for (const char* isa : {"avx512f", "avx2", "avx", "sse4_2"})
    if (flags.find(std::string(" ") + isa + " ") != std::string::npos) return isa;
  return "baseline";
}

/// Random inputs for the model's declared inputs, symbolic dimensions 1.
std::vector<Tensor> inputs_for(const runtime::Session& session) {
  std::mt19937_64 rng(0);
  std::vector<Tensor> inputs;
  for (const runtime::ValueInfo& info : session.inputs()) {
    Shape shape;
    for (const ir::Dim& d : info.type.dims) shape.push_back(d.is_known() ? d.value : 1);
    Tensor t(info.type.dtype, shape);
    if (info.type.dtype == DType::float32) {
      std::uniform_real_distribution<float> u(-1.0f, 1.0f);
      for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = u(rng);
    } else if (info.type.dtype == DType::int64) {
      std::uniform_int_distribution<int64_t> u(0, 99);
      for (int64_t i = 0; i < t.numel(); ++i) t.data<int64_t>()[i] = u(rng);
    }
    inputs.push_back(std::move(t));
  }
  return inputs;
}

/// Nanoseconds of one check as Executor::check_limits makes it (a relaxed
/// load of the flag, a clock read, a compare), measured in a loop.
double check_nanoseconds(const backend::RunLimits& limits) {
  constexpr int kChecks = 5'000'000;
  int passed = 0;
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < kChecks; ++i)
    passed += !limits.cancel->load(std::memory_order_relaxed) && std::chrono::steady_clock::now() <= limits.deadline;
  double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count() / kChecks;
  return passed == kChecks ? ns : -1;
}

/// At most the checks one run makes: one at the start, one per node of the
/// prepared graph (sources aside) and, for a subgraph node, one per node of
/// its body (a dnnl subgraph checks between its primitives, at most one each).
int checks_per_run(const ir::Graph& graph) {
  int n = 1;
  for (const auto& node : graph.nodes()) {
    if (node->schema().category == ir::OpCategory::source) continue;
    n += node->subgraph ? checks_per_run(*node->subgraph) : 1;
  }
  return n;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 30, threads = 2;
  std::string models = "resnet50,mobilenet_v2,squeezenet,bert,gru,mlp";
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--rounds")) rounds = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--threads")) threads = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--models")) models = argv[i + 1];
    else {
      std::fprintf(stderr, "usage: %s [--rounds N] [--threads T] [--models a,b]\n", argv[0]);
      return 2;
    }
  }
  std::printf("cancel_overhead_bench: %s, widest ISA %s, %d intra-op threads, %d alternating rounds\n",
              cpu_model().c_str(), widest_isa().c_str(), threads, rounds);
  std::printf("%-14s %6s %11s %11s %8s %8s %11s\n", "model", "checks", "none ms", "limits ms", "median", "min",
              "estimated");
  std::stringstream list(models);
  double log_ratio_sum = 0;
  int counted = 0;
  for (std::string name; std::getline(list, name, ',');) {
    runtime::SessionOptions options;
    options.num_threads = threads;
    runtime::Session session(frontend::load_onnx_from_memory(zoo::build_zoo_model(name)), options);
    std::vector<Tensor> inputs = inputs_for(session);
    std::atomic<bool> cancel{false};
    backend::RunLimits limits;
    limits.deadline = std::chrono::steady_clock::now() + std::chrono::hours(24);
    limits.cancel = &cancel;
    for (int warm = 0; warm < 3; ++warm) session.run(inputs, limits);  // plans, compiled kernels, dnnl primitives
    std::vector<double> none, limited;
    for (int r = 0; r < rounds; ++r) {
      for (int which = 0; which < 2; ++which) {
        const bool with_limits = (r + which) % 2 == 1;  // alternate which goes first
        auto start = std::chrono::steady_clock::now();
        if (with_limits) session.run(inputs, limits);
        else session.run(inputs);
        double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
        (with_limits ? limited : none).push_back(ms);
      }
    }
    double a = median(none), b = median(limited);
    double min_a = *std::min_element(none.begin(), none.end()), min_b = *std::min_element(limited.begin(), limited.end());
    // What the checks themselves cost, against the run: immune to the noise
    // of a shared machine, which the measured ratios are not.
    const int checks = checks_per_run(session.graph());
    double estimated = checks * check_nanoseconds(limits) * 1e-6 / min_a;
    std::printf("%-14s %6d %11.3f %11.3f %8.4f %8.4f %10.5f%%\n", name.c_str(), checks, a, b, b / a, min_b / min_a,
                100 * estimated);
    log_ratio_sum += std::log(b / a);
    ++counted;
  }
  if (counted) std::printf("geometric mean of the median ratios (limits / none): %.4f\n", std::exp(log_ratio_sum / counted));
  return 0;
}
