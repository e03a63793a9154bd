// Device placement: devices from backends, then one copy node per value and
// destination device at each boundary (device_placement.h).
#include "graft/compiler/device_placement.h"

#include <map>
#include <tuple>

#include "graft/backend/backend.h"
#include "graft/core/error.h"
#include "graft/ir/op_id.h"

namespace graft::compiler {

namespace {

bool is_copy(const ir::Node& node) {
  return node.op() == ir::OpId::CopyToDevice || node.op() == ir::OpId::CopyToHost;
}

Device device_of_backend(const std::string& name, int device_id) {
  if (name.empty()) return Device{};
  const backend::Backend* b = backend::find_backend(name);
  if (!b) return Device{};
  Device device = b->device();
  if (device.type != DeviceType::cpu) device.id = device_id;
  return device;
}

}  // namespace

size_t place_on_devices(ir::Graph& graph, int device_id, partition::PartitionReport* report) {
  bool any_device = false;
  for (const auto& node : graph.nodes()) {
    if (is_copy(*node)) continue;
    node->device = device_of_backend(node->backend, device_id);
    any_device |= node->device.type != DeviceType::cpu;
  }
  if (!any_device) return 0;

  // One copy per (value, destination device), shared by its readers.
  std::map<std::tuple<const ir::Node*, int, DeviceType, int32_t>, ir::Value> copies;
  size_t inserted = 0;
  auto copy_of = [&](ir::Value value, Device to) -> ir::Value {
    const Device from = value.node->device;
    auto key = std::make_tuple(value.node, value.index, to.type, to.id);
    auto it = copies.find(key);
    if (it != copies.end()) return it->second;
    const bool to_host = to.type == DeviceType::cpu;
    const std::string value_name = graph.value_name(value);
    ir::Node* copy = graph.add_node(to_host ? ir::OpId::CopyToHost : ir::OpId::CopyToDevice, {value}, 1,
                                    (to_host ? "copy_to_host/" : "copy_to_" + to_string(to) + "/") + value_name);
    copy->output_types[0] = graph.type_of(value);
    copy->device = to_host ? from : to;  // where the copy is queued: the device side
    copy->backend = "copy";
    ++inserted;
    if (report) report->copies.push_back({value_name, to_string(from), to_string(to), copy->name});
    copies.emplace(key, copy->output(0));
    return copy->output(0);
  };

  const size_t original_nodes = graph.num_nodes();
  for (size_t i = 0; i < original_nodes; ++i) {
    ir::Node& node = *graph.nodes()[i];
    if (is_copy(node) || node.schema().category == ir::OpCategory::source) continue;
    for (ir::Value& input : node.inputs) {
      if (!input || is_copy(*input.node)) continue;
      if (input.node->device == node.device) continue;
      input = copy_of(input, node.device);
    }
  }
  for (ir::Value& output : graph.mutable_outputs())
    if (output && !is_copy(*output.node) && output.node->device.type != DeviceType::cpu)
      output = copy_of(output, Device{});
  return inserted;
}

}  // namespace graft::compiler
