// graft partition MODEL [--backends a,b] [--annotations F] [--fusion on|off] [--shape NAME=D0,D1,...]
//                 [--format text|json] [--dot FILE]:
// prepares the model as a Session would (default pass pipeline), partitions it
// over the backends in priority order, fuses what is left pointwise (unless
// fusion is off) and prints the partition report: for every node the backend
// that runs it (`fuse` for members of fused kernels), or for each backend why
// not; per backend the subgraph count and sizes. --dot writes a Graphviz picture.
// With --shape, the partition of a Session's plan for those input shapes: a
// model with symbolic input dimensions is partitioned again once they are known.
#include <fstream>
#include <map>
#include <optional>
#include <iostream>

#include "cli_support.h"
#include "command.h"
#include "graft/backend/backend.h"
#include "graft/compiler/compiler.h"
#include "graft/core/error.h"
#include "graft/frontend/load_model.h"
#include "graft/frontend/onnx_import.h"
#include "graft/runtime/artifact.h"
#include "graft/runtime/session.h"

namespace graft::cli {

namespace {

struct PartitionCommandOptions {
  std::string model;
  std::string backends;
  std::string device;
  std::string annotations;
  std::string format = "text";
  std::string fusion;
  std::string dot;
  std::vector<std::string> shapes;
};

/// The partition of the plan for the --shape input shapes, made by a Session.
partition::PartitionReport plan_partition(const PartitionCommandOptions& options, std::optional<bool> fusion,
                                          const std::vector<std::string>& backends) {
  std::map<std::string, Shape> shapes = parse_shape_flags(options.shapes);
  runtime::SessionOptions session_options;
  session_options.backends = backends;
  session_options.fusion = fusion;
  if (!options.device.empty()) session_options.device = runtime::parse_device(options.device);
  if (!options.annotations.empty()) session_options.annotations = partition::load_annotations(options.annotations);
  std::unique_ptr<runtime::Session> loaded = frontend::load_model(options.model, session_options);
  runtime::Session& session = *loaded;
  return session.partition_report_for(runtime::concrete_input_types(session.inputs(), shapes, "--shape"));
}

int partition_model(const PartitionCommandOptions& options) {
  if (options.format != "text" && options.format != "json")
    fail(ErrorKind::invalid_argument, "--format '", options.format, "' is not text or json");
  std::optional<bool> fusion = parse_on_off(options.fusion, "--fusion");
  runtime::SessionOptions session_options;
  if (!options.backends.empty()) session_options.backends = parse_name_list(options.backends, "--backends");
  if (!options.device.empty()) session_options.device = runtime::parse_device(options.device);
  compiler::CompileOptions compile_options = runtime::compile_options_of(session_options, 1);
  compile_options.backends = backend::resolve_backend_order(compile_options.backends);
  if (!options.annotations.empty()) compile_options.annotations = partition::load_annotations(options.annotations);
  compile_options.fusion = fusion;

  partition::PartitionReport report;
  if (!options.shapes.empty()) {
    report = plan_partition(options, fusion, compile_options.backends);
  } else {
    std::unique_ptr<ir::Graph> graph = frontend::load_onnx(options.model);
    report = compiler::prepare(std::move(graph), compile_options).report;
  }
  if (options.format == "json")
    std::cout << report.to_json() << "\n";
  else
    std::cout << report.to_text() << "partitioned " << report.nodes.size() << " nodes in " << report.milliseconds
              << " ms\n";
  if (!options.dot.empty()) {
    std::ofstream out(options.dot, std::ios::binary);
    out << report.to_dot();
    out.close();
    if (!out) fail(ErrorKind::io, "cannot write --dot file '", options.dot, "'");
    if (options.format == "text") std::cout << "wrote " << options.dot << "\n";
  }
  return 0;
}

std::function<int()> setup_partition(CLI::App& app) {
  auto options = std::make_shared<PartitionCommandOptions>();
  CLI::App* sub = app.add_subcommand("partition", "show which backend runs each node of a model, and why");
  sub->add_option("model", options->model, "the .onnx model")->required();
  sub->add_option("--backends", options->backends,
                  "backends in priority order, comma-separated (default: GRAFT_BACKENDS, else all available)");
  sub->add_option("--device", options->device, "partition for this device: opencl[:N] (default: cpu)");
  sub->add_option("--annotations", options->annotations,
                  "JSON file pinning nodes, forbidding backends, declaring regions");
  sub->add_option("--fusion", options->fusion,
                  "on|off: pointwise fusion after partitioning (default: GRAFT_FUSION, else on)");
  sub->add_option("--shape", options->shapes,
                  "NAME=D0,D1,...: partition the plan for this input shape (repeatable); a model with symbolic "
                  "input dimensions is partitioned again once they are known");
  sub->add_option("--format", options->format, "text (default) or json");
  sub->add_option("--dot", options->dot, "write a Graphviz picture of the partitioning to FILE");
  return [options] { return partition_model(*options); };
}

}  // namespace

GRAFT_CLI_COMMAND(setup_partition);

}  // namespace graft::cli
