/// \file
/// Which nodes the `dnnl` backend takes: one table keyed by OpId, with a
/// checker per op answering yes or no with a reason (the TVM BYOC op-support
/// style). The checkers see a node with inferred dtypes and shapes; compile()
/// refuses exactly what they refuse.
#pragma once

#include <cstddef>
#include <limits>
#include <memory>
#include <span>
#include <string>

#include "graft/ir/op_id.h"
#include "graft/partition/subgraph_property.h"

namespace graft::ir {
class Node;
}

namespace graft::dnnl_backend {

/// A checker's answer: supported, or not with the reason why.
struct SupportResult {
  bool supported = false;
  std::string reason;  ///< empty when supported
  static SupportResult yes() { return {true, {}}; }
  static SupportResult no(std::string why) { return {false, std::move(why)}; }
  explicit operator bool() const { return supported; }
};

/// One row of dnnl's support table: an op it takes and the checker of a
/// node of that op (attributes, dtypes, shapes).
struct OpSupport {
  ir::OpId op;
  SupportResult (*check)(const ir::Node& node);
  /// Inputs [0, data_inputs) must be float32; the rest are shapes, indices or
  /// scales of any dtype (Reshape's shape, Slice's starts, ...).
  size_t data_inputs = std::numeric_limits<size_t>::max();
  /// Runs on graft's reference kernel inside the program (no oneDNN
  /// primitive: a training step's loss and its gradient,
  /// dnnl_reference_step.h). Such a node is not dnnl compute: a region needs
  /// a primitive of its own to be worth a module.
  bool reference_kernel = false;
};

/// Every op the dnnl backend takes, one row each: the one place that says
/// what dnnl takes.
std::span<const OpSupport> dnnl_op_table();

/// The table's row of `op`, or nullptr when dnnl does not take it.
const OpSupport* dnnl_op_support(ir::OpId op);

/// What the dnnl backend takes from a graph: dnnl_op_table()'s checkers in a
/// property that keeps pointwise ops next to dnnl's compute (dnnl_partition.cc).
std::shared_ptr<const partition::SubgraphProperty> make_dnnl_property();

/// Whether a BatchNormalization node normalizes with its batch's statistics
/// (training mode: opset 14's training_mode = 1, or before 14 a node that
/// asks for the running statistics as outputs).
bool is_training_batch_norm(const ir::Node& node);

/// Whether a ReduceSum node (constant axes) sums over leading axes only, as
/// a linear layer's bias gradient sums d_y over the batch and sequence.
/// dnnl runs it on graft's reference kernel inside the program (it streams
/// the tensor once; oneDNN 2.6 would transpose it first), and it is not
/// dnnl compute: a region of such sums alone stays off dnnl.
bool sums_leading_axes_only(const ir::Node& node);

/// Whether the dnnl backend can run `node`: its op has a row in the table,
/// its data is float32 with known ranks up to oneDNN's, and the row's checker
/// accepts it.
SupportResult dnnl_supports(const ir::Node& node);

}  // namespace graft::dnnl_backend
