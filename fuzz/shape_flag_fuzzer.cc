// Fuzzes `--shape NAME=D0,D1,...` (graft run and graft compile): each line of
// the input is one --shape value, parsed by the CLI's own parser
// (tools/graft/cli_support.cc, compiled in), checked against the zoo MLP's
// input (float32[batch,784]) as graft compile does, planned at those shapes
// and, when the inputs are small, run once within the memory limit.
#include <memory>
#include <sstream>

#include "../tools/graft/cli_support.h"
#include "fuzz_support.h"
#include "graft/frontend/load_model.h"
#include "graft/runtime/artifact.h"
#include "graft/zoo/zoo.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  graft::fuzz::prepare_fuzzing_process();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::unique_ptr<graft::runtime::Session> session = graft::frontend::load_model_from_memory(
      graft::zoo::build_zoo_model("mlp"), graft::fuzz::fuzzing_session_options());
  std::vector<std::string> flags;
  std::istringstream lines(std::string(reinterpret_cast<const char*>(data), size));
  for (std::string line; std::getline(lines, line);) flags.push_back(line);
  graft::fuzz::expect_graft_errors([&] {
    std::map<std::string, graft::Shape> shapes = graft::cli::parse_shape_flags(flags);
    std::vector<graft::ir::ValueType> types = graft::runtime::concrete_input_types(session->inputs(), shapes, "--shape");
    session->plan_for_types(types);
    graft::fuzz::run_at_types(*session, types);
  });
  return 0;
}
