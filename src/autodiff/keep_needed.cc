// Pruning to what the outputs need: a mark from the outputs over the inputs
// of the topological view, then a rebuild of the marked nodes (and of every
// graph input) in topological order.
#include "keep_needed.h"

#include <vector>

#include "graft/ir/graph_rebuilder.h"
#include "graft/ir/indexed_graph.h"

namespace graft::autodiff {

std::unique_ptr<ir::Graph> keep_needed(const ir::Graph& graph) {
  ir::IndexedGraph indexed(graph);
  std::vector<char> live(indexed.num_nodes(), 0);
  std::vector<uint32_t> stack;
  for (const ir::Entry& e : indexed.outputs())
    if (e.present() && !live[e.node_id]) live[e.node_id] = 1, stack.push_back(e.node_id);
  while (!stack.empty()) {
    uint32_t id = stack.back();
    stack.pop_back();
    for (const ir::Entry& e : indexed.inputs(id))
      if (e.present() && !live[e.node_id]) live[e.node_id] = 1, stack.push_back(e.node_id);
  }
  ir::GraphRebuilder rebuilder(indexed);
  for (uint32_t id = 0; id < indexed.num_nodes(); ++id)
    if (live[id] || indexed.node(id).op() == ir::OpId::Input) rebuilder.copy(id);
  return rebuilder.finish();
}

}  // namespace graft::autodiff
