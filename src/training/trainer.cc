// Trainer: one Session run per step over the training graph, the new
// parameters and optimizer state written back into the session's Constants
// after each run (Session::set_weight bumps their storage version, so a
// backend's converted copy of a weight is refreshed at the next run). The
// update usually computes them in the Constants' own buffers already
// (backend::kUpdatedByAttribute): then only the versions change. Each
// set of input shapes gets its own training graph and session (a plan),
// built at its first step; the newest parameters and state are kept here
// (current_), and a plan whose Constants are older than the last step gets
// them before it runs, so plans share one optimizer state and step count.
#include "graft/training/trainer.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "graft/backend/backend.h"
#include "graft/core/error.h"
#include "graft/frontend/onnx_import.h"
#include "graft/ir/indexed_graph.h"
#include "graft/ops/type_inference.h"
#include "graft/passes/pass.h"

namespace graft::training {

namespace {

bool has_value(const ir::Graph& graph, const std::string& name) {
  for (const std::string& out : graph.output_names())
    if (out == name) return true;
  for (const auto& n : graph.nodes())
    for (const std::string& out : n->output_names)
      if (out == name) return true;
  return false;
}

double scalar_value(const Tensor& t) {
  if (t.dtype() == DType::float32) return *t.data<float>();
  if (t.dtype() == DType::float64) return *t.data<double>();
  fail(ErrorKind::invalid_argument, "training: the loss is ", t.type_string(),
       "; expected a float32 or float64 scalar");
}

/// The graph of `model`'s nodes that `outputs` need, with only the inputs they read.
std::unique_ptr<ir::Graph> keep_needed(const ir::Graph& model, const std::vector<size_t>& outputs) {
  ir::IndexedGraph indexed(model);
  std::vector<char> live(indexed.num_nodes(), 0);
  std::vector<uint32_t> stack;
  for (size_t k : outputs) {
    const ir::Entry& e = indexed.outputs()[k];
    if (e.present() && !live[e.node_id]) live[e.node_id] = 1, stack.push_back(e.node_id);
  }
  while (!stack.empty()) {
    uint32_t id = stack.back();
    stack.pop_back();
    for (const ir::Entry& e : indexed.inputs(id))
      if (e.present() && !live[e.node_id]) live[e.node_id] = 1, stack.push_back(e.node_id);
  }
  auto result = std::make_unique<ir::Graph>();
  result->name = model.name;
  result->opset_imports = model.opset_imports;
  std::unordered_map<const ir::Node*, ir::Node*> copies;
  // Graph inputs first, in the model's order.
  for (const ir::Node* in : model.inputs())
    for (uint32_t id = 0; id < indexed.num_nodes(); ++id)
      if (&indexed.node(id) == in && live[id]) copies[in] = result->add_input(in->output_names[0], in->output_types[0]);
  for (uint32_t id = 0; id < indexed.num_nodes(); ++id) {
    const ir::Node& n = indexed.node(id);
    if (!live[id] || copies.count(&n)) continue;
    std::vector<ir::Value> inputs;
    for (const ir::Value& v : n.inputs) inputs.push_back(v.node ? ir::Value{copies.at(v.node), v.index} : ir::Value{});
    copies[&n] = result->copy_node(n, inputs);
  }
  for (size_t k : outputs) {
    const ir::Value& v = model.outputs()[k];
    result->add_output(ir::Value{copies.at(v.node), v.index}, model.output_names()[k]);
  }
  return result;
}

}  // namespace

Trainer::Trainer(const ir::Graph& model, TrainerOptions options) : model_(model.clone()), options_(std::move(options)) {
  if (options_.loss.empty()) fail(ErrorKind::invalid_argument, "training: name the loss value");
  if (!has_value(*model_, options_.loss))
    fail(ErrorKind::invalid_argument, "training: the model has no value named '", options_.loss, "' (the loss)");
  validate(options_.optimizer);
  set_learning_rate(options_.learning_rate);
  for (const ir::Node* in : model_->inputs()) input_names_.push_back(in->output_names[0]);
  // The Constants share storage with `model`'s: the trained values go to
  // fresh tensors, never into the caller's graph.
  for (const auto& n : model_->nodes())
    if (n->op() == ir::OpId::Constant) n->constant_value = n->constant_value.clone();
}

Trainer::~Trainer() = default;

void Trainer::set_learning_rate(float learning_rate) {
  if (!std::isfinite(learning_rate) || learning_rate < 0)
    fail(ErrorKind::invalid_argument, "training: the learning rate is ", learning_rate,
         "; expected a finite value >= 0");
  options_.learning_rate = learning_rate;
}

const std::vector<std::string>& Trainer::parameters() const {
  return plans_.empty() ? options_.parameters : layout_.parameters;
}

std::unique_ptr<Trainer::StepPlan> Trainer::build(const std::map<std::string, Tensor>& inputs) {
  std::unique_ptr<ir::Graph> fixed = model_->clone();
  auto plan = std::make_unique<StepPlan>();
  for (ir::Node* in : fixed->inputs()) {
    const Tensor& value = inputs.at(in->output_names[0]);
    ir::ValueType& type = in->output_types[0];
    bool fits = type.dtype == value.dtype() && (!type.has_rank || type.dims.size() == value.shape().size());
    for (size_t d = 0; fits && type.has_rank && d < type.dims.size(); ++d)
      fits = !type.dims[d].is_known() || type.dims[d].value == value.shape()[d];
    if (!fits)
      fail(ErrorKind::invalid_argument, "training: input '", in->output_names[0], "' is ", type.to_string(), ", got ",
           value.type_string());
    type = ir::ValueType::of(value.dtype(), value.shape());
    plan->input_shapes.push_back(value.shape());
  }
  const bool first = plans_.empty();
  // A later plan's weights get current_ below; its own storage keeps them
  // from the first plan's, which set_weight writes in place.
  if (!first)
    for (const auto& n : fixed->nodes())
      if (n->op() == ir::OpId::Constant) n->constant_value = n->constant_value.clone();
  autodiff::GradientOptions gradient_options;
  gradient_options.recompute_pointwise_activations = options_.recompute_pointwise_activations;
  TrainingGraph layout =
      build_training_graph(*fixed, options_.loss, options_.parameters, options_.optimizer, gradient_options);
  if (first) {
    for (const auto& n : layout.graph->nodes())
      if (n->op() == ir::OpId::Constant && !n->output_names.empty() &&
          std::find(layout.updated.begin(), layout.updated.end(), n->output_names[0]) != layout.updated.end())
        current_[n->output_names[0]] = n->constant_value;
    stats_ = {};
    for (const std::string& name : layout.parameters) stats_.parameter_bytes += current_.at(name).nbytes();
    for (const std::string& name : layout.states) stats_.state_bytes += current_.at(name).nbytes();
    plan->synced_at_step = steps_;
  } else {
    GRAFT_CHECK(layout.updated == layout_.updated, "training: a new plan updates other tensors than the first");
  }
  runtime::SessionOptions session_options = options_.session;
  // The update goes to the fusion pass, not to a backend's subgraphs: a
  // vendor library would take it as post-ops of the gradient's matrix
  // product, whose scalar operands (step size, bias corrections) change
  // every step, and dnnl's then go stale (docs/training.md).
  for (const std::string& name : backend::resolve_backend_order(session_options.backends)) {
    if (!backend::get_backend(name).property()) continue;
    for (const std::string& node : layout.update_nodes) session_options.annotations.forbidden[node].insert(name);
  }
  // The scalars every parameter's update shares run once, on the reference
  // kernels: fused with the updates, they would join every parameter's
  // update into one node (and be computed again at every element, powers
  // included). Apart, each parameter's update is a fused node of its own,
  // dense over its elements, and they all lower to the same kernel: one
  // compile.
  const std::string& fallback = backend::fallback_backend().name();
  for (const auto& node : layout.graph->nodes())
    if (std::find(layout.shared_scalar_nodes.begin(), layout.shared_scalar_nodes.end(), node->name) !=
        layout.shared_scalar_nodes.end())
      node->backend = fallback;
  session_options.passes = passes::default_pipeline();
  std::erase(session_options.passes, std::string("fold-constants"));
  plan->session = std::make_unique<runtime::Session>(std::move(layout.graph), session_options);
  if (first) layout_ = std::move(layout);
  return plan;
}

Trainer::StepPlan& Trainer::plan_for(const std::map<std::string, Tensor>& inputs) {
  std::vector<Shape> shapes;
  for (const std::string& name : input_names_) shapes.push_back(inputs.at(name).shape());
  for (const auto& plan : plans_)
    if (plan->input_shapes == shapes) return *plan;
  std::unique_ptr<StepPlan> plan = build(inputs);
  if (plans_.size() >= kMaxPlans) {
    auto oldest = std::min_element(plans_.begin(), plans_.end(),
                                   [](const auto& a, const auto& b) { return a->last_used < b->last_used; });
    if (oldest->get() == last_plan_) last_plan_ = nullptr;
    plans_.erase(oldest);
  }
  plans_.push_back(std::move(plan));
  return *plans_.back();
}

float Trainer::step(const std::map<std::string, Tensor>& inputs) {
  for (const auto& [name, value] : inputs)
    if (std::find(input_names_.begin(), input_names_.end(), name) == input_names_.end())
      fail(ErrorKind::invalid_argument, "training: the model has no input named '", name, "'");
  for (const std::string& name : input_names_)
    if (!inputs.count(name)) fail(ErrorKind::invalid_argument, "training: no value for the model's input '", name, "'");
  StepPlan& plan = plan_for(inputs);
  if (plan.synced_at_step != steps_) {  // other plans ran the steps since: it takes their result
    for (const std::string& name : layout_.updated) plan.session->set_weight(name, current_.at(name));
    plan.synced_at_step = steps_;
  }
  std::vector<Tensor> feed;
  for (const std::string& name : input_names_) feed.push_back(inputs.at(name));
  feed.push_back(Tensor::scalar<float>(options_.learning_rate));
  if (options_.optimizer.kind == OptimizerKind::adamw)
    feed.push_back(Tensor::scalar<float>(static_cast<float>(steps_ + 1)));
  backend::RunStats run_stats;
  std::vector<Tensor> outputs = plan.session->run(feed, &run_stats);
  stats_.peak_bytes = run_stats.memory.peak_bytes;
  for (size_t i = 0; i < layout_.updated.size(); ++i) {
    plan.session->set_weight(layout_.updated[i], outputs[1 + i]);
    current_[layout_.updated[i]] = outputs[1 + i];
  }
  ++steps_;
  plan.synced_at_step = steps_;
  plan.last_used = steps_;
  last_plan_ = &plan;
  return static_cast<float>(scalar_value(outputs[0]));
}

Tensor Trainer::parameter(const std::string& name) const {
  if (!plans_.empty()) {
    auto it = current_.find(name);
    if (it == current_.end() ||
        std::find(layout_.parameters.begin(), layout_.parameters.end(), name) == layout_.parameters.end())
      fail(ErrorKind::invalid_argument, "training: '", name, "' is not a trained parameter");
    return it->second.clone();
  }
  for (const auto& n : model_->nodes())
    if (n->op() == ir::OpId::Constant && !n->output_names.empty() && n->output_names[0] == name)
      return n->constant_value;
  fail(ErrorKind::invalid_argument, "training: the model has no initializer named '", name, "'");
}

std::unique_ptr<ir::Graph> Trainer::trained_model() const {
  std::vector<size_t> outputs;
  for (size_t k = 0; k < model_->outputs().size(); ++k)
    if (model_->output_names()[k] != options_.loss) outputs.push_back(k);
  if (outputs.empty())
    for (size_t k = 0; k < model_->outputs().size(); ++k) outputs.push_back(k);
  std::unique_ptr<ir::Graph> result = keep_needed(*model_, outputs);
  for (const auto& n : result->nodes()) {
    if (n->op() != ir::OpId::Constant || n->output_names.empty()) continue;
    if (std::find(layout_.parameters.begin(), layout_.parameters.end(), n->output_names[0]) == layout_.parameters.end())
      continue;
    auto it = current_.find(n->output_names[0]);
    if (it != current_.end()) n->constant_value = it->second.clone();
  }
  ops::infer_types(*result);  // the outputs' types, for the ONNX file
  return result;
}

void Trainer::export_model(const std::string& path) const { frontend::save_onnx(*trained_model(), path); }

}  // namespace graft::training
