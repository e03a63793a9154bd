// Which DequantizeLinear nodes are quantized weights (include/graft/ops/quantized_weight.h).
#include "graft/ops/quantized_weight.h"

namespace graft::ops {

namespace {

bool is_constant(const ir::Value& v) { return v && v.node->op() == ir::OpId::Constant; }

}  // namespace

bool is_quantized_weight(const ir::Node& node) {
  if (node.op() != ir::OpId::DequantizeLinear || node.inputs.size() < 2 || node.inputs.size() > 3) return false;
  if (node.output_types.size() != 1 || node.output_types[0].dtype != DType::float32) return false;
  for (size_t i = 0; i < node.inputs.size(); ++i)
    if (!is_constant(node.inputs[i]) && !(i == 2 && !node.inputs[i])) return false;
  if (node.inputs[0].node->constant_value.dtype() != DType::int8 ||
      node.inputs[1].node->constant_value.dtype() != DType::float32)
    return false;
  if (node.inputs.size() < 3 || !node.inputs[2]) return true;
  const Tensor& zero_point = node.inputs[2].node->constant_value;
  if (zero_point.dtype() != DType::int8) return false;
  for (int64_t i = 0; i < zero_point.numel(); ++i)
    if (zero_point.data<int8_t>()[i] != 0) return false;
  return true;
}

bool reads_as_weight(const ir::Node& reader, size_t input) {
  const ir::OpId op = reader.op();
  return input == 1 && (op == ir::OpId::Conv || op == ir::OpId::MatMul || op == ir::OpId::Gemm);
}

}  // namespace graft::ops
