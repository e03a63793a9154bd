/// \file
/// What graft's benchmark workers share: bench/compare's graft_runner and
/// bench/training's graft_train_worker speak one protocol with their drivers
/// (compare.py, training_step.py). A worker takes MODEL INPUTS.json
/// OUTPUT_DIR and "--flag value" pairs; INPUTS.json lists {name, dtype,
/// shape, file} with raw little-endian data (a relative file lies beside the
/// manifest). It prints one JSON line when ready (its outputs written to
/// OUTPUT_DIR/<index>.bin), then serves stdin: "run N" runs N times and
/// prints {"times_ms": [...]}, "quit" (or the end of input) exits. Any error
/// prints {"error": "..."} and exits 1.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "graft/core/tensor.h"

namespace graft::bench {

using Clock = std::chrono::steady_clock;

/// Milliseconds from `start` to now.
double ms_since(Clock::time_point start);

/// Peak resident set of this process image in KiB (VmHWM), -1 when unknown.
/// Not ru_maxrss: after fork + exec, Linux keeps the parent's peak in it.
long peak_rss_kb();

/// The whole file at `path`; an io error when it cannot be read.
std::string read_file(const std::string& path);

/// The three arguments every worker takes.
struct WorkerPaths {
  std::string model, manifest, output_dir;
};

/// What a worker does with the value of one "--flag value" argument.
using FlagHandlers = std::map<std::string, std::function<void(const std::string& value)>>;

/// Reads MODEL INPUTS.json OUTPUT_DIR, then hands each "--flag value" pair
/// to its handler. invalid_argument errors: fewer than three arguments
/// (`usage` is the message), a flag that has no handler or no value.
WorkerPaths parse_worker_arguments(int argc, char** argv, const std::string& usage, const FlagHandlers& flags);

/// The tensors the manifest at `manifest_path` lists, by name; an error
/// names the input whose file is missing or of the wrong size.
std::map<std::string, Tensor> read_manifest_inputs(const std::string& manifest_path);

/// Writes `value`'s bytes to OUTPUT_DIR/<index>.bin and returns the ready
/// line's entry for it: {name, dtype, shape, file}.
nlohmann::json write_output(const std::string& output_dir, size_t index, const std::string& name, const Tensor& value);

/// Prints `line` as one JSON line and flushes it to the driver.
void send(const nlohmann::json& line);

/// Serves the driver's requests on stdin until "quit" or the end of input:
/// "run N" calls `run_once` N times and sends {"times_ms": [...]}, each
/// call's wall time.
void serve_timed_runs(const std::function<void()>& run_once);

/// Runs `serve`; an exception is sent as {"error": "..."} and exit code 1.
int run_worker(const std::function<int()>& serve);

}  // namespace graft::bench
