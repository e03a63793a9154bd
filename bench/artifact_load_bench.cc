// Time to first inference from a compiled artifact against the ONNX file it
// was compiled from, in the same process, alternating, for zoo models:
//
//   artifact_load_bench [--repeat R] [--threads T] [--dir DIR] [MODEL...]
//
// MODEL is resnet50 (input [1,3,224,224]) or bert (input_ids [1,128]); both
// by default. The ONNX file and the artifact are written once into DIR
// (default: the current folder) and reused. For each of R rounds (default 5)
// the bench constructs a Session from each file and runs it once; it prints
// the median and minimum of load (Session construction), first run and their
// sum, and both file sizes.
#include <algorithm>
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

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Timing {
  std::vector<double> load, first, total;
  void print(const char* what) const {
    std::printf("  %-8s load %8.1f ms (min %8.1f)   first run %8.1f ms (min %8.1f)   total %8.1f ms (min %8.1f)\n",
                what, median(load), *std::min_element(load.begin(), load.end()), median(first),
                *std::min_element(first.begin(), first.end()), median(total),
                *std::min_element(total.begin(), total.end()));
  }
};

void measure(const std::string& path, const Tensor& input, int threads, Timing& timing) {
  runtime::SessionOptions options;
  options.num_threads = threads;
  auto start = Clock::now();
  runtime::Session session(path, options);
  double load = ms_since(start);
  auto run_start = Clock::now();
  session.run({input});
  double first = ms_since(run_start);
  timing.load.push_back(load);
  timing.first.push_back(first);
  timing.total.push_back(ms_since(start));
}

}  // namespace

int main(int argc, char** argv) {
  int repeat = 5, threads = 2;
  std::string dir = ".";
  std::vector<std::string> models;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--repeat") && i + 1 < argc) repeat = std::max(1, std::atoi(argv[++i]));
    else if (!std::strcmp(argv[i], "--threads") && i + 1 < argc) threads = std::max(1, std::atoi(argv[++i]));
    else if (!std::strcmp(argv[i], "--dir") && i + 1 < argc) dir = argv[++i];
    else models.push_back(argv[i]);
  }
  if (models.empty()) models = {"resnet50", "bert"};
  try {
    for (const std::string& model : models) {
      std::string onnx = dir + "/" + model + ".onnx", artifact = dir + "/" + model + ".graft";
      Tensor input;
      runtime::ArtifactCompileOptions compile;
      compile.session.num_threads = threads;
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
      std::printf("  artifact/onnx time to first inference: %.2f (medians), %.2f (mins)\n",
                  median(from_artifact.total) / median(from_onnx.total),
                  *std::min_element(from_artifact.total.begin(), from_artifact.total.end()) /
                      *std::min_element(from_onnx.total.begin(), from_onnx.total.end()));
    }
  } catch (const Error& e) {
    std::fprintf(stderr, "artifact_load_bench: %s\n", e.what());
    return 2;
  }
  return 0;
}
