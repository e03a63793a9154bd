// Unrolls a Loop that runs a known, small number of iterations into copies
// of its body, one per iteration: exporters write `torch.tensor_split` and
// list comprehensions as such Loops (a constant trip count, a body that
// slices a tensor and appends it to a sequence). Run as a Loop, the values
// after it have unknown shapes, so the backends decline what reads them;
// unrolled, each iteration's index is a constant, its slices have known
// shapes, and simplify-sequences can then read the sequence's items directly.
//
// A Loop is unrolled when its trip count is a Constant of at most
// kMaxTrips, its condition is absent or a true Constant, its body's
// condition output is a true Constant (directly, through Identity, or the
// body's own condition input passed on), and the unrolled copies hold at
// most kMaxUnrolledNodes nodes (nested bodies counted), for all the Loops
// one run unrolls together. Carried values flow from one copy to the
// next; each scan output becomes a Concat of its per-iteration values, each
// with a new leading axis (Unsqueeze). A Loop of zero iterations gives its
// initial carried values (one with scan outputs, whose shape nothing gives,
// is left alone). After unrolling, the copies' index arithmetic is folded
// (fold-constants).
#include <algorithm>
#include <string>

#include "graft/ir/graph_rebuilder.h"
#include "graft/ops/type_inference.h"
#include "graft/passes/pass.h"
#include "inline_body.h"
#include "pattern_util.h"

namespace graft::passes {
namespace {

constexpr int64_t kMaxTrips = 64;
constexpr size_t kMaxUnrolledNodes = 4096;

bool is_true_constant(const Tensor* t) { return t && t->numel() == 1 && t->value_as_double(0) != 0; }

/// True when `v`, a value of the body of Loop node `id`, is known to be true
/// on every iteration: a true Constant, through Identity nodes; the body's
/// condition input (true when the loop starts, and passed on); or a value
/// of the enclosing graph that is a true Constant (body input i stands for
/// the Loop's input i).
bool always_true(const ir::IndexedGraph& g, uint32_t id, const ir::Graph& body, ir::Value v) {
  for (int hops = 0; v.node && hops < 8; ++hops) {
    const ir::Node& n = *v.node;
    if (!n.schema().domain.empty()) return false;
    if (n.op() == ir::OpId::Constant) return n.constant_value.is_defined() && is_true_constant(&n.constant_value);
    if (n.op() == ir::OpId::Input) {
      auto position = std::find(body.inputs().begin(), body.inputs().end(), &n) - body.inputs().begin();
      if (position == 1) return true;
      auto outer = g.inputs(id);
      return position >= 2 && static_cast<size_t>(position) < outer.size() &&
             is_true_constant(pattern::constant_of(g, outer[static_cast<size_t>(position)]));
    }
    if (n.op() != ir::OpId::Identity || n.inputs.size() != 1) return false;
    v = n.inputs[0];
  }
  return false;
}

/// Nodes of `graph`, those of the bodies it holds included.
size_t nodes_within(const ir::Graph& graph) {
  size_t n = graph.num_nodes();
  for (const auto& node : graph.nodes())
    for (const auto& [name, value] : node->attributes.all())
      if (const auto* body = std::get_if<std::shared_ptr<ir::Graph>>(&value); body && *body) n += nodes_within(**body);
  return n;
}

/// The trip count of Loop node `id` when it is unrollable, else -1 (the
/// caller bounds the copies with its budget).
int64_t unrollable_trips(const ir::IndexedGraph& g, uint32_t id) {
  const ir::Node& loop = g.node(id);
  const auto& body_attribute = loop.attributes.get_graph("body");
  if (!body_attribute) return -1;
  const ir::Graph& body = *body_attribute;
  auto inputs = g.inputs(id);
  if (inputs.size() < 2 || static_cast<size_t>(loop.num_captured_inputs) > inputs.size() - 2) return -1;
  const size_t carried = inputs.size() - 2 - static_cast<size_t>(loop.num_captured_inputs);
  if (body.inputs().size() != inputs.size() || body.outputs().size() < 1 + carried ||
      static_cast<size_t>(loop.num_outputs()) != body.outputs().size() - 1)
    return -1;
  const Tensor* trips = pattern::constant_of(g, inputs[0]);
  if (!trips || trips->numel() != 1 || trips->dtype() != DType::int64) return -1;
  const int64_t count = trips->value_as_int64(0);
  if (count < 0 || count > kMaxTrips) return -1;
  if (inputs[1].present() && !is_true_constant(pattern::constant_of(g, inputs[1]))) return -1;
  if (!always_true(g, id, body, body.outputs()[0])) return -1;
  const bool has_scan_outputs = body.outputs().size() > 1 + carried;
  if (count == 0 && has_scan_outputs) return -1;
  return count;
}

class Unroller {
 public:
  Unroller(const ir::IndexedGraph& source, ir::GraphRebuilder& rebuilder) : source_(source), rebuilder_(rebuilder) {}

