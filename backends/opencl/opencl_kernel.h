// The OpenCL backend's node kernels: what one claimed node becomes on an
// OpenCL device, following DESIGN.md section 8's lifecycle.
//
//   create  (plan time, shapes known): a KernelFactory reads the node, its
//           concrete input and output types and its constant inputs, and
//           returns a NodeKernel holding the kernel source and launch
//           geometry. Sources never embed a shape (shapes are kernel
//           arguments), so a program is built once per op, not per shape.
//   compile (first run): NodeKernel::compile builds its programs through the
//           device's ClProgramCache (memory, then GRAFT_CACHE_DIR binaries).
//   run     NodeKernel::enqueue queues the work on the run's queue,
//           asynchronously; nothing waits for the host.
//
// A kernel file registers each op it runs once:
//
//   GRAFT_REGISTER_OPENCL_KERNEL(Softmax, softmax_support, make_softmax_kernel);
//
// `support` says why a node cannot run (empty: it can), for the partition
// report; the factory is then called only for supported nodes.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "graft/backend/device_api.h"
#include "graft/backend/device_kernel_registry.h"
#include "graft/backend/device_module.h"
#include "graft/codegen/opencl_runtime.h"
#include "graft/core/tensor.h"
#include "graft/ir/graph.h"

#ifdef GRAFT_HAVE_OPENCL_HEADERS

namespace graft::opencl {

/// A dense row-major tensor in device memory as a kernel reads or writes it:
/// the whole cl_mem, from byte 0.
struct ClTensor {
  cl_mem buffer = nullptr;
  DType dtype = DType::undefined;
  Shape shape;
  int64_t numel() const;
  size_t nbytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype); }
};

/// A concrete tensor type (the dtype and shape a value has in this plan).
using ClType = backend::DeviceValueType;

/// What a factory sees when it creates a node's kernel.
using KernelRequest = backend::DeviceKernelRequest;

/// One OpenCL device's context, device and programs (shared by every module
/// on that device, kept for the process).
class ClDevice {
 public:
  /// Device opencl:`index` (throws unsupported without OpenCL, invalid_argument on a bad index).
  static ClDevice& get(int index);

  int index() const { return index_; }
  cl_context context() const { return context_; }
  cl_device_id device() const { return device_; }
  const codegen::OpenClFunctions& cl() const { return *functions_; }

  /// The program of `source` built with `options`: from this process's
  /// cache, else from a binary in GRAFT_CACHE_DIR (when set), else built
  /// (and its binary stored there). Throws internal with the build log when
  /// the source does not build. Thread-safe; the program is kept for the
  /// process.
  cl_program program(const std::string& source, const std::string& options = {});
  /// Distinct programs the device holds (built from source or loaded from
  /// GRAFT_CACHE_DIR: CompileCounters::opencl_builds and opencl_disk_hits
  /// tell which).
  size_t programs() const;

 private:
  explicit ClDevice(int index);
  int index_ = 0;
  cl_context context_ = nullptr;
  cl_device_id device_ = nullptr;
  const codegen::OpenClFunctions* functions_ = nullptr;
  mutable std::mutex mutex_;
  std::vector<std::pair<std::string, cl_program>> programs_;  // key: options + '\0' + source
};

/// A __local buffer argument of `bytes`.
struct ClLocal {
  size_t bytes = 0;
};

/// A launch range: global work items (a multiple of `local` when local is
/// given) in 1 to 3 dimensions; local all zero lets the driver choose.
struct ClRange {
  std::array<size_t, 3> global{1, 1, 1};
  std::array<size_t, 3> local{0, 0, 0};
  uint32_t dims = 1;
};

/// One __kernel function of a built program. launch() sets the arguments
/// and queues it under a lock (arguments are captured at enqueue, so one
/// ClKernel serves concurrent runs). Arguments: ClTensor (its cl_mem),
/// cl_mem, ClLocal, or any trivially copyable scalar (int32_t, int64_t,
/// float, a struct matching the kernel's).
class ClKernel {
 public:
  ClKernel() = default;
  /// Function `name` of `program` (throws internal when it is not there).
  ClKernel(ClDevice& device, cl_program program, const std::string& name);
  ~ClKernel();
  ClKernel(ClKernel&& other) noexcept;
  ClKernel& operator=(ClKernel&& other) noexcept;
  ClKernel(const ClKernel&) = delete;
  ClKernel& operator=(const ClKernel&) = delete;

  explicit operator bool() const { return kernel_ != nullptr; }

  template <typename... Args>
  void launch(cl_command_queue queue, const ClRange& range, const Args&... args) const {
    std::lock_guard lock(*mutex_);
    cl_uint index = 0;
    (set_arg(index++, args), ...);
    enqueue(queue, range);
  }

