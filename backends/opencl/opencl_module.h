// The OpenCL backend's compiled module: one claimed subgraph as a sequence
// of node kernels on one device (DESIGN.md section 8).
//
//   create   the constructor, at plan time: the body's pointwise chains are
//            fused (one kernel each), then every node's kernel is created
//            from its concrete types (opencl_kernel.h);
//   compile  the first run: programs built (ClDevice's cache) and the
//            body's constants uploaded, once, kept resident; a constant whose
//            storage version changed (Tensor::copy_from) is uploaded again;
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
#include "graft/ir/indexed_graph.h"
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

  /// Kernels (after fusion) the module queues per run.
  size_t num_kernels() const { return kernels_.size(); }

 private:
  void compile_once() const;
  /// The resident value of constant `c`, uploaded again when its version changed.
  Tensor resident_constant(size_t c) const;

  std::unique_ptr<ir::Graph> body_;
  std::unique_ptr<ir::IndexedGraph> indexed_;
  int device_index_ = 0;
  Device device_;
  std::vector<std::unique_ptr<NodeKernel>> kernels_;  ///< per topological id; null for Input/Constant
  std::vector<uint32_t> last_use_;                    ///< per entry
  std::vector<bool> keep_;                            ///< per entry: an output or a constant
  std::vector<int32_t> constant_of_;                  ///< per node id: index into constants_, or -1
  std::vector<const ir::Node*> constants_;            ///< the body's Constant nodes
  mutable std::once_flag compiled_;
  mutable std::mutex constants_mutex_;
  mutable std::vector<Tensor> resident_;          ///< per constant: its device copy
  mutable std::vector<uint64_t> resident_version_;  ///< per constant: the storage version uploaded
};

}  // namespace graft::opencl

#endif  // GRAFT_HAVE_OPENCL_HEADERS
