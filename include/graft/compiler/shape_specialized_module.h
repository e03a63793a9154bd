/// \file
/// ShapeSpecializedModule: a subgraph whose shapes are known only once it
/// runs (a count of detections after NonMaxSuppression, a NonZero's result),
/// compiled by its backend when it runs, once per distinct set of input
/// shapes. A backend such as dnnl needs concrete shapes; without this, such a
/// subgraph (the box and mask heads of a detection model) ran on the
/// reference kernels. Shapes the backend declines run on the reference
/// kernels too, and so do shapes at which the subgraph computes too little
/// to pay for converting its weights again (worth_compiling_at); either
/// decision is remembered for those shapes.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "graft/core/tensor.h"
#include "graft/ir/graph.h"
#include "graft/backend/backend.h"
#include "graft/backend/compiled_module.h"

namespace graft::compiler {

class ShapeSpecializedModule final : public backend::CompiledModule {
 public:
  /// Specializations kept per module (the least recently used goes first).
  static constexpr size_t kMaxSpecializations = 8;
  /// A specialization converts the weights again (about 1.5 ns a byte, page
  /// faults included: 78 ms for a 51 MB box-head weight) to save a few
  /// picoseconds per FLOP a run over the reference kernels; it is compiled
  /// when its products and convolutions do at least this many FLOPs per
  /// weight byte (a few runs pay it back). Mask R-CNN's box head [M, 12544]
  /// x [12544, 1024] does M/2: compiled from 128 proposals; its mask head's
  /// 3x3 convolutions on 14x14 regions do 98 per detection.
  static constexpr double kMinFlopsPerWeightByte = 64;

  /// `subgraph` is copied (its constants shared).
  ShapeSpecializedModule(const backend::Backend& backend, const ir::Graph& subgraph, backend::CompileOptions options);

  std::string type_key() const override { return "shape_specialized"; }
  std::vector<Tensor> run(std::span<const Tensor> inputs, backend::ModuleRunContext& context) const override;
  /// Saves the backend's name: a restored module compiles again when it runs.
  void save(std::ostream& out) const override;

  /// Whether compile_modules should give `subgraph` such a module when its
  /// backend declines it at plan time: some type in it is not concrete, and it
  /// computes something a backend runs much faster than the reference kernels
  /// (a Conv, ConvTranspose, MatMul, Gemm or recurrent layer). Other
  /// subgraphs (shape arithmetic, gathers) run on the reference kernels,
  /// which would take less time than compiling them for each new shape.
  static bool worth_specializing(const ir::Graph& subgraph);
  /// Whether `body` (types concrete) computes at least kMinFlopsPerWeightByte
  /// FLOPs in its Conv, ConvTranspose, MatMul, Gemm and recurrent nodes per
  /// byte of the constants they read.
  static bool worth_compiling_at(const ir::Graph& body);

  /// Compiles asked of the backend so far (declined ones included), and runs
  /// on the reference kernels (shapes not compiled or declined) (tests).
  size_t num_compiles() const;
  size_t num_reference_runs() const;

 private:
  struct Specialization;
  std::shared_ptr<const Specialization> specialize(std::span<const Tensor> inputs, int num_threads) const;

  const backend::Backend& backend_;
  std::unique_ptr<ir::Graph> subgraph_;
  backend::CompileOptions options_;
  std::shared_ptr<const backend::CompiledModule> reference_;
  mutable std::mutex mutex_;
  mutable std::vector<std::shared_ptr<Specialization>> specializations_;  // guarded by mutex_
  mutable uint64_t clock_ = 0;
  mutable size_t compiles_ = 0;
  mutable size_t reference_runs_ = 0;
};

}  // namespace graft::compiler
