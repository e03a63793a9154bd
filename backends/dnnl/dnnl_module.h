/// \file
/// DnnlModule: a compiled dnnl program with its weight cache. Internal to backends/dnnl.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>

#include "dnnl_backend.h"
#include "dnnl_program.h"

namespace graft::dnnl_backend {

/// What DnnlModule::save writes (and the loader expects).
inline constexpr char kSavedFormat[] = "graft-dnnl-1\n";

class DnnlModule final : public runtime::CompiledModule {
 public:
  explicit DnnlModule(DnnlProgram program);
  std::string type_key() const override { return "dnnl"; }
  /// Converts weights whose source version changed, then runs every
  /// primitive with this call's arena and outputs from context.pool. Safe to
  /// call concurrently (primitives use user-mode scratchpads from the arena).
  std::vector<Tensor> run(std::span<const Tensor> inputs, runtime::ModuleRunContext& context) const override;
  /// Writes a format tag only: oneDNN primitives depend on the CPU they run
  /// on, so loading an artifact rebuilds them from the stored subgraph.
  void save(std::ostream& out) const override;
  DnnlModuleStats stats() const;

 private:
  // A converted weight and the source versions it was made from.
  struct Converted {
    std::vector<const Storage*> storages;
    std::vector<size_t> offsets;
    std::vector<uint64_t> versions;
    std::shared_ptr<void> buffer;
  };
  void check_inputs(std::span<const Tensor> inputs) const;
  std::vector<Tensor> weight_sources(const Weight& weight, std::span<const Tensor> inputs) const;
  // Pointers to every weight's current converted bytes; `hold` keeps them alive for the run.
  std::vector<void*> prepare_weights(std::span<const Tensor> inputs, std::vector<std::shared_ptr<void>>& hold) const;

  DnnlProgram program_;
  mutable std::mutex cache_mutex_;
  mutable std::vector<Converted> cache_;
  mutable std::atomic<int64_t> conversions_{0};
};

}  // namespace graft::dnnl_backend
