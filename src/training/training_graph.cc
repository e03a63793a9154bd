// The training graph: forward, backward and the optimizer's update in one
// graph, so that one Session run is one training step.
//
// autodiff::gradient gives the forward+backward graph whose outputs are the
// loss and the gradient G of each parameter W. For each W this file appends
// the optimizer's update as standard pointwise ops (Add, Sub, Mul, Div, Sqrt,
// Pow) reading W, G, the optimizer's state (Constant nodes, zeros at first)
// and two scalar inputs, the learning rate and (AdamW) the step number, and
// makes the new W and the new state graph outputs. The caller (Trainer)
// writes them back into the Constants after each run (Session::set_weight,
// which bumps the storage version, so converted copies are refreshed).
//
// Why standard ops rather than optimizer ops of their own: the fusion pass
// and the JIT then take the update with no new kernel, expression or
// emitter, and the graph stays plain ONNX apart from graft's backward ops.
// Every node added is marked is_backward, so the fusion pass never puts an
// update in a fused node with forward nodes. The update rules are PyTorch's:
//
//   SGD:   g = G + wd W;  b = mu b + g;  d = nesterov ? g + mu b : b;  W -= lr d
//   AdamW: W *= 1 - lr wd;  m = b1 m + (1 - b1) G;  v = b2 v + (1 - b2) G G;
//          W -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)
//
// Scalars that depend only on hyperparameters are computed here once;
// those that depend on lr or t are scalar nodes shared by every parameter.
#include "graft/training/training_graph.h"

#include <cmath>
#include <set>

#include "graft/autodiff/gradient.h"
#include "graft/backend/executor.h"
#include "graft/core/error.h"
#include "graft/ops/type_inference.h"
#include "graft/passes/pass.h"

namespace graft::training {

OptimizerKind parse_optimizer_kind(const std::string& text) {
  if (text == "sgd") return OptimizerKind::sgd;
  if (text == "adamw") return OptimizerKind::adamw;
  fail(ErrorKind::invalid_argument, "unknown optimizer '", text, "' (expected sgd or adamw)");
}

const char* optimizer_kind_name(OptimizerKind kind) { return kind == OptimizerKind::sgd ? "sgd" : "adamw"; }

void validate(const OptimizerOptions& o) {
  auto check = [](const char* name, float value, bool ok, const char* expected) {
    if (!std::isfinite(value) || !ok)
      fail(ErrorKind::invalid_argument, "optimizer: ", name, " is ", value, "; expected ", expected);
  };
  check("momentum", o.momentum, o.momentum >= 0, "a value >= 0");
  check("weight decay", o.weight_decay, o.weight_decay >= 0, "a value >= 0");
  check("beta1", o.beta1, o.beta1 >= 0 && o.beta1 < 1, "a value in [0, 1)");
  check("beta2", o.beta2, o.beta2 >= 0 && o.beta2 < 1, "a value in [0, 1)");
  check("epsilon", o.epsilon, o.epsilon > 0, "a value > 0");
  if (o.kind == OptimizerKind::sgd && o.nesterov && o.momentum == 0)
    fail(ErrorKind::invalid_argument, "optimizer: Nesterov momentum needs a momentum > 0");
}

namespace {

/// Adds the update nodes to one graph; every node it makes is is_backward.
class UpdateBuilder {
 public:
  UpdateBuilder(ir::Graph& graph, std::vector<std::string>& node_names) : graph_(graph), node_names_(node_names) {}

  ir::Value add(ir::OpId op, std::vector<ir::Value> inputs, const std::string& name) {
    ir::Node* n = graph_.add_node(op, inputs, 1, name);
    n->is_backward = true;
    node_names_.push_back(name);
    return n->output(0);
  }
  ir::Value scalar(float value, const std::string& name) {
    ir::Node* c = graph_.add_constant(name, Tensor::scalar<float>(value));
    c->is_backward = true;
    return c->output(0);
  }
  /// A state tensor: zeros of the parameter's shape.
  ir::Value state(const std::string& name, const graft::Shape& shape) {
    ir::Node* c = graph_.add_constant(name, Tensor(DType::float32, shape));
    c->is_backward = true;
    return c->output(0);
  }

