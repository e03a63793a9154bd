/// \file
/// Session: a model prepared to run. Built from an ONNX file or a graph and
/// options; run() is safe to call from several threads at once.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "graft/backend/executor.h"
#include "graft/compiler/compiler.h"
#include "graft/ir/graph.h"
#include "graft/partition/annotations.h"
#include "graft/partition/report.h"
#include "graft/runtime/core_availability.h"
#include "graft/runtime/plan_cache.h"

namespace graft::runtime {

/// How a Session prepares and runs its model.
struct SessionOptions {
  /// Intra-op threads; 0 = GRAFT_NUM_THREADS, else the number of cores.
  int num_threads = 0;
  /// Backends in priority order; empty = GRAFT_BACKENDS, else every available
  /// backend in default order (see partition::resolve_backend_order). After
  /// the passes, each backend with a SubgraphProperty claims its subgraphs;
  /// `ref` runs the rest.
  std::vector<std::string> backends;
  /// User annotations for partitioning (pins, forbidden backends, regions).
  partition::Annotations annotations;
  /// Pointwise fusion; nullopt = GRAFT_FUSION, else on.
  std::optional<bool> fusion;
  /// Passes to run before execution; empty = passes::default_pipeline().
  std::vector<std::string> passes;
  /// Run ir::verify after every pass (tests and debug builds).
  bool verify_after_each_pass = false;
  /// Record per-node timings in backend::RunStats.
  bool profile = false;
  /// Where backends that generate source (ccodegen's C files) also write it; empty: nowhere.
  std::string emit_source_dir;
  /// For a model with symbolic input dimensions: how many input-shape
  /// signatures get a plan specialized to them (made at the first run with
  /// those shapes, kept, the least recently used dropped); other shapes run
  /// on one shape-generic plan (docs/dynamic-shapes.md). 0: every run uses
  /// the generic plan (a generation loop). nullopt = GRAFT_MAX_PLANS, else
  /// kDefaultMaxSpecializedPlans. At most 1024.
  std::optional<int> max_specialized_plans;
  static constexpr int kDefaultMaxSpecializedPlans = 4;
  /// The device to run on (docs/devices.md). The host (cpu:0, the default)
  /// runs on the CPU backends. A device such as opencl:0 puts its backend
  /// first: with `backends` empty, the order is that backend, then the
  /// default CPU order; with `backends` given, they are used as they are and
  /// the device only picks the id (opencl:N) their device backends run on.
  /// What the device's backend does not take runs on the CPU backends, with
  /// copies at the boundaries (the partition report lists them).
  Device device;
  /// Bytes a run's intermediate values may hold at once (per run); an
  /// allocation past it is a `resource_exhausted` Error naming the node, the
  /// type and the bytes, and the session stays usable. nullopt =
  /// GRAFT_MAX_MEMORY ("512M", "2G", a byte count), else the machine's
  /// physical memory. 0: no limit.
  std::optional<uint64_t> max_memory;
  /// Run on fewer than num_threads threads while other processes keep cores
  /// busy: on the cores not busy elsewhere, at least one, once this
  /// process's threads wait for cores while its runs are in progress
  /// (runtime::CoreAvailability samples the counters around runs,
  /// runtime::ThreadCountPolicy decides). Threads wait
  /// for one another after every parallel region, so a thread without a core
  /// of its own slows every region down; the dnnl backend runs primitives
  /// made for the smaller count (made at the first such run). Results may
  /// differ in the last bits between thread counts. nullopt =
  /// GRAFT_ADAPT_THREADS (0 or 1), else on.
  std::optional<bool> adapt_threads;
  /// Where the load is read; null: CoreAvailability::global().
  std::shared_ptr<CoreAvailability> core_availability;
};

/// The memory limit of a session: `option` when set, else GRAFT_MAX_MEMORY,
/// else the machine's physical memory. Throws invalid_argument naming the
/// text when it is not a size.
uint64_t max_memory(std::optional<uint64_t> option);
/// "512M", "2G", "1.5G", "4096", "64K" (binary units; optional trailing
/// "B"/"iB") as bytes. Throws invalid_argument naming `what` otherwise.
uint64_t parse_byte_size(const std::string& text, const std::string& what);

/// What the compiler is told of a session's options (the backend order
/// with SessionOptions::device applied, the device id, ...), with
/// `num_threads` resolved. Throws unsupported when the device's backend is
/// missing or unavailable.
compiler::CompileOptions compile_options_of(const SessionOptions& options, int num_threads);

/// "cpu", "opencl", "opencl:1" as a Device (no id: 0). Throws
/// invalid_argument naming the text when the type is not cpu, opencl or cuda
/// or the id is not a small non-negative integer.
Device parse_device(const std::string& text);

/// The number of specialized plans a session keeps: `option` when set, else
/// GRAFT_MAX_PLANS, else SessionOptions::kDefaultMaxSpecializedPlans. Throws
/// invalid_argument naming the value when it is not an integer in 0..1024.
int max_specialized_plans(std::optional<int> option);

struct RestoredPlan;

/// The path of a compiled artifact (.graft file), for Session's constructor.
struct ArtifactPath {
  std::string path;
};

/// Description of one graph input or output.
struct ValueInfo {
  std::string name;
  ir::ValueType type;
};

class Session {
 public:
  /// Loads a compiled artifact (.graft file), which runs without passes,
  /// partitioning or compiling. Throws graft::Error on any problem with it.
  /// (An ONNX file, or either kind by its contents: frontend::load_model().)
  explicit Session(ArtifactPath artifact, SessionOptions options = {});
  /// Takes ownership of a graph.
  explicit Session(std::unique_ptr<ir::Graph> graph, SessionOptions options = {});
  /// Runs a plan restored from an artifact: its inputs have the concrete
  /// types it was compiled for; nothing is prepared or compiled.
  explicit Session(RestoredPlan plan, SessionOptions options = {});
  ~Session();

