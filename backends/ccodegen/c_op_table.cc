// ccodegen's op table (see c_op_table.h).
#include "c_op_table.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "graft/ir/graph.h"

namespace graft::backends {

namespace {

using ir::OpId;

/// The ops that are not pointwise; every op with a pointwise expression is
/// pointwise (find_c_op).
constexpr COp kOps[] = {
    {OpId::MatMul, COpKind::matmul},
    {OpId::Gemm, COpKind::gemm},
    {OpId::Softmax, COpKind::softmax},
    {OpId::LogSoftmax, COpKind::softmax},
    {OpId::ReduceSum, COpKind::reduce, 1},
    {OpId::ReduceMean, COpKind::reduce, 1},
    {OpId::ReduceMax, COpKind::reduce, 1},
    {OpId::ReduceMin, COpKind::reduce, 1},
    {OpId::Reshape, COpKind::copy, 1},
    {OpId::Flatten, COpKind::copy, 1},
    {OpId::Squeeze, COpKind::copy, 1},
    {OpId::Unsqueeze, COpKind::copy, 1},
    {OpId::Identity, COpKind::copy, 1},  // an alias, not a loop (it has a pointwise expression too)
    {OpId::Transpose, COpKind::transpose},
    {OpId::LayerNormalization, COpKind::layer_norm},
};

bool is_listed(OpId op) {
  for (const COp& row : kOps)
    if (row.op == op) return true;
  return false;
}

bool is_pointwise_category(const ir::OpSchema& schema) {
  return schema.domain.empty() &&
         (schema.category == ir::OpCategory::elementwise || schema.category == ir::OpCategory::broadcast);
}

}  // namespace

std::optional<COp> find_c_op(OpId op) {
  for (const COp& row : kOps)
    if (row.op == op) return row;
  const ir::OpSchema& schema = ir::op_schema(op);
  if (is_pointwise_category(schema) && schema.pointwise) return COp{op, COpKind::pointwise};
  return std::nullopt;
}

std::vector<OpId> c_op_candidates() {
  std::vector<OpId> ops;
  for (const COp& row : kOps) ops.push_back(row.op);
  for (const ir::OpSchema& schema : ir::all_ops())
    if (is_pointwise_category(schema) && !is_listed(schema.id)) ops.push_back(schema.id);
  return ops;
}

int num_data_inputs(const ir::Node& node) {
  std::optional<COp> op = find_c_op(node.op());
  const int all = static_cast<int>(node.inputs.size());
  return !op || op->data_inputs < 0 ? all : std::min(op->data_inputs, all);
}

std::string c_float_literal(float value) {
  if (std::isnan(value)) return "NAN";
  if (std::isinf(value)) return value > 0 ? "INFINITY" : "(-INFINITY)";
  char buffer[48];
  std::snprintf(buffer, sizeof(buffer), "%.9g", static_cast<double>(value));
  std::string s = buffer;
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  s += "f";
  return s[0] == '-' ? "(" + s + ")" : s;
}

}  // namespace graft::backends
