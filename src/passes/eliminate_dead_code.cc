// Dead code elimination: mark every node a graph output depends on by walking
// the topological order backwards, then rebuild the graph with the marked
// nodes only. Graph inputs are kept even when unused: they are the interface.
#include "graft/ir/graph_rebuilder.h"
#include "graft/passes/pass.h"

namespace graft::passes {

bool eliminate_dead_code(std::unique_ptr<ir::Graph>& graph, PassContext&) {
  ir::IndexedGraph indexed(*graph);
  std::vector<bool> live(indexed.num_nodes(), false);
  for (const ir::Entry& e : indexed.outputs()) live[e.node_id] = true;
  size_t live_count = 0;
  for (uint32_t id = static_cast<uint32_t>(indexed.num_nodes()); id-- > 0;) {
    if (!live[id]) continue;
    ++live_count;
    for (const ir::Entry& e : indexed.inputs(id))
      if (e.present()) live[e.node_id] = true;
  }
  for (const ir::Node* in : graph->inputs())
    if (!live[indexed.id_of(*in)]) ++live_count;
  if (live_count == indexed.num_nodes()) return false;
  ir::GraphRebuilder rebuilder(indexed);
  for (uint32_t id = 0; id < indexed.num_nodes(); ++id)
    if (live[id]) rebuilder.copy(id);
  graph = rebuilder.finish();
  return true;
}

}  // namespace graft::passes
