#include "graft/runtime/module_table.h"

#include "graft/ir/graph.h"

namespace graft::runtime {

bool is_compiled_node(const ir::Node& node) {
  if (!node.subgraph || node.backend.empty() || node.backend == "ref") return false;
  return node.schema().domain == "graft" && (node.schema().name == "Subgraph" || node.schema().name == "FusedPointwise");
}

ModuleTable compile_modules(const ir::Graph& graph, const CompileOptions& options) {
  ModuleTable table(graph.num_nodes());
  for (const auto& node : graph.nodes()) {
    if (!is_compiled_node(*node)) continue;
    // Without a code generator a fused node runs its body with the reference kernels.
    if (node->schema().name == "FusedPointwise" && !find_backend(node->backend)) continue;
    const Backend& backend = get_backend(node->backend);
    table[node->index()] = backend.compile(*node->subgraph, options);
  }
  return table;
}

}  // namespace graft::runtime
