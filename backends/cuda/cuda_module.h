// The CUDA backend's compiled module: one claimed subgraph as a sequence of
// node kernels on one CUDA device, with the OpenCL module's lifecycle:
//
//   create   the constructor, at plan time: BatchNormalization after a Conv
//            is folded into it, the body's pointwise chains are fused (one
//            NVRTC kernel each), then every node's kernel is created from
//            its concrete types (cuda_kernel.h);
//   compile  the first run: programs compiled and loaded, the body's
//            constants uploaded once and kept resident; when a weight of the
//            model changes (its version) the body is made again;
//   run      every kernel queued on the run's stream; values die into the
//            pool as soon as their last reader is queued. Nothing waits.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

#include "cuda_kernel.h"
#include "graft/backend/compiled_module.h"

namespace graft::cuda {

/// Weight uploads (constants copied to a device) by every CUDA module of the process.
uint64_t weight_uploads();

class CudaModule final : public backend::CompiledModule {
 public:
  /// Creates the kernels of `subgraph` for device cuda:`device_index`.
  /// Throws unsupported naming the node when one cannot run on the device.
  CudaModule(const ir::Graph& subgraph, int device_index);
  std::string type_key() const override { return "cuda"; }
  std::vector<Tensor> run(std::span<const Tensor> inputs, backend::ModuleRunContext& context) const override;
  /// Saves the device id only (kernels are made again from the subgraph).
  void save(std::ostream& out) const override;

  /// Kernels (after folding and fusion) the module queues per run.
  size_t num_kernels() const;

 private:
  struct State;
  std::shared_ptr<State> make_state() const;
  std::shared_ptr<State> current_state() const;

  std::unique_ptr<ir::Graph> original_;
  int device_index_ = 0;
  Device device_;
  mutable std::mutex state_mutex_;
  mutable std::shared_ptr<State> state_;
};

}  // namespace graft::cuda
