// graft opt MODEL --passes a,b,c -o OUT.onnx: runs a pass pipeline (by name,
// passes.def) over a model and writes the result as ONNX.
// graft opt --list: the registered passes.
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "cli_support.h"
#include "command.h"
#include "graft/core/error.h"
#include "graft/frontend/onnx_import.h"
#include "graft/passes/pass.h"

namespace graft::cli {

namespace {

struct OptOptions {
  std::string model;
  std::string output;
  std::string passes;
  std::string threads;
  bool list = false;
  bool verify = false;
};

std::vector<std::string> split_pass_names(const std::string& text) {
  std::vector<std::string> names;
  std::stringstream parts(text);
  std::string name;
  while (std::getline(parts, name, ','))
    if (!name.empty()) names.push_back(name);
  return names;
}

std::string join(const std::vector<std::string>& names) {
  std::string text;
  for (const auto& n : names) text += (text.empty() ? "" : ",") + n;
  return text;
}

/// The Session's pipeline without compute-float16-in-float32: how graft's
/// CPU computes float16, not a rewrite for other runtimes (it would double a
/// float16 model's weights).
std::vector<std::string> opt_default_pipeline() {
  std::vector<std::string> names = passes::default_pipeline();
  std::erase(names, "compute-float16-in-float32");
  return names;
}

int optimize(const OptOptions& options) {
  if (options.list) {
    size_t width = 0;
    for (const auto& pass : passes::all_passes()) width = std::max(width, pass.name.size());
    for (const auto& pass : passes::all_passes())
      std::cout << pass.name << std::string(width - pass.name.size() + 2, ' ') << pass.description << "\n";
    std::cout << "default pipeline: " << join(opt_default_pipeline()) << "\n";
    return 0;
  }
  if (options.model.empty()) fail(ErrorKind::invalid_argument, "opt: give a model (or --list)");
  if (options.output.empty()) fail(ErrorKind::invalid_argument, "opt: give the output file with -o OUT.onnx");
  passes::PassContext context;
  context.verify_after_each = options.verify;
  context.keep_opset = true;  // the file is for any runtime: no op newer than the model's opset
  if (!options.threads.empty()) context.num_threads = parse_thread_count(options.threads, "--threads");
  std::vector<std::string> names = options.passes.empty() ? opt_default_pipeline() : split_pass_names(options.passes);
  if (!options.passes.empty() && names.empty())
    fail(ErrorKind::invalid_argument, "--passes '", options.passes, "' names no pass (see graft opt --list)");
  for (const auto& name : names)
    if (!passes::find_pass(name)) {
      std::vector<std::string> known;
      for (const auto& pass : passes::all_passes()) known.emplace_back(pass.name);
      fail(ErrorKind::invalid_argument, "unknown pass '", name, "' (known: ", join(known), ")");
    }

  std::unique_ptr<ir::Graph> graph = frontend::load_onnx(options.model);
  size_t before = graph->num_nodes();
  passes::run_pipeline(graph, names, context);
  frontend::save_onnx(*graph, options.output);
  std::cout << "ran " << join(names) << ": " << before << " nodes -> " << graph->num_nodes()
            << " nodes (inputs and constants included); wrote " << options.output << "\n";
  return 0;
}

std::function<int()> setup_opt(CLI::App& app) {
  auto options = std::make_shared<OptOptions>();
  CLI::App* sub = app.add_subcommand("opt", "run graph passes over a model and write the result as ONNX");
  sub->add_option("model", options->model, "the .onnx model");
  sub->add_option("-o,--output", options->output, "the .onnx file to write");
  sub->add_option("--passes", options->passes, "comma-separated pass names (default: the default pipeline)");
  sub->add_option("--threads", options->threads, "threads for passes that evaluate kernels (default 1)");
  sub->add_flag("--verify", options->verify, "verify the graph after every pass");
  sub->add_flag("--list", options->list, "list the registered passes");
  return [options] { return optimize(*options); };
}

}  // namespace

GRAFT_CLI_COMMAND(setup_opt);

}  // namespace graft::cli
