#include "inline_body.h"

#include "graft/ir/indexed_graph.h"

namespace graft::passes {

std::vector<ir::Value> inline_body(const ir::Graph& body, const std::vector<ir::Value>& inputs, ir::Graph& target,
                                   const std::string& prefix) {
  GRAFT_CHECK(inputs.size() == body.inputs().size(), "inline_body: ", inputs.size(), " values for ",
              body.inputs().size(), " body inputs");
  ir::IndexedGraph indexed(body);
  std::vector<ir::Value> values(indexed.num_entries());
  for (size_t i = 0; i < inputs.size(); ++i) values[indexed.entry_id(indexed.id_of(*body.inputs()[i]), 0)] = inputs[i];
  for (uint32_t id = 0; id < indexed.num_nodes(); ++id) {
    const ir::Node& node = indexed.node(id);
    if (node.op() == ir::OpId::Input) continue;
    std::vector<ir::Value> in;
    for (const ir::Entry& e : indexed.inputs(id)) in.push_back(e.present() ? values[indexed.entry_id(e)] : ir::Value{});
    ir::Node* copy = target.copy_node(node, in);
    copy->name = prefix + "/" + (node.name.empty() ? std::to_string(id) : node.name);
    for (std::string& name : copy->output_names) name.clear();
    for (int o = 0; o < copy->num_outputs(); ++o)
      values[indexed.entry_id(id, static_cast<uint32_t>(o))] = copy->output(o);
  }
  std::vector<ir::Value> outputs;
  for (const ir::Entry& e : indexed.outputs()) outputs.push_back(values[indexed.entry_id(e)]);
  return outputs;
}

}  // namespace graft::passes
