/// \file
/// The OpenCL emitter: kernel IR -> OpenCL C source, built and run on an
/// OpenCL device through the ICD loader (libOpenCL.so.1, opened at run time:
/// graft has no link-time OpenCL dependency). PoCL runs it on the CPU where
/// no GPU driver is installed. The kernels' semantics are the reference
/// kernels' (the device's math library for exp, tanh, erf, ...).
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "graft/ir/kernel_ir.h"
#include "graft/core/tensor.h"

namespace graft::codegen {

/// OpenCL C source of a kernel: one `__kernel` function named `kernel_name`
/// taking the geometry buffer (iteration extents, their dividers, then
/// per-operand strides, innermost first), the element count, rank and index
/// mode, then one buffer per operand (inputs, then outputs), with a
/// grid-stride loop. Needs cl_khr_fp64.
std::string emit_opencl_source(const ir::KernelIR& ir, const std::string& kernel_name);

/// Empty when an OpenCL device with double precision was found (the first
/// such device of the first platform that has one); otherwise why not
/// ("libOpenCL.so.1 not found", "no OpenCL platform", ...).
std::string opencl_unavailable_reason();
/// "<platform>: <device>" of the device kernels run on (throws unsupported
/// without one).
std::string opencl_device_description();
/// The index in opencl_devices() (opencl_runtime.h; the OpenCL DeviceAPI's
/// opencl:N) of the device kernels run on (throws unsupported without one).
/// Buffers and queues of the DeviceAPI on that device share the kernels'
/// context: OpenClBuffer::borrow and OpenClQueue::borrow launch on them.
size_t opencl_kernel_device_index();

/// An in-order command queue on the OpenCL device: the work queued on one
/// queue runs in the order it was queued; queues run independently, so work
/// on one queue that reads what another wrote waits for it first
/// (OpenClQueue::finish). Operations given no queue use the device's default
/// queue. Destroying a queue waits for its work.
class OpenClQueue {
 public:
  /// A new queue on the device (throws unsupported without one).
  OpenClQueue();
  /// A view of a queue another owner holds (a DeviceQueue's
  /// cl_command_queue on the kernels' device, opencl_kernel_device_index):
  /// neither waited for nor released with the view.
  static std::unique_ptr<OpenClQueue> borrow(void* cl_command_queue);
  ~OpenClQueue();
  OpenClQueue(const OpenClQueue&) = delete;
  OpenClQueue& operator=(const OpenClQueue&) = delete;
  /// Waits until everything queued on this queue has finished.
  void finish() const;
  /// The cl_command_queue.
  void* handle() const { return handle_; }

 private:
  struct Borrowed {};
  OpenClQueue(Borrowed, void* handle) : handle_(handle), owned_(false) {}
  void* handle_ = nullptr;
  bool owned_ = true;
};

/// Memory on the OpenCL device, freed with the object (move-only). Copies are
/// queued on `queue` (the default queue when null), after the work before them.
class OpenClBuffer {
 public:
  /// Allocates `bytes` (at least 1). Throws unsupported without a device,
  /// internal when the device cannot allocate it.
  explicit OpenClBuffer(size_t bytes);
  /// A view of `bytes` of memory another owner holds (a DeviceBuffer's
  /// cl_mem on the kernels' device, opencl_kernel_device_index): not
  /// released with the view.
  static OpenClBuffer borrow(void* cl_mem, size_t bytes);
  ~OpenClBuffer();
  OpenClBuffer(OpenClBuffer&& other) noexcept;
  OpenClBuffer& operator=(OpenClBuffer&& other) noexcept;
  OpenClBuffer(const OpenClBuffer&) = delete;
  OpenClBuffer& operator=(const OpenClBuffer&) = delete;

