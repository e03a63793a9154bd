/// \file
/// The op registry: one OpSchema per op, built from the X-macro list in
/// graft/ir/ops.def (the single source of truth for op names, domains,
/// categories and arities; OpId enumerates its rows). Semantics (type
/// inference, reference kernel, pointwise expression) are attached by the op's
/// one semantics file through GRAFT_REGISTER_OP and GRAFT_REGISTER_POINTWISE.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "graft/ir/op_id.h"

namespace graft::ops {
class InferContext;
class KernelContext;
class GradientContext;
struct PointwiseExpression;
}  // namespace graft::ops

namespace graft::ir {

/// How an op touches its data; drives fusion and partitioning decisions.
enum class OpCategory {
  source,       ///< Input, Constant: produce values from outside the computation
  elementwise,  ///< out[i] = f(in[i]), all shapes equal
  broadcast,    ///< elementwise with numpy broadcasting of inputs
  injective,    ///< each output element reads one input element (reshape, transpose, gather)
  reduce,       ///< reductions over axes
  opaque,       ///< anything else (conv, matmul, pooling, ...)
  control,      ///< If, Loop, Scan, graft.Subgraph
};

/// Name of a category ("elementwise", ...).
std::string_view to_string(OpCategory category);

/// Computes output types from input types, attributes and constant inputs.
using InferFn = void (*)(ops::InferContext&);
/// Reference CPU kernel.
using KernelFn = void (*)(ops::KernelContext&);
/// Gradient builder: adds the backward nodes of one forward node
/// (graft/ops/gradient.h).
using GradientFn = void (*)(ops::GradientContext&);

/// One row of the op table. `max_inputs`/`max_outputs` of -1 mean variadic.
struct OpSchema {
  OpId id;
  std::string_view name;
  std::string_view domain;  ///< "" for ONNX (ai.onnx), "graft" for graft's own ops
  OpCategory category;
  int min_inputs, max_inputs, min_outputs, max_outputs;
  InferFn infer = nullptr;    ///< set by GRAFT_REGISTER_OP
  KernelFn kernel = nullptr;  ///< set by GRAFT_REGISTER_OP
  /// How the op is written in kernel IR (graft/ops/pointwise_expression.h),
  /// for fusion and every code generator; set by GRAFT_REGISTER_POINTWISE,
  /// null for ops that are not fused.
  const ops::PointwiseExpression* pointwise = nullptr;
  /// Builds the op's backward nodes for autodiff; set by
  /// GRAFT_REGISTER_GRADIENT (graft/ops/gradient.h), null for ops without a
  /// gradient.
  GradientFn gradient = nullptr;

  /// "Conv" or "graft.Subgraph".
  std::string qualified_name() const;
  /// True when the op has semantics (inference and a reference kernel).
  bool is_implemented() const { return infer != nullptr && kernel != nullptr; }
};

/// Looks an op up by domain and name; "ai.onnx" is the same as "". Returns
/// nullptr for ops not in the table.
const OpSchema* find_op(std::string_view domain, std::string_view name);
/// Every op in the table, in ops.def order (all_ops()[op_index(id)].id == id).
std::span<const OpSchema> all_ops();
/// The row of `id`.
const OpSchema& op_schema(OpId id);

namespace detail {
/// Attaches semantics at static-initialization time; returns true. Aborts the
/// program start (a build defect) if the op is missing from ops.def or
/// registered twice.
bool register_op_semantics(std::string_view domain, std::string_view name, InferFn infer, KernelFn kernel);
/// Attaches a pointwise expression at static-initialization time; returns
/// true. Aborts the program start if the op has one already.
bool register_op_pointwise(OpId id, const ops::PointwiseExpression* expression);
/// Attaches a gradient builder at static-initialization time; returns true.
/// Aborts the program start if the op has one already.
bool register_op_gradient(OpId id, GradientFn builder);
}  // namespace detail

}  // namespace graft::ir

#define GRAFT_CONCAT_INNER(a, b) a##b
#define GRAFT_CONCAT(a, b) GRAFT_CONCAT_INNER(a, b)

/// Registers the type inference and reference kernel of an op listed in
/// ops.def. Use once per op, in the op's semantics file:
///   GRAFT_REGISTER_OP("", "Relu", infer_same_as_input, relu_kernel);
#define GRAFT_REGISTER_OP(domain, name, infer, kernel)                                     \
  [[maybe_unused]] static const bool GRAFT_CONCAT(graft_op_registered_, __COUNTER__) = \
      ::graft::ir::detail::register_op_semantics(domain, name, infer, kernel)

/// Registers the pointwise expression (a static ops::PointwiseExpression) of
/// an op, in the op's semantics file beside GRAFT_REGISTER_OP:
///   GRAFT_REGISTER_POINTWISE(Relu, kReluExpression);
#define GRAFT_REGISTER_POINTWISE(op, expression)                                                 \
  [[maybe_unused]] static const bool GRAFT_CONCAT(graft_pointwise_registered_, __COUNTER__) = \
      ::graft::ir::detail::register_op_pointwise(::graft::ir::OpId::op, &(expression))
