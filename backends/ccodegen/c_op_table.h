// ccodegen's op table, keyed by OpId: which ops it emits, how (a kind) and
// which inputs carry float data. Every op with a pointwise expression
// (OpSchema::pointwise) is a pointwise op here: its kernel IR is rendered as C
// by codegen (graft/codegen/c_kernel_source.h), so ccodegen has no expression
// table of its own. The support checker and the emitter both read this table.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "graft/ir/op_id.h"

namespace graft::ir {
class Node;
}

namespace graft::backends {

/// How the emitter writes an op.
enum class COpKind {
  pointwise,  ///< out[i] = the op's kernel IR over the (broadcast) inputs' elements
  matmul,
  gemm,
  softmax,  ///< Softmax and LogSoftmax
  reduce,   ///< ReduceSum/Mean/Max/Min
  copy,     ///< Reshape, Flatten, Squeeze, Unsqueeze, Identity: same bytes, new shape
  transpose,
  layer_norm,  ///< LayerNormalization (output Y only)
};

/// One row of the table.
struct COp {
  ir::OpId op;
  COpKind kind;
  /// Leading inputs that carry float data, -1 for all (the reductions' axes
  /// and the shape inputs of the copies are read at compile time).
  int data_inputs = -1;
};

/// ccodegen's row of `op`, or nullopt when it does not emit the op.
std::optional<COp> find_c_op(ir::OpId op);
/// Every op that may have a row: the ones listed, and every ONNX op of
/// category elementwise or broadcast (a row when it has a pointwise
/// expression, which is attached during static initialization and so is
/// looked at only when a node is checked).
std::vector<ir::OpId> c_op_candidates();

/// Number of leading inputs of `node` that carry float data.
int num_data_inputs(const ir::Node& node);

/// Whether ccodegen's table and emitter take `node` (op, float32 dtypes,
/// attributes, constant inputs): "" when they do, else why not. The C
/// compiler's availability is ccodegen_supports' to check.
std::string c_op_refusal(const ir::Node& node);

/// A float as a C literal ("0.5f", "INFINITY", "(-INFINITY)", "NAN").
std::string c_float_literal(float value);

}  // namespace graft::backends
