/// \file
/// The OpenCL emitter: kernel IR -> OpenCL C source, built and run on an
/// OpenCL device through the ICD loader (libOpenCL.so.1, opened at run time:
/// graft has no link-time OpenCL dependency). PoCL runs it on the CPU where
/// no GPU driver is installed. The kernels' semantics are the reference
/// kernels' (the device's math library for exp, tanh, erf, ...).
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "graft/codegen/kernel_ir.h"
#include "graft/core/tensor.h"

namespace graft::codegen {

/// OpenCL C source of a kernel: one `__kernel` function named `kernel_name`
/// taking the geometry buffer (iteration extents, then per-operand strides),
/// the element count, rank and a dense flag, then one buffer per operand
/// (inputs, then outputs), with a grid-stride loop. Needs cl_khr_fp64.
std::string emit_opencl_source(const KernelIR& ir, const std::string& kernel_name);

/// Empty when an OpenCL device with double precision was found (the first
/// such device of the first platform that has one); otherwise why not
/// ("libOpenCL.so.1 not found", "no OpenCL platform", ...).
std::string opencl_unavailable_reason();
/// "<platform>: <device>" of the device kernels run on (throws unsupported
/// without one).
std::string opencl_device_description();

/// A kernel built for the OpenCL device. run() copies host tensors to
/// device buffers, runs the kernel and copies the outputs back (blocking).
/// Thread-safe.
class OpenClKernel {
 public:
  /// Builds `ir` for the device, once per process for each kernel IR (a
  /// second kernel of the same IR reuses the program: CompileCounters::
  /// opencl_builds and opencl_memory_hits). Throws unsupported without a
  /// device, and internal with the build log when the program does not build.
  explicit OpenClKernel(const KernelIR& ir);
  /// Builds every kernel of `irs` as one OpenCL program: one compiler
  /// invocation instead of one each (a model's fused kernels, or a test's).
  static std::vector<std::unique_ptr<OpenClKernel>> build_all(std::span<const KernelIR> irs);
  ~OpenClKernel();
  OpenClKernel(const OpenClKernel&) = delete;
  OpenClKernel& operator=(const OpenClKernel&) = delete;
  /// Outputs for `inputs` (host tensors of the kernel's dtypes, shapes that
  /// broadcast), as host tensors.
  std::vector<Tensor> run(std::span<const Tensor> inputs) const;

 private:
  OpenClKernel(const KernelIR& ir, std::shared_ptr<void> program, const std::string& name);
  KernelIR ir_;
  std::shared_ptr<void> program_;  ///< the cl_program, shared by the kernels built with it
  void* kernel_ = nullptr;         ///< the cl_kernel
};

}  // namespace graft::codegen
