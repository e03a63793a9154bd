// graft zoo NAME -o FILE.onnx: writes a zoo model (graft/zoo/zoo.h).
// graft zoo --list: the models and their descriptions.
#include <fstream>
#include <iostream>

#include "command.h"
#include "graft/core/error.h"
#include "graft/zoo/zoo.h"

namespace graft::cli {

namespace {

struct ZooOptions {
  std::string name;
  std::string output;
  uint64_t seed = 0;
  bool list = false;
};

int run_zoo(const ZooOptions& options) {
  if (options.list) {
    for (const std::string& name : zoo::zoo_model_names())
      std::cout << name << "\t" << zoo::zoo_model_description(name) << "\n";
    return 0;
  }
  if (options.name.empty()) fail(ErrorKind::invalid_argument, "zoo: give a model name (graft zoo --list) and -o FILE");
  if (options.output.empty()) fail(ErrorKind::invalid_argument, "zoo: give the output file with -o FILE.onnx");
  std::string bytes = zoo::build_zoo_model(options.name, options.seed);
  std::ofstream out(options.output, std::ios::binary | std::ios::trunc);
  if (!out) fail(ErrorKind::io, "cannot open '", options.output, "' for writing");
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) fail(ErrorKind::io, "could not write '", options.output, "'");
  std::cout << "wrote " << options.name << " (" << bytes.size() << " bytes, seed " << options.seed << ") to "
            << options.output << "\n";
  return 0;
}

std::function<int()> setup_zoo(CLI::App& app) {
  auto options = std::make_shared<ZooOptions>();
  CLI::App* sub = app.add_subcommand("zoo", "write a built-in model (seeded random weights) as an ONNX file");
  sub->add_option("name", options->name, "model name (see --list)");
  sub->add_option("-o,--output", options->output, "the .onnx file to write");
  sub->add_option("--seed", options->seed, "weight seed (default 0)");
  sub->add_flag("--list", options->list, "list the models");
  return [options] { return run_zoo(*options); };
}

}  // namespace

GRAFT_CLI_COMMAND(setup_zoo);

}  // namespace graft::cli
