// What every op's pointwise expression shares: the lowering helpers, the
// dtype and attribute test, and lowering one node (the builder, then the
// float16 rounding of its result). The expressions themselves live in the
// ops' semantics files.
#include "graft/ops/pointwise_expression.h"

#include "graft/core/error.h"
#include "graft/ir/graph.h"

namespace graft::ops {

bool accepts(PointwiseInputs inputs, DType dtype) {
  switch (inputs) {
    case PointwiseInputs::floats:
      return dtype == DType::float32 || dtype == DType::float64 || dtype == DType::float16;
    case PointwiseInputs::numeric:
      return dtype != DType::boolean && ir::is_kernel_dtype(dtype);
    case PointwiseInputs::boolean:
      return dtype == DType::boolean;
    case PointwiseInputs::any:
      return ir::is_kernel_dtype(dtype);
  }
  return false;
}

int32_t PointwiseLowering::k(double value, DType dtype) {
  return ir.add_constant(dtype == DType::undefined ? out : dtype, value);
}

int32_t PointwiseLowering::k_int(int64_t value, DType dtype) {
  ir::Expr e;
  e.op = ir::ExprOp::constant;
  e.dtype = dtype;
  e.int_value = value;
  return ir.add(e);
}

int32_t PointwiseLowering::rounded(int32_t e) {
  return node.output_types[0].dtype == DType::float16 ? round_to_float16(ir, e) : e;
}

int32_t PointwiseLowering::softplus(int32_t x) {
  int32_t zero = k(0, t(x));
  int32_t positive = bin(ir::ExprOp::add, x, un(ir::ExprOp::log1p, un(ir::ExprOp::exp, un(ir::ExprOp::neg, x))));
  int32_t negative = un(ir::ExprOp::log1p, un(ir::ExprOp::exp, x));
  return select(cmp(ir::ExprOp::greater, x, zero), positive, negative);
}

float PointwiseLowering::attr_float(const std::string& name, float fallback) const {
  return node.attributes.get_float(name, fallback);
}

bool expression_takes(const ir::Node& node, std::string* reason) {
  const PointwiseExpression* expression = node.schema().pointwise;
  GRAFT_CHECK(expression != nullptr, "op without a pointwise expression");
  DType first = input_dtype(node, 0);
  if (!accepts(expression->first_input, first)) {
    if (reason) *reason = "dtype " + std::string(dtype_name(first)) + " is not supported by this op's expression";
    return false;
  }
  if (expression->check) {
    std::string why = expression->check(node);
    if (!why.empty()) {
      if (reason) *reason = std::move(why);
      return false;
    }
  }
  return true;
}

DType compute_dtype(DType storage) { return storage == DType::float16 ? DType::float32 : storage; }

int32_t float16_source(const ir::KernelIR& ir, int32_t e) {
  const ir::Expr& value = ir.exprs[static_cast<size_t>(e)];
  const bool from_float16 =
      value.op == ir::ExprOp::cast && ir.exprs[static_cast<size_t>(value.args[0])].dtype == DType::float16;
  return from_float16 ? value.args[0] : -1;
}

int32_t round_to_float16(ir::KernelIR& ir, int32_t e) {
  if (float16_source(ir, e) >= 0) return e;
  return ir.add_op(ir::ExprOp::cast, DType::float32, ir.add_op(ir::ExprOp::cast, DType::float16, e));
}

int32_t lower_pointwise(ir::KernelIR& ir, const ir::Node& node, std::span<const int32_t> args,
                        std::span<const DType> dtypes) {
  const PointwiseExpression* expression = node.schema().pointwise;
  GRAFT_CHECK(expression != nullptr, "op without a pointwise expression");
  const DType storage = node.output_types[0].dtype;
  PointwiseLowering l{ir, node, {args.begin(), args.end()}, {dtypes.begin(), dtypes.end()}, compute_dtype(storage)};
  int32_t e = expression->build(l);
  if (l.t(e) != l.out)
    fail(ErrorKind::internal, node.describe(), ": expression has dtype ", dtype_name(l.t(e)), ", the node ",
         dtype_name(l.out));
  return storage == DType::float16 ? round_to_float16(ir, e) : e;
}

int effective_opset(const ir::Node& node) { return node.opset_version > 0 ? node.opset_version : 1000; }

DType input_dtype(const ir::Node& node, size_t i) {
  if (i >= node.inputs.size() || !node.inputs[i]) return DType::undefined;
  return node.inputs[i].node->output_types[static_cast<size_t>(node.inputs[i].index)].dtype;
}

std::string no_legacy_broadcast(const ir::Node& node) {
  if (node.attributes.all().empty()) return {};
  if (node.attributes.has("broadcast") || node.attributes.has("axis"))
    return "legacy broadcast attributes (opset < 7) are not fused";
  return {};
}

}  // namespace graft::ops
