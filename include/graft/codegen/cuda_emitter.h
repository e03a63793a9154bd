/// \file
/// The NVIDIA emitter: kernel IR -> CUDA C source -> PTX through NVRTC, and a
/// launcher through the CUDA driver API. Both libraries are opened at run time
/// (dlopen of libnvrtc and libcuda.so.1), so graft has no link-time
/// dependency on CUDA and runs where there is none: NVRTC needs no GPU, so
/// every kernel can be compiled to PTX anywhere the toolkit is installed.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "graft/ir/kernel_ir.h"
#include "graft/core/tensor.h"

namespace graft::codegen {

/// CUDA C source of a kernel: one `extern "C" __global__` function named
/// `kernel_name` taking a by-value argument block (element count, collapsed
/// extents and per-operand strides, operand pointers), with a grid-stride loop.
/// Semantics are the reference kernels' (libdevice math functions).
std::string emit_cuda_source(const ir::KernelIR& ir, const std::string& kernel_name);

/// Empty when NVRTC can be opened; otherwise why not.
std::string nvrtc_unavailable_reason();
/// NVRTC's version as "major.minor" (throws unsupported without NVRTC).
std::string nvrtc_version();
/// Compiles CUDA C to PTX for a virtual architecture ("compute_75"). Throws
/// unsupported without NVRTC, and internal with NVRTC's log when the source
/// does not compile.
std::string compile_cuda_to_ptx(const std::string& source, const std::string& program_name,
                                const std::string& architecture = "compute_75");

/// Empty when the CUDA driver opened, initialized and found a device;
/// otherwise why not ("libcuda.so.1 not found", "cuInit failed: ...").
std::string cuda_device_unavailable_reason();
/// The device's virtual architecture ("compute_90"); throws without a device.
std::string cuda_device_architecture();

/// Memory on CUDA device 0, freed with the object (move-only).
class CudaBuffer {
 public:
  /// Allocates `bytes` (at least 1) on the device. Throws unsupported without
  /// a device, internal when the device is out of memory.
  explicit CudaBuffer(size_t bytes);
  ~CudaBuffer();
  CudaBuffer(CudaBuffer&& other) noexcept;
  CudaBuffer& operator=(CudaBuffer&& other) noexcept;
  CudaBuffer(const CudaBuffer&) = delete;
  CudaBuffer& operator=(const CudaBuffer&) = delete;

  size_t size() const { return size_; }
  /// The device address (a CUdeviceptr).
  uint64_t address() const { return address_; }
  /// Copies `bytes` (at most size()) from the host; waits for work queued before.
  void upload(const void* host, size_t bytes);
  /// Copies `bytes` (at most size()) to the host; waits for work queued before.
  void download(void* host, size_t bytes) const;
  /// Copies `bytes` (at most either size) from `source`, on the device, queued
  /// after the launches before it (the baseline of device bandwidth figures).
  void copy_from(const CudaBuffer& source, size_t bytes);

 private:
  uint64_t address_ = 0;
  size_t size_ = 0;
};

/// Waits until everything queued on device 0 has finished.
void cuda_synchronize();

/// One operand of a launch: a dense row-major tensor of `shape` at `address`
/// on the device, of the dtype the kernel expects at that position.
struct CudaOperand {
  uint64_t address = 0;
  Shape shape;
};

/// How CudaKernel::launch runs a kernel.
struct CudaLaunchOptions {
  /// Index arithmetic in 64 bits even where 32 do (below 2^31 elements, a
  /// broadcasting launch divides by multiplying in 32 bits): the path of
  /// larger tensors, for tests and benchmarks.
  bool wide_indices = false;
  /// The CUstream to queue on (the `cuda` backend's run queue); null: the
  /// legacy default stream.
  void* stream = nullptr;
};

/// A kernel loaded on device 0. `launch` runs it on device memory (queued,
/// asynchronous); `run` on host tensors (copies inputs to the device,
/// launches, copies outputs back, synchronously).
class CudaKernel {
 public:
  /// Compiles `ir` for the device (through the compile cache: memory, then
  /// GRAFT_CACHE_DIR, then NVRTC) and loads it. Throws unsupported without a
  /// device.
  explicit CudaKernel(const ir::KernelIR& ir);
  ~CudaKernel();
  CudaKernel(const CudaKernel&) = delete;
  CudaKernel& operator=(const CudaKernel&) = delete;
  /// Outputs for `inputs` (host tensors, the kernel's dtypes), as host tensors.
  std::vector<Tensor> run(std::span<const Tensor> inputs, const CudaLaunchOptions& options = {}) const;
  /// Queues the kernel on `inputs` and `outputs` (one per kernel input and
  /// output, in order); input shapes broadcast to the iteration space, and
  /// each output's shape must be the one kernel_output_shapes gives. Returns
  /// without waiting (cuda_synchronize waits). Throws invalid_argument on a
  /// wrong operand count, a shape that does not broadcast, or a rank above 8.
  void launch(std::span<const CudaOperand> inputs, std::span<const CudaOperand> outputs,
              const CudaLaunchOptions& options = {}) const;

 private:
  ir::KernelIR ir_;
  void* module_ = nullptr;
  void* function_ = nullptr;
};

}  // namespace graft::codegen