  /// Runs with one tensor per input, in input order. Validates count, dtype,
  /// rank and known dimensions (invalid_argument naming the input otherwise).
  std::vector<Tensor> run(const std::vector<Tensor>& inputs, backend::RunStats* stats = nullptr) const;
  /// Like run(inputs, stats), within `limits`: a deadline and a cancellation
  /// flag (another thread may set it), checked before every node, Loop and
  /// Scan bodies included. Either ends the run with a `cancelled` Error, its
  /// memory freed; the session stays usable.
  std::vector<Tensor> run(const std::vector<Tensor>& inputs, const backend::RunLimits& limits,
                          backend::RunStats* stats = nullptr) const;
  /// Runs with inputs by name; returns outputs by name.
  std::map<std::string, Tensor> run(const std::map<std::string, Tensor>& inputs, backend::RunStats* stats = nullptr) const;

  const std::vector<ValueInfo>& inputs() const { return inputs_; }
  const std::vector<ValueInfo>& outputs() const { return outputs_; }
  /// The prepared graph (after passes). With fixed input shapes, weights that
  /// only dnnl reads, in converted form, are released after the first run:
  /// their Constant values then read as zeros (Storage::is_placeholder();
  /// set_weight still replaces them whole).
  const ir::Graph& graph() const { return *prepared_.graph; }
  /// Intra-op threads of a run on a machine with every core to itself (a
  /// run may use fewer: SessionOptions::adapt_threads, RunStats::num_threads).
  int num_threads() const { return num_threads_; }
  /// Number of plans specialized to input shapes that the session keeps
  /// (at most max_specialized_plans, or one for a model whose input shapes are fixed).
  size_t num_plans() const;
  /// Runs so far that used the shape-generic plan (backend::RunStats::generic_plan).
  size_t num_generic_runs() const;
  /// Where every node went when the session partitioned its graph, and why.
  /// A model with symbolic input dimensions is partitioned again in each
  /// plan, once the input shapes are known (partition_report_for).
  const partition::PartitionReport& partition_report() const { return prepared_.report; }
  /// The partition of the plan for inputs of these concrete types (planning
  /// it now if needed): partition_report() for a model whose input shapes
  /// are fixed; for one with symbolic dimensions, the plan's own partition,
  /// made with those shapes.
  partition::PartitionReport partition_report_for(const std::vector<ir::ValueType>& input_types) const;
  /// True when each plan partitions the graph again (some input dimension is symbolic).
  bool partitions_per_plan() const { return prepared_.unpartitioned != nullptr; }
  /// Replaces the value of the weight (Constant node) named `name` in place:
  /// same dtype and shape required (invalid_argument otherwise, or when the
  /// prepared graph has no such constant, e.g. because a pass folded it
  /// away). The storage version is bumped, so modules that cached a converted
  /// copy convert again on their next run. A `value` already in the weight's
  /// buffer (an output computed in place: backend::kUpdatedByAttribute) only
  /// bumps the version. Not to be called while run() is in progress on
  /// another thread.
  void set_weight(const std::string& name, const Tensor& value);
  /// Number of backend compile() calls this session made (0 for a restored artifact).
  size_t num_compiles() const;
  /// The subgraphs that their backend declined to compile in the plans made
  /// so far (a plan is made at the first run with new input shapes): they run
  /// on the reference kernels. The partition report, made before any plan,
  /// still shows their backend; `graft run --report` prints both.
  std::vector<compiler::CompileFallback> compile_fallbacks() const;
  /// True when the session runs a plan restored from an artifact.
  bool restored_from_artifact() const { return restored_; }

