// Fuzzes .npy input files as `graft run --input NAME=FILE.npy` reads them
// (graft::frontend::load_npy), and writes back what loaded: save_npy of a
// loaded tensor must load again to the same dtype, shape and bytes.
#include <cstdlib>
#include <cstring>

#include "fuzz_support.h"
#include "graft/frontend/npy.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  graft::fuzz::prepare_fuzzing_process();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string path = graft::fuzz::write_scratch_file(std::string_view(reinterpret_cast<const char*>(data), size), ".npy");
  graft::fuzz::expect_graft_errors([&] {
    graft::Tensor loaded = graft::frontend::load_npy(path);
    std::string again = graft::fuzz::scratch_directory() + "/again.npy";
    graft::frontend::save_npy(loaded, again);
    graft::Tensor reloaded = graft::frontend::load_npy(again);
    if (reloaded.dtype() != loaded.dtype() || reloaded.shape() != loaded.shape() ||
        (loaded.nbytes() && std::memcmp(reloaded.raw_data(), loaded.raw_data(), loaded.nbytes()) != 0))
      std::abort();  // a round trip that changes the tensor
  });
  return 0;
}
