// Replaces an If whose condition is a Constant by the nodes of the branch it
// takes. Exporters write shape tests as If (`if x.dim() == 4: x =
// x.squeeze(1)`); once the shapes are known the condition folds, but run as
// an If the branch's result has an unknown shape, so what reads it stays off
// the backends. Inlined, it is ordinary tensor code. The branch's reads of
// enclosing values (the If's captured inputs) read them directly. The copies
// are then folded (fold-constants), which may fold further conditions.
#include "graft/ir/graph_rebuilder.h"
#include "graft/ops/type_inference.h"
#include "graft/passes/pass.h"
#include "inline_body.h"
#include "pattern_util.h"

namespace graft::passes {
namespace {

/// The branch If node `id` takes, when its condition is a constant and the
/// branch fits the node; else null.
const ir::Graph* taken_branch(const ir::IndexedGraph& g, uint32_t id) {
  const ir::Node& node = g.node(id);
  auto inputs = g.inputs(id);
  if (inputs.empty()) return nullptr;
  const Tensor* cond = pattern::constant_of(g, inputs[0]);
  if (!cond || cond->numel() != 1) return nullptr;
  const auto& branch = node.attributes.get_graph(cond->value_as_double(0) != 0 ? "then_branch" : "else_branch");
  if (!branch || branch->inputs().size() != inputs.size() - 1 ||
      branch->outputs().size() < static_cast<size_t>(node.num_outputs()))
    return nullptr;
  return branch.get();
}

}  // namespace

bool inline_constant_if(std::unique_ptr<ir::Graph>& graph, PassContext& ctx) {
  if (!pattern::has_op(*graph, ir::OpId::If)) return false;
  ir::IndexedGraph g(*graph);
  std::vector<const ir::Graph*> branches(g.num_nodes(), nullptr);
  bool any = false;
  for (uint32_t id = 0; id < g.num_nodes(); ++id)
    if (pattern::is_op(g, id, ir::OpId::If)) {
      branches[id] = taken_branch(g, id);
      any = any || branches[id];
    }
  if (!any) return false;
  ir::GraphRebuilder rebuilder(g);
  for (uint32_t id = 0; id < g.num_nodes(); ++id) {
    if (!branches[id]) {
      rebuilder.copy(id);
      continue;
    }
    const ir::Node& node = g.node(id);
    std::vector<ir::Value> inputs = rebuilder.mapped_inputs(id);
    inputs.erase(inputs.begin());  // the condition; the rest are the captured values the branch reads
    std::vector<ir::Value> results =
        inline_body(*branches[id], inputs, rebuilder.target(), node.name.empty() ? "if" : node.name);
    for (int k = 0; k < node.num_outputs(); ++k)
      rebuilder.alias(id, static_cast<uint32_t>(k), results[static_cast<size_t>(k)]);
  }
  graph = rebuilder.finish();
  ops::infer_types(*graph);  // the copies' types, which folding reads (it infers again after each round)
  fold_constants(graph, ctx);
  return true;
}

}  // namespace graft::passes
