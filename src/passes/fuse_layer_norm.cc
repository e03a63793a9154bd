// Recognises layer normalization written out in primitive ops, as exporters
// of older opsets emit it, and replaces it by one LayerNormalization node:
//   m = ReduceMean(x, axes = last k dims, keepdims = 1)
//   d = Sub(x, m)
//   v = ReduceMean(Pow(d, 2) | Mul(d, d), same axes)
//   n = Div(d, Sqrt(Add(v, eps)))
//   y = Add(Mul(n, gamma), beta)       (operands in either order)
// gamma and beta must be constants whose shape covers only the normalized
// dimensions, so that LayerNormalization(x, gamma, beta, axis = rank - k,
// epsilon = eps) computes the same. Every intermediate value must be read only
// inside the pattern (d is read twice, by the variance branch and by Div).
#include "graft/ir/graph_rebuilder.h"
#include "graft/passes/pass.h"
#include "pattern_util.h"

namespace graft::passes {
namespace {

using ir::Entry;

// The normalized axis of a ReduceMean over the trailing dims of a rank-`rank` input, or nullopt.
std::optional<int64_t> trailing_axis(const ir::IndexedGraph& g, uint32_t id, size_t rank) {
  const ir::Node& n = g.node(id);
  if (n.attributes.get_int("keepdims", 1) != 1) return std::nullopt;
  std::vector<int64_t> axes;
  if (n.attributes.has("axes")) {
    axes = n.attributes.get_ints("axes");
  } else {
    auto inputs = g.inputs(id);
    const Tensor* t = inputs.size() > 1 ? pattern::constant_of(g, inputs[1]) : nullptr;
    if (!t) return std::nullopt;
    axes = t->to_int64_vector();
  }
  if (axes.empty() || rank == 0) return std::nullopt;
  for (int64_t& a : axes) a = a < 0 ? a + static_cast<int64_t>(rank) : a;
  std::sort(axes.begin(), axes.end());
  for (size_t i = 0; i < axes.size(); ++i)
    if (axes[i] != static_cast<int64_t>(rank - axes.size() + i)) return std::nullopt;
  return axes.front();
}

struct LayerNormMatch {
  Entry x, gamma, beta;
  int64_t axis = -1;
  float epsilon = 0;
  std::vector<uint32_t> nodes;
};

// A constant that covers only dims [axis, rank) of a rank-`rank` value.
bool is_affine_parameter(const ir::IndexedGraph& g, Entry e, const ir::ValueType& x, int64_t axis) {
  const Tensor* t = pattern::constant_of(g, e);
  if (!t || t->dtype() != DType::float32 || t->rank() > static_cast<int64_t>(x.dims.size())) return false;
  int64_t offset = static_cast<int64_t>(x.dims.size()) - t->rank();
  for (int64_t d = 0; d < t->rank(); ++d) {
    int64_t xd = offset + d;
    if (xd < axis ? t->dim(d) != 1 : t->dim(d) != x.dims[xd].value) return false;
  }
  return true;
}

std::optional<LayerNormMatch> match(const ir::IndexedGraph& g, uint32_t add_id) {
  if (!pattern::is_op(g, add_id, ir::OpId::Add)) return std::nullopt;
  for (int k = 0; k < 2; ++k) {
    LayerNormMatch m;
    Entry scaled = g.inputs(add_id)[k];
    m.beta = g.inputs(add_id)[1 - k];
    if (!pattern::produced_by(g, scaled, ir::OpId::Mul) || !pattern::single_use(g, scaled.node_id)) continue;
    for (int j = 0; j < 2; ++j) {
      Entry normalized = g.inputs(scaled.node_id)[j];
      m.gamma = g.inputs(scaled.node_id)[1 - j];
      if (!pattern::produced_by(g, normalized, ir::OpId::Div) || !pattern::single_use(g, normalized.node_id)) continue;
      Entry d = g.inputs(normalized.node_id)[0], root = g.inputs(normalized.node_id)[1];
      if (!pattern::produced_by(g, root, ir::OpId::Sqrt) || !pattern::single_use(g, root.node_id)) continue;
      Entry shifted = g.inputs(root.node_id)[0];
      if (!pattern::produced_by(g, shifted, ir::OpId::Add) || !pattern::single_use(g, shifted.node_id)) continue;
      Entry variance = g.inputs(shifted.node_id)[0], eps = g.inputs(shifted.node_id)[1];
      if (!pattern::scalar_of(g, eps)) std::swap(variance, eps);
      std::optional<double> epsilon = pattern::scalar_of(g, eps);
      if (!epsilon || !pattern::produced_by(g, variance, ir::OpId::ReduceMean) || !pattern::single_use(g, variance.node_id)) continue;
      Entry squared = g.inputs(variance.node_id)[0];
      if (!squared.present() || !pattern::single_use(g, squared.node_id)) continue;
      auto sq = g.inputs(squared.node_id);
      bool is_square = (pattern::is_op(g, squared.node_id, ir::OpId::Pow) && sq[0] == d && pattern::scalar_near(g, sq[1], 2.0)) ||
                       (pattern::is_op(g, squared.node_id, ir::OpId::Mul) && sq[0] == d && sq[1] == d);
      if (!is_square || !pattern::produced_by(g, d, ir::OpId::Sub)) continue;
      // d is read by the square and by Div only.
      auto d_consumers = g.consumers(d.node_id);
      if (d_consumers.size() != 2) continue;
      bool is_graph_output = false;
      for (Entry o : g.outputs()) is_graph_output = is_graph_output || o.node_id == d.node_id;
      if (is_graph_output) continue;
      Entry x = g.inputs(d.node_id)[0], mean = g.inputs(d.node_id)[1];
      if (!pattern::produced_by(g, mean, ir::OpId::ReduceMean) || g.inputs(mean.node_id)[0] != x) continue;
      auto mean_consumers = g.consumers(mean.node_id);
      if (mean_consumers.size() != 1) continue;
      const ir::ValueType& xt = g.graph().type_of(ir::Value{&g.mutable_node(x.node_id), static_cast<int>(x.index)});
      if (xt.dtype != DType::float32 || !xt.has_rank) continue;
      std::optional<int64_t> axis = trailing_axis(g, mean.node_id, xt.dims.size());
      if (!axis || trailing_axis(g, variance.node_id, xt.dims.size()) != axis) continue;
      for (size_t dd = static_cast<size_t>(*axis); dd < xt.dims.size(); ++dd)
        if (!xt.dims[dd].is_known()) axis.reset();
      if (!axis || !is_affine_parameter(g, m.gamma, xt, *axis) || !is_affine_parameter(g, m.beta, xt, *axis)) continue;
      m.x = x;
      m.axis = *axis;
      m.epsilon = static_cast<float>(*epsilon);
      m.nodes = {add_id, scaled.node_id, normalized.node_id, root.node_id, shifted.node_id, variance.node_id,
                 squared.node_id, d.node_id, mean.node_id};
      return m;
    }
  }
  return std::nullopt;
}

// A parameter viewed with the normalized dims (LayerNormalization's scale and
// bias shape). The view shares the constant's storage, so a weight changed
// later through the Session still reaches the fused node.
ir::Value parameter(ir::Graph& target, const Tensor& t, const ir::ValueType& x, int64_t axis, const std::string& name) {
  Shape shape;
  for (size_t d = static_cast<size_t>(axis); d < x.dims.size(); ++d) shape.push_back(x.dims[d].value);
  return target.add_constant(name, t.reshaped(shape))->output(0);
}

}  // namespace

bool fuse_layer_norm(std::unique_ptr<ir::Graph>& graph, PassContext& ctx) {
  if (!may_add_ops_of_opset(*graph, ctx, 17)) return false;  // LayerNormalization came with opset 17
  ir::IndexedGraph g(*graph);
  std::vector<std::optional<LayerNormMatch>> at(g.num_nodes());
  std::vector<bool> removed(g.num_nodes(), false);
  bool any = false;
  for (uint32_t id = 0; id < g.num_nodes(); ++id) {
    std::optional<LayerNormMatch> m = match(g, id);
    if (!m) continue;
    bool overlaps = false;
    for (uint32_t n : m->nodes) overlaps = overlaps || removed[n];
    if (overlaps) continue;
    for (uint32_t n : m->nodes) removed[n] = n != id;
    at[id] = std::move(m);
    any = true;
  }
  if (!any) return false;
  ir::GraphRebuilder rebuilder(g);
  for (uint32_t id = 0; id < g.num_nodes(); ++id) {
    if (removed[id]) continue;
    if (!at[id]) {
      rebuilder.copy(id);
      continue;
    }
    const LayerNormMatch& m = *at[id];
    const ir::Node& add = g.node(id);
    const ir::ValueType& xt = g.graph().type_of(ir::Value{&g.mutable_node(m.x.node_id), static_cast<int>(m.x.index)});
    ir::Graph& target = rebuilder.target();
    ir::Value scale = parameter(target, *pattern::constant_of(g, m.gamma), xt, m.axis, add.name + ".scale");
    ir::Value bias = parameter(target, *pattern::constant_of(g, m.beta), xt, m.axis, add.name + ".bias");
    ir::Node* ln = target.add_node("LayerNormalization", {rebuilder.map(m.x), scale, bias}, 1, add.name + "/LayerNorm");
    ln->attributes.set("axis", m.axis);
    ln->attributes.set("epsilon", m.epsilon);
    rebuilder.replace(id, ln);
  }
  graph = rebuilder.finish();
  return true;
}

}  // namespace graft::passes
