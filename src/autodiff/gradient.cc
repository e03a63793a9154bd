// Reverse-mode differentiation over the op table's gradient builders.
//
// The forward graph is cloned, its types inferred and its shape
// computations folded into constants (exporters compute Reshape targets
// from Shape at run time and Resize scales from Constants; builders need
// the shapes; nothing that reads a `wrt` value), and its RNN, LSTM and
// GRU nodes unrolled over time into standard ops (lower_recurrent.cc), and
// log(sigmoid(x)) rewritten as -softplus(-x) (use_stable_forms). Two sweeps over the
// topological order mark what matters: forward, the values that depend on a
// `wrt` value (floating point only: an integer or boolean value carries no
// gradient); backward from the loss, the nodes the loss depends on. A node in
// both sets is "needed". The gradient of the loss (ones of its shape) seeds
// the walk; then, in reverse topological order, each needed node whose
// outputs received gradients has its builder called (graft/ops/gradient.h).
// The builder's gradient for input i is summed back to the input's shape when
// it has the broadcast shape of the output (ReduceSum over the broadcast axes,
// then Reshape) and added to the input's list of contributions; a value read
// by several nodes gets the Sum of its contributions when its producer is
// reached (every reader comes later in topological order, so all are in by
// then), or the Concat of the gradients of slices that tile it
// (join_slice_gradients.cc). Each node remembers the reader its first gradient came from, which
// names the path from the loss when a node on it has no builder. The result
// keeps only the nodes the loss and the gradients need; with
// GradientOptions::recompute_pointwise_activations, recompute.cc then has
// the backward part recompute cheap pointwise activations.
#include "graft/autodiff/gradient.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "graft/autodiff/recompute.h"
#include "graft/ir/indexed_graph.h"
#include "graft/ops/gradient.h"
#include "graft/ops/evaluate_node.h"
#include "graft/ops/op_context.h"
#include "graft/ops/type_inference.h"
#include "join_slice_gradients.h"
#include "keep_needed.h"
#include "lower_recurrent.h"

