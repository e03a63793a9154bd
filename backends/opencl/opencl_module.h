// The OpenCL backend's compiled module: one claimed subgraph as a sequence
// of node kernels on one device (DESIGN.md section 8).
//
//   create   the constructor, at plan time: BatchNormalization after a Conv
//            is folded into it (as dnnl does on the CPU), the body's
//            pointwise chains are fused (one kernel each), then every node's
//            kernel is created from its concrete types (opencl_kernel.h);
//   compile  the first run: programs built (ClDevice's cache) and the
//            body's constants uploaded, once, kept resident; when a weight of
//            the model changes (Tensor::copy_from bumps its version) the body
//            is folded and uploaded again at the next run;
//   run      every kernel queued on the run's queue; values die into the
//            pool as soon as their last reader is queued. Nothing waits.
//
// Inputs and outputs are device tensors (device_tensor.h): placement puts
// copies at the segment's boundaries, not this module.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

#include "graft/backend/compiled_module.h"
#include "opencl_kernel.h"

#ifdef GRAFT_HAVE_OPENCL_HEADERS

namespace graft::opencl {

/// Weight uploads (constants copied to a device) by every OpenCL module of
/// the process: tests check that many runs upload each weight once.
uint64_t weight_uploads();

class OpenClModule final : public backend::CompiledModule {
 public:
  /// Creates the kernels of `subgraph` (concrete types) for device opencl:`device_index`.
  /// Throws unsupported naming the node when one cannot run on the device.
  OpenClModule(const ir::Graph& subgraph, int device_index);
  std::string type_key() const override { return "opencl"; }
  std::vector<Tensor> run(std::span<const Tensor> inputs, backend::ModuleRunContext& context) const override;
  /// Saves the device id only: an artifact keeps the subgraph, from which
  /// the loader creates the kernels again (they are built at the first run).
  void save(std::ostream& out) const override;

  /// Kernels (after folding and fusion) the module queues per run.
  size_t num_kernels() const;

 private:
  /// The body as it runs (folded, fused), its kernels and resident weights;
  /// replaced as a whole when a weight of the original subgraph changes.
  struct State;
  std::shared_ptr<State> make_state() const;
  /// The current state, made again first when a weight changed.
  std::shared_ptr<State> current_state() const;

  std::unique_ptr<ir::Graph> original_;  ///< the subgraph as compiled
  int device_index_ = 0;
  Device device_;
  mutable std::mutex state_mutex_;
  mutable std::shared_ptr<State> state_;
};

}  // namespace graft::opencl

#endif  // GRAFT_HAVE_OPENCL_HEADERS