 private:
  void set_raw(cl_uint index, size_t size, const void* value) const;
  void set_arg(cl_uint index, const ClTensor& t) const { set_raw(index, sizeof(cl_mem), &t.buffer); }
  void set_arg(cl_uint index, const cl_mem& m) const { set_raw(index, sizeof(cl_mem), &m); }
  void set_arg(cl_uint index, const ClLocal& l) const { set_raw(index, l.bytes, nullptr); }
  template <typename T>
  void set_arg(cl_uint index, const T& value) const {
    static_assert(std::is_trivially_copyable_v<T>, "a kernel argument is a ClTensor, cl_mem, ClLocal or a scalar");
    set_raw(index, sizeof(T), &value);
  }
  void enqueue(cl_command_queue queue, const ClRange& range) const;

  ClDevice* device_ = nullptr;
  cl_kernel kernel_ = nullptr;
  std::unique_ptr<std::mutex> mutex_;
};

/// What a kernel sees while it queues its work.
class ClLaunchContext {
 public:
  ClLaunchContext(ClDevice& device, backend::DeviceQueue& queue);
  ~ClLaunchContext();
  ClDevice& device() const { return device_; }
  /// The run's in-order queue.
  cl_command_queue queue() const { return static_cast<cl_command_queue>(queue_.native_handle()); }
  /// Device memory of `bytes` for this launch's temporaries: valid for the
  /// work queued on queue() from now on, given back to the pool once that
  /// work has finished (never while it may still read it).
  cl_mem scratch(size_t bytes);
  /// A device tensor of `type` for this launch's temporaries (as scratch()).
  ClTensor scratch_tensor(DType dtype, const Shape& shape);

 private:
  ClDevice& device_;
  backend::DeviceQueue& queue_;
  std::vector<backend::DeviceBuffer> scratch_;
};

/// One node on the device (create at plan time; compile once; enqueue per run).
class NodeKernel : public backend::DeviceNodeKernel {
 public:
  /// Builds the programs (first run). Called once, before the first enqueue.
  virtual void compile(ClDevice& device) = 0;
  /// Queues the node's work: one ClTensor per node input (buffer null for an
  /// absent optional input; constant inputs too, resident on the device) and
  /// one per output, allocated by the caller with the request's output types
  /// (an output of 0 elements has a null buffer). Must not wait on the host.
  virtual void enqueue(ClLaunchContext& context, std::span<const ClTensor> inputs,
                       std::span<const ClTensor> outputs) const = 0;
};

/// Why the node cannot run on the device (empty: it can), given its concrete
/// types and constant inputs as the factory would see them.
using KernelSupport = std::string (*)(const KernelRequest& request);
/// Creates the kernel of a supported node.
using KernelFactory = std::unique_ptr<NodeKernel> (*)(const KernelRequest& request);

using KernelRegistration = backend::DeviceKernelRegistry<NodeKernel>::Registration;

/// Registers the kernel of `op` (once per op; aborts start-up on a second).
bool register_kernel(ir::OpId op, KernelSupport support, KernelFactory factory);
/// The registration of `op`, or null when the backend has no kernel for it.
const KernelRegistration* find_kernel(ir::OpId op);

/// Builds the request for `node` of a graph whose value types are concrete
/// (throws invalid_argument naming the value when one is not).
KernelRequest make_kernel_request(const ir::Node& node);
/// Empty when `node` can run on the device, else why not ("no OpenCL kernel
/// for Einsum", "float16 input", ...).
std::string kernel_support(const ir::Node& node);

/// "float" / "double" / "int" / "long" / "uchar" ... : the OpenCL C type of `dtype`.
const char* cl_type_name(DType dtype);

/// Runs one node on device opencl:`device_index` with host inputs (one per
/// node input; undefined for an absent one; a Constant input's value is
/// taken from the graph): uploads them, creates, compiles and enqueues its
/// kernel, downloads the outputs. For tests of single kernels against the
/// reference kernels.
std::vector<Tensor> run_node_for_test(const ir::Node& node, std::span<const Tensor> inputs, int device_index = 0);

}  // namespace graft::opencl

/// Registers the kernel of op `OP` (an ir::OpId enumerator name).
#define GRAFT_REGISTER_OPENCL_KERNEL(OP, support, factory)                                      \
  [[maybe_unused]] static const bool GRAFT_CONCAT(graft_opencl_kernel_registered_, __COUNTER__) = \
      ::graft::opencl::register_kernel(::graft::ir::OpId::OP, support, factory)

#endif  // GRAFT_HAVE_OPENCL_HEADERS