namespace graft::autodiff {
namespace {

struct ValueHash {
  size_t operator()(const ir::Value& v) const {
    return std::hash<const void*>()(v.node) * 31 + static_cast<size_t>(v.index);
  }
};

/// The value whose output name (or node name, for a single-output node) is
/// `name`; a null Value when there is none.
ir::Value find_value(const ir::Graph& graph, const std::string& name) {
  for (size_t i = 0; i < graph.outputs().size(); ++i)
    if (graph.output_names()[i] == name) return graph.outputs()[i];
  for (const auto& n : graph.nodes())
    for (int k = 0; k < n->num_outputs(); ++k)
      if (n->output_names[static_cast<size_t>(k)] == name) return n->output(k);
  for (const auto& n : graph.nodes())
    if (n->name == name && n->num_outputs() == 1) return n->output(0);
  return {};
}

bool is_float(const ir::ValueType& t) { return t.is_tensor() && dtype_is_float(t.dtype); }

/// "node 'a' (Softmax) <- node 'b' (MatMul) <- ..." from the loss's producer.
std::string path_from_loss(const ir::Node* node, const std::unordered_map<const ir::Node*, const ir::Node*>& parent) {
  std::vector<const ir::Node*> chain;
  for (const ir::Node* n = node; n;) {
    chain.push_back(n);
    auto it = parent.find(n);
    n = it == parent.end() ? nullptr : it->second;
    if (chain.size() > 10000) break;
  }
  std::string out;
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
    if (!out.empty()) out += " -> ";
    out += (*it)->name.empty() ? (*it)->op_type() : "'" + (*it)->name + "' (" + (*it)->op_type() + ")";
  }
  return out;
}

/// The gradient `grad` (of the broadcast shape of a node's output) summed
/// back to the shape of `input`.
ir::Value sum_to_input_shape(ops::GradientContext& ctx, ir::Value grad, ir::Value input) {
  const ir::ValueType& gt = ctx.type_of(grad);
  const ir::ValueType& it = ctx.type_of(input);
  if (gt.has_rank && it.has_rank && gt.dims == it.dims) return grad;
  if (!gt.has_rank) return grad;  // a builder's run-time reshape to the input's shape
  std::vector<int64_t> g = ctx.known_dims(grad), in = ctx.known_dims(input);
  if (g == in) return grad;
  if (g.size() < in.size())
    ctx.unsupported("a gradient of shape ", gt.to_string(), " does not broadcast to its input's ", it.to_string());
  const size_t offset = g.size() - in.size();
  std::vector<int64_t> axes;
  for (size_t d = 0; d < g.size(); ++d) {
    if (d < offset) {
      axes.push_back(static_cast<int64_t>(d));
    } else if (in[d - offset] != g[d]) {
      if (in[d - offset] != 1)
        ctx.unsupported("a gradient of shape ", gt.to_string(), " does not broadcast to its input's ", it.to_string());
      axes.push_back(static_cast<int64_t>(d));
    }
  }
  ir::Value reduced = grad;
  if (!axes.empty()) reduced = ctx.add(ir::OpId::ReduceSum, {grad, ctx.int64s(axes)}, {{"keepdims", int64_t{1}}});
  if (offset > 0) reduced = ctx.add(ir::OpId::Reshape, {reduced, ctx.int64s(in)});
  return reduced;
}

/// Shape/Size of a value of known shape.
Tensor shape_query(const ir::Node& n, const Shape& shape) {
  if (n.op() == ir::OpId::Size) return Tensor::scalar<int64_t>(shape_numel(shape));
  const int64_t rank = static_cast<int64_t>(shape.size());
  auto clamp = [&](int64_t i) { return std::clamp<int64_t>(i < 0 ? i + rank : i, 0, rank); };
  const int64_t start = clamp(n.attributes.get_int("start", 0)), end = clamp(n.attributes.get_int("end", rank));
  std::vector<int64_t> dims;
  for (int64_t d = start; d < end; ++d) dims.push_back(shape[static_cast<size_t>(d)]);
  return Tensor::from_vector<int64_t>(dims, {static_cast<int64_t>(dims.size())});
}

/// Folds the integer shape computations of an exported model (Shape of a
/// value of known shape, then Gather, Unsqueeze, Concat, ... of constants)
/// into constants, so that the Reshapes they feed, and every value after
/// them, get known shapes, which builders need. Floating-point computations
/// of constants are folded too (a Resize's scales, which PyTorch exports as
/// a Concat of two Constants), but never one that reads a value in `wrt`: a
/// weight stays the value the gradient is taken for.
void fold_shape_computations(ir::Graph& g, const std::vector<std::string>& wrt) {
  const std::unordered_set<std::string> differentiated(wrt.begin(), wrt.end());
  std::vector<ir::Node*> order;
  {
    ir::IndexedGraph indexed(g);
    for (uint32_t id = 0; id < indexed.num_nodes(); ++id) order.push_back(&indexed.mutable_node(id));
  }
  std::unordered_map<ir::Value, ir::Value, ValueHash> replaced;
  auto remap = [&](ir::Value& v) {
    auto it = replaced.find(v);
    if (it != replaced.end()) v = it->second;
  };
  for (ir::Node* n : order) {
    for (ir::Value& v : n->inputs) remap(v);
    const ir::OpSchema& s = n->schema();
    if (s.category == ir::OpCategory::source || s.category == ir::OpCategory::control || !s.kernel || n->subgraph ||
        ir::is_random_op(n->op()))
      continue;
    ops::infer_node_types(*n);
    std::vector<Tensor> values;
    if ((n->op() == ir::OpId::Shape || n->op() == ir::OpId::Size) && n->inputs.size() == 1 && n->inputs[0]) {
      std::optional<Shape> shape = g.type_of(n->inputs[0]).concrete_shape();
      if (!shape) continue;
      values.push_back(shape_query(*n, *shape));
    } else {
      bool foldable = !n->inputs.empty();
      for (const ir::Value& v : n->inputs)
        foldable = foldable && (!v || (v.node->op() == ir::OpId::Constant && !differentiated.count(g.value_name(v))));
      for (const ir::ValueType& t : n->output_types)
        foldable = foldable && t.is_tensor() && t.dtype != DType::undefined;
      if (!foldable) continue;
      std::vector<Tensor> inputs;
      for (const ir::Value& v : n->inputs) inputs.push_back(v ? v.node->constant_value : Tensor());
      try {
        values = ops::evaluate_node(*n, std::move(inputs));
      } catch (const std::exception&) {
        continue;  // left for the run to report
      }
    }
    for (size_t k = 0; k < values.size(); ++k) {
      if (!values[k].is_defined()) continue;
      std::string name = n->output_names[k].empty() ? g.value_name(n->output(static_cast<int>(k))) : n->output_names[k];
      ir::Node* c = g.add_constant(name + "_folded", values[k]);
      replaced[n->output(static_cast<int>(k))] = c->output(0);
    }
  }
  for (ir::Value& v : g.mutable_outputs()) remap(v);
  ops::infer_types(g);
}

/// Rewrites log(sigmoid(x)) (how PyTorch exports logsigmoid and the
/// binary cross-entropy with logits) as -softplus(-x): the same values, but a
/// gradient that stays finite where sigmoid(x) underflows to 0 (x below about
/// -88 in float32), where the chain rule through Log gives dy / 0.
void use_stable_forms(ir::Graph& g) {
  using enum ir::OpId;
  std::vector<ir::Node*> order;
  {
    ir::IndexedGraph indexed(g);
    for (uint32_t id = 0; id < indexed.num_nodes(); ++id) order.push_back(&indexed.mutable_node(id));
  }
  std::unordered_map<ir::Value, ir::Value, ValueHash> replaced;
  for (ir::Node* n : order) {
    for (ir::Value& v : n->inputs)
      if (auto it = replaced.find(v); it != replaced.end()) v = it->second;
    if (n->op() != Log || n->inputs.size() != 1 || !n->inputs[0] || n->inputs[0].node->op() != Sigmoid) continue;
    const ir::Value x = n->inputs[0].node->inputs[0];
    const std::string name = n->name.empty() ? "log_sigmoid" : n->name;
    ir::Node* negated = g.add_node(Neg, {x}, 1, name + "_stable_neg");
    ir::Node* softplus = g.add_node(Softplus, {negated->output(0)}, 1, name + "_stable_softplus");
    ir::Node* result = g.add_node(Neg, {softplus->output(0)}, 1, name + "_stable");
    if (!n->output_names[0].empty()) {  // the value keeps its name (it may be the loss)
      result->output_names[0] = n->output_names[0];
      n->output_names[0] += "_unstable";
    }
    replaced[n->output(0)] = result->output(0);
  }
  for (ir::Value& v : g.mutable_outputs())
    if (auto it = replaced.find(v); it != replaced.end()) v = it->second;
  ops::infer_types(g);
}

}  // namespace

