#include "graft/ir/graph_rebuilder.h"

namespace graft::ir {

GraphRebuilder::GraphRebuilder(const IndexedGraph& source)
    : source_(source), target_(std::make_unique<Graph>()), map_(source.num_entries()) {
  const Graph& g = source.graph();
  target_->opset_imports = g.opset_imports;
  target_->name = g.name;
  for (const Node* in : g.inputs()) {
    Node* n = target_->add_input(in->output_names[0], in->output_types[0]);
    n->name = in->name;
    map_[source.entry_id(source.id_of(*in), 0)] = n->output(0);
  }
}

Value GraphRebuilder::map(Entry e) const {
  if (!e.present()) return {};
  Value v = map_[source_.entry_id(e)];
  GRAFT_CHECK(v.node, "value of ", source_.node(e.node_id).describe(), " used before it was rebuilt");
  return v;
}

std::vector<Value> GraphRebuilder::mapped_inputs(uint32_t id) const {
  std::vector<Value> inputs;
  for (const Entry& e : source_.inputs(id)) inputs.push_back(map(e));
  return inputs;
}

Node* GraphRebuilder::copy(uint32_t id) {
  const Node& src = source_.node(id);
  if (map_[source_.entry_id(id, 0)].node && src.op() == ir::OpId::Input)
    return map_[source_.entry_id(id, 0)].node;
  Node* n = target_->copy_node(src, mapped_inputs(id));
  for (int k = 0; k < n->num_outputs(); ++k) map_[source_.entry_id(id, static_cast<uint32_t>(k))] = n->output(k);
  return n;
}

void GraphRebuilder::alias(uint32_t id, uint32_t index, Value value) { map_[source_.entry_id(id, index)] = value; }

void GraphRebuilder::replace(uint32_t id, Node* replacement) {
  const Node& replaced = source_.node(id);
  GRAFT_CHECK(replacement->num_outputs() == replaced.num_outputs(), replacement->describe(), " cannot replace ",
              replaced.describe(), ": different output counts");
  replacement->output_types = replaced.output_types;
  replacement->output_names = replaced.output_names;
  for (int k = 0; k < replaced.num_outputs(); ++k) alias(id, static_cast<uint32_t>(k), replacement->output(k));
}

std::unique_ptr<Graph> GraphRebuilder::finish() {
  const Graph& g = source_.graph();
  for (size_t i = 0; i < g.outputs().size(); ++i) target_->add_output(map(source_.outputs()[i]), g.output_names()[i]);
  return std::move(target_);
}

}  // namespace graft::ir
