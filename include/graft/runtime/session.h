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

#include "graft/ir/graph.h"
#include "graft/runtime/executor.h"

namespace graft::runtime {

/// How a Session prepares and runs its model.
struct SessionOptions {
  /// Intra-op threads; 0 = GRAFT_NUM_THREADS, else the number of cores.
  int num_threads = 0;
  /// Backends in priority order; empty = --backends / GRAFT_BACKENDS / default.
  std::vector<std::string> backends;
  /// Pointwise fusion; nullopt = GRAFT_FUSION, else on.
  std::optional<bool> fusion;
  /// Passes to run before execution; empty = passes::default_pipeline().
  std::vector<std::string> passes;
  /// Run ir::verify after every pass (tests and debug builds).
  bool verify_after_each_pass = false;
  /// Record per-node timings in RunStats.
  bool profile = false;
  /// Where backends that generate source (ccodegen's C files) also write it; empty: nowhere.
  std::string emit_source_dir;
};

struct RestoredPlan;

/// Description of one graph input or output.
struct ValueInfo {
  std::string name;
  ir::ValueType type;
};

class Session {
 public:
  /// Loads an ONNX model file, or a compiled artifact (a file named *.graft
  /// or starting with the artifact magic) which runs without passes, partitioning or compiling.
  /// Throws graft::Error on any problem with it.
  explicit Session(const std::string& model_path, SessionOptions options = {});
  /// Takes ownership of a graph.
  explicit Session(std::unique_ptr<ir::Graph> graph, SessionOptions options = {});
  /// Runs a plan restored from an artifact: its inputs have the concrete
  /// types it was compiled for; nothing is prepared or compiled.
  explicit Session(RestoredPlan plan, SessionOptions options = {});
  ~Session();

  /// Runs with one tensor per input, in input order. Validates count, dtype,
  /// rank and known dimensions (invalid_argument naming the input otherwise).
  std::vector<Tensor> run(const std::vector<Tensor>& inputs, RunStats* stats = nullptr) const;
  /// Runs with inputs by name; returns outputs by name.
  std::map<std::string, Tensor> run(const std::map<std::string, Tensor>& inputs, RunStats* stats = nullptr) const;

  const std::vector<ValueInfo>& inputs() const { return inputs_; }
  const std::vector<ValueInfo>& outputs() const { return outputs_; }
  /// The prepared graph (after passes).
  const ir::Graph& graph() const { return *graph_; }
  int num_threads() const { return num_threads_; }
  /// Number of distinct input-shape signatures planned so far.
  size_t num_plans() const;
  /// Number of backend compile() calls this session made (0 for a restored artifact).
  size_t num_compiles() const;
  /// True when the session runs a plan restored from an artifact.
  bool restored_from_artifact() const { return restored_; }

  /// A planned graph (input types concrete, compiled nodes assigned) and its modules.
  struct PlannedGraph {
    std::shared_ptr<const ir::Graph> graph;
    ModuleTable modules;  ///< by Node::index() of `graph`
  };
  /// The plan for inputs of these concrete types, planning (and compiling) it
  /// now if needed: what graft compile stores in an artifact.
  PlannedGraph plan_for_types(const std::vector<ir::ValueType>& input_types) const;

 private:
  struct Plan;
  void prepare();
  void set_threads();
  void describe_io();
  void restore(RestoredPlan plan);
  void validate_inputs(const std::vector<Tensor>& inputs) const;
  std::shared_ptr<Plan> plan_for(const std::vector<DType>& dtypes, const std::vector<Shape>& shapes) const;

  SessionOptions options_;
  std::unique_ptr<ir::Graph> graph_;
  int num_threads_ = 1;
  bool restored_ = false;
  mutable size_t num_compiles_ = 0;  // guarded by mutex_
  std::vector<ValueInfo> inputs_;
  std::vector<ValueInfo> outputs_;
  mutable std::mutex mutex_;
  mutable std::map<std::string, std::shared_ptr<Plan>> plans_;  // by input-shape signature
  mutable std::vector<std::unique_ptr<BufferPool>> idle_pools_;
};

}  // namespace graft::runtime