  /// A planned graph (input types concrete, compiled nodes assigned) and its modules.
  struct PlannedGraph {
    std::shared_ptr<const ir::Graph> graph;
    backend::ModuleTable modules;  ///< by Node::index() of `graph`
  };
  /// The plan for inputs of these concrete types, planning (and compiling) it
  /// now if needed: what graft compile stores in an artifact.
  PlannedGraph plan_for_types(const std::vector<ir::ValueType>& input_types) const;

 private:
  struct Plan;
  void set_threads();
  void describe_io();
  void restore(RestoredPlan plan);
  void validate_inputs(const std::vector<Tensor>& inputs) const;
  /// The plan for inputs of these types: the specialized plan of these
  /// shapes, or (symbolic input dimensions, PlanCache's choice) the generic
  /// plan, unless `specialized` is required (artifacts, reports).
  std::shared_ptr<Plan> plan_for(const std::vector<DType>& dtypes, const std::vector<Shape>& shapes,
                                 bool specialized) const;
  std::shared_ptr<Plan> make_specialized_plan(const std::vector<DType>& dtypes, const std::vector<Shape>& shapes) const;
  std::shared_ptr<Plan> generic_plan(const std::vector<DType>& dtypes) const;
  std::shared_ptr<Plan> plan_for_types_impl(const std::vector<ir::ValueType>& input_types) const;

  SessionOptions options_;
  compiler::CompileOptions compile_options_;  // options_ as the compiler takes them
  compiler::PreparedGraph prepared_;          // the graph after passes and partitioning
  int num_threads_ = 1;
  bool adapt_threads_ = true;
  std::shared_ptr<CoreAvailability> core_availability_;  // null: the global one
  uint64_t max_memory_ = 0;  ///< per run, 0: none
  bool restored_ = false;
  mutable size_t num_compiles_ = 0;                    // guarded by mutex_
  mutable std::vector<compiler::CompileFallback> fallbacks_;  // guarded by mutex_
  std::vector<ValueInfo> inputs_;
  std::vector<ValueInfo> outputs_;
  mutable std::mutex mutex_;
  int max_specialized_plans_ = SessionOptions::kDefaultMaxSpecializedPlans;
  mutable std::unique_ptr<PlanCache<Plan>> plans_;                      // guarded by mutex_
  mutable std::map<std::string, std::shared_ptr<Plan>> generic_plans_;  // by input dtypes; guarded by mutex_
  mutable size_t num_generic_runs_ = 0;                                 // guarded by mutex_
  mutable std::vector<std::unique_ptr<backend::BufferPool>> idle_pools_;
};

}  // namespace graft::runtime
