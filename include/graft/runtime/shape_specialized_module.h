/// \file
/// ShapeSpecializedModule: a subgraph whose shapes are known only once it
/// runs (a count of detections after NonMaxSuppression, a NonZero's result),
/// compiled by its backend when it runs, once per distinct set of input
/// shapes. A backend such as dnnl needs concrete shapes; without this, such a
/// subgraph (the box and mask heads of a detection model) ran on the
/// reference kernels. Shapes the backend declines run on the reference
/// kernels too, and the decision is remembered for them.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "graft/core/tensor.h"
#include "graft/ir/graph.h"
#include "graft/runtime/backend.h"
#include "graft/runtime/compiled_module.h"

namespace graft::runtime {

class ShapeSpecializedModule final : public CompiledModule {
 public:
  /// Specializations kept per module (the least recently used goes first).
  static constexpr size_t kMaxSpecializations = 8;

  /// `subgraph` is copied (its constants shared).
  ShapeSpecializedModule(const Backend& backend, const ir::Graph& subgraph, CompileOptions options);

  std::string type_key() const override { return "shape_specialized"; }
  std::vector<Tensor> run(std::span<const Tensor> inputs, ModuleRunContext& context) const override;
  /// Saves the backend's name: a restored module compiles again when it runs.
  void save(std::ostream& out) const override;

  /// Whether compile_modules should give `subgraph` such a module when its
  /// backend declines it at plan time: some type in it is not concrete, and it
  /// computes something a backend runs much faster than the reference kernels
  /// (a Conv, ConvTranspose, MatMul, Gemm or recurrent layer). Other
  /// subgraphs (shape arithmetic, gathers) run on the reference kernels,
  /// which would take less time than compiling them for each new shape.
  static bool worth_specializing(const ir::Graph& subgraph);

  /// Compiles asked of the backend so far (declined ones included), and runs
  /// of shapes it declined (tests).
  size_t num_compiles() const;
  size_t num_declined_runs() const;

 private:
  struct Specialization;
  std::shared_ptr<const Specialization> specialize(std::span<const Tensor> inputs, int num_threads) const;

  const Backend& backend_;
  std::unique_ptr<ir::Graph> subgraph_;
  CompileOptions options_;
  std::shared_ptr<const CompiledModule> reference_;
  mutable std::mutex mutex_;
  mutable std::vector<std::shared_ptr<Specialization>> specializations_;  // guarded by mutex_
  mutable uint64_t clock_ = 0;
  mutable size_t compiles_ = 0;
  mutable size_t declined_runs_ = 0;
};

}  // namespace graft::runtime
