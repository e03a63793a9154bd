// Removes nodes that only forward their input: Identity, and Dropout whose
// mask output nobody reads, in inference mode or in training mode with a
// constant ratio of 0 (every element kept, scaled by 1: PyTorch exports
// `nn.Dropout(0.0)` and `dropout=0.0` layers so in training mode). Their
// consumers read the forwarded value directly; graph output names are kept.
#include <optional>

#include "graft/ir/graph_rebuilder.h"
#include "graft/passes/pass.h"

namespace graft::passes {

namespace {
// The one-element value of Constant input `index` of `n`, or nullopt where
// it is absent, not a Constant or not one element.
std::optional<double> constant_input(const ir::Node& n, size_t index) {
  if (n.inputs.size() <= index || !n.inputs[index]) return std::nullopt;
  const ir::Node& producer = *n.inputs[index].node;
  if (producer.op() != ir::OpId::Constant || !producer.constant_value.is_defined() ||
      producer.constant_value.numel() != 1)
    return std::nullopt;
  return producer.constant_value.value_as_double(0);
}

// Whether Dropout `n` keeps every element: inference mode, or a ratio of 0.
bool dropout_keeps_everything(const ir::Node& n) {
  if (n.attributes.get_int("training_mode", 0) != 0) return false;
  if (n.inputs.size() <= 2 || !n.inputs[2]) return true;  // no training_mode input: inference
  std::optional<double> training = constant_input(n, 2);
  if (!training) return false;
  if (*training == 0) return true;
  std::optional<double> ratio = constant_input(n, 1);
  return ratio && *ratio == 0;
}

bool is_forwarding(const ir::IndexedGraph& indexed, uint32_t id) {
  const ir::Node& n = indexed.node(id);
  if (!n.schema().domain.empty()) return false;
  if (n.op() == ir::OpId::Identity) return true;
  if (n.op() != ir::OpId::Dropout) return false;
  if (!dropout_keeps_everything(n)) return false;
  if (n.num_outputs() < 2) return true;
  // The mask must be unused.
  uint32_t mask = indexed.entry_id(id, 1);
  for (uint32_t c : indexed.consumers(id))
    for (const ir::Entry& e : indexed.inputs(c))
      if (e.present() && indexed.entry_id(e) == mask) return false;
  for (const ir::Entry& e : indexed.outputs())
    if (indexed.entry_id(e) == mask) return false;
  return true;
}
}  // namespace

bool eliminate_identity(std::unique_ptr<ir::Graph>& graph, PassContext&) {
  ir::IndexedGraph indexed(*graph);
  bool any = false;
  for (uint32_t id = 0; id < indexed.num_nodes() && !any; ++id) any = is_forwarding(indexed, id);
  if (!any) return false;
  ir::GraphRebuilder rebuilder(indexed);
  for (uint32_t id = 0; id < indexed.num_nodes(); ++id) {
    if (is_forwarding(indexed, id)) rebuilder.alias(id, 0, rebuilder.map(indexed.inputs(id)[0]));
    else rebuilder.copy(id);
  }
  graph = rebuilder.finish();
  return true;
}

}  // namespace graft::passes
