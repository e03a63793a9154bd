/// \file
/// Executor: runs a graph node by node in topological order with each node's
/// kernel, freeing every intermediate value after its last reader.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "graft/ir/indexed_graph.h"
#include "graft/ir/updated_constant.h"
#include "graft/backend/buffer_pool.h"
#include "graft/backend/compiled_module.h"
#include "graft/backend/run_limits.h"

namespace graft::backend {

/// The attribute of a Constant updated in place by a training step
/// (ir::kUpdatedByAttribute, whose comment says what the executor does with it).
inline constexpr const char* kUpdatedByAttribute = ir::kUpdatedByAttribute;

/// Time spent in one node during a profiled run.
struct NodeTiming {
  std::string node_name;
  std::string op_type;
  std::string backend;
  double microseconds = 0;
  /// When the node started (for timelines such as a Chrome trace).
  std::chrono::steady_clock::time_point start{};
  /// Model nodes this node stands for: the computing (non-source) nodes of a
  /// graft.Subgraph / graft.FusedPointwise body, else 1.
  int64_t model_nodes = 1;
};

/// Per-run options.
struct RunOptions {
  int num_threads = 1;
  bool profile = false;  ///< record a NodeTiming per node
  bool nested = false;   ///< a body run inside another run: keeps the pool's statistics running
  RunLimits limits;      ///< deadline and cancellation
};

/// What one run measured.
struct RunStats {
  MemoryStats memory;
  std::vector<NodeTiming> timings;  ///< filled when RunOptions::profile
  /// Set by Session::run: the run used the session's shape-generic plan
  /// rather than one specialized to its input shapes (docs/dynamic-shapes.md).
  bool generic_plan = false;
  /// Bytes the run's copy nodes moved from the host to devices and back
  /// (graft.CopyToDevice / graft.CopyToHost at device boundaries).
  uint64_t bytes_to_device = 0;
  uint64_t bytes_to_host = 0;
  /// Set by Session::run: the intra-op threads the run used (fewer than the
  /// session's while other processes kept cores busy: SessionOptions::adapt_threads).
  int num_threads = 0;
};

class RunQueues;  // the device queues of one run (executor.cc)

/// Executes one graph. Immutable after construction, so one Executor serves
/// concurrent runs (each with its own BufferPool).
///
/// Nodes placed on a device (Node::device) run their module with the run's
/// queue on that device, one per device per run, made on first use: device
/// work is queued, not waited for. graft.CopyToDevice and graft.CopyToHost
/// nodes are run here through the device's DeviceAPI. The host waits for a
/// queue only where a host node reads a value copied back, and once at the
/// end of the run for the outputs.
class Executor {
 public:
  /// Builds the indexed view and the last-use table. The graph must outlive
  /// the executor and must not change while it exists.
  explicit Executor(const ir::Graph& graph);
  /// Like the above; nodes with an entry in `modules` (by Node::index()) run
  /// through that CompiledModule instead of their op's kernel.
  Executor(const ir::Graph& graph, ModuleTable modules);

  /// Runs with one tensor per graph input (in graph input order); returns one
  /// tensor per graph output. Inputs are not validated here (Session does).
  std::vector<Tensor> run(std::span<const Tensor> inputs, BufferPool& pool, const RunOptions& options,
                          RunStats* stats = nullptr) const;

  const ir::IndexedGraph& indexed() const { return indexed_; }

 private:
  /// Fails with a `cancelled` Error when `limits` say the run must stop.
  static void check_limits(const RunLimits& limits, const ir::Node* node);
  /// Fills output_may_overwrite_input_ from the constants' kUpdatedByAttribute.
  void find_constants_updated_in_place();
  /// Runs a graft.CopyToDevice / graft.CopyToHost node on `value`.
  Tensor copy_across(const ir::Node& node, const Tensor& value, RunQueues& queues,
                     std::vector<Tensor>& pinned) const;
  const ir::Graph& graph_;
  ir::IndexedGraph indexed_;
  std::vector<uint32_t> last_use_;    // per entry: id of the last node reading it
  std::vector<bool> keep_;            // per entry: graph output or source value
  std::vector<int32_t> input_position_;  // per node: position among graph inputs, or -1
  std::vector<bool> sync_after_;         // per node: a CopyToHost whose value a node reads (not only an output)
  ModuleTable modules_;                  // per Node::index(): compiled module or null
  // Per node (empty for most): per output, the input whose buffer it may
  // take (a constant it updates, read last by this node; kUpdatedByAttribute), or -1.
  std::vector<std::vector<int32_t>> output_may_overwrite_input_;
};

}  // namespace graft::backend
