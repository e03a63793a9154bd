#include "graft/ir/verify.h"

#include <unordered_set>

#include "graft/ir/indexed_graph.h"

namespace graft::ir {

void verify(const Graph& graph) {
  IndexedGraph indexed(graph);  // checks acyclicity and that inputs are in the graph
  std::unordered_set<std::string> names;
  for (uint32_t id = 0; id < indexed.num_nodes(); ++id) {
    const Node& n = indexed.node(id);
    const OpSchema& s = n.schema();
    int in = static_cast<int>(n.inputs.size());
    int out = n.num_outputs();
    if (in < s.min_inputs || (s.max_inputs >= 0 && in > s.max_inputs))
      fail(ErrorKind::invalid_model, n.describe(), " has ", in, " inputs; ", s.qualified_name(), " takes ",
           s.min_inputs, s.max_inputs < 0 ? " or more" : " to " + std::to_string(s.max_inputs));
    if (out < s.min_outputs || (s.max_outputs >= 0 && out > s.max_outputs))
      fail(ErrorKind::invalid_model, n.describe(), " has ", out, " outputs; ", s.qualified_name(), " produces ",
           s.min_outputs, s.max_outputs < 0 ? " or more" : " to " + std::to_string(s.max_outputs));
    if (n.output_names.size() != n.output_types.size())
      fail(ErrorKind::invalid_model, n.describe(), " has mismatched output names and types");
    for (const std::string& name : n.output_names)
      if (!name.empty() && !names.insert(name).second)
        fail(ErrorKind::invalid_model, n.describe(), " redefines value '", name, "'");
    if (s.id == OpId::Constant && !n.constant_value.is_defined())
      fail(ErrorKind::invalid_model, n.describe(), " has no value");
  }
}

}  // namespace graft::ir
