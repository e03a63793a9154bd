// Time to first inference from a compiled artifact against the ONNX file it
// was compiled from, in the same process, alternating, for zoo models:
//
//   artifact_load_bench [--repeat R] [--threads T] [--dir DIR] [--backends A,B] [--fresh] [MODEL...]
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
//
// --fresh: every measurement runs in a new process (this program again, with
// --child), as a user's `graft run` would: nothing is cached in memory
// (oneDNN's primitive cache, generated kernels, the JIT's compiled code), and
// "total" is from the moment the parent spawned the child to the end of its
// first run, so it includes starting the process and loading the libraries.
#include <algorithm>
#include <time.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include "graft/frontend/load_model.h"
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

int64_t monotonic_ns() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return int64_t{t.tv_sec} * 1000000000 + t.tv_nsec;
}

/// --child: load `path`, run once on zeros, print "load FIRST_RUN SINCE_SPAWN
/// CPU" in ms and leave without tearing anything down.
[[noreturn]] void child(const std::string& path, int threads, int64_t spawned_ns) {
  runtime::SessionOptions options;
  options.num_threads = threads;
  options.backends = backend_list;
  auto start = Clock::now();
  std::unique_ptr<runtime::Session> loaded = frontend::load_model(path, options);
  runtime::Session& session = *loaded;
  double load = ms_since(start);
  std::vector<Tensor> inputs;
  for (const auto& info : session.inputs()) {
    Shape shape;
    for (const ir::Dim& d : info.type.dims) shape.push_back(d.is_known() ? d.value : 1);
    inputs.emplace_back(info.type.dtype, shape);  // zeros
  }
  auto run_start = Clock::now();
  session.run(inputs);
  double first = ms_since(run_start);
  double since_spawn = static_cast<double>(monotonic_ns() - spawned_ns) / 1e6;
  std::printf("%.3f %.3f %.3f %.3f\n", load, first, since_spawn, cpu_ms());
  std::fflush(stdout);
  _exit(0);
}

/// One measurement in a new process (see --fresh).
void measure_fresh(const std::string& path, int threads, Timing& timing) {
  int out[2];
  if (pipe(out) != 0) fail(ErrorKind::io, "pipe failed");
  std::string threads_arg = std::to_string(threads), spawned = std::to_string(monotonic_ns());
  std::string backends;
  for (const std::string& b : backend_list) backends += (backends.empty() ? "" : ",") + b;
  std::vector<std::string> args = {"/proc/self/exe", "--child", path, "--threads", threads_arg, "--spawned", spawned};
  if (!backends.empty()) args.insert(args.end(), {"--backends", backends});
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, out[0]);
  pid_t pid = 0;
  spawned = std::to_string(monotonic_ns());  // as late as possible
  argv[6] = spawned.data();
  int error = posix_spawn(&pid, "/proc/self/exe", &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(out[1]);
  if (error != 0) fail(ErrorKind::io, "cannot start a child process");
  std::string text;
  char buffer[256];
  for (ssize_t n; (n = read(out[0], buffer, sizeof buffer)) > 0;) text.append(buffer, static_cast<size_t>(n));
  close(out[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  double load = 0, first = 0, total = 0, cpu = 0;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 ||
      std::sscanf(text.c_str(), "%lf %lf %lf %lf", &load, &first, &total, &cpu) != 4)
    fail(ErrorKind::internal, "child process measuring '", path, "' failed: ", text);
  timing.load.push_back(load);
  timing.first.push_back(first);
  timing.total.push_back(total);
  timing.load_cpu.push_back(0);
  timing.first_cpu.push_back(0);
  timing.total_cpu.push_back(cpu);
}

void measure(const std::string& path, const Tensor& input, int threads, Timing& timing) {
  runtime::SessionOptions options;
  options.num_threads = threads;
  options.backends = backend_list;
  auto start = Clock::now();
  double cpu_start = cpu_ms();
  std::unique_ptr<runtime::Session> loaded = frontend::load_model(path, options);
  runtime::Session& session = *loaded;
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
  bool fresh = false;
  std::string child_path;
  int64_t spawned_ns = 0;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--repeat") && i + 1 < argc) repeat = std::max(1, std::atoi(argv[++i]));
    else if (!std::strcmp(argv[i], "--threads") && i + 1 < argc) threads = std::max(1, std::atoi(argv[++i]));
    else if (!std::strcmp(argv[i], "--dir") && i + 1 < argc) dir = argv[++i];
    else if (!std::strcmp(argv[i], "--fresh")) fresh = true;
    else if (!std::strcmp(argv[i], "--child") && i + 1 < argc) child_path = argv[++i];
    else if (!std::strcmp(argv[i], "--spawned") && i + 1 < argc) spawned_ns = std::atoll(argv[++i]);
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
    if (!child_path.empty()) child(child_path, threads, spawned_ns);
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
      frontend::compile_artifact(onnx, artifact, compile);
      double compile_ms = ms_since(compile_start);
      std::printf("%s: onnx %.1f MiB, artifact %.1f MiB (%+.2f%%), compile %.0f ms, %d rounds, %d threads\n",
                  model.c_str(), std::filesystem::file_size(onnx) / 1048576.0,
                  std::filesystem::file_size(artifact) / 1048576.0,
                  100.0 * (double(std::filesystem::file_size(artifact)) / double(std::filesystem::file_size(onnx)) - 1),
                  compile_ms, repeat, threads);
      Timing from_onnx, from_artifact;
      for (int r = 0; r < repeat; ++r) {
        if (fresh) {
          measure_fresh(onnx, threads, from_onnx);
          measure_fresh(artifact, threads, from_artifact);
        } else {
          measure(onnx, input, threads, from_onnx);
          measure(artifact, input, threads, from_artifact);
        }
      }
      if (fresh) std::printf("  fresh processes: total = from spawning the process to the end of its first run; cpu = the child's\n");
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