 private:
  ir::Graph& graph_;
  std::vector<std::string>& node_names_;
};

ir::Value find_constant(ir::Graph& graph, const std::string& name) {
  for (const auto& n : graph.nodes())
    if (n->op() == ir::OpId::Constant && !n->output_names.empty() && n->output_names[0] == name) return n->output(0);
  return {};
}

}  // namespace

std::unique_ptr<ir::Graph> forward_for_gradient(const ir::Graph& forward) {
  std::unique_ptr<ir::Graph> graph = forward.clone();
  passes::PassContext context;
  passes::run_pipeline(graph, {"infer", "fuse-gelu"}, context);
  return graph;
}

TrainingGraph build_training_graph(const ir::Graph& forward, const std::string& loss,
                                   std::vector<std::string> parameters, const OptimizerOptions& optimizer,
                                   const autodiff::GradientOptions& gradient) {
  validate(optimizer);
  if (parameters.empty()) parameters = autodiff::trainable_initializers(forward, loss);
  if (parameters.empty())
    fail(ErrorKind::invalid_argument, "training: the loss '", loss, "' reads no floating-point initializer to train");
  TrainingGraph result;
  result.graph = autodiff::gradient(*forward_for_gradient(forward), loss, parameters, gradient);
  ir::Graph& g = *result.graph;
  result.parameters = parameters;

  std::set<std::string> taken;
  for (const auto& n : g.nodes())
    for (const std::string& name : n->output_names) taken.insert(name);
  for (const ir::Node* in : g.inputs()) taken.insert(in->output_names[0]);
  auto new_name = [&](const std::string& name) {
    if (!taken.insert(name).second)
      fail(ErrorKind::invalid_argument, "training: the model already has a value named '", name,
           "', which the optimizer needs for its own");
    return name;
  };

  UpdateBuilder b(g, result.update_nodes);
  ir::Value lr = g.add_input(new_name(kLearningRateInput), ir::ValueType::of(DType::float32, {}))->output(0);
  ir::Value step;
  if (optimizer.kind == OptimizerKind::adamw)
    step = g.add_input(new_name(kStepInput), ir::ValueType::of(DType::float32, {}))->output(0);

  using enum ir::OpId;
  const std::string prefix = "graft.optimizer.";
  // Scalars shared by every parameter's update.
  ir::Value decay_factor, step_size, bias_correction2_sqrt, beta1, one_minus_beta1, beta2, one_minus_beta2, epsilon;
  ir::Value momentum, weight_decay;
  if (optimizer.kind == OptimizerKind::adamw) {
    ir::Value one = b.scalar(1.0f, new_name(prefix + "one"));
    if (optimizer.weight_decay != 0)
      decay_factor = b.add(Sub,
                           {one, b.add(Mul, {lr, b.scalar(optimizer.weight_decay, new_name(prefix + "weight_decay"))},
                                       prefix + "lr_times_decay")},
                           prefix + "decay_factor");
    beta1 = b.scalar(optimizer.beta1, new_name(prefix + "beta1"));
    beta2 = b.scalar(optimizer.beta2, new_name(prefix + "beta2"));
    one_minus_beta1 = b.scalar(1.0f - optimizer.beta1, new_name(prefix + "one_minus_beta1"));
    one_minus_beta2 = b.scalar(1.0f - optimizer.beta2, new_name(prefix + "one_minus_beta2"));
    epsilon = b.scalar(optimizer.epsilon, new_name(prefix + "epsilon"));
    ir::Value bias_correction1 =
        b.add(Sub, {one, b.add(Pow, {beta1, step}, prefix + "beta1_power")}, prefix + "bias_correction1");
    ir::Value bias_correction2 =
        b.add(Sub, {one, b.add(Pow, {beta2, step}, prefix + "beta2_power")}, prefix + "bias_correction2");
    step_size = b.add(Div, {lr, bias_correction1}, prefix + "step_size");
    bias_correction2_sqrt = b.add(Sqrt, {bias_correction2}, prefix + "bias_correction2_sqrt");
  } else {
    if (optimizer.momentum != 0) momentum = b.scalar(optimizer.momentum, new_name(prefix + "momentum"));
    if (optimizer.weight_decay != 0) weight_decay = b.scalar(optimizer.weight_decay, new_name(prefix + "weight_decay"));
  }

  result.shared_scalar_nodes = result.update_nodes;  // so far only the shared scalars

  std::vector<ir::Value> new_parameters, new_states;
  for (size_t i = 0; i < parameters.size(); ++i) {
    const std::string& name = parameters[i];
    ir::Value w = find_constant(g, name);
    if (!w)
      fail(ErrorKind::invalid_argument, "training: '", name, "' is not an initializer the loss reads; only ",
           "initializers are trained");
    const ir::ValueType& type = g.type_of(w);
    if (type.dtype != DType::float32)
      fail(ErrorKind::invalid_argument, "training: parameter '", name, "' is ", type.to_string(),
           "; the optimizers update float32 parameters");
    graft::Shape shape = *type.concrete_shape();
    ir::Value grad = g.outputs()[1 + i];
    const std::string node = name + ".update.";
    if (optimizer.kind == OptimizerKind::sgd) {
      ir::Value d = grad;
      if (weight_decay) d = b.add(Add, {grad, b.add(Mul, {w, weight_decay}, node + "decay")}, node + "decayed_grad");
      if (momentum) {
        std::string buffer_name = new_name(name + ".momentum");
        ir::Value buffer = b.state(buffer_name, shape);
        ir::Value next = b.add(Add, {b.add(Mul, {buffer, momentum}, node + "momentum_scaled"), d}, node + "momentum");
        result.states.push_back(buffer_name);
        new_states.push_back(next);
        d = optimizer.nesterov
                ? b.add(Add, {d, b.add(Mul, {next, momentum}, node + "nesterov_scaled")}, node + "nesterov")
                : next;
      }
      new_parameters.push_back(b.add(Sub, {w, b.add(Mul, {d, lr}, node + "scaled")}, node + "next"));
    } else {
      std::string m_name = new_name(name + ".exp_avg"), v_name = new_name(name + ".exp_avg_sq");
      ir::Value m = b.state(m_name, shape), v = b.state(v_name, shape);
      ir::Value decayed = decay_factor ? b.add(Mul, {w, decay_factor}, node + "decayed") : w;
      ir::Value m_next = b.add(
          Add,
          {b.add(Mul, {m, beta1}, node + "exp_avg_scaled"), b.add(Mul, {grad, one_minus_beta1}, node + "grad_scaled")},
          node + "exp_avg");
      ir::Value grad_squared = b.add(Mul, {grad, grad}, node + "grad_squared");
      ir::Value v_next = b.add(Add,
                               {b.add(Mul, {v, beta2}, node + "exp_avg_sq_scaled"),
                                b.add(Mul, {grad_squared, one_minus_beta2}, node + "grad_squared_scaled")},
                               node + "exp_avg_sq");
      ir::Value denominator = b.add(
          Add,
          {b.add(Div, {b.add(Sqrt, {v_next}, node + "sqrt"), bias_correction2_sqrt}, node + "corrected_sqrt"), epsilon},
          node + "denominator");
      ir::Value delta = b.add(Mul, {b.add(Div, {m_next, denominator}, node + "ratio"), step_size}, node + "delta");
      new_parameters.push_back(b.add(Sub, {decayed, delta}, node + "next"));
      result.states.push_back(m_name);
      result.states.push_back(v_name);
      new_states.push_back(m_next);
      new_states.push_back(v_next);
    }
  }

  // Outputs: the loss, the new parameters, the new states (the gradients
  // themselves are not outputs: they die inside the step).
  std::vector<ir::Value> outputs{g.outputs()[0]};
  std::vector<std::string> names{g.output_names()[0]};
  result.updated = result.parameters;
  result.updated.insert(result.updated.end(), result.states.begin(), result.states.end());
  for (const ir::Value& v : new_parameters) outputs.push_back(v);
  for (const ir::Value& v : new_states) outputs.push_back(v);
  for (const std::string& name : result.updated) names.push_back(name + ".next");
  // Each new value may be computed in its constant's own buffer: the update
  // is the last node to read it (backend::kUpdatedByAttribute).
  for (const std::string& name : result.updated)
    find_constant(g, name).node->attributes.set(backend::kUpdatedByAttribute, name + ".next");
  g.mutable_outputs() = outputs;
  g.mutable_output_names() = names;
  ops::infer_types(g);
  return result;
}

}  // namespace graft::training
