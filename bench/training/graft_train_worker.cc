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
// {"times_ms": [...]}; "quit" exits. An error prints {"error": "..."}, exit 1
// (the protocol's parts graft_runner shares: bench/common/worker_io).
#include <map>
#include <sstream>
#include <string>

#include "../common/worker_io.h"
#include "graft/codegen/compile_cache.h"
#include "graft/core/error.h"
#include "graft/frontend/onnx_import.h"
#include "graft/training/trainer.h"

namespace {

using graft::bench::Clock;
using graft::bench::ms_since;
using nlohmann::json;

int serve(int argc, char** argv) {
  graft::training::TrainerOptions options;
  options.loss = "loss";
  options.optimizer.kind = graft::training::OptimizerKind::adamw;
  options.optimizer.weight_decay = 0.01f;
  options.learning_rate = 1e-3f;
  options.session.num_threads = 2;
  const graft::bench::WorkerPaths paths = graft::bench::parse_worker_arguments(
      argc, argv,
      "usage: graft_train_worker MODEL INPUTS.json OUTPUT_DIR --params PARAMS.txt [--threads N] [--lr X] "
      "[--weight-decay X]",
      {{"--threads", [&](const std::string& value) { options.session.num_threads = std::stoi(value); }},
       {"--lr", [&](const std::string& value) { options.learning_rate = std::stof(value); }},
       {"--weight-decay", [&](const std::string& value) { options.optimizer.weight_decay = std::stof(value); }},
       {"--params", [&](const std::string& value) {
          std::istringstream lines(graft::bench::read_file(value));
          for (std::string name; std::getline(lines, name);)
            if (!name.empty()) options.parameters.push_back(name);
        }}});
  if (options.parameters.empty()) graft::fail(graft::ErrorKind::invalid_argument, "--params: no parameter names");

  std::map<std::string, graft::Tensor> batch = graft::bench::read_manifest_inputs(paths.manifest);
  std::unique_ptr<graft::ir::Graph> graph = graft::frontend::load_onnx(paths.model);
  graft::training::Trainer trainer(*graph, options);
  graph.reset();

  const auto first = Clock::now();
  const float loss = trainer.step(batch);
  const double first_run_ms = ms_since(first);
  graft::codegen::CompileCache::global().wait_for_background_compiles();
  const json loss_output =
      graft::bench::write_output(paths.output_dir, 0, "loss", graft::Tensor::from_vector<float>({loss}, {1}));
  const graft::training::StepStats& stats = trainer.last_step_stats();
  graft::bench::send({{"ready", true},
                      {"first_run_ms", first_run_ms},
                      {"threads", options.session.num_threads},
                      {"step_peak_bytes", stats.peak_bytes},
                      {"parameter_bytes", stats.parameter_bytes},
                      {"state_bytes", stats.state_bytes},
                      {"outputs", json::array({loss_output})}});
  graft::bench::serve_timed_runs([&] { trainer.step(batch); });
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return graft::bench::run_worker([&] { return serve(argc, argv); });
}
