// Small helpers of the pattern-matching passes (fold-batch-norm, fuse-gelu,
// fuse-layer-norm, simplify-reshapes): reading the topological view of a graph.
#pragma once

#include <cmath>
#include <optional>
#include <string_view>

#include "graft/ir/indexed_graph.h"

namespace graft::passes::pattern {

/// True when `graph` holds a node of the standard-domain op `op` (a pass's
/// cheap test before it builds the indexed view).
inline bool has_op(const ir::Graph& graph, ir::OpId op) {
  for (const auto& node : graph.nodes())
    if (node->op() == op) return true;
  return false;
}

/// True when node `id` is op `op`.
inline bool is_op(const ir::IndexedGraph& g, uint32_t id, ir::OpId op) { return g.node(id).op() == op; }

/// True when entry `e` is present and produced by op `op`.
inline bool produced_by(const ir::IndexedGraph& g, ir::Entry e, ir::OpId op) {
  return e.present() && is_op(g, e.node_id, op);
}

/// The constant tensor behind entry `e`, or nullptr.
inline const Tensor* constant_of(const ir::IndexedGraph& g, ir::Entry e) {
  if (!produced_by(g, e, ir::OpId::Constant)) return nullptr;
  const Tensor& t = g.node(e.node_id).constant_value;
  return t.is_defined() ? &t : nullptr;
}

/// The value of a one-element floating constant behind `e`.
inline std::optional<double> scalar_of(const ir::IndexedGraph& g, ir::Entry e) {
  const Tensor* t = constant_of(g, e);
  if (!t || t->numel() != 1 || !dtype_is_float(t->dtype())) return std::nullopt;
  return t->value_as_double(0);
}

/// True when the scalar constant behind `e` is within `tolerance` of `want`.
inline bool scalar_near(const ir::IndexedGraph& g, ir::Entry e, double want, double tolerance = 1e-4) {
  std::optional<double> v = scalar_of(g, e);
  return v && std::abs(*v - want) <= tolerance * std::max(1.0, std::abs(want));
}

/// True when node `id`'s output 0 is read by exactly one node, once, and is not a graph output.
inline bool single_use(const ir::IndexedGraph& g, uint32_t id) {
  auto consumers = g.consumers(id);
  if (consumers.size() != 1) return false;
  int uses = 0;
  for (ir::Entry e : g.inputs(consumers[0])) uses += e.present() && e.node_id == id ? 1 : 0;
  if (uses != 1) return false;
  for (ir::Entry e : g.outputs())
    if (e.node_id == id) return false;
  return true;
}

}  // namespace graft::passes::pattern
