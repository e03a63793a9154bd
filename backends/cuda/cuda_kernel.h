// The CUDA backend's node kernels: what one claimed node becomes on a CUDA
// device, with the lifecycle of the OpenCL backend (DESIGN.md section 8).
//
//   create  (plan time, shapes known): a KernelFactory reads the node, its
//           concrete types and constant inputs, and returns a NodeKernel
//           holding its launch plan. Sources never embed a shape (shapes are
//           kernel arguments), so a program is compiled once per source.
//   compile (first run): NodeKernel::compile compiles its programs through
//           NVRTC (CudaProgram: PTX kept per source and architecture for the
//           process; fused pointwise kernels through the compile cache, also
//           in GRAFT_CACHE_DIR) and loads them on the device.
//   run     NodeKernel::enqueue queues the work on the run's stream; nothing
//           waits for the host.
//
// A kernel file registers each op it runs once, and each hand-written CUDA
// source it compiles (so that tests compile every one through NVRTC, with or
// without a GPU):
//
//   GRAFT_REGISTER_CUDA_SOURCE(kSoftmaxSource);
//   GRAFT_REGISTER_CUDA_KERNEL(Softmax, softmax_support, make_softmax_kernel);
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "graft/backend/device_api.h"
#include "graft/core/tensor.h"
#include "graft/ir/graph.h"

namespace graft::cuda {

/// A dense row-major tensor in device memory as a kernel reads or writes it.
struct CuTensor {
  uint64_t address = 0;  ///< CUdeviceptr (0 for an absent input or 0 bytes)
  DType dtype = DType::undefined;
  Shape shape;
  int64_t numel() const;
  size_t nbytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype); }
};

/// A concrete tensor type (the dtype and shape a value has in this plan).
struct CuType {
  DType dtype = DType::undefined;
  Shape shape;
  int64_t numel() const;
};

/// What a factory sees when it creates a node's kernel.
struct KernelRequest {
  const ir::Node& node;
  std::vector<CuType> inputs;   ///< per node input (undefined dtype for an absent optional input)
  std::vector<CuType> outputs;  ///< per node output
  /// Per node input: its value when it is a constant of the graph, else null.
  std::vector<const Tensor*> constants;
};

/// The virtual architecture programs are compiled for: device 0's
/// ("compute_90"), or compute_75 without a device (what the tests use).
std::string target_architecture();

/// One function of a hand-written CUDA source, compiled through NVRTC (PTX
/// kept per source and architecture for the process) and loaded on a device.
/// launch() queues it on a stream; arguments are passed by value exactly as
/// the kernel declares them (uint64_t for pointers, int64_t for long long).
class CudaFunction {
 public:
  CudaFunction() = default;
  /// Compiles `source` (cached) and loads `name` on device cuda:`device`.
  CudaFunction(const char* source, const std::string& name, int device);
  explicit operator bool() const { return function_ != nullptr; }

  template <typename... Args>
  void launch(void* stream, uint64_t blocks, unsigned threads, const Args&... args) const {
    static_assert((std::is_trivially_copyable_v<Args> && ...), "CUDA kernel arguments are scalars");
    void* params[] = {const_cast<void*>(static_cast<const void*>(&args))..., nullptr};
    launch_raw(stream, blocks, threads, params);
  }

 private:
  void launch_raw(void* stream, uint64_t blocks, unsigned threads, void** params) const;
  void* function_ = nullptr;
  int device_ = 0;
};

/// PTX of `source` for `architecture`, compiled once per process (throws
/// internal with NVRTC's log when it does not compile, unsupported without NVRTC).
std::shared_ptr<const std::string> program_ptx(const char* source, const std::string& architecture);

/// Registers a hand-written source (file scope, GRAFT_REGISTER_CUDA_SOURCE).
bool register_source(const char* name, const char* source);
/// Every registered hand-written source: (name, source).
std::vector<std::pair<std::string, const char*>> registered_sources();

