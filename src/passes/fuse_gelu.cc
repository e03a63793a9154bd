// Recognises GELU written with Erf, as exporters emit it, and replaces it by
// one Gelu node (approximate = "none"):
//   e = Erf(x / sqrt(2))            (Div by ~1.41421 or Mul by ~0.70711)
//   u = e + 1                       (either operand order)
//   y = (x * 0.5) * u  |  (x * u) * 0.5  |  x * (u * 0.5)  |  0.5 * (x * u) ...
// Matching starts at the final Mul and walks to x; every intermediate value
// must be read only inside the pattern. The same x must feed the Erf branch
// and the outer product.
#include <cmath>

#include "graft/ir/graph_rebuilder.h"
#include "graft/passes/pass.h"
#include "pattern_util.h"

namespace graft::passes {
namespace {

using ir::Entry;

// If `e` is erf(x / sqrt 2) + 1 (single-use chain), returns x.
std::optional<Entry> one_plus_erf(const ir::IndexedGraph& g, Entry e, std::vector<uint32_t>& nodes) {
  if (!pattern::produced_by(g, e, ir::OpId::Add) || !pattern::single_use(g, e.node_id)) return std::nullopt;
  auto add = g.inputs(e.node_id);
  for (int k = 0; k < 2; ++k) {
    Entry erf = add[k], one = add[1 - k];
    if (!pattern::scalar_near(g, one, 1.0) || !pattern::produced_by(g, erf, ir::OpId::Erf) || !pattern::single_use(g, erf.node_id))
      continue;
    Entry scaled = g.inputs(erf.node_id)[0];
    if (!scaled.present() || !pattern::single_use(g, scaled.node_id)) continue;
    auto s = g.inputs(scaled.node_id);
    std::optional<Entry> x;
    if (pattern::is_op(g, scaled.node_id, ir::OpId::Div) && pattern::scalar_near(g, s[1], std::sqrt(2.0))) x = s[0];
    if (pattern::is_op(g, scaled.node_id, ir::OpId::Mul)) {
      if (pattern::scalar_near(g, s[1], std::sqrt(0.5))) x = s[0];
      else if (pattern::scalar_near(g, s[0], std::sqrt(0.5))) x = s[1];
    }
    if (!x) continue;
    nodes.insert(nodes.end(), {e.node_id, erf.node_id, scaled.node_id});
    return x;
  }
  return std::nullopt;
}

// If `e` is a single-use Mul of a scalar `c` and something else, returns the other operand.
std::optional<Entry> times_scalar(const ir::IndexedGraph& g, Entry e, double c) {
  if (!pattern::produced_by(g, e, ir::OpId::Mul) || !pattern::single_use(g, e.node_id)) return std::nullopt;
  auto m = g.inputs(e.node_id);
  if (pattern::scalar_near(g, m[1], c)) return m[0];
  if (pattern::scalar_near(g, m[0], c)) return m[1];
  return std::nullopt;
}

// The x of a GELU pattern ending at Mul node `id`, with the nodes it replaces.
std::optional<Entry> match_gelu(const ir::IndexedGraph& g, uint32_t id, std::vector<uint32_t>& nodes) {
  if (!pattern::is_op(g, id, ir::OpId::Mul)) return std::nullopt;
  auto m = g.inputs(id);
  for (int k = 0; k < 2; ++k) {
    nodes.assign({id});
    Entry a = m[k], b = m[1 - k];
    // (x * 0.5) * (1 + erf) or x * ((1 + erf) * 0.5)
    if (std::optional<Entry> u = one_plus_erf(g, b, nodes)) {
      if (std::optional<Entry> x = times_scalar(g, a, 0.5); x && *x == *u) {
        nodes.push_back(a.node_id);
        return x;
      }
    }
    nodes.assign({id});
    if (std::optional<Entry> half_u = times_scalar(g, b, 0.5)) {
      if (std::optional<Entry> x = one_plus_erf(g, *half_u, nodes); x && *x == a) {
        nodes.push_back(b.node_id);
        return x;
      }
    }
    // (x * (1 + erf)) * 0.5
    nodes.assign({id});
    if (pattern::scalar_near(g, b, 0.5) && pattern::produced_by(g, a, ir::OpId::Mul) && pattern::single_use(g, a.node_id)) {
      auto inner = g.inputs(a.node_id);
      for (int j = 0; j < 2; ++j)
        if (std::optional<Entry> x = one_plus_erf(g, inner[1 - j], nodes); x && *x == inner[j]) {
          nodes.push_back(a.node_id);
          return x;
        }
    }
  }
  return std::nullopt;
}

}  // namespace

bool fuse_gelu(std::unique_ptr<ir::Graph>& graph, PassContext& ctx) {
  if (!may_add_ops_of_opset(*graph, ctx, 20)) return false;  // Gelu came with opset 20
  ir::IndexedGraph g(*graph);
  std::vector<bool> is_gelu(g.num_nodes(), false);  // per final Mul
  std::vector<bool> removed(g.num_nodes(), false);
  std::vector<Entry> x_of(g.num_nodes());
  bool any = false;
  for (uint32_t id = 0; id < g.num_nodes(); ++id) {
    std::vector<uint32_t> nodes;
    std::optional<Entry> x = match_gelu(g, id, nodes);
    if (!x || g.node(id).output_types[0].dtype != DType::float32) continue;
    bool overlaps = false;
    for (uint32_t n : nodes) overlaps = overlaps || removed[n];
    if (overlaps) continue;
    for (uint32_t n : nodes) removed[n] = true;
    removed[id] = false;
    x_of[id] = *x;
    is_gelu[id] = true;
    any = true;
  }
  if (!any) return false;
  ir::GraphRebuilder rebuilder(g);
  for (uint32_t id = 0; id < g.num_nodes(); ++id) {
    if (removed[id]) continue;
    if (!is_gelu[id]) {
      rebuilder.copy(id);
      continue;
    }
    const ir::Node& mul = g.node(id);
    ir::Node* gelu = rebuilder.target().add_node("Gelu", {rebuilder.map(x_of[id])}, 1, mul.name + "/Gelu");
    gelu->attributes.set("approximate", std::string("none"));
    rebuilder.replace(id, gelu);
  }
  graph = rebuilder.finish();
  return true;
}

}  // namespace graft::passes
