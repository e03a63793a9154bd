/// \file
/// Running a compiled (or interpreted) pointwise kernel over tensors: output
/// shapes from broadcasting, dimension collapsing, and the split of the
/// iteration space over graft's intra-op threads. A KernelRunner only has to
/// process one run of elements; run_kernel() drives it.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "graft/codegen/kernel_ir.h"
#include "graft/core/tensor.h"
#include "graft/ops/op_context.h"

namespace graft::codegen {

/// Processes runs of elements of one kernel. Operand order everywhere: the
/// kernel inputs, then the kernel outputs. Implementations are thread-safe.
class KernelRunner {
 public:
  virtual ~KernelRunner() = default;
  /// n elements; operand k's element j lives at ptrs[k] + j (all contiguous).
  /// ptrs of inputs the kernel does not read may be null.
  virtual void run_contiguous(int64_t n, void* const* ptrs) const = 0;
  /// n elements; operand k's element j lives at ptrs[k] + j * strides[k]
  /// (strides in elements, 0 for broadcast operands).
  virtual void run_strided(int64_t n, void* const* ptrs, const int64_t* strides) const = 0;
  /// "llvm", "interpreter", "cuda" (for messages and tests).
  virtual const char* kind() const = 0;
};

/// Shape of each kernel output for the given input shapes (numpy broadcasting
/// through the DAG). Throws invalid_argument naming the shapes when they do
/// not broadcast, or when the iteration space has rank above kMaxKernelRank.
std::vector<Shape> kernel_output_shapes(const KernelIR& ir, std::span<const Shape> input_shapes);

/// Runs the kernel over `inputs` (one tensor per kernel input, dtypes as the
/// IR says; throws invalid_argument otherwise) and returns its outputs,
/// allocated from `allocator`. Splits the work over current_num_threads().
std::vector<Tensor> run_kernel(const KernelIR& ir, const KernelRunner& runner, std::span<const Tensor> inputs,
                               ops::OutputAllocator& allocator);

}  // namespace graft::codegen