  void unroll(uint32_t id, int64_t trips) {
    const ir::Node& loop = source_.node(id);
    const ir::Graph& body = *loop.attributes.get_graph("body");
    ir::Graph& target = rebuilder_.target();
    std::vector<ir::Value> outer = rebuilder_.mapped_inputs(id);
    const size_t captured = static_cast<size_t>(loop.num_captured_inputs);
    const size_t carried_count = outer.size() - 2 - captured;
    const size_t scan_count = body.outputs().size() - 1 - carried_count;
    std::vector<ir::Value> carried(outer.begin() + 2, outer.begin() + 2 + static_cast<std::ptrdiff_t>(carried_count));
    std::vector<std::vector<ir::Value>> scans(scan_count);
    const std::string prefix = (loop.name.empty() ? "loop" : loop.name) + "/iteration";
    ir::Value cond = target.add_constant(prefix + "_cond", Tensor::scalar<bool>(true))->output(0);
    for (int64_t k = 0; k < trips; ++k) {
      const std::string tag = prefix + std::to_string(k);
      // The body's inputs: iteration number, condition, carried values, captured values.
      std::vector<ir::Value> in = {target.add_constant(tag + "_index", Tensor::scalar<int64_t>(k))->output(0), cond};
      in.insert(in.end(), carried.begin(), carried.end());
      in.insert(in.end(), outer.begin() + 2 + static_cast<std::ptrdiff_t>(carried_count), outer.end());
      std::vector<ir::Value> results = inline_body(body, in, target, tag);
      for (size_t c = 0; c < carried_count; ++c) carried[c] = results[1 + c];
      for (size_t s = 0; s < scan_count; ++s) scans[s].push_back(results[1 + carried_count + s]);
    }
    for (size_t c = 0; c < carried_count; ++c) rebuilder_.alias(id, static_cast<uint32_t>(c), carried[c]);
    for (size_t s = 0; s < scan_count; ++s)
      rebuilder_.alias(id, static_cast<uint32_t>(carried_count + s), stacked(loop, scans[s], s));
  }

 private:
  /// The per-iteration values of a scan output stacked along a new leading axis.
  ir::Value stacked(const ir::Node& loop, const std::vector<ir::Value>& parts, size_t which) {
    ir::Graph& target = rebuilder_.target();
    const std::string name = (loop.name.empty() ? "loop" : loop.name) + "/scan" + std::to_string(which);
    auto opset = target.opset_imports.find("");
    const bool axes_as_input =
        opset == target.opset_imports.end() || opset->second >= 13;  // Unsqueeze-13 takes axes as an input
    ir::Value axes;
    if (axes_as_input) axes = target.add_constant(name + "_axes", Tensor::from_vector<int64_t>({0}, {1}))->output(0);
    std::vector<ir::Value> unsqueezed;
    for (ir::Value part : parts) {
      ir::Node* u = target.add_node("Unsqueeze",
                                    axes_as_input ? std::vector<ir::Value>{part, axes} : std::vector<ir::Value>{part},
                                    1, name + "/Unsqueeze" + std::to_string(unsqueezed.size()));
      if (!axes_as_input) u->attributes.set("axes", std::vector<int64_t>{0});
      unsqueezed.push_back(u->output(0));
    }
    ir::Node* concat = target.add_node("Concat", unsqueezed, 1, name + "/Concat");
    concat->attributes.set("axis", int64_t{0});
    return concat->output(0);
  }

  const ir::IndexedGraph& source_;
  ir::GraphRebuilder& rebuilder_;
};

}  // namespace

bool unroll_loops(std::unique_ptr<ir::Graph>& graph, PassContext& ctx) {
  if (!pattern::has_op(*graph, ir::OpId::Loop)) return false;
  ir::IndexedGraph g(*graph);
  std::vector<int64_t> trips(g.num_nodes(), -1);
  bool any = false;
  size_t budget = kMaxUnrolledNodes;  // for all the Loops of one run (copies may hold Loops unrolled next time)
  for (uint32_t id = 0; id < g.num_nodes(); ++id)
    if (pattern::is_op(g, id, ir::OpId::Loop)) {
      trips[id] = unrollable_trips(g, id);
      if (trips[id] < 0) continue;
      const size_t copied = static_cast<size_t>(trips[id]) * nodes_within(*g.node(id).attributes.get_graph("body"));
      if (copied > budget) {
        trips[id] = -1;
        continue;
      }
      budget -= copied;
      any = true;
    }
  if (!any) return false;
  ir::GraphRebuilder rebuilder(g);
  Unroller unroller(g, rebuilder);
  for (uint32_t id = 0; id < g.num_nodes(); ++id) {
    if (trips[id] < 0)
      rebuilder.copy(id);
    else
      unroller.unroll(id, trips[id]);
  }
  graph = rebuilder.finish();
  // Each copy's iteration index is a constant now: fold the index arithmetic
  // (and the slices' bounds) so that the values after the loop get shapes.
  ops::infer_types(*graph);  // the copies' types, which folding reads (it infers again after each round)
  fold_constants(graph, ctx);
  return true;
}

}  // namespace graft::passes
