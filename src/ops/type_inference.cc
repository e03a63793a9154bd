#include "graft/ops/type_inference.h"

#include "graft/ir/indexed_graph.h"
#include "graft/ops/op_context.h"

namespace graft::ops {

namespace {

/// Ops that may read a sequence or an optional value: the sequence and
/// optional ops, and those that pass any value on (Identity, the control-flow
/// ops' carried and captured values).
bool reads_non_tensors(const ir::OpSchema& s) {
  switch (s.id) {
    case ir::OpId::SequenceMap:
    case ir::OpId::SequenceEmpty:
    case ir::OpId::SequenceConstruct:
    case ir::OpId::SequenceInsert:
    case ir::OpId::SequenceAt:
    case ir::OpId::SequenceErase:
    case ir::OpId::SequenceLength:
    case ir::OpId::Optional:
    case ir::OpId::OptionalHasElement:
    case ir::OpId::OptionalGetElement:
    case ir::OpId::ConcatFromSequence:
    case ir::OpId::Identity:
    case ir::OpId::If:
    case ir::OpId::Loop: return true;
    default: return false;
  }
}

}  // namespace

void infer_types(ir::Graph& graph) {
  ir::IndexedGraph indexed(graph);
  for (uint32_t id = 0; id < indexed.num_nodes(); ++id) {
    ir::Node& n = indexed.mutable_node(id);
    const ir::OpSchema& s = n.schema();
    if (s.category == ir::OpCategory::source || !s.infer) continue;
    if (!reads_non_tensors(s))
      for (size_t i = 0; i < n.inputs.size(); ++i)
        if (n.inputs[i] && !n.graph().type_of(n.inputs[i]).is_tensor())
          fail(ErrorKind::invalid_model, n.describe(), ": input ", i, " is ",
               n.graph().type_of(n.inputs[i]).optional ? "an optional" : "a sequence", " (",
               n.graph().type_of(n.inputs[i]).to_string(), "), but ", n.op_type(), " takes tensors");
    std::vector<const Tensor*> constants(n.inputs.size(), nullptr);
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      const ir::Value& v = n.inputs[i];
      if (v.node && v.node->op() == ir::OpId::Constant)
        constants[i] = &v.node->constant_value;
    }
    InferContext ctx(n, std::move(constants));
    s.infer(ctx);
  }
}

}  // namespace graft::ops
