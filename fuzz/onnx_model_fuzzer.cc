// Fuzzes ONNX model bytes as `graft run model.onnx` reads them: parsed,
// imported, passed, partitioned, fused and planned by a Session, then run
// once on small inputs within a memory limit and a deadline. Bytes that
// start with the artifact magic are left to artifact_fuzzer.
#include "fuzz_support.h"
#include "graft/runtime/artifact.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  graft::fuzz::prepare_fuzzing_process();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  if (graft::runtime::has_artifact_magic(bytes)) return -1;  // not an ONNX input: keep it out of the corpus
  graft::fuzz::expect_graft_errors([&] { graft::fuzz::load_plan_and_run(bytes); });
  return 0;
}
