// The CUDA backend's compiled module: one claimed subgraph as a sequence of
// node kernels on one CUDA device, with the lifecycle of every per-node
// device module (graft/backend/device_module.h: create at plan time, compile
// at the first run, weights resident and refreshed by version, every kernel
// queued on the run's stream without waiting). This file supplies the CUDA
// parts: the kernel registry (cuda_kernel.h), NVRTC compiles and module
// loads, and launches with device-pointer views.
#pragma once

#include <memory>

#include "cuda_kernel.h"
#include "graft/backend/device_module.h"

namespace graft::cuda {

class CudaModule final : public backend::DeviceModule {
 public:
  /// Creates the kernels of `subgraph` for device cuda:`device_index`.
  /// Throws unsupported naming the node when one cannot run on the device.
  CudaModule(const ir::Graph& subgraph, int device_index);
  std::string type_key() const override { return "cuda"; }

 private:
  std::string kernel_support(const ir::Node& node) const override;
  std::unique_ptr<backend::DeviceNodeKernel> create_kernel(const ir::Node& node) const override;
  void compile_kernel(backend::DeviceNodeKernel& kernel) const override;
  std::unique_ptr<backend::DeviceKernelLauncher> start_launches(backend::DeviceQueue& queue) const override;
};

}  // namespace graft::cuda
