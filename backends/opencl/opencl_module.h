// The OpenCL backend's compiled module: one claimed subgraph as a sequence
// of node kernels on one OpenCL device, with the lifecycle of every per-node
// device module (graft/backend/device_module.h: create at plan time, compile
// at the first run, weights resident and refreshed by version, every kernel
// queued without waiting). This file supplies the OpenCL parts: the kernel
// registry (opencl_kernel.h), ClDevice's program builds, and launches with
// cl_mem views on the run's queue.
#pragma once

#include <memory>

#include "graft/backend/device_module.h"
#include "opencl_kernel.h"

#ifdef GRAFT_HAVE_OPENCL_HEADERS

namespace graft::opencl {

class OpenClModule final : public backend::DeviceModule {
 public:
  /// Creates the kernels of `subgraph` (concrete types) for device opencl:`device_index`.
  /// Throws unsupported naming the node when one cannot run on the device.
  OpenClModule(const ir::Graph& subgraph, int device_index);
  std::string type_key() const override { return "opencl"; }

 private:
  std::string kernel_support(const ir::Node& node) const override;
  std::unique_ptr<backend::DeviceNodeKernel> create_kernel(const ir::Node& node) const override;
  void compile_kernel(backend::DeviceNodeKernel& kernel) const override;
  std::unique_ptr<backend::DeviceKernelLauncher> start_launches(backend::DeviceQueue& queue) const override;
};

}  // namespace graft::opencl

#endif  // GRAFT_HAVE_OPENCL_HEADERS
