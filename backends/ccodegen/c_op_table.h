// ccodegen's op table: which ops it emits, how (a kind), and for pointwise
// ops the C expression of one element (tinygrad's code_for_op). The support
// checker and the emitter both read this one table.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace graft::ir {
class Node;
}

namespace graft::backends {

/// How the emitter writes an op.
enum class COpKind {
  pointwise,  ///< out[i] = expression of the (broadcast) inputs' elements
  matmul,
  gemm,
  softmax,     ///< Softmax and LogSoftmax
  reduce,      ///< ReduceSum/Mean/Max/Min
  copy,        ///< Reshape, Flatten, Squeeze, Unsqueeze, Identity: same bytes, new shape
  transpose,
};

struct COp {
  std::string_view name;
  COpKind kind;
};

/// The ccodegen row of an ONNX op, or nullptr when ccodegen does not emit it.
const COp* find_c_op(std::string_view op_name);

/// The C expression for one element of a pointwise node, given the C
/// expressions of its operands (already float values). nullopt with `reason`
/// set when an attribute or constant input is not one the emitter handles.
std::optional<std::string> pointwise_expression(const ir::Node& node, const std::vector<std::string>& operands,
                                                std::string* reason);

/// Number of leading inputs that carry float data (Clip's min/max and the
/// reductions' axes are read at compile time).
int num_data_inputs(const ir::Node& node);

/// A float as a C literal ("0.5f", "INFINITY", "(-INFINITY)", "NAN").
std::string c_float_literal(float value);

}  // namespace graft::backends
