/// \file
/// The compiler: the driver below the Session (DESIGN.md section 1). It runs
/// the passes, partitions the graph among the backends in priority order,
/// lets backends claim what is left (pointwise fusion), and compiles each
/// subgraph node with its backend once input shapes are known, returning a
/// Plan. The Session runs plans and caches them per input-shape signature; it
/// knows nothing of passes or partitioning.
///
///   compiler::CompileOptions options;
///   compiler::PreparedGraph prepared = compiler::prepare(std::move(graph), options);
///   compiler::Plan plan = compiler::specialize(prepared, input_types, options);
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "graft/compiler/module_table.h"
#include "graft/ir/graph.h"
#include "graft/partition/annotations.h"
#include "graft/partition/report.h"

namespace graft::compiler {

/// How a graph is compiled.
struct CompileOptions {
  /// Backends in priority order; empty = GRAFT_BACKENDS, else every available
  /// backend in default order (backend::resolve_backend_order). The fallback
  /// backend (`ref`) runs what none of them takes.
  std::vector<std::string> backends;
  /// User annotations for partitioning (pins, forbidden backends, regions).
  partition::Annotations annotations;
  /// Pointwise fusion (backends' claims after partitioning); nullopt =
  /// GRAFT_FUSION, else on.
  std::optional<bool> fusion;
  /// Passes to run; empty = passes::default_pipeline().
  std::vector<std::string> passes;
  /// Run ir::verify after every pass (tests and debug builds).
  bool verify_after_each_pass = false;
  /// Intra-op threads the compiled modules will run with (at least 1).
  int num_threads = 1;
  /// Where backends that generate source (ccodegen's C files) also write it; empty: nowhere.
  std::string emit_source_dir;
  /// The id of the device that device backends (opencl) run on: opencl:N.
  int device_id = 0;
};

/// Partitions `graph` among `options.backends` (resolved), then lets every
/// available backend claim what is left when fusion is on
/// (backend::Backend::claim_remaining), then places the nodes of device
/// backends on their device with copies at the boundaries
/// (device_placement.h), recording it all in the report.
partition::PartitionReport partition(std::unique_ptr<ir::Graph>& graph, const CompileOptions& options);

/// A graph after the passes and partitioning, ready to be specialized to
/// input shapes.
struct PreparedGraph {
  /// Passes run, partitioned and fused (with the model's symbolic dimensions, if any).
  std::unique_ptr<ir::Graph> graph;
  /// With symbolic input dimensions: the graph after passes, before
  /// partitioning, which each specialized plan partitions again with its
  /// concrete shapes (backends decline what they cannot size); else null.
  std::unique_ptr<ir::Graph> unpartitioned;
  /// Where every node went when `graph` was partitioned, and why.
  partition::PartitionReport report;
};

/// Runs the passes on `graph` and partitions it.
PreparedGraph prepare(std::unique_ptr<ir::Graph> graph, const CompileOptions& options);

/// A graph ready to run: input types set, compiled nodes assigned, and their modules.
struct Plan {
  std::shared_ptr<const ir::Graph> graph;
  backend::ModuleTable modules;  ///< by Node::index() of `graph`
  /// The plan's own partition, when it partitioned again (symbolic input dimensions).
  std::optional<partition::PartitionReport> report;
  /// Subgraphs their backend declined to compile: they run on the reference kernels.
  std::vector<CompileFallback> fallbacks;
  /// Backend compile() calls that returned a module.
  size_t num_compiles = 0;
  /// The shape-generic plan (symbolic dimensions kept; see generic_plan()).
  bool generic = false;
};

/// The plan of `prepared` for inputs of these concrete types: the graph
/// specialized to them (shape computations folded, partitioned again when the
/// model has symbolic input dimensions) and every compiled node compiled.
Plan specialize(const PreparedGraph& prepared, const std::vector<ir::ValueType>& input_types,
                const CompileOptions& options);

/// The plan of `prepared` for inputs of these dtypes and any shapes: the
/// prepared graph as it is, its values getting their shapes as it runs;
/// subgraphs a backend cannot compile without shapes run on the reference
/// kernels or compile per shape as they run (ShapeSpecializedModule).
Plan generic_plan(const PreparedGraph& prepared, const std::vector<DType>& input_dtypes, const CompileOptions& options);

}  // namespace graft::compiler
