#include "graft/compiler/shape_specialized_module.h"

#include <algorithm>
#include <istream>
#include <iterator>
#include <ostream>
#include <string_view>

#include "graft/core/error.h"
#include "graft/ops/type_inference.h"

namespace graft::compiler {

namespace {

bool is_compute_op(const ir::Node& node) {
  using ir::OpId;
  static constexpr OpId kOps[] = {OpId::Conv, OpId::ConvTranspose, OpId::MatMul, OpId::Gemm,
                                  OpId::LSTM, OpId::GRU,           OpId::RNN};
  return std::find(std::begin(kOps), std::end(kOps), node.op()) != std::end(kOps);
}

// Multiply-adds (x2) of the compute ops of a body with concrete types, and
// the bytes of the constants they read (the weights a backend converts when
// it compiles).
struct Work {
  double flops = 0;
  double weight_bytes = 0;
};

Work work_of(const ir::Graph& body) {
  Work w;
  auto numel = [](const ir::ValueType& t) {
    double n = 1;
    for (const ir::Dim& d : t.dims) n *= static_cast<double>(std::max<int64_t>(d.value, 0));
    return n;
  };
  for (const auto& node : body.nodes()) {
    if (!is_compute_op(*node) || node->inputs.size() < 2 || !node->inputs[0] || !node->inputs[1]) continue;
    for (const ir::Value& in : node->inputs)
      if (in && in.node->op() == ir::OpId::Constant && in.node->constant_value.is_defined())
        w.weight_bytes += static_cast<double>(in.node->constant_value.nbytes());
    const ir::ValueType& a = body.type_of(node->inputs[0]);
    const ir::ValueType& b = body.type_of(node->inputs[1]);
    const ir::ValueType& out = node->output_types[0];
    if (!a.is_concrete() || !b.is_concrete() || !out.is_concrete() || b.dims.empty() || a.dims.empty()) continue;
    const ir::OpId op = node->op();
    const double b_numel = numel(b);
    if (op == ir::OpId::Conv) {  // out x (C_in / group x kernel) = out x (W / C_out)
      w.flops += 2 * numel(out) * b_numel / static_cast<double>(std::max<int64_t>(b.dims[0].value, 1));
    } else if (op == ir::OpId::ConvTranspose) {  // x x (W / C_in)
      w.flops += 2 * numel(a) * b_numel / static_cast<double>(std::max<int64_t>(b.dims[0].value, 1));
    } else if (op == ir::OpId::MatMul || op == ir::OpId::Gemm) {
      const bool trans_a = op == ir::OpId::Gemm && node->attributes.get_int("transA", 0) != 0;
      const int64_t k = trans_a ? a.dims.front().value : a.dims.back().value;
      w.flops += 2 * numel(out) * static_cast<double>(std::max<int64_t>(k, 1));
    } else {  // recurrent: every step multiplies by W and R
      const double steps_and_batch = numel(a) / static_cast<double>(std::max<int64_t>(a.dims.back().value, 1));
      double weights = b_numel;
      if (node->inputs.size() > 2 && node->inputs[2]) weights += numel(body.type_of(node->inputs[2]));
      w.flops += 2 * steps_and_batch * weights;
    }
  }
  return w;
}

}  // namespace

bool ShapeSpecializedModule::worth_compiling_at(const ir::Graph& body) {
  const Work w = work_of(body);
  return w.flops >= kMinFlopsPerWeightByte * w.weight_bytes;
}

bool ShapeSpecializedModule::worth_specializing(const ir::Graph& subgraph) {
  bool concrete = true, computes = false;
  for (const auto& node : subgraph.nodes()) {
    computes = computes || is_compute_op(*node);
    for (const ir::ValueType& t : node->output_types) concrete = concrete && t.is_concrete();
  }
  return computes && !concrete;
}

ShapeSpecializedModule::ShapeSpecializedModule(const backend::Backend& backend, const ir::Graph& subgraph,
                                               backend::CompileOptions options)
    : backend_(backend),
      subgraph_(subgraph.clone()),
      options_(std::move(options)),
      reference_(backend::fallback_backend().compile(*subgraph_, options_)) {}

struct ShapeSpecializedModule::Specialization {
  std::vector<Shape> shapes;
  std::unique_ptr<ir::Graph> graph;              // what `module` was compiled from
  std::shared_ptr<const backend::CompiledModule> module;  // the reference module when not compiled or declined
  bool declined = false;
  uint64_t last_use = 0;
};

std::shared_ptr<const ShapeSpecializedModule::Specialization> ShapeSpecializedModule::specialize(
    std::span<const Tensor> inputs, int num_threads) const {
  const std::vector<ir::Node*>& body_inputs = subgraph_->inputs();
  if (inputs.size() != body_inputs.size())
    fail(ErrorKind::invalid_argument, "subgraph module: ", inputs.size(), " inputs given, ", body_inputs.size(),
         " expected");
  std::vector<Shape> shapes;
  shapes.reserve(inputs.size());
  for (const Tensor& t : inputs) shapes.push_back(t.shape());
  // The specialization for `shapes` if there is one (mutex_ held): marked used.
  auto find = [&]() -> std::shared_ptr<Specialization> {
    for (const auto& s : specializations_)
      if (s->shapes == shapes) {
        s->last_use = ++clock_;
        reference_runs_ += s->declined;
        return s;
      }
    return nullptr;
  };
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto found = find()) return found;
  }
  // Compiled outside the lock: other shapes keep running meanwhile.
  auto made = std::make_shared<Specialization>();
  made->shapes = shapes;
  made->graph = subgraph_->clone();
  for (size_t i = 0; i < inputs.size(); ++i)
    made->graph->inputs()[i]->output_types[0] = ir::ValueType::of(inputs[i].dtype(), inputs[i].shape());
  bool compiled = false;
  try {
    ops::infer_types(*made->graph);
    if (worth_compiling_at(*made->graph)) {
      compiled = true;
      backend::CompileOptions options = options_;
      options.num_threads = num_threads;
      made->module = backend_.compile(*made->graph, options);
    }
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::unsupported) throw;
    made->module.reset();
  }
  if (!made->module) {
    made->graph.reset();
    made->module = reference_;
    made->declined = true;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  compiles_ += compiled;
  if (auto found = find()) return found;  // another run compiled it meanwhile
  if (specializations_.size() >= kMaxSpecializations) {
    auto oldest = std::min_element(specializations_.begin(), specializations_.end(),
                                   [](const auto& a, const auto& b) { return a->last_use < b->last_use; });
    specializations_.erase(oldest);
  }
  made->last_use = ++clock_;
  reference_runs_ += made->declined;
  specializations_.push_back(made);
  return made;
}

