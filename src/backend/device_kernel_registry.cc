// Kernel requests of the per-node device backends (graft/backend/device_kernel_registry.h).
#include "graft/backend/device_kernel_registry.h"

#include <optional>

#include "graft/ir/op_id.h"

namespace graft::backend {

DeviceKernelRequest make_device_kernel_request(const ir::Node& node) {
  DeviceKernelRequest request{node, {}, {}, {}};
  for (const ir::Value& input : node.inputs) {
    if (!input) {
      request.inputs.push_back({});
      request.constants.push_back(nullptr);
      continue;
    }
    const ir::ValueType& type = node.graph().type_of(input);
    std::optional<Shape> shape = type.concrete_shape();
    if (!shape)
      fail(ErrorKind::invalid_argument, node.describe(), ": input '", node.graph().value_name(input), "' is ",
           type.to_string(), ", not a concrete tensor type");
    request.inputs.push_back({type.dtype, *shape});
    request.constants.push_back(input.node->op() == ir::OpId::Constant ? &input.node->constant_value : nullptr);
  }
  for (const ir::ValueType& type : node.output_types) {
    std::optional<Shape> shape = type.concrete_shape();
    if (!shape)
      fail(ErrorKind::invalid_argument, node.describe(), ": an output is ", type.to_string(),
           ", not a concrete tensor type");
    request.outputs.push_back({type.dtype, *shape});
  }
  return request;
}

std::string device_kernel_precheck(const ir::Node& node) {
  if (ir::touches_non_tensor(node)) return "a sequence or optional value";
  for (const ir::Value& input : node.inputs)
    if (input && !node.graph().type_of(input).is_concrete()) return "an input shape not known at plan time";
  for (const ir::ValueType& type : node.output_types)
    if (!type.is_concrete()) return "an output shape not known at plan time";
  return {};
}

}  // namespace graft::backend
