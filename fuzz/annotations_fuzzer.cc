// Fuzzes annotation files (`graft run|partition --annotations FILE`,
// graft/partition/annotations.h): parsed, and when they parse, used to
// partition the zoo's MLP, which is then run once on small inputs. The seed
// corpus names the MLP's nodes and backends so mutations reach the
// partitioner's pin, forbid and region handling.
#include <memory>

#include "fuzz_support.h"
#include "graft/frontend/load_model.h"
#include "graft/partition/annotations.h"
#include "graft/zoo/zoo.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  graft::fuzz::prepare_fuzzing_process();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string model = graft::zoo::build_zoo_model("mlp");
  std::string text(reinterpret_cast<const char*>(data), size);
  graft::fuzz::expect_graft_errors([&] {
    graft::runtime::SessionOptions options = graft::fuzz::fuzzing_session_options();
    options.annotations = graft::partition::parse_annotations(text, "fuzzed annotations");
    graft::fuzz::run_on_small_inputs(*graft::frontend::load_model_from_memory(model, options));
  });
  return 0;
}
