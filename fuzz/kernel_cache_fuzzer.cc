// Fuzzes the on-disk kernel cache (GRAFT_CACHE_DIR, graft/codegen/compile_cache.h):
// each input is written as the cache entry of one fused kernel (x + y on
// float32) and the kernel is then asked of the cache, which must take a
// valid entry and treat anything else -- short, wrong magic, size, key or
// checksum -- as a miss, never crash or allocate what a size field claims.
// Compiles are made to fail after the first, so a miss costs an interpreter
// fallback, not an LLVM compile. The first compile, at start-up, writes the
// real entry into the corpus directory given on the command line (when it
// has none yet), so the fuzzer starts from an entry that loads.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "fuzz_support.h"
#include "graft/codegen/compile_cache.h"
#include "graft/ir/kernel_ir.h"

namespace {

const graft::ir::KernelIR& add_kernel() {
  static const graft::ir::KernelIR kernel = [] {
    graft::ir::KernelIR ir;
    ir.input_dtypes = {graft::DType::float32, graft::DType::float32};
    int32_t x = ir.add_input(0, graft::DType::float32), y = ir.add_input(1, graft::DType::float32);
    ir.outputs.push_back(ir.add_op(graft::ir::ExprOp::add, graft::DType::float32, x, y));
    return graft::ir::canonicalize(ir);
  }();
  return kernel;
}

std::string entry_path() {
  static const std::string path = graft::fuzz::scratch_directory() + "/cache/" +
                                  graft::codegen::CompileCache::global().cpu_key(add_kernel()) + ".gko";
  return path;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  graft::fuzz::prepare_fuzzing_process();
  ::setenv("GRAFT_JIT", "1", 1);
  std::string cache = graft::fuzz::scratch_directory() + "/cache";
  ::setenv("GRAFT_CACHE_DIR", cache.c_str(), 1);
  graft::codegen::CompileCache& compile_cache = graft::codegen::CompileCache::global();
  if (compile_cache.cpu_key(add_kernel()).empty()) {
    std::cerr << "kernel_cache_fuzzer: no LLVM JIT here: " << graft::codegen::cpu_jit_unavailable_reason() << "\n";
    std::exit(1);
  }
  compile_cache.cpu_runner(add_kernel());  // compiles and writes the real entry
  std::ifstream in(entry_path(), std::ios::binary);
  std::stringstream valid_entry;
  valid_entry << in.rdbuf();
  for (int i = 1; i < *argc; ++i) {
    std::filesystem::path corpus((*argv)[i]);
    if ((*argv)[i][0] == '-' || !std::filesystem::is_directory(corpus)) continue;
    if (std::filesystem::is_empty(corpus)) std::ofstream(corpus / "valid_entry.gko", std::ios::binary) << valid_entry.str();
    break;
  }
  compile_cache.set_fail_compiles_for_testing(true);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  {
    std::ofstream out(entry_path(), std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  graft::codegen::CompileCache& compile_cache = graft::codegen::CompileCache::global();
  compile_cache.clear_memory();
  graft::fuzz::expect_graft_errors([&] { compile_cache.cpu_runner(add_kernel()); });
  return 0;
}
