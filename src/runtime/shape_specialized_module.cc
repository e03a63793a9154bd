#include "graft/runtime/shape_specialized_module.h"

#include <algorithm>
#include <istream>
#include <iterator>
#include <ostream>
#include <string_view>

#include "graft/core/error.h"
#include "graft/ir/type_inference.h"

namespace graft::runtime {

namespace {

bool is_compute_op(const ir::Node& node) {
  static constexpr std::string_view kOps[] = {"Conv", "ConvTranspose", "MatMul", "Gemm", "LSTM", "GRU", "RNN"};
  if (!node.schema().domain.empty()) return false;
  const std::string_view name = node.schema().name;
  return std::find(std::begin(kOps), std::end(kOps), name) != std::end(kOps);
}

}  // namespace

bool ShapeSpecializedModule::worth_specializing(const ir::Graph& subgraph) {
  bool concrete = true, computes = false;
  for (const auto& node : subgraph.nodes()) {
    computes = computes || is_compute_op(*node);
    for (const ir::ValueType& t : node->output_types) concrete = concrete && t.is_concrete();
  }
  return computes && !concrete;
}

ShapeSpecializedModule::ShapeSpecializedModule(const Backend& backend, const ir::Graph& subgraph,
                                               CompileOptions options)
    : backend_(backend),
      subgraph_(subgraph.clone()),
      options_(std::move(options)),
      reference_(get_backend("ref").compile(*subgraph_, options_)) {}

struct ShapeSpecializedModule::Specialization {
  std::vector<Shape> shapes;
  std::unique_ptr<ir::Graph> graph;              // what `module` was compiled from
  std::shared_ptr<const CompiledModule> module;  // the reference module when the backend declined
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
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& s : specializations_)
      if (s->shapes == shapes) {
        s->last_use = ++clock_;
        if (s->declined) ++declined_runs_;
        return s;
      }
  }
  // Compiled outside the lock: other shapes keep running meanwhile.
  auto made = std::make_shared<Specialization>();
  made->shapes = shapes;
  made->graph = subgraph_->clone();
  for (size_t i = 0; i < inputs.size(); ++i)
    made->graph->inputs()[i]->output_types[0] = ir::ValueType::of(inputs[i].dtype(), inputs[i].shape());
  try {
    ir::infer_types(*made->graph);
    CompileOptions options = options_;
    options.num_threads = num_threads;
    made->module = backend_.compile(*made->graph, options);
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::unsupported) throw;
    made->graph.reset();
    made->module = reference_;
    made->declined = true;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  ++compiles_;
  for (const auto& s : specializations_)
    if (s->shapes == shapes) return s;  // another run compiled it meanwhile
  if (specializations_.size() >= kMaxSpecializations) {
    auto oldest = std::min_element(specializations_.begin(), specializations_.end(),
                                   [](const auto& a, const auto& b) { return a->last_use < b->last_use; });
    specializations_.erase(oldest);
  }
  made->last_use = ++clock_;
  if (made->declined) ++declined_runs_;
  specializations_.push_back(made);
  return made;
}

std::vector<Tensor> ShapeSpecializedModule::run(std::span<const Tensor> inputs, ModuleRunContext& context) const {
  std::shared_ptr<const Specialization> s = specialize(inputs, context.num_threads);
  return s->module->run(inputs, context);
}

void ShapeSpecializedModule::save(std::ostream& out) const { out << backend_.name(); }

size_t ShapeSpecializedModule::num_compiles() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return compiles_;
}

size_t ShapeSpecializedModule::num_declined_runs() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return declined_runs_;
}

namespace {

std::unique_ptr<CompiledModule> load_shape_specialized_module(std::istream& in, const ir::Graph& subgraph,
                                                              std::span<const Tensor> tensors) {
  if (!tensors.empty())
    fail(ErrorKind::invalid_model, "shape_specialized module: stores no tensors, got ", tensors.size());
  std::string name(std::istreambuf_iterator<char>(in), {});
  if (name.empty() || name.size() > 64)
    fail(ErrorKind::invalid_model, "shape_specialized module: no valid backend name saved");
  const Backend* backend = find_backend(name);
  if (!backend)
    fail(ErrorKind::invalid_model, "shape_specialized module: backend '", name,
         "' is not in this build of graft (it has: ", backend_names(), ")");
  return std::make_unique<ShapeSpecializedModule>(*backend, subgraph, CompileOptions{});
}

}  // namespace

GRAFT_REGISTER_MODULE_LOADER("shape_specialized", load_shape_specialized_module);

}  // namespace graft::runtime
