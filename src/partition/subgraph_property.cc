#include "graft/partition/subgraph_property.h"

#include <cstdio>
#include <cstdlib>
#include <map>

#include "graft/partition/contain_op_selector.h"

namespace graft::partition {
ir::Node* SubgraphProperty::CreateSubgraphNode(ir::Graph& target, std::shared_ptr<ir::Graph> subgraph,
                                               const std::vector<ir::Value>& inputs, int id) const {
  const int num_outputs = static_cast<int>(subgraph->outputs().size());
  ir::Node* node =
      target.add_node("Subgraph", inputs, num_outputs, backend_name() + "_subgraph_" + std::to_string(id), "graft");
  node->attributes.set("backend", backend_name());
  node->attributes.set("id", int64_t{id});
  node->backend = backend_name();
  for (int i = 0; i < num_outputs; ++i) node->output_types[i] = subgraph->type_of(subgraph->outputs()[i]);
  node->subgraph = std::move(subgraph);
  return node;
}

std::string SubgraphProperty::ExplainRejection(const ir::Node&) const {
  return "not selected by the " + backend_name() + " selector";
}

std::unique_ptr<SubgraphProperty> op_support_property(std::string_view backend) {
  std::unique_ptr<SubgraphProperty> property;
  if (const OpSupportTable* table = find_op_support(backend)) {
    std::set<std::string, std::less<>> op_types;
    for (const auto& [op, checker] : *table) op_types.insert(op);
    property = std::make_unique<ContainOpProperty>(std::move(op_types), *table);
  }
  if (property) property->set_backend_name(std::string(backend));
  return property;
}

}  // namespace graft::partition
