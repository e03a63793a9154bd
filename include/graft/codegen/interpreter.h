/// \file
/// The kernel IR interpreter: evaluates the expression DAG tile by tile
/// (tiles sized so that every node's tile fits in L1 together), with the exact
/// scalar semantics of the reference kernels. Used when GRAFT_JIT=0, when no
/// JIT is built in, and whenever code generation or compilation fails.
#pragma once

#include "graft/codegen/kernel_runner.h"

namespace graft::codegen {

/// Interprets one kernel. Thread-safe: scratch tiles are per thread.
class Interpreter final : public KernelRunner {
 public:
  /// Validates `ir` (throws invalid_model on malformed IR).
  explicit Interpreter(ir::KernelIR ir);
  void run_contiguous(int64_t n, void* const* ptrs) const override;
  void run_strided(int64_t n, void* const* ptrs, const int64_t* strides) const override;
  const char* kind() const override { return "interpreter"; }
  /// Elements per tile.
  int64_t tile_size() const { return tile_; }

 private:
  ir::KernelIR ir_;
  int64_t tile_;
};

}  // namespace graft::codegen
