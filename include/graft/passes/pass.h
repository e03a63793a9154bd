/// \file
/// Graph passes, registered by name in passes.def so that a pipeline is a list
/// of names (`graft opt --passes a,b,c`).
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "graft/ir/graph.h"

namespace graft::passes {

/// Shared state and settings of a pipeline run.
struct PassContext {
  bool verify_after_each = false;  ///< run ir::verify after every pass
  int num_threads = 1;             ///< for passes that evaluate kernels
  /// The result must stay a valid model of the graph's opset imports (what
  /// `graft opt` writes for other runtimes to load): a rewrite that would
  /// bring in an op newer than the imported opset (Gelu, opset 20, into an
  /// opset-17 model) is left out. Off for Session, which runs such ops itself.
  bool keep_opset = false;
  /// fold-constants leaves a DequantizeLinear of int8 constants unevaluated
  /// when every reader reads it as its weights (ops::is_quantized_weight,
  /// ops::reads_as_weight): a backend that takes int8 weights with their
  /// scales gets them so, with no float32 copy. Set by the compiler when a
  /// backend in its order takes them (Backend::takes_quantized_weights); it
  /// folds those no such backend took after partitioning.
  bool keep_quantized_weights = false;
};

/// Whether a pass may add ops of ONNX opset `version` (default domain) to
/// `graph`: always, unless `ctx.keep_opset` and the graph imports an older one.
bool may_add_ops_of_opset(const ir::Graph& graph, const PassContext& ctx, int64_t version);

/// A pass rewrites the graph in place or replaces it with a new one; returns
/// whether anything changed.
using PassFn = bool (*)(std::unique_ptr<ir::Graph>& graph, PassContext& ctx);

struct PassInfo {
  std::string_view name;
  std::string_view description;
  PassFn run;
};

/// Every registered pass, in passes.def order.
std::span<const PassInfo> all_passes();
/// A pass by name, or nullptr.
const PassInfo* find_pass(std::string_view name);
/// Runs the named passes in order. Throws invalid_argument listing the known
/// passes when a name is unknown (before running anything).
void run_pipeline(std::unique_ptr<ir::Graph>& graph, const std::vector<std::string>& names, PassContext& ctx);
/// The pipeline Session uses by default.
std::vector<std::string> default_pipeline();

// The passes (one per file under src/passes/).
#define GRAFT_PASS(name, function, description) bool function(std::unique_ptr<ir::Graph>& graph, PassContext& ctx);
#include "graft/passes/passes.def"
#undef GRAFT_PASS

}  // namespace graft::passes