std::vector<std::string> trainable_initializers(const ir::Graph& graph, const std::string& loss) {
  ir::Value loss_value = find_value(graph, loss);
  if (!loss_value) fail(ErrorKind::invalid_argument, "gradient: no value named '", loss, "' in the graph");
  std::unordered_set<const ir::Node*> seen{loss_value.node};
  std::vector<const ir::Node*> stack{loss_value.node};
  while (!stack.empty()) {
    const ir::Node* n = stack.back();
    stack.pop_back();
    for (const ir::Value& v : n->inputs)
      if (v.node && seen.insert(v.node).second) stack.push_back(v.node);
  }
  std::vector<std::string> names;
  for (const auto& n : graph.nodes())
    // The importer names an initializer's node as its value; an ONNX Constant
    // op keeps its own node name (a clip bound, a scale: not a weight).
    if (n->op() == ir::OpId::Constant && seen.count(n.get()) && is_float(n->output_types[0]) &&
        !n->output_names[0].empty() && n->name == n->output_names[0])
      names.push_back(n->output_names[0]);
  return names;
}

std::unique_ptr<ir::Graph> gradient(const ir::Graph& graph, std::string loss, std::vector<std::string> wrt,
                                    const GradientOptions& options) {
  std::unique_ptr<ir::Graph> g = graph.clone();
  ops::infer_types(*g);
  fold_shape_computations(*g, wrt);
  lower_recurrent_nodes(*g);
  use_stable_forms(*g);

  ir::Value loss_value = find_value(*g, loss);
  if (!loss_value) fail(ErrorKind::invalid_argument, "gradient: no value named '", loss, "' in the graph");
  const ir::ValueType& loss_type = g->type_of(loss_value);
  std::optional<Shape> loss_shape = loss_type.concrete_shape();
  if (!is_float(loss_type) || !loss_shape || shape_numel(*loss_shape) != 1)
    fail(ErrorKind::invalid_argument, "gradient: the loss '", loss, "' must be a floating-point scalar, but it is ",
         loss_type.to_string());

  std::vector<ir::Value> wrt_values;
  std::unordered_set<std::string> seen_names;
  for (const std::string& name : wrt) {
    if (!seen_names.insert(name).second)
      fail(ErrorKind::invalid_argument, "gradient: '", name, "' is named twice in wrt");
    ir::Value v = find_value(*g, name);
    if (!v || (v.node->op() != ir::OpId::Constant && v.node->op() != ir::OpId::Input))
      fail(ErrorKind::invalid_argument, "gradient: '", name, "' is not an initializer or an input of the graph");
    if (!is_float(g->type_of(v)))
      fail(ErrorKind::invalid_argument, "gradient: '", name, "' is ", g->type_of(v).to_string(),
           ", not floating point");
    wrt_values.push_back(v);
  }

  // Topological order of the forward graph, before backward nodes are added.
  std::vector<ir::Node*> order;
  {
    ir::IndexedGraph indexed(*g);
    for (uint32_t id = 0; id < indexed.num_nodes(); ++id) order.push_back(&indexed.mutable_node(id));
  }

  // Forward: float values that depend on a wrt value.
  std::unordered_set<ir::Value, ValueHash> depends_on_wrt(wrt_values.begin(), wrt_values.end());
  for (ir::Node* n : order) {
    bool any = false;
    for (const ir::Value& v : n->inputs) any = any || (v && depends_on_wrt.count(v));
    if (!any) continue;
    for (int k = 0; k < n->num_outputs(); ++k)
      if (is_float(n->output_types[static_cast<size_t>(k)])) depends_on_wrt.insert(n->output(k));
  }
  // Backward: nodes the loss depends on.
  std::unordered_set<const ir::Node*> feeds_loss{loss_value.node};
  for (auto it = order.rbegin(); it != order.rend(); ++it)
    if (feeds_loss.count(*it))
      for (const ir::Value& v : (*it)->inputs)
        if (v) feeds_loss.insert(v.node);

  int name_counter = 0;  // numbers backward nodes: unique names
  std::unordered_map<ir::Value, std::vector<ir::Value>, ValueHash> contributions;
  std::unordered_map<const ir::Node*, const ir::Node*> parent;
  {
    Tensor ones(loss_type.dtype, *loss_shape);
    visit_dtype(loss_type.dtype, "loss", [&]<typename T>() {
      if constexpr (!std::is_same_v<T, bool>) *ones.data<T>() = static_cast<T>(1);
    });
    ir::Node* seed = g->add_constant(loss + "_grad_seed", std::move(ones));
    seed->is_backward = true;
    contributions[loss_value].push_back(seed->output(0));
  }

  // The total gradient of `v` (null when nothing reached it).
  auto total = [&](ops::GradientContext* ctx, ir::Value v) -> ir::Value {
    auto it = contributions.find(v);
    if (it == contributions.end() || it->second.empty()) return {};
    if (it->second.size() == 1) return it->second[0];
    ir::Value sum = join_slice_gradients(*ctx, it->second);
    if (!sum) sum = ctx->add(ir::OpId::Sum, it->second);
    it->second = {sum};
    return sum;
  };

  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    ir::Node* n = *it;
    if (!feeds_loss.count(n) || n->schema().category == ir::OpCategory::source) continue;
    std::vector<bool> needs(n->inputs.size());
    bool any_need = false;
    for (size_t i = 0; i < n->inputs.size(); ++i) {
      needs[i] = n->inputs[i] && depends_on_wrt.count(n->inputs[i]);
      any_need = any_need || needs[i];
    }
    if (!any_need) continue;
    ops::GradientContext ctx(*g, *n, {}, needs, &name_counter);
    std::vector<ir::Value> output_grads(static_cast<size_t>(n->num_outputs()));
    bool any_grad = false;
    for (int k = 0; k < n->num_outputs(); ++k) {
      output_grads[static_cast<size_t>(k)] = total(&ctx, n->output(k));
      any_grad = any_grad || output_grads[static_cast<size_t>(k)];
    }
    if (!any_grad) continue;
    if (!n->schema().gradient)
      fail(ErrorKind::unsupported, "gradient: op ", n->op_type(), " has no gradient builder; it is needed at ",
           n->describe(), " on the path from the loss: ", path_from_loss(n, parent));
    ops::GradientContext builder(*g, *n, output_grads, needs, &name_counter);
    n->schema().gradient(builder);
    for (size_t i = 0; i < n->inputs.size(); ++i) {
      if (!needs[i]) continue;
      ir::Value grad = builder.input_gradients()[i];
      if (!grad) continue;  // not differentiable there (indices, running statistics, class weights)
      grad = sum_to_input_shape(builder, grad, n->inputs[i]);
      contributions[n->inputs[i]].push_back(grad);
      parent.emplace(n->inputs[i].node, n);
    }
  }

  std::vector<ir::Value> outputs{loss_value};
  std::vector<std::string> names{loss};
  for (size_t w = 0; w < wrt_values.size(); ++w) {
    ir::Value v = wrt_values[w];
    ops::GradientContext ctx(*g, *v.node, {}, {}, &name_counter);
    ir::Value grad = total(&ctx, v);
    if (!grad) {
      std::optional<Shape> shape = g->type_of(v).concrete_shape();
      if (!shape)
        fail(ErrorKind::unsupported, "gradient: '", wrt[w], "' does not affect the loss and its shape is unknown");
      Tensor zeros(g->type_of(v).dtype, *shape);  // zero-filled
      ir::Node* z = g->add_constant(wrt[w] + "_grad_zero", std::move(zeros));
      z->is_backward = true;
      grad = z->output(0);
    }
    outputs.push_back(grad);
    names.push_back(wrt[w] + "_grad");
  }
  for (const auto& n : g->nodes())
    if (n->is_backward && n->schema().domain == "graft") g->opset_imports.emplace("graft", 1);
  g->mutable_outputs() = outputs;
  g->mutable_output_names() = names;

  // Keep what the outputs need (and every graph input, which callers feed).
  std::unique_ptr<ir::Graph> result = keep_needed(*g);
  if (options.recompute_pointwise_activations) return recompute_pointwise_activations(*result);
  return result;
}

}  // namespace graft::autodiff
