// graft_runner: the graft side of bench/compare (compare.py drives it).
//
//   graft_runner MODEL.onnx INPUTS.json OUTPUT_DIR [--threads N] [--backends a,b]
//
// Reads the inputs named in INPUTS.json (a list of {name, dtype, shape, file}
// with raw little-endian data; a relative file lies beside INPUTS.json), then, timed: builds the Session (load, passes)
// and runs it once (plan and compile happen in the first run). Writes each
// output to OUTPUT_DIR/<index>.bin and prints one JSON line:
//   {"ready": true, "load_ms", "first_run_ms", "first_inference_ms",
//    "startup_rss_kb", "load_peak_rss_kb", "first_run_peak_rss_kb" (VmHWM after
//    the Session is built and after the first run), "outputs": [{name, dtype, shape, file}]}
// Then serves stdin lines: "run N" runs N times and prints {"times_ms": [...]};
// "quit" (or end of input) exits. Any error prints {"error": "..."} and exits 1.
// The ONNX Runtime (ort_runner.js) and PyTorch (torch_runner.py) workers speak
// the same protocol, so compare.py treats the three alike.
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "graft/frontend/load_model.h"
#include "graft/codegen/compile_cache.h"
#include "graft/core/error.h"
#include "graft/runtime/session.h"

namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

/// Peak resident set of this process image in KiB (VmHWM). Not ru_maxrss:
/// after fork + exec, Linux keeps the parent's peak in it.
long peak_rss_kb() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("VmHWM:", 0) == 0) return std::stol(line.substr(6));
  return -1;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) graft::fail(graft::ErrorKind::io, "cannot read '", path, "'");
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

/// A manifest's file entry: relative ones name a file beside the manifest.
std::string resolve(const std::string& manifest_path, const std::string& file) {
  std::filesystem::path path(file);
  if (path.is_absolute()) return file;
  return (std::filesystem::path(manifest_path).parent_path() / path.filename()).string();
}

graft::Tensor read_input(const json& entry, const std::string& manifest_path) {
  graft::DType dtype = graft::dtype_from_name(entry.at("dtype").get<std::string>());
  graft::Shape shape = entry.at("shape").get<std::vector<int64_t>>();
  graft::Tensor t(dtype, shape);
  std::string bytes = read_file(resolve(manifest_path, entry.at("file").get<std::string>()));
  if (bytes.size() != t.nbytes())
    graft::fail(graft::ErrorKind::invalid_argument, "input '", entry.at("name").get<std::string>(), "': file has ",
                bytes.size(), " bytes, expected ", t.nbytes());
  std::copy(bytes.begin(), bytes.end(), static_cast<char*>(t.raw_data()));
  return t;
}

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> parts;
  std::stringstream s(text);
  for (std::string part; std::getline(s, part, ',');)
    if (!part.empty()) parts.push_back(part);
  return parts;
}

int serve(int argc, char** argv) {
  if (argc < 4)
    graft::fail(graft::ErrorKind::invalid_argument,
                "usage: graft_runner MODEL INPUTS.json OUTPUT_DIR [--threads N] [--backends a,b]");
  std::string model = argv[1], manifest_path = argv[2], output_dir = argv[3];
  graft::runtime::SessionOptions options;
  options.num_threads = 2;
  for (int i = 4; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    if (flag == "--threads")
      options.num_threads = std::stoi(argv[i + 1]);
    else if (flag == "--backends")
      options.backends = split_commas(argv[i + 1]);
    else
      graft::fail(graft::ErrorKind::invalid_argument, "unknown flag '", flag, "'");
  }

  json manifest = json::parse(read_file(manifest_path));
  std::map<std::string, graft::Tensor> by_name;
  for (const json& entry : manifest) by_name[entry.at("name").get<std::string>()] = read_input(entry, manifest_path);
  const long startup_rss = peak_rss_kb();

  auto start = Clock::now();
  std::unique_ptr<graft::runtime::Session> loaded = graft::frontend::load_model(model, options);
  graft::runtime::Session& session = *loaded;
  double load_ms = ms_since(start);
  const long load_peak_rss = peak_rss_kb();
  std::vector<graft::Tensor> inputs;
  for (const auto& info : session.inputs()) {
    auto it = by_name.find(info.name);
    if (it == by_name.end()) graft::fail(graft::ErrorKind::invalid_argument, "no input file for '", info.name, "'");
    inputs.push_back(it->second);
  }
  auto first = Clock::now();
  std::vector<graft::Tensor> outputs = session.run(inputs);
  double first_run_ms = ms_since(first);
  double first_inference_ms = ms_since(start);
  const long first_run_peak_rss = peak_rss_kb();
  // Fused kernels compile in the background once the first run (which
  // interpreted them) is done: finish that before the harness's warm-up and
  // timed runs, as the other runtimes finish their lazy work in warm-up.
  graft::codegen::CompileCache::global().wait_for_background_compiles();

  json described = json::array();
  for (size_t i = 0; i < outputs.size(); ++i) {
    std::string file = output_dir + "/" + std::to_string(i) + ".bin";
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    out.write(static_cast<const char*>(outputs[i].raw_data()), static_cast<std::streamsize>(outputs[i].nbytes()));
    if (!out) graft::fail(graft::ErrorKind::io, "cannot write '", file, "'");
    described.push_back({{"name", session.outputs()[i].name},
                         {"dtype", std::string(graft::dtype_name(outputs[i].dtype()))},
                         {"shape", outputs[i].shape()},
                         {"file", file}});
  }
  std::cout << json{{"ready", true},
                    {"load_ms", load_ms},
                    {"first_run_ms", first_run_ms},
                    {"first_inference_ms", first_inference_ms},
                    {"startup_rss_kb", startup_rss},
                    {"load_peak_rss_kb", load_peak_rss},
                    {"first_run_peak_rss_kb", first_run_peak_rss},
                    {"threads", session.num_threads()},
                    {"outputs", described}}
                   .dump()
            << std::endl;
  // The first run's outputs are in their files: holding them through the
  // timed runs would count a second copy of every output (a training step's
  // gradients) in the peak memory, where PyTorch's worker drops its
  // gradients before each step.
  outputs.clear();

  for (std::string line; std::getline(std::cin, line);) {
    if (line == "quit") break;
    if (line.rfind("run ", 0) != 0) graft::fail(graft::ErrorKind::invalid_argument, "unknown request '", line, "'");
    int count = std::stoi(line.substr(4));
    std::vector<double> times;
    for (int r = 0; r < count; ++r) {
      auto begin = Clock::now();
      session.run(inputs);
      times.push_back(ms_since(begin));
    }
    std::cout << json{{"times_ms", times}}.dump() << std::endl;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return serve(argc, argv);
  } catch (const std::exception& e) {
    std::cout << json{{"error", e.what()}}.dump() << std::endl;
    return 1;
  }
}
