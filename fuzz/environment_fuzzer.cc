// Fuzzes the parsers of graft's GRAFT_* environment variables and of the
// --device value: the first byte picks the variable, the rest (up to a NUL,
// which no environment value can hold) is its value. Each parser must
// accept the value or refuse it with an invalid_argument graft::Error whose
// message is one printable line (an error that embeds a newline or control
// characters from the value breaks logs and terminals; that is a finding).
// GRAFT_JIT_LANES (read inside the LLVM plugin), GRAFT_DNNL_VERBOSE and
// GRAFT_CUDA_TF32 (compared with fixed strings) are not fuzzed.
#include <cstdlib>
#include <filesystem>
#include <string>

#include "fuzz_support.h"
#include "graft/backend/backend.h"
#include "graft/codegen/compile_cache.h"
#include "graft/core/parallel.h"
#include "graft/fusion/fusion_options.h"
#include "graft/runtime/session.h"

namespace {

/// GRAFT_CACHE_DIR is created when missing: the fuzzed value is kept inside
/// the scratch directory (its slashes become '_'), so no run creates
/// directories elsewhere, while what the parser sees stays arbitrary.
std::string cache_directory_value(std::string value) {
  for (char& c : value)
    if (c == '/') c = '_';
  return graft::fuzz::scratch_directory() + "/cache/" + value;
}

void parse_variable(uint8_t selector, const std::string& value) {
  using namespace graft;
  switch (selector % 9) {
    case 0: ::setenv("GRAFT_MAX_MEMORY", value.c_str(), 1); runtime::max_memory(std::nullopt); break;
    case 1: ::setenv("GRAFT_MAX_PLANS", value.c_str(), 1); runtime::max_specialized_plans(std::nullopt); break;
    case 2: ::setenv("GRAFT_NUM_THREADS", value.c_str(), 1); default_num_threads(); break;
    case 3:  // the small switches, picked by the selector's upper part
      if ((selector / 9) % 3 == 0) {
        ::setenv("GRAFT_FUSION", value.c_str(), 1);
        fusion::fusion_from_environment();
      } else if ((selector / 9) % 3 == 1) {
        ::setenv("GRAFT_ADAPT_THREADS", value.c_str(), 1);
        runtime::adapt_threads_to_load(std::nullopt);
      } else {
        ::setenv("GRAFT_ADAPT_THREADS_LOG", value.c_str(), 1);
        runtime::adapt_threads_log_level();
      }
      break;
    case 4: ::setenv("GRAFT_JIT", value.c_str(), 1); codegen::jit_enabled_by_environment(); break;
    case 5: ::setenv("GRAFT_BACKENDS", value.c_str(), 1); backend::resolve_backend_order({}); break;
    case 6:
      ::setenv("GRAFT_CACHE_DIR", cache_directory_value(value).c_str(), 1);
      codegen::cache_directory_from_environment();
      break;
    case 7: runtime::parse_device(value); break;
    case 8: runtime::parse_byte_size(value, "--max-memory"); break;
  }
}

bool is_one_printable_line(const std::string& message) {
  for (char c : message)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return false;
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  graft::fuzz::prepare_fuzzing_process();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string value(reinterpret_cast<const char*>(data) + 1, size - 1);
  value = value.substr(0, value.find('\0'));
  try {
    parse_variable(data[0], value);
  } catch (const graft::Error& error) {
    if (!is_one_printable_line(error.what())) {
      std::fprintf(stderr, "error message is not one printable line: %s\n", error.what());
      std::abort();
    }
  }
  graft::fuzz::prepare_fuzzing_process();  // the next input starts from the same environment
  return 0;
}
