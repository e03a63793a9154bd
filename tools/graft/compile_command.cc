// graft compile MODEL.onnx -o MODEL.graft: partitions, fuses and compiles a
// model once, for the input shapes given with --shape (or the model's own
// when they are all known), and writes a compiled artifact that `graft run`
// and Session load without partitioning or compiling again. --emit-c DIR also
// writes the C that the ccodegen backend generated, one file per subgraph.
#include <iostream>
#include <map>

#include "artifact_info.h"
#include "cli_support.h"
#include "command.h"
#include "graft/frontend/load_model.h"
#include "graft/core/error.h"
#include "graft/runtime/artifact.h"

namespace graft::cli {

namespace {

struct CompileCommandOptions {
  std::string model;
  std::string output;
  std::vector<std::string> shapes;
  std::string backends;
  std::string device;
  std::string fusion;
  std::string threads;
  std::string emit_c;
};

int compile_model(const CompileCommandOptions& options) {
  runtime::ArtifactCompileOptions compile;
  compile.input_shapes = parse_shape_flags(options.shapes);
  compile.shape_flag = "--shape";
  if (!options.backends.empty()) compile.session.backends = parse_name_list(options.backends, "--backends");
  if (!options.device.empty()) compile.session.device = runtime::parse_device(options.device);
  compile.session.fusion = parse_on_off(options.fusion, "--fusion");
  if (!options.threads.empty()) compile.session.num_threads = parse_thread_count(options.threads, "--threads");
  compile.session.emit_source_dir = options.emit_c;
  runtime::ArtifactInfo info = frontend::compile_artifact(options.model, options.output, compile);
  std::cout << "wrote " << options.output << "\n";
  print_artifact_info(options.output, info);
  return 0;
}

std::function<int()> setup_compile(CLI::App& app) {
  auto options = std::make_shared<CompileCommandOptions>();
  CLI::App* sub = app.add_subcommand("compile", "partition, fuse and compile a model once into a .graft artifact");
  sub->add_option("model", options->model, "the .onnx model")->required();
  sub->add_option("-o,--output", options->output, "the .graft file to write")->required();
  sub->add_option("--shape", options->shapes, "NAME=D0,D1,...: the shape input NAME is compiled for (repeatable)");
  sub->add_option("--backends", options->backends,
                  "backends in priority order, comma-separated (default: every available host backend)");
  sub->add_option("--device", options->device,
                  "compile for this device: opencl[:N] puts its backend first (the artifact then needs it)");
  sub->add_option("--fusion", options->fusion, "on or off (default: GRAFT_FUSION, else on)");
  sub->add_option("--threads", options->threads, "intra-op threads the modules are compiled for");
  sub->add_option("--emit-c", options->emit_c, "also write ccodegen's generated C files into DIR");
  return [options] { return compile_model(*options); };
}

}  // namespace

GRAFT_CLI_COMMAND(setup_compile);

}  // namespace graft::cli
