/// \file
/// Running a compiled (or interpreted) pointwise kernel over tensors: output
/// shapes from broadcasting, dimension collapsing, and the split of the
/// iteration space over graft's intra-op threads. A KernelRunner only has to
/// process one run of elements; run_kernel() drives it.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "graft/ir/kernel_ir.h"
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
  /// Elements per call of run_streaming(); 0 when the runner has no
  /// streaming variant.
  virtual int64_t streaming_lanes() const { return 0; }
  /// Like run_contiguous, with non-temporal stores that bypass the caches
  /// (for outputs far larger than the caches). n is a multiple of
  /// streaming_lanes() and every output pointer is 64-byte aligned.
  virtual void run_streaming(int64_t n, void* const* ptrs) const { run_contiguous(n, ptrs); }
  /// "llvm", "interpreter", "cuda" (for messages and tests).
  virtual const char* kind() const = 0;
};

/// Shape of each kernel output for the given input shapes (numpy broadcasting
/// through the DAG). Throws invalid_argument naming the shapes when they do
/// not broadcast, or when the iteration space has rank above kMaxKernelRank.
std::vector<Shape> kernel_output_shapes(const ir::KernelIR& ir, std::span<const Shape> input_shapes);

/// The shapes of `inputs` after checking them against the kernel: one
/// defined tensor per kernel input, of the dtype the IR says. Throws
/// invalid_argument naming the input otherwise. Every host-tensor entry point
/// (run_kernel, CudaKernel::run, OpenClKernel::run) starts here.
std::vector<Shape> kernel_input_shapes(const ir::KernelIR& ir, std::span<const Tensor> inputs);

/// Where each operand's elements lie in a kernel's iteration space (what
/// run_kernel splits over threads, and what the CUDA and OpenCL launches
/// pass their kernels): the iteration space with extent-1 dimensions dropped
/// and neighbouring dimensions merged wherever every operand's strides allow
/// (equal shapes become one dense dimension), and each operand's element
/// strides over it, 0 along the dimensions it is broadcast in.
struct LaunchGeometry {
  std::vector<int64_t> extents;               ///< at least one dimension
  std::vector<std::vector<int64_t>> strides;  ///< per operand (inputs, then outputs), one per extent
  std::vector<bool> read;                     ///< per input: some output depends on it (else its strides are 0)
  int64_t num_elements() const;
  /// One dimension over which every read input and every output is dense:
  /// the flat index is every operand's element offset.
  bool dense() const;
  /// One dimension over which every output and every read input is dense,
  /// except inputs of one element (stride 0): run_kernel splits it over the
  /// threads in chunks like a dense one, each a run_strided call whose
  /// strides are 1, or 0 for those inputs.
  bool dense_apart_from_broadcast_inputs() const;
};

/// The geometry of `ir` on inputs of `input_shapes` giving outputs of
/// `output_shapes` (kernel_output_shapes of them).
LaunchGeometry launch_geometry(const ir::KernelIR& ir, std::span<const Shape> input_shapes,
                               std::span<const Shape> output_shapes);

/// How a GPU launch (CUDA, OpenCL) turns flat indices into element offsets.
enum class DeviceIndexMode : int32_t {
  dense = 0,   ///< every operand's offset is the flat index
  narrow = 1,  ///< coordinates in 32-bit arithmetic, divisions by FastDivider (below 2^31 elements)
  wide = 2,    ///< coordinates in 64-bit arithmetic
};

/// What a GPU launch needs of its operands' shapes: the geometry and the
/// index mode.
struct DeviceLaunchPlan {
  LaunchGeometry geometry;
  DeviceIndexMode mode = DeviceIndexMode::dense;
};

/// Checks a GPU launch's operand shapes against the kernel (one per input and
/// output; outputs of the shapes kernel_output_shapes gives) and plans it:
/// the collapsed geometry, and the index mode (`wide_indices` forces 64 bits
/// on a broadcasting launch). Throws invalid_argument, its message starting
/// with `device` ("CUDA kernel"), naming what does not fit.
DeviceLaunchPlan plan_device_launch(const ir::KernelIR& ir, std::span<const Shape> input_shapes,
                                    std::span<const Shape> output_shapes, bool wide_indices, std::string_view device);

/// Runs the kernel over `inputs` (one tensor per kernel input, dtypes as the
/// IR says; throws invalid_argument otherwise) and returns its outputs,
/// allocated from `allocator`. Splits the work over current_num_threads().
std::vector<Tensor> run_kernel(const ir::KernelIR& ir, const KernelRunner& runner, std::span<const Tensor> inputs,
                               ops::OutputAllocator& allocator);
/// run_kernel for a caller that already has the shapes kernel_input_shapes
/// and kernel_output_shapes give for `inputs` (computed once, not again).
std::vector<Tensor> run_kernel(const ir::KernelIR& ir, const KernelRunner& runner, std::span<const Tensor> inputs,
                               std::span<const Shape> input_shapes, std::span<const Shape> output_shapes,
                               ops::OutputAllocator& allocator);

/// run_kernel into outputs the caller allocated, of the shapes
/// kernel_output_shapes gives (and the IR's dtypes). An output may share its
/// buffer with an input of its own shape (an update in place): every runner
/// reads all its inputs at an element before it writes its outputs there.
void run_kernel_into(const ir::KernelIR& ir, const KernelRunner& runner, std::span<const Tensor> inputs,
                     std::span<const Shape> input_shapes, std::span<const Tensor> outputs);

}  // namespace graft::codegen
