/// \file
/// CompiledModule: what a backend turns one subgraph into (TVM's runtime
/// module). It runs the subgraph, and it can save itself so that an artifact
/// (.graft file) restores it without partitioning or compiling again.
#pragma once
#include <iosfwd>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "graft/core/tensor.h"
#include "graft/backend/buffer_pool.h"
#include "graft/backend/device_api.h"
#include "graft/backend/run_limits.h"

namespace graft::ir {
class Graph;
}

namespace graft::backend {

/// The device kernels of one profiled run (--profile): a device module
/// records an event on the run's queue before and after each kernel; the
/// executor turns them into device times once the run's queues are done.
struct DeviceProfile {
  struct Kernel {
    std::string node;  ///< the kernel's node in the module's body ("conv1", "fused_3")
    std::string op;    ///< its op ("Conv", "graft.FusedPointwise")
    std::shared_ptr<DeviceEvent> begin, end;
  };
  std::vector<Kernel> kernels;
};

/// What a module sees while it runs.
struct ModuleRunContext {
  BufferPool& pool;       ///< allocate outputs and scratch here (64-byte aligned, liveness-reused)
  int num_threads = 1;    ///< intra-op threads (OpenMP is already set to this)
  /// The run's queue on the module's device (Node::device), null on the CPU.
  /// A device module takes and returns device tensors (device_tensor.h),
  /// queues its work here and returns without waiting for it.
  std::shared_ptr<DeviceQueue> queue = nullptr;
  /// Set in profiled runs for device modules: where they record their
  /// kernels' events (the queue is then a profiled one).
  DeviceProfile* profile = nullptr;
  /// The run's deadline and cancellation flag (null: none). A module that
  /// runs many steps checks them between steps (run_limits_reached).
  const RunLimits* limits = nullptr;
  /// Per module output (empty: none), the input whose buffer the output may
  /// be written into, or -1: a constant the output is the next value of,
  /// which nothing reads after this module (kUpdatedByAttribute,
  /// executor.h). A module that does must compute the same values.
  std::span<const int32_t> output_may_overwrite_input = {};
};

/// One compiled subgraph. Immutable after creation as far as callers can
/// tell: run() may be called from several threads at once, so any cache it
/// keeps (converted weights, primitives) is guarded inside.
class CompiledModule {
 public:
  virtual ~CompiledModule() = default;
  /// Names the loader that restores a saved module ("ref", "fuse", "dnnl", "ccodegen").
  virtual std::string type_key() const = 0;
  /// Runs with one tensor per subgraph input (in the subgraph's input order);
  /// returns one tensor per subgraph output.
  virtual std::vector<Tensor> run(std::span<const Tensor> inputs, ModuleRunContext& context) const = 0;
  /// Writes everything load_module() needs to restore this module, except
  /// the tensors of saved_tensors(). The default throws unsupported.
  virtual void save(std::ostream& out) const;
  /// Large tensors that belong with the saved module (weights converted to the
  /// layout a backend chose): an artifact stores them like the graph's weights
  /// (64-byte aligned, deduplicated, mapped on load) and hands them back to
  /// the loader in this order. Called after save(). Default: none.
  virtual std::vector<Tensor> saved_tensors() const { return {}; }
  /// Constants of the compiled subgraph that the module no longer reads once
  /// restored with its saved_tensors() (their converted form replaces them).
  /// An artifact may keep only their types: a restored graph then holds a
  /// zero Storage::placeholder() for each one that nothing else reads, and
  /// the module must refuse to convert from one (a weight changed by the user
  /// cannot be re-converted without it). Default: none.
  virtual std::vector<Tensor> superseded_constants() const { return {}; }
};

/// Restores a module of one type_key from the bytes its save() wrote.
/// `subgraph` is the subgraph the module was compiled from (stored in the
/// artifact); `tensors` are what its saved_tensors() returned, in order
/// (empty for artifacts of format 2 and older). Must throw graft::Error
/// (never crash) on malformed bytes or tensors that do not fit.
using ModuleLoader = std::unique_ptr<CompiledModule> (*)(std::istream& in, const ir::Graph& subgraph,
                                                         std::span<const Tensor> tensors);

/// Registers a loader; returns true. Aborts start-up on a duplicate type_key.
bool register_module_loader(std::string_view type_key, ModuleLoader loader);
/// The loader for a type_key, or nullptr.
ModuleLoader find_module_loader(std::string_view type_key);
/// Restores a module; throws invalid_model naming the type_key when no loader is registered.
std::unique_ptr<CompiledModule> load_module(std::string_view type_key, std::istream& in, const ir::Graph& subgraph,
                                            std::span<const Tensor> tensors = {});

using ModuleTable = std::vector<std::shared_ptr<const CompiledModule>>;

}  // namespace graft::backend

/// Registers the loader of a module type: GRAFT_REGISTER_MODULE_LOADER("dnnl", load_dnnl_module);
#define GRAFT_REGISTER_MODULE_LOADER(type_key, loader)                                              \
  [[maybe_unused]] static const bool GRAFT_CONCAT(graft_module_loader_registered_, __COUNTER__) = \
      ::graft::backend::register_module_loader(type_key, loader)
