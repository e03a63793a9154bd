/// \file
/// DnnlModule: a compiled dnnl program with its weight cache. Internal to backends/dnnl.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <span>

#include "dnnl_backend.h"
#include "dnnl_program.h"

namespace graft::dnnl_backend {

/// What DnnlModule::save writes first: the format tag. Format 2 (written
/// now) is followed by the indices of the weights whose converted bytes the
/// module's saved_tensors() hold; format 1 (read still) by nothing.
inline constexpr char kSavedFormat[] = "graft-dnnl-2\n";
inline constexpr char kSavedFormat1[] = "graft-dnnl-1\n";

class DnnlModule final : public backend::CompiledModule {
 public:
  explicit DnnlModule(DnnlProgram program);
  std::string type_key() const override { return "dnnl"; }
  /// Converts weights whose source version changed, then runs every
  /// primitive with this call's arena and outputs from context.pool. Safe to
  /// call concurrently (primitives use user-mode scratchpads from the arena).
  std::vector<Tensor> run(std::span<const Tensor> inputs, backend::ModuleRunContext& context) const override;
  /// Writes the format tag and which weights saved_tensors() holds. oneDNN
  /// primitives depend on the CPU they run on, so loading rebuilds them from
  /// the stored subgraph; the converted weights (BatchNormalization folded
  /// in, reordered to the primitives' layouts) are stored, so loading never
  /// folds or reorders a weight again. Converts any weight not converted yet.
  void save(std::ostream& out) const override;
  /// The converted bytes of every weight made only from constants, as uint8
  /// tensors, in the order save() lists them.
  std::vector<Tensor> saved_tensors() const override;
  /// The constants that only those converted weights read.
  std::vector<Tensor> superseded_constants() const override;
  /// Loading: takes converted weights an artifact stored (`weights[i]` holds
  /// the bytes of weight `indices[i]`) as if this module had converted them
  /// from its current sources. Throws invalid_model when one does not fit.
  void restore_converted(std::span<const uint32_t> indices, std::span<const Tensor> weights);
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
  // Weights made only from constants, in index order: those an artifact stores converted.
  std::vector<uint32_t> storable_weights() const;
  // The cache entry of weight `w` for `sources`, converting when it is stale.
  // The caller holds cache_mutex_.
  const Converted& converted(size_t w, const std::vector<Tensor>& sources) const;
  // Releases the sources of weight `w` a Session marked releasable (read by
  // nothing but this module's conversions) that no later weight converts
  // from: each original goes as soon as its last conversion is done, so at
  // most one weight exists twice. The caller holds cache_mutex_.
  void release_sources_after(size_t w) const;
  std::vector<Tensor> weight_sources(const Weight& weight, std::span<const Tensor> inputs) const;
  // Pointers to every weight's current converted bytes; `hold` keeps them alive for the run.
  std::vector<void*> prepare_weights(std::span<const Tensor> inputs, std::vector<std::shared_ptr<void>>& hold) const;

  // The step primitives for runs on `threads` (fewer than built_threads_),
  // made at the first such run (dnnl_thread_variants.h).
  std::shared_ptr<const std::vector<dnnl::primitive>> primitives_for(int threads) const;

  DnnlProgram program_;
  int built_threads_ = 1;  // OpenMP threads the primitives were created for
  mutable std::mutex variants_mutex_;
  mutable std::map<int, std::shared_ptr<const std::vector<dnnl::primitive>>> variants_;  // by thread count
  std::vector<std::vector<size_t>> last_use_sources_;  // per weight: its sources no later weight reads
  mutable std::mutex cache_mutex_;
  mutable std::vector<Converted> cache_;
  mutable std::atomic<int64_t> conversions_{0};
  mutable std::atomic<int64_t> shared_conversions_{0};
};

}  // namespace graft::dnnl_backend
