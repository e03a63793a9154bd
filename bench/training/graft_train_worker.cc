// graft_train_worker: the graft side of training_step.py --update.
//
//   graft_train_worker MODEL.onnx INPUTS.json OUTPUT_DIR --params PARAMS.txt
//                      [--threads N] [--lr X] [--weight-decay X]
//
// Trains MODEL.onnx (exported with its loss, output "loss") with
// training::Trainer and AdamW (PyTorch's defaults: betas 0.9, 0.999, eps
// 1e-8; lr 1e-3 and weight decay 0.01 unless given) on the one batch named
// in INPUTS.json (bench/compare's manifest: {name, dtype, shape, file}),
// updating the initializers listed in PARAMS.txt (one name a line: the
// PyTorch model's parameters, not its running statistics). One step is what
// `graft train` does per batch: the training graph's run (forward, backward,
// the AdamW update of every parameter) and the new values written back into
// the session's weights. Speaks bench/compare's runner protocol: one JSON
// line when ready (the first step done, its loss, taken before the update as
// PyTorch's loss.item(), written to OUTPUT_DIR/0.bin; "step_peak_bytes": the
// step's peak of intermediate values), then "run N" runs N steps and prints
// {"times_ms": [...]}; "quit" exits. An error prints {"error": "..."}, exit 1.
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "graft/codegen/compile_cache.h"
#include "graft/core/error.h"
#include "graft/frontend/onnx_import.h"
#include "graft/training/trainer.h"

namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) graft::fail(graft::ErrorKind::io, "cannot read '", path, "'");
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

graft::Tensor read_input(const json& entry, const std::string& manifest_path) {
  graft::DType dtype = graft::dtype_from_name(entry.at("dtype").get<std::string>());
  graft::Shape shape = entry.at("shape").get<std::vector<int64_t>>();
  graft::Tensor t(dtype, shape);
  std::filesystem::path file(entry.at("file").get<std::string>());
  if (!file.is_absolute()) file = std::filesystem::path(manifest_path).parent_path() / file.filename();
  std::string bytes = read_file(file.string());
  if (bytes.size() != t.nbytes())
    graft::fail(graft::ErrorKind::invalid_argument, "input '", entry.at("name").get<std::string>(), "': file has ",
                bytes.size(), " bytes, expected ", t.nbytes());
  std::copy(bytes.begin(), bytes.end(), static_cast<char*>(t.raw_data()));
  return t;
}

int serve(int argc, char** argv) {
  if (argc < 4)
    graft::fail(graft::ErrorKind::invalid_argument,
                "usage: graft_train_worker MODEL INPUTS.json OUTPUT_DIR --params PARAMS.txt [--threads N] [--lr X] "
                "[--weight-decay X]");
  const std::string model = argv[1], manifest_path = argv[2], output_dir = argv[3];
  graft::training::TrainerOptions options;
  options.loss = "loss";
  options.optimizer.kind = graft::training::OptimizerKind::adamw;
  options.optimizer.weight_decay = 0.01f;
  options.learning_rate = 1e-3f;
  options.session.num_threads = 2;
  for (int i = 4; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--threads") {
      options.session.num_threads = std::stoi(value);
    } else if (flag == "--lr") {
      options.learning_rate = std::stof(value);
    } else if (flag == "--weight-decay") {
      options.optimizer.weight_decay = std::stof(value);
    } else if (flag == "--params") {
      std::istringstream lines(read_file(value));
      for (std::string name; std::getline(lines, name);)
        if (!name.empty()) options.parameters.push_back(name);
    } else {
      graft::fail(graft::ErrorKind::invalid_argument, "unknown flag '", flag, "'");
    }
  }
  if (options.parameters.empty()) graft::fail(graft::ErrorKind::invalid_argument, "--params: no parameter names");

  std::map<std::string, graft::Tensor> batch;
  for (const json& entry : json::parse(read_file(manifest_path)))
    batch[entry.at("name").get<std::string>()] = read_input(entry, manifest_path);
  std::unique_ptr<graft::ir::Graph> graph = graft::frontend::load_onnx(model);
  graft::training::Trainer trainer(*graph, options);
  graph.reset();

  const auto first = Clock::now();
  const float loss = trainer.step(batch);
  const double first_run_ms = ms_since(first);
  graft::codegen::CompileCache::global().wait_for_background_compiles();
  const std::string file = output_dir + "/0.bin";
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(&loss), sizeof(loss));
  if (!out) graft::fail(graft::ErrorKind::io, "cannot write '", file, "'");
  out.close();
  const graft::training::StepStats& stats = trainer.last_step_stats();
  std::cout << json{{"ready", true},
                    {"first_run_ms", first_run_ms},
                    {"threads", options.session.num_threads},
                    {"step_peak_bytes", stats.peak_bytes},
                    {"parameter_bytes", stats.parameter_bytes},
                    {"state_bytes", stats.state_bytes},
                    {"outputs",
                     json::array({{{"name", "loss"}, {"dtype", "float32"}, {"shape", {1}}, {"file", file}}})}}
                   .dump()
            << std::endl;

  for (std::string line; std::getline(std::cin, line);) {
    if (line == "quit") break;
    if (line.rfind("run ", 0) != 0) graft::fail(graft::ErrorKind::invalid_argument, "unknown request '", line, "'");
    const int count = std::stoi(line.substr(4));
    std::vector<double> times;
    for (int r = 0; r < count; ++r) {
      const auto begin = Clock::now();
      trainer.step(batch);
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
