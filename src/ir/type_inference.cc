#include "graft/ir/type_inference.h"

#include "graft/ir/indexed_graph.h"
#include "graft/ops/op_context.h"

namespace graft::ir {

void infer_types(Graph& graph) {
  IndexedGraph indexed(graph);
  for (uint32_t id = 0; id < indexed.num_nodes(); ++id) {
    Node& n = indexed.mutable_node(id);
    const OpSchema& s = n.schema();
    if (s.category == OpCategory::source || !s.infer) continue;
    std::vector<const Tensor*> constants(n.inputs.size(), nullptr);
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      const Value& v = n.inputs[i];
      if (v.node && v.node->schema().name == "Constant" && v.node->schema().domain.empty())
        constants[i] = &v.node->constant_value;
    }
    ops::InferContext ctx(n, std::move(constants));
    s.infer(ctx);
  }
}

}  // namespace graft::ir
