// Collapses chains of layout-only ops that exporters leave behind:
//   Transpose(Transpose(x, p), q) -> Transpose(x, p o q), or x when p o q is
//                                    the identity (q[i] indexes p: r[i] = p[q[i]]);
//   Transpose(x, identity)        -> x;
//   Reshape(Reshape(x, s), t)     -> Reshape(x, t) when t is a constant with no
//                                    0 entry (0 copies a dimension of the input,
//                                    which the collapse would change);
//   Reshape/Flatten/Squeeze/Unsqueeze of x followed by Reshape(., t) with such a t
//                                 -> Reshape(x, t).
// The inner node must be read only by the outer one. Transposes that cancel
// around a MatMul (the Transpose pairs exporters emit for batched attention)
// disappear through the first rule.
#include <numeric>

#include "graft/ir/graph_rebuilder.h"
#include "graft/passes/pass.h"
#include "pattern_util.h"

namespace graft::passes {
namespace {

using ir::Entry;

std::optional<std::vector<int64_t>> perm_of(const ir::IndexedGraph& g, uint32_t id) {
  const ir::Node& n = g.node(id);
  if (n.attributes.has("perm")) return n.attributes.get_ints("perm");
  const ir::ValueType& t = g.graph().type_of(n.inputs[0]);
  if (!t.has_rank) return std::nullopt;
  std::vector<int64_t> reversed(t.dims.size());
  std::iota(reversed.rbegin(), reversed.rend(), 0);
  return reversed;
}

bool is_identity(const std::vector<int64_t>& perm) {
  for (size_t i = 0; i < perm.size(); ++i)
    if (perm[i] != static_cast<int64_t>(i)) return false;
  return true;
}

// Reshape whose target is a constant without 0 entries.
bool is_absolute_reshape(const ir::IndexedGraph& g, uint32_t id) {
  if (!pattern::is_op(g, id, ir::OpId::Reshape)) return false;
  // Reshape-1 (before opset 5) has one input; a model may use that form at any opset.
  if (g.inputs(id).size() < 2) return false;
  const Tensor* shape = pattern::constant_of(g, g.inputs(id)[1]);
  if (!shape) return false;
  for (int64_t v : shape->to_int64_vector())
    if (v == 0) return false;
  return true;
}

bool is_reshape_like(const ir::IndexedGraph& g, uint32_t id) {
  return pattern::is_op(g, id, ir::OpId::Reshape) || pattern::is_op(g, id, ir::OpId::Flatten) || pattern::is_op(g, id, ir::OpId::Squeeze) ||
         pattern::is_op(g, id, ir::OpId::Unsqueeze);
}

}  // namespace

bool simplify_reshapes(std::unique_ptr<ir::Graph>& graph, PassContext&) {
  ir::IndexedGraph g(*graph);
  bool changed = false;
  ir::GraphRebuilder rebuilder(g);
  for (uint32_t id = 0; id < g.num_nodes(); ++id) {
    const ir::Node& node = g.node(id);
    if (pattern::is_op(g, id, ir::OpId::Transpose)) {
      std::optional<std::vector<int64_t>> q = perm_of(g, id);
      Entry in = g.inputs(id)[0];
      if (q && is_identity(*q)) {
        rebuilder.alias(id, 0, rebuilder.map(in));
        changed = true;
        continue;
      }
      if (q && pattern::produced_by(g, in, ir::OpId::Transpose) && pattern::single_use(g, in.node_id)) {
        std::optional<std::vector<int64_t>> p = perm_of(g, in.node_id);
        if (p && p->size() == q->size()) {
          std::vector<int64_t> r(q->size());
          for (size_t i = 0; i < q->size(); ++i) r[i] = (*p)[static_cast<size_t>((*q)[i])];
          Entry source = g.inputs(in.node_id)[0];
          if (is_identity(r)) {
            rebuilder.alias(id, 0, rebuilder.map(source));
          } else {
            ir::Node* t = rebuilder.target().copy_node(node, {rebuilder.map(source)});
            t->attributes.set("perm", r);
            rebuilder.alias(id, 0, t->output(0));
          }
          changed = true;
          continue;
        }
      }
    }
    if (is_absolute_reshape(g, id)) {
      Entry in = g.inputs(id)[0];
      if (in.present() && is_reshape_like(g, in.node_id) && pattern::single_use(g, in.node_id)) {
        Entry source = g.inputs(in.node_id)[0];
        ir::Node* r = rebuilder.target().copy_node(node, {rebuilder.map(source), rebuilder.map(g.inputs(id)[1])});
        rebuilder.alias(id, 0, r->output(0));
        changed = true;
        continue;
      }
    }
    rebuilder.copy(id);
  }
  if (!changed) return false;
  graph = rebuilder.finish();
  // The inner nodes of collapsed pairs are now unread; eliminate-dead-code removes them.
  return true;
}

}  // namespace graft::passes
