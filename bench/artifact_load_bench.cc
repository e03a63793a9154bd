// Time to first inference from a compiled artifact against the ONNX file it
// was compiled from, in the same process, alternating, for zoo models:
//
//   artifact_load_bench [--repeat R] [--threads T] [--dir DIR] [--backends A,B] [MODEL...]
//
// MODEL is resnet50 (input [1,3,224,224]) or bert (input_ids [1,128]); both
// by default. The ONNX file and the artifact are written once into DIR
// (default: graft_artifact_bench in the system's temporary folder, so
// that 300 MB of model files never land in a source tree) and reused;
// threads default to 1. For each of R rounds (default 5) the bench constructs a Session from each file and runs it once; it prints
// the median and minimum of load (Session construction), first run and their
// sum, and both file sizes. Times are wall-clock and, in brackets, the
// process's CPU time (user + system, all threads): on a shared machine the
// CPU time of a 1-thread run is the steadier figure.
#include <algorithm>
#include <time.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "graft/runtime/artifact.h"
#include "graft/zoo/zoo.h"

using namespace graft;
using Clock = std::chrono::steady_clock;

namespace {

double ms_since(Clock::time_point start) { return std::chrono::duration<double, std::milli>(Clock::now() - start).count(); }

double cpu_ms() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Timing {
  std::vector<double> load, first, total, load_cpu, first_cpu, total_cpu;
  void print(const char* what) const {
    std::printf("  %-8s load %7.1f ms [cpu %7.1f]   first run %7.1f ms [cpu %7.1f]   total %7.1f ms [cpu %7.1f] (medians)\n",
                what, median(load), median(load_cpu), median(first), median(first_cpu), median(total),
                median(total_cpu));
  }
};

std::vector<std::string> backend_list;  // --backends; empty: the default order

void measure(const std::string& path, const Tensor& input, int threads, Timing& timing) {
  runtime::SessionOptions options;
  options.num_threads = threads;
  options.backends = backend_list;
  auto start = Clock::now();
  double cpu_start = cpu_ms();
  runtime::Session session(path, options);
  double load = ms_since(start), load_cpu = cpu_ms() - cpu_start;
  auto run_start = Clock::now();
  double run_cpu_start = cpu_ms();
  session.run({input});
  timing.load.push_back(load);
  timing.first.push_back(ms_since(run_start));
  timing.total.push_back(ms_since(start));
  timing.load_cpu.push_back(load_cpu);
  timing.first_cpu.push_back(cpu_ms() - run_cpu_start);
  timing.total_cpu.push_back(cpu_ms() - cpu_start);
}

}  // namespace

int main(int argc, char** argv) {
  int repeat = 5, threads = 1;
  std::string dir = (std::filesystem::temp_directory_path() / "graft_artifact_bench").string();
  std::vector<std::string> models;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--repeat") && i + 1 < argc) repeat = std::max(1, std::atoi(argv[++i]));
    else if (!std::strcmp(argv[i], "--threads") && i + 1 < argc) threads = std::max(1, std::atoi(argv[++i]));
    else if (!std::strcmp(argv[i], "--dir") && i + 1 < argc) dir = argv[++i];
    else if (!std::strcmp(argv[i], "--backends") && i + 1 < argc) {
      std::string list = argv[++i];
      for (size_t start = 0; start <= list.size();) {
        size_t comma = std::min(list.find(',', start), list.size());
        if (comma > start) backend_list.push_back(list.substr(start, comma - start));
        start = comma + 1;
      }
    }
    else models.push_back(argv[i]);
  }
  if (models.empty()) models = {"resnet50", "bert"};
  try {
    std::filesystem::create_directories(dir);
    for (const std::string& model : models) {
      std::string onnx = dir + "/" + model + ".onnx", artifact = dir + "/" + model + ".graft";
      Tensor input;
      runtime::ArtifactCompileOptions compile;
      compile.session.num_threads = threads;
      compile.session.backends = backend_list;
      if (model == "bert") {
        input = Tensor(DType::int64, {1, 128});
        compile.input_shapes["input_ids"] = {1, 128};
      } else {
        input = Tensor(DType::float32, {1, 3, 224, 224});
        compile.input_shapes["input"] = {1, 3, 224, 224};
      }
      if (!std::filesystem::exists(onnx)) {
        std::string bytes = zoo::build_zoo_model(model, 0);
        std::ofstream(onnx, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
      }
      auto compile_start = Clock::now();
      runtime::compile_artifact(onnx, artifact, compile);
      double compile_ms = ms_since(compile_start);
      std::printf("%s: onnx %.1f MiB, artifact %.1f MiB (%+.2f%%), compile %.0f ms, %d rounds, %d threads\n",
                  model.c_str(), std::filesystem::file_size(onnx) / 1048576.0,
                  std::filesystem::file_size(artifact) / 1048576.0,
                  100.0 * (double(std::filesystem::file_size(artifact)) / double(std::filesystem::file_size(onnx)) - 1),
                  compile_ms, repeat, threads);
      Timing from_onnx, from_artifact;
      for (int r = 0; r < repeat; ++r) {
        measure(onnx, input, threads, from_onnx);
        measure(artifact, input, threads, from_artifact);
      }
      from_onnx.print("onnx");
      from_artifact.print("artifact");
      std::printf("  artifact/onnx time to first inference: %.2f wall, %.2f cpu (medians)\n",
                  median(from_artifact.total) / median(from_onnx.total),
                  median(from_artifact.total_cpu) / median(from_onnx.total_cpu));
    }
  } catch (const Error& e) {
    std::fprintf(stderr, "artifact_load_bench: %s\n", e.what());
    return 2;
  }
  return 0;
}
