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
// the same protocol, so compare.py treats the three alike; bench/common/worker_io
// holds the protocol's parts graft's workers share.
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "../common/worker_io.h"
#include "graft/codegen/compile_cache.h"
#include "graft/core/error.h"
#include "graft/frontend/load_model.h"
#include "graft/runtime/session.h"

namespace {

using graft::bench::Clock;
using graft::bench::ms_since;
using graft::bench::peak_rss_kb;
using nlohmann::json;

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> parts;
  std::stringstream s(text);
  for (std::string part; std::getline(s, part, ',');)
    if (!part.empty()) parts.push_back(part);
  return parts;
}

int serve(int argc, char** argv) {
  graft::runtime::SessionOptions options;
  options.num_threads = 2;
  const graft::bench::WorkerPaths paths = graft::bench::parse_worker_arguments(
      argc, argv, "usage: graft_runner MODEL INPUTS.json OUTPUT_DIR [--threads N] [--backends a,b]",
      {{"--threads", [&](const std::string& value) { options.num_threads = std::stoi(value); }},
       {"--backends", [&](const std::string& value) { options.backends = split_commas(value); }}});

  std::map<std::string, graft::Tensor> by_name = graft::bench::read_manifest_inputs(paths.manifest);
  const long startup_rss = peak_rss_kb();

  auto start = Clock::now();
  std::unique_ptr<graft::runtime::Session> loaded = graft::frontend::load_model(paths.model, options);
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
  for (size_t i = 0; i < outputs.size(); ++i)
    described.push_back(graft::bench::write_output(paths.output_dir, i, session.outputs()[i].name, outputs[i]));
  graft::bench::send({{"ready", true},
                      {"load_ms", load_ms},
                      {"first_run_ms", first_run_ms},
                      {"first_inference_ms", first_inference_ms},
                      {"startup_rss_kb", startup_rss},
                      {"load_peak_rss_kb", load_peak_rss},
                      {"first_run_peak_rss_kb", first_run_peak_rss},
                      {"threads", session.num_threads()},
                      {"outputs", described}});
  // The first run's outputs are in their files: holding them through the
  // timed runs would count a second copy of every output (a training step's
  // gradients) in the peak memory, where PyTorch's worker drops its
  // gradients before each step.
  outputs.clear();
  graft::bench::serve_timed_runs([&] { session.run(inputs); });
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return graft::bench::run_worker([&] { return serve(argc, argv); });
}
