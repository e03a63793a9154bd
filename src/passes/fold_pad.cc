// Folds a zero constant Pad into the window op that reads it, as exporters
// write average pooling with count_include_pad and padded convolutions:
//   Pad(x, pads, 0) -> AveragePool(pads p')  ==  AveragePool(pads + p', count_include_pad = 1)
//                      when p' is zero or the pool already counts its padding;
//   Pad(x, pads, 0) -> Conv(pads p')         ==  Conv(pads + p').
// Only spatial padding (none on batch and channel), non-negative, mode
// "constant" with value 0, auto_pad NOTSET on the consumer, and a Pad read by
// that consumer alone. A Pad whose pads are all zero is removed whatever reads it.
#include "graft/ir/graph_rebuilder.h"
#include "graft/passes/pass.h"
#include "pattern_util.h"

namespace graft::passes {
namespace {

// The pads of Pad node `id` ([begin..., end...] over all dims) when it pads with zeros; else nullopt.
std::optional<std::vector<int64_t>> zero_pads(const ir::IndexedGraph& g, uint32_t id) {
  if (!pattern::is_op(g, id, ir::OpId::Pad)) return std::nullopt;
  const ir::Node& n = g.node(id);
  if (n.attributes.get_string("mode", "constant") != "constant") return std::nullopt;
  auto inputs = g.inputs(id);
  std::vector<int64_t> pads;
  if (n.attributes.has("pads")) {
    pads = n.attributes.get_ints("pads");
    if (n.attributes.get_float("value", 0.0f) != 0.0f) return std::nullopt;
  } else {
    const Tensor* p = inputs.size() > 1 ? pattern::constant_of(g, inputs[1]) : nullptr;
    if (!p) return std::nullopt;
    pads = p->to_int64_vector();
    if (inputs.size() > 2 && inputs[2].present()) {
      const Tensor* v = pattern::constant_of(g, inputs[2]);
      if (!v || v->numel() != 1 || v->value_as_double(0) != 0.0) return std::nullopt;
    }
    if (inputs.size() > 3 && inputs[3].present()) return std::nullopt;  // axes
  }
  for (int64_t p : pads)
    if (p < 0) return std::nullopt;
  return pads;
}

bool all_zero(const std::vector<int64_t>& v) {
  for (int64_t x : v)
    if (x != 0) return false;
  return true;
}

// The consumer's new pads when `pads` (over all dims of a rank-r input) fold into it; else nullopt.
std::optional<std::vector<int64_t>> folded_pads(const ir::IndexedGraph& g, uint32_t consumer, const std::vector<int64_t>& pads) {
  const ir::Node& c = g.node(consumer);
  bool pool = pattern::is_op(g, consumer, ir::OpId::AveragePool), conv = pattern::is_op(g, consumer, ir::OpId::Conv);
  if (!pool && !conv) return std::nullopt;
  if (c.attributes.get_string("auto_pad", "NOTSET") != "NOTSET") return std::nullopt;
  size_t rank = pads.size() / 2;
  if (rank < 3 || pads[0] || pads[1] || pads[rank] || pads[rank + 1]) return std::nullopt;
  size_t spatial = rank - 2;
  std::vector<int64_t> own = c.attributes.get_ints("pads", std::vector<int64_t>(2 * spatial, 0));
  if (own.size() != 2 * spatial) return std::nullopt;
  if (pool && !all_zero(own) && c.attributes.get_int("count_include_pad", 0) == 0) return std::nullopt;
  if (pool && c.attributes.get_int("ceil_mode", 0) != 0) return std::nullopt;
  for (size_t d = 0; d < spatial; ++d) {
    own[d] += pads[2 + d];
    own[spatial + d] += pads[rank + 2 + d];
  }
  return own;
}

}  // namespace

bool fold_pad(std::unique_ptr<ir::Graph>& graph, PassContext&) {
  ir::IndexedGraph g(*graph);
  std::vector<int8_t> action(g.num_nodes(), 0);  // per Pad: 1 remove (zero), 2 fold into its consumer
  bool any = false;
  for (uint32_t id = 0; id < g.num_nodes(); ++id) {
    std::optional<std::vector<int64_t>> pads = zero_pads(g, id);
    if (!pads) continue;
    if (all_zero(*pads)) {
      action[id] = 1;
    } else if (pattern::single_use(g, id) && folded_pads(g, g.consumers(id)[0], *pads)) {
      action[id] = 2;
    } else {
      continue;
    }
    any = true;
  }
  if (!any) return false;
  ir::GraphRebuilder rebuilder(g);
  std::vector<int64_t> pad_of(g.num_nodes(), -1);  // per consumer: the Pad folded into it
  for (uint32_t id = 0; id < g.num_nodes(); ++id) {
    if (action[id] == 1) {
      rebuilder.alias(id, 0, rebuilder.map(g.inputs(id)[0]));
      continue;
    }
    if (action[id] == 2) {
      pad_of[g.consumers(id)[0]] = id;
      continue;
    }
    if (pad_of[id] < 0) {
      rebuilder.copy(id);
      continue;
    }
    uint32_t pad = static_cast<uint32_t>(pad_of[id]);
    std::vector<int64_t> pads = *folded_pads(g, id, *zero_pads(g, pad));
    std::vector<ir::Value> inputs = {rebuilder.map(g.inputs(pad)[0])};
    for (size_t i = 1; i < g.inputs(id).size(); ++i) inputs.push_back(rebuilder.map(g.inputs(id)[i]));
    ir::Node* copy = rebuilder.target().copy_node(g.node(id), inputs);
    copy->attributes.set("pads", pads);
    if (pattern::is_op(g, id, ir::OpId::AveragePool)) copy->attributes.set("count_include_pad", int64_t{1});
    for (int k = 0; k < copy->num_outputs(); ++k) rebuilder.alias(id, static_cast<uint32_t>(k), copy->output(k));
  }
  graph = rebuilder.finish();
  return true;
}

}  // namespace graft::passes
