/// \file
/// An op's pointwise expression: how the op is written with kernel IR
/// primitives (graft/ir/kernel_ir.h), attributes becoming constants. Each
/// fusible op declares it in its semantics file, beside its type inference and
/// reference kernel, with GRAFT_REGISTER_POINTWISE; OpSchema::pointwise holds
/// it. Fusion asks it which nodes it can fuse, and every code generator (the
/// LLVM JIT, the interpreter, CUDA, OpenCL, ccodegen's C) renders the IR it
/// builds, so an op is written once for all of them.
///
/// An expression mirrors the op's reference kernel: same branch structure,
/// same constants, same NaN behaviour (std::max where the kernel calls it,
/// float16 intermediate results rounded where the kernel stores them), so a
/// fused kernel computes what the unfused graph computes.
///
///   int32_t relu_expression(PointwiseLowering& l) {
///     int32_t x = l.arg(0), zero = l.k(0);
///     return l.select(l.cmp(ir::ExprOp::less, x, zero), zero, x);
///   }
///   constexpr PointwiseExpression kReluExpression{PointwiseInputs::numeric, relu_expression};
///   GRAFT_REGISTER_POINTWISE(Relu, kReluExpression);
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "graft/core/dtype.h"
#include "graft/ir/kernel_ir.h"
#include "graft/ir/op_schema.h"

namespace graft::ir {
class Node;
}

namespace graft::ops {

/// Which kernel dtypes an expression takes for the op's first input.
enum class PointwiseInputs : uint8_t {
  floats,   ///< float32, float64, float16
  numeric,  ///< every kernel dtype but bool
  boolean,  ///< bool
  any,      ///< every kernel dtype
};

/// True when `dtype` is a kernel dtype in `inputs`.
bool accepts(PointwiseInputs inputs, DType dtype);

/// What an expression's builder sees: the node, the kernel IR it appends to,
/// its arguments lowered already, and helpers for the reference kernels'
/// idioms. Arguments of float16 values are float32 expressions (kernels
/// compute float16 in float32); `dtypes` keeps their dtypes in the graph.
struct PointwiseLowering {
  ir::KernelIR& ir;
  const ir::Node& node;
  std::vector<int32_t> args;  ///< one per input; -1 for an absent optional input
  std::vector<DType> dtypes;  ///< per input: its dtype in the graph (float16 where args holds float32)
  DType out;                  ///< dtype the expression computes output 0 in (float32 for float16)