std::vector<Tensor> ShapeSpecializedModule::run(std::span<const Tensor> inputs, backend::ModuleRunContext& context) const {
  std::shared_ptr<const Specialization> s = specialize(inputs, context.num_threads);
  return s->module->run(inputs, context);
}

void ShapeSpecializedModule::save(std::ostream& out) const { out << backend_.name(); }

size_t ShapeSpecializedModule::num_compiles() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return compiles_;
}

size_t ShapeSpecializedModule::num_reference_runs() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return reference_runs_;
}

namespace {

std::unique_ptr<backend::CompiledModule> load_shape_specialized_module(std::istream& in, const ir::Graph& subgraph,
                                                              std::span<const Tensor> tensors) {
  if (!tensors.empty())
    fail(ErrorKind::invalid_model, "shape_specialized module: stores no tensors, got ", tensors.size());
  std::string name(std::istreambuf_iterator<char>(in), {});
  if (name.empty() || name.size() > 64)
    fail(ErrorKind::invalid_model, "shape_specialized module: no valid backend name saved");
  const backend::Backend* backend = backend::find_backend(name);
  if (!backend)
    fail(ErrorKind::invalid_model, "shape_specialized module: backend '", name,
         "' is not in this build of graft (it has: ", backend::backend_names(), ")");
  return std::make_unique<ShapeSpecializedModule>(*backend, subgraph, backend::CompileOptions{});
}

}  // namespace

GRAFT_REGISTER_MODULE_LOADER("shape_specialized", load_shape_specialized_module);

}  // namespace graft::compiler
