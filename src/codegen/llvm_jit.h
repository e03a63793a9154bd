// The CPU emitter's interface (private to src/codegen): kernel IR -> LLVM IR
// -> optimized object code for the host CPU, and object code -> a runnable
// KernelRunner through ORC LLJIT. Built only with GRAFT_WITH_LLVM; without it
// llvm_jit_available() is false and the other functions throw unsupported.
// With LLVM, llvm_jit.cc is the plugin libgraft_llvm_jit.so and libgraft's
// llvm_jit_loader.cc loads it on first use (so that models that never
// JIT-compile a kernel do not map libLLVM).
#pragma once

#include <memory>
#include <string>

#include "graft/codegen/kernel_runner.h"

namespace graft::codegen {

/// True when graft was built with LLVM and the host target initialized
/// (loads the plugin the first time).
bool llvm_jit_available();
/// True once the plugin is mapped into this process; never loads it.
bool llvm_jit_loaded();
/// The plugin's file (beside libgraft.so); empty when graft was built
/// without LLVM.
std::string llvm_jit_plugin_path();
/// Why llvm_jit_available() is false (the plugin could not be loaded, the
/// host target did not initialize, graft was built without LLVM); empty when
/// it is true.
std::string llvm_jit_unavailable_reason();
/// What compiled object code depends on besides the kernel: LLVM version,
/// target triple, host CPU name and features, emitter version. Part of the
/// compile cache key.
std::string llvm_target_id();
/// The LLVM IR text of a kernel (unoptimized), for debugging and tests.
std::string emit_llvm_ir(const ir::KernelIR& ir, const std::string& symbol_prefix);
/// Emits and compiles a kernel for the host CPU to an object file: the
/// function `<symbol_prefix>_kernel` (dense runs, a multiple of the vector
/// width) and the constant `<symbol_prefix>_streaming_lanes`.
std::string compile_to_object(const ir::KernelIR& ir, const std::string& symbol_prefix);
/// Links object code compiled from `ir` into the process (a fresh JITDylib)
/// and returns a runner calling it (tails and strided runs go through scratch
/// buffers). Throws graft::Error when the object is unusable.
std::shared_ptr<const KernelRunner> load_object(const ir::KernelIR& ir, const std::string& object,
                                                const std::string& symbol_prefix);

/// The plugin's functions; its one exported symbol, `graft_llvm_jit_table`
/// (extern "C"), returns them.
struct LlvmJitTable {
  static constexpr int kAbiVersion = 2;
  int abi_version = kAbiVersion;
  bool (*available)();
  std::string (*target_id)();
  std::string (*emit_ir)(const ir::KernelIR&, const std::string&);
  std::string (*compile)(const ir::KernelIR&, const std::string&);
  std::shared_ptr<const KernelRunner> (*load)(const ir::KernelIR&, const std::string&, const std::string&);
};

}  // namespace graft::codegen