  size_t size() const { return size_; }
  /// The cl_mem.
  void* handle() const { return handle_; }
  /// Copies `bytes` (at most size(), else invalid_argument) from the host;
  /// returns when they are on the device.
  void upload(const void* host, size_t bytes, const OpenClQueue* queue = nullptr);
  /// Copies `bytes` (at most size()) to the host; waits for the work queued
  /// before on the same queue.
  void download(void* host, size_t bytes, const OpenClQueue* queue = nullptr) const;
  /// Copies `bytes` (at most either size) from `source` on the device, queued.
  void copy_from(const OpenClBuffer& source, size_t bytes, const OpenClQueue* queue = nullptr);

 private:
  OpenClBuffer() = default;
  void* handle_ = nullptr;
  size_t size_ = 0;
  bool owned_ = true;
};

/// Waits until everything queued on the device's default queue has finished.
void opencl_finish();

/// One operand of a launch: a dense row-major tensor of `shape` in `buffer`,
/// of the dtype the kernel expects at that position.
struct OpenClOperand {
  const OpenClBuffer* buffer = nullptr;
  Shape shape;
};

/// How OpenClKernel::launch runs a kernel.
struct OpenClLaunchOptions {
  /// Index arithmetic in 64 bits even where 32 do (below 2^31 elements, a
  /// broadcasting launch divides by multiplying in 32 bits): the path of
  /// larger tensors, for tests.
  bool wide_indices = false;
  /// The queue to run on; null: the device's default queue.
  const OpenClQueue* queue = nullptr;
};

/// A kernel built for the OpenCL device. launch() queues it on device
/// buffers; run() copies host tensors to the device, runs it and copies the
/// outputs back (blocking). Thread-safe.
class OpenClKernel {
 public:
  /// Builds `ir` for the device, once per process for each kernel IR (a
  /// second kernel of the same IR reuses the program: CompileCounters::
  /// opencl_builds and opencl_memory_hits). Throws unsupported without a
  /// device, and internal with the build log when the program does not build.
  explicit OpenClKernel(const ir::KernelIR& ir);
  /// Builds every kernel of `irs` as one OpenCL program: one compiler
  /// invocation instead of one each (a model's fused kernels, or a test's).
  static std::vector<std::unique_ptr<OpenClKernel>> build_all(std::span<const ir::KernelIR> irs);
  ~OpenClKernel();
  OpenClKernel(const OpenClKernel&) = delete;
  OpenClKernel& operator=(const OpenClKernel&) = delete;
  /// Outputs for `inputs` (host tensors of the kernel's dtypes, shapes that
  /// broadcast), as host tensors.
  std::vector<Tensor> run(std::span<const Tensor> inputs, const OpenClLaunchOptions& options = {}) const;
  /// Queues the kernel on `inputs` and `outputs` (one per kernel input and
  /// output, in order; an output may be an input's buffer when the shapes
  /// are equal); input shapes broadcast to the iteration space, and each
  /// output's shape must be the one kernel_output_shapes gives. Returns
  /// without waiting (opencl_finish or a download waits). Throws
  /// invalid_argument on a wrong operand count, shapes that do not
  /// broadcast, a rank above 8, or a buffer smaller than its operand.
  void launch(std::span<const OpenClOperand> inputs, std::span<const OpenClOperand> outputs,
              const OpenClLaunchOptions& options = {}) const;

 private:
  OpenClKernel(const ir::KernelIR& ir, std::shared_ptr<void> program, const std::string& name);
  ir::KernelIR ir_;
  std::shared_ptr<void> program_;  ///< the cl_program, shared by the kernels built with it
  void* kernel_ = nullptr;         ///< the cl_kernel
  /// Launch geometries (extents, dividers, strides) uploaded once per shape
  /// signature and kept on the device: a model's runs repeat their shapes,
  /// so a launch copies nothing from the host. At most kMaxGeometries; past
  /// that, a launch uploads its own (released once it has run).
  static constexpr size_t kMaxGeometries = 64;
  mutable std::mutex geometries_mutex_;
  mutable std::map<std::vector<int64_t>, void*> geometries_;  ///< words -> cl_mem
};

}  // namespace graft::codegen
