// Removes nodes that only forward their input: Identity, and Dropout in
// inference mode whose mask output nobody reads. Their consumers read the
// forwarded value directly; graph output names are kept.
#include "graft/ir/graph_rebuilder.h"
#include "graft/passes/pass.h"

namespace graft::passes {

namespace {
bool is_forwarding(const ir::IndexedGraph& indexed, uint32_t id) {
  const ir::Node& n = indexed.node(id);
  if (!n.schema().domain.empty()) return false;
  if (n.op() == ir::OpId::Identity) return true;
  if (n.op() != ir::OpId::Dropout) return false;
  if (n.attributes.get_int("training_mode", 0) != 0) return false;
  if (n.inputs.size() > 2 && n.inputs[2]) return false;  // training_mode given as an input: keep
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
