/// \file
/// Kernel IR: the expression DAG of one fused pointwise kernel. Leaves are the
/// kernel's inputs (read with numpy broadcasting) and scalar constants; inner
/// nodes are primitive pointwise operations; one or more nodes are outputs.
/// Shapes are not part of the IR: the same kernel runs at every shape, and
/// the broadcast strides of each input are computed at run time.
///
/// The IR is built from a graft.FusedPointwise body by the one op-to-expression
/// table (graft/codegen/op_expressions.h), brought to a canonical form (common
/// subexpressions merged, dead nodes dropped, commutative operands ordered,
/// nodes numbered in a fixed depth-first order) and hashed for the compile cache.
/// It is part of the ir component, below ops, so that an op's semantics can say
/// which expression the op lowers to; codegen renders it for each target.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

#include "graft/core/dtype.h"

namespace graft::ir {

/// Primitive operations of the kernel IR. Every emitter and the interpreter
/// implement each of them; the op table composes ONNX ops out of them.
enum class ExprOp : uint8_t {
  input,      ///< leaf: kernel input `index`
  constant,   ///< leaf: scalar constant (`float_value` for floats, `int_value` otherwise)
  // unary, result dtype = argument dtype unless noted
  neg,
  abs,
  exp,
  expm1,
  log,
  log1p,
  sqrt,
  tanh,
  sigmoid,
  erf,
  sin,
  cos,
  floor,
  ceil,
  round,        ///< halves to even
  sign,         ///< -1, 0, 1 (NaN stays NaN)
  logical_not,  ///< bool -> bool
  cast,         ///< to this node's dtype, with graft's conversion rules
  // binary
  add,
  sub,
  mul,
  div,  ///< integers: truncating, x/0 = 0, MIN/-1 wraps
  pow,  ///< same dtype operands; integers: exact wrapping power
  max,  ///< NaN-propagating
  min,  ///< NaN-propagating
  equal,          ///< -> bool
  less,           ///< -> bool
  less_equal,     ///< -> bool
  greater,        ///< -> bool
  greater_equal,  ///< -> bool
  logical_and,
  logical_or,
  logical_xor,
  // ternary
  select,  ///< args: bool condition, value if true, value if false
};

/// Number of ExprOp values.
inline constexpr int kNumExprOps = static_cast<int>(ExprOp::select) + 1;
/// Name of an op ("add", "sigmoid").
std::string_view to_string(ExprOp op);
/// Operand count of an op (0 for leaves).
int arity(ExprOp op);
/// True for add, mul, max, min, equal, logical and/or/xor.
bool is_commutative(ExprOp op);

/// One node of the DAG. Arguments refer to earlier nodes (by position).
struct Expr {
  ExprOp op = ExprOp::constant;
  DType dtype = DType::undefined;  ///< result dtype
  int32_t args[3] = {-1, -1, -1};
  int32_t index = 0;        ///< input position for ExprOp::input
  double float_value = 0;   ///< constant value of a float constant
  int64_t int_value = 0;    ///< constant value of an integer or bool constant
  bool operator==(const Expr&) const = default;
};

/// True for the dtypes kernels take: float32, float64, int32, int64, bool,
/// and float16 (loaded and stored as such, computed in float32 and rounded to
/// float16 after every op, as the reference kernels do).
bool is_kernel_dtype(DType dtype);

/// Maximum rank of the iteration space a kernel accepts.
inline constexpr int kMaxKernelRank = 8;

/// A fused pointwise kernel.
struct KernelIR {
  std::vector<DType> input_dtypes;  ///< one per kernel input
  std::vector<Expr> exprs;          ///< topologically ordered (arguments before users)
  std::vector<int32_t> outputs;     ///< node of each kernel output

  /// Appends a node and returns its position.
  int32_t add(Expr e);
  int32_t add_input(int32_t index, DType dtype);
  int32_t add_constant(DType dtype, double value);
  int32_t add_op(ExprOp op, DType dtype, int32_t a, int32_t b = -1, int32_t c = -1);

  /// Throws invalid_model naming the node when an argument is out of order,
  /// an arity or dtype is inconsistent, or an input index is out of range.
  void validate() const;
  /// Dtype of each output.
  std::vector<DType> output_dtypes() const;
  bool operator==(const KernelIR&) const = default;
};

/// The canonical form: common subexpressions merged, unused nodes dropped,
/// commutative operands ordered by structure, nodes in depth-first order from
/// the outputs. Two bodies that compute the same DAG get equal IR.
KernelIR canonicalize(const KernelIR& ir);
/// Stable 64-bit hash (FNV-1a over the serialized bytes); equal across runs,
/// processes and machines.
uint64_t stable_hash(const KernelIR& ir);
/// Stable 64-bit FNV-1a of bytes, continuing from `seed`.
uint64_t fnv1a(std::string_view bytes, uint64_t seed = 0xcbf29ce484222325ull);

/// Versioned little-endian binary form (what the `fuse` module saves).
void write_kernel_ir(std::ostream& out, const KernelIR& ir);
/// Reads what write_kernel_ir wrote; validates it. Throws invalid_model on
/// malformed or truncated bytes (never crashes, bounded allocation).
KernelIR read_kernel_ir(std::istream& in);
/// The serialized bytes.
std::string serialize(const KernelIR& ir);

/// Human-readable listing, one node a line ("%3 = add float32 %1, %2").
std::string to_string(const KernelIR& ir);

}  // namespace graft::ir