  /// The dtype of expression `e`.
  DType t(int32_t e) const { return ir.exprs[static_cast<size_t>(e)].dtype; }
  /// Argument `i` (the expression of input i).
  int32_t arg(size_t i) const { return args.at(i); }
  /// A constant of dtype `dtype` (default: the output dtype).
  int32_t k(double value, DType dtype = DType::undefined);
  /// An integer or bool constant, exact at every int64 value.
  int32_t k_int(int64_t value, DType dtype);
  /// A unary op whose result has its operand's dtype.
  int32_t un(ir::ExprOp op, int32_t a) { return ir.add_op(op, t(a), a); }
  /// A binary op whose result has the first operand's dtype.
  int32_t bin(ir::ExprOp op, int32_t a, int32_t b) { return ir.add_op(op, t(a), a, b); }
  /// A comparison (bool result).
  int32_t cmp(ir::ExprOp op, int32_t a, int32_t b) { return ir.add_op(op, DType::boolean, a, b); }
  /// c ? a : b.
  int32_t select(int32_t c, int32_t a, int32_t b) { return ir.add_op(ir::ExprOp::select, t(a), c, a, b); }
  /// `a` converted to `to` (itself when it has that dtype).
  int32_t cast(int32_t a, DType to) { return t(a) == to ? a : ir.add_op(ir::ExprOp::cast, to, a); }
  /// `e` rounded to the node's dtype where it is float16 and the reference
  /// kernel stores an intermediate result (variadic ops, step by step).
  int32_t rounded(int32_t e);
  /// std::max(a, b) = a < b ? b : a (what the reference kernels call).
  int32_t std_max(int32_t a, int32_t b) { return select(cmp(ir::ExprOp::less, a, b), b, a); }
  /// std::min(a, b) = b < a ? b : a.
  int32_t std_min(int32_t a, int32_t b) { return select(cmp(ir::ExprOp::less, b, a), b, a); }
  /// `value`, or x where x is NaN (for formulas whose std::max/min would
  /// turn a NaN into a bound), as the reference kernels do.
  int32_t keep_nan(int32_t x, int32_t value) { return select(cmp(ir::ExprOp::equal, x, x), value, x); }
  /// log(1 + exp(x)) without overflow, as the reference Softplus.
  int32_t softplus(int32_t x);
  /// A float attribute of the node.
  float attr_float(const std::string& name, float fallback) const;
};

/// Appends the op's expression and returns it; its dtype must be `out`.
using PointwiseBuilder = int32_t (*)(PointwiseLowering&);
/// Returns "" when the node's attributes (or input dtypes beyond the first)
/// are ones the expression handles, else why not.
using PointwiseAttributeCheck = std::string (*)(const ir::Node&);

/// One op's pointwise expression. Declare it constexpr (it is read through
/// OpSchema::pointwise from any translation unit, during static
/// initialization included).
struct PointwiseExpression {
  PointwiseInputs first_input;              ///< dtypes the first input may have
  PointwiseBuilder build;                   ///< writes the op in kernel IR
  PointwiseAttributeCheck check = nullptr;  ///< optional: which attributes are handled
  bool takes_absent_inputs = false;         ///< optional inputs may be absent (Clip's bounds)
};

/// True when the expression of `node`'s op (which must have one) takes the
/// dtype of its first input (present) and its attributes. `reason`, when not
/// null, receives why not; without it no message is built.
bool expression_takes(const ir::Node& node, std::string* reason);

/// The dtype a kernel computes values of `storage` dtype in: float32 for
/// float16 (which kernels only load, store and round to), else itself.
DType compute_dtype(DType storage);
/// The float16 expression that `e` converts to float32, when `e` is such a
/// conversion (a float16 value, rounded), else -1.
int32_t float16_source(const ir::KernelIR& ir, int32_t e);
/// `e` (float32) rounded to float16 and back, as a float16 op's result is
/// (unchanged when it is rounded already).
int32_t round_to_float16(ir::KernelIR& ir, int32_t e);

/// Appends the expression of `node` (an op with a pointwise expression) to
/// `ir`, given the expressions of its inputs in their compute dtypes (-1 for
/// an absent one) and the inputs' dtypes in the graph. Returns the node's
/// value in its compute dtype, rounded to float16 where the node's output is
/// float16. Throws internal when the builder returns another dtype.
int32_t lower_pointwise(ir::KernelIR& ir, const ir::Node& node, std::span<const int32_t> args,
                        std::span<const DType> dtypes);

// Helpers for the expressions of the semantics files.

/// The node's opset, or a large one when unknown (the newest semantics).
int effective_opset(const ir::Node& node);
/// The dtype of input `i` of `node` (undefined when absent).
DType input_dtype(const ir::Node& node, size_t i);
/// The attribute check of the binary ops: no legacy broadcast attributes
/// (opset < 7's `broadcast` and `axis`).
std::string no_legacy_broadcast(const ir::Node& node);

/// op(x): the builder of an op that is one unary primitive.
template <ir::ExprOp op>
int32_t unary_expression(PointwiseLowering& l) {
  return l.un(op, l.arg(0));
}
/// op(a, b), the result in a's dtype.
template <ir::ExprOp op>
int32_t binary_expression(PointwiseLowering& l) {
  return l.bin(op, l.arg(0), l.arg(1));
}
/// op(a, b), a bool result.
template <ir::ExprOp op>
int32_t comparison_expression(PointwiseLowering& l) {
  return l.cmp(op, l.arg(0), l.arg(1));
}

}  // namespace graft::ops
