// Calling a kernel compiled by the CPU emitter (llvm_jit.cc), private to
// src/codegen: whoever linked the object code into the process (LLJIT in the
// LLVM plugin, or graft's own object linker for kernels from the disk cache)
// hands the kernel function to make_jit_runner.
#pragma once

#include <cstdint>
#include <memory>

#include "graft/codegen/kernel_runner.h"

namespace graft::codegen {

/// The emitted kernel function: `n` elements, a multiple of the vector width,
/// every operand dense (inputs, then outputs, in `ptrs`); `stream` != 0 stores
/// the outputs with non-temporal stores.
using CompiledKernelFunction = void (*)(int64_t n, void* const* ptrs, int32_t stream);

/// Elements per call of the streaming mode (64 bytes of float32): the value
/// of `<prefix>_streaming_lanes` in a kernel with the non-temporal store path.
constexpr int64_t kStreamLanes = 16;

/// A runner calling `kernel`, compiled from `ir` for vectors of `lanes`
/// elements, with `streaming_lanes` (0 or kStreamLanes) from the object
/// code. Tails and strided runs go through scratch buffers. `code` keeps the
/// memory that holds the code alive as long as the runner (null when the
/// code lives as long as the process).
std::shared_ptr<const KernelRunner> make_jit_runner(CompiledKernelFunction kernel, int64_t lanes,
                                                    int64_t streaming_lanes, const ir::KernelIR& ir,
                                                    std::shared_ptr<const void> code);

}  // namespace graft::codegen