/// What a kernel sees while it queues its work.
class CudaLaunchContext {
 public:
  CudaLaunchContext(int device, backend::DeviceQueue& queue);
  ~CudaLaunchContext();
  int device() const { return device_; }
  /// The run's CUstream.
  void* stream() const { return queue_.native_handle(); }
  backend::DeviceQueue& queue() const { return queue_; }
  /// Device memory of `bytes` for this launch's temporaries, given back to
  /// the pool once the work queued on the stream from now on has finished.
  uint64_t scratch(size_t bytes);

 private:
  int device_;
  backend::DeviceQueue& queue_;
  std::vector<backend::DeviceBuffer> scratch_;
};

/// One node on the device (create at plan time; compile once; enqueue per run).
class NodeKernel {
 public:
  virtual ~NodeKernel() = default;
  /// Compiles and loads the programs (first run), for device cuda:`device`.
  virtual void compile(int device) = 0;
  /// Queues the node's work: one CuTensor per node input (address 0 for an
  /// absent optional input) and one per output, allocated by the caller.
  /// Must not wait on the host.
  virtual void enqueue(CudaLaunchContext& context, std::span<const CuTensor> inputs,
                       std::span<const CuTensor> outputs) const = 0;
  /// The input that output 0 is a view of (Reshape and kin), or -1.
  virtual int aliased_input() const { return -1; }
};

using KernelSupport = std::string (*)(const KernelRequest& request);
using KernelFactory = std::unique_ptr<NodeKernel> (*)(const KernelRequest& request);

struct KernelRegistration {
  KernelSupport support = nullptr;
  KernelFactory factory = nullptr;
};

/// Registers the kernel of `op` (once per op) and the backend's op-support checker.
bool register_kernel(ir::OpId op, KernelSupport support, KernelFactory factory);
/// The registration of `op`, or null.
const KernelRegistration* find_kernel(ir::OpId op);
/// The request for `node` of a graph with concrete types.
KernelRequest make_kernel_request(const ir::Node& node);
/// Empty when `node` can run on the device, else why not.
std::string kernel_support(const ir::Node& node);

/// Blocks of `threads` covering `n` items (at least 1, at most 2^31 - 1).
uint64_t blocks_for(int64_t n, unsigned threads);

/// Runs one node on cuda:`device_index` with host inputs (as opencl's
/// run_node_for_test): for tests against the reference kernels.
std::vector<Tensor> run_node_for_test(const ir::Node& node, std::span<const Tensor> inputs, int device_index = 0);

}  // namespace graft::cuda

#define GRAFT_CUDA_CONCAT_INNER(a, b) a##b
#define GRAFT_CUDA_CONCAT(a, b) GRAFT_CUDA_CONCAT_INNER(a, b)
/// Registers the kernel of op `OP` (an ir::OpId enumerator name).
#define GRAFT_REGISTER_CUDA_KERNEL(OP, support, factory)                                             \
  [[maybe_unused]] static const bool GRAFT_CUDA_CONCAT(graft_cuda_kernel_registered_, __COUNTER__) = \
      ::graft::cuda::register_kernel(::graft::ir::OpId::OP, support, factory)
/// Registers a hand-written CUDA source (a `const char*` of static storage).
#define GRAFT_REGISTER_CUDA_SOURCE(source)                                                           \
  [[maybe_unused]] static const bool GRAFT_CUDA_CONCAT(graft_cuda_source_registered_, __COUNTER__) = \
      ::graft::cuda::register_source(#source " (" __FILE__ ")", source)

namespace graft::ir {
struct KernelIR;
}

namespace graft::cuda {
/// The kernel IRs a pointwise node (an op with a pointwise expression, or
/// graft.FusedPointwise) compiles to on the device: one, or one per group of
/// outputs sharing an iteration space. For tests that compile each through
/// NVRTC without a GPU (emit_cuda_source + compile_cuda_to_ptx).
std::vector<ir::KernelIR> pointwise_kernel_irs(const ir::Node& node);
}  // namespace graft::cuda
