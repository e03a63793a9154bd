#include "graft/runtime/session.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <functional>
#include <optional>

#include "converted_weights.h"
#include "graft/backend/backend.h"
#include "graft/codegen/compile_cache.h"
#include "graft/core/parallel.h"
#include "graft/core/printable.h"
#include "graft/runtime/artifact.h"

namespace graft::runtime {

/// What is prepared per input-shape signature: the graph specialized to the
/// concrete input shapes (types inferred throughout) and its executor.
struct Session::Plan {
  compiler::Plan compiled;
  std::unique_ptr<backend::Executor> executor;
};

int max_specialized_plans(std::optional<int> option) {
  auto check = [](long value, const std::string& shown) {
    if (value < 0 || value > 1024)
      fail(ErrorKind::invalid_argument, shown, " is not a number of plans (expected 0..1024)");
    return static_cast<int>(value);
  };
  if (option) return check(*option, "max_specialized_plans " + std::to_string(*option));
  const char* env = std::getenv("GRAFT_MAX_PLANS");
  if (!env || !*env) return SessionOptions::kDefaultMaxSpecializedPlans;
  std::string shown = printable_excerpt(env);
  char* end = nullptr;
  errno = 0;
  long value = std::strtol(env, &end, 10);
  if (*end != '\0' || errno != 0 || end == env) value = -1;
  return check(value, "GRAFT_MAX_PLANS='" + shown + "'");
}

uint64_t parse_byte_size(const std::string& text, const std::string& what) {
  std::string shown = printable_excerpt(text);
  auto bad = [&]() -> uint64_t {
    fail(ErrorKind::invalid_argument, what, " '", shown, "' is not a size (bytes, or with K, M, G or T: 512M, 2G)");
  };
  if (text.empty() || text.size() > 32) return bad();
  char* end = nullptr;
  errno = 0;
  double value = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || errno != 0 || !(value >= 0)) return bad();
  std::string unit(end);
  if (unit.size() >= 2 && (unit.ends_with("iB") || unit.ends_with("ib"))) unit.resize(unit.size() - 2);
  else if (!unit.empty() && (unit.back() == 'B' || unit.back() == 'b')) unit.pop_back();
  double scale = 1;
  if (unit == "K" || unit == "k") scale = 1024.0;
  else if (unit == "M" || unit == "m") scale = 1024.0 * 1024;
  else if (unit == "G" || unit == "g") scale = 1024.0 * 1024 * 1024;
  else if (unit == "T" || unit == "t") scale = 1024.0 * 1024 * 1024 * 1024;
  else if (!unit.empty()) return bad();
  double bytes = value * scale;
  if (bytes >= 1.8e19) return bad();
  return static_cast<uint64_t>(bytes);
}

uint64_t max_memory(std::optional<uint64_t> option) {
  if (option) return *option;
  const char* env = std::getenv("GRAFT_MAX_MEMORY");
  if (env && *env) return parse_byte_size(env, "GRAFT_MAX_MEMORY");
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) : 0;
}

Device parse_device(const std::string& text) {
  std::string type = text, id_text;
  if (size_t colon = text.find(':'); colon != std::string::npos) {
    type = text.substr(0, colon);
    id_text = text.substr(colon + 1);
  }
  Device device;
  if (type == "cpu") device.type = DeviceType::cpu;
  else if (type == "opencl") device.type = DeviceType::opencl;
  else if (type == "cuda") device.type = DeviceType::cuda;
  else fail(ErrorKind::invalid_argument, "device '", printable_excerpt(text), "': the type is cpu, opencl or cuda");
  if (text.find(':') != std::string::npos) {
    if (id_text.empty() || id_text.size() > 4 || id_text.find_first_not_of("0123456789") != std::string::npos)
      fail(ErrorKind::invalid_argument, "device '", printable_excerpt(text), "': the id after ':' is a number (opencl:0)");
    device.id = std::stoi(id_text);
  }
  return device;
}

compiler::CompileOptions compile_options_of(const SessionOptions& options, int num_threads) {
  compiler::CompileOptions compile;
  compile.backends = options.backends;
  compile.annotations = options.annotations;
  compile.fusion = options.fusion;
  compile.passes = options.passes;
  compile.verify_after_each_pass = options.verify_after_each_pass;
  compile.num_threads = num_threads;
  compile.emit_source_dir = options.emit_source_dir;
  compile.device_id = options.device.id;
  if (options.device.type != DeviceType::cpu && compile.backends.empty()) {
    // The device's backend first, then what the host would run.
    const backend::Backend* device_backend = nullptr;
    for (const backend::Backend* b : backend::all_backends())
      if (b->device().type == options.device.type) device_backend = b;
    if (!device_backend)
      fail(ErrorKind::unsupported, "no backend runs on ", to_string(options.device), " in this build");
    std::string why = device_backend->unavailable_reason();
    if (!why.empty()) fail(ErrorKind::unsupported, "device ", to_string(options.device), " is unavailable: ", why);
    compile.backends.push_back(device_backend->name());
    for (const std::string& name : backend::resolve_backend_order({}))
      if (name != device_backend->name()) compile.backends.push_back(name);
  }
  return compile;
}

namespace {

/// The plan cache key of one set of input types.
std::string signature(const std::vector<DType>& dtypes, const std::vector<Shape>& shapes) {
  std::string key;
  for (size_t i = 0; i < dtypes.size(); ++i) key += std::string(dtype_name(dtypes[i])) + shape_to_string(shapes[i]) + ";";
  return key;
}
}  // namespace

Session::Session(ArtifactPath artifact, SessionOptions options) : options_(std::move(options)) {
  set_threads();
  // Loaders that rebuild primitives size them for the current thread count.
  ScopedNumThreads threads(num_threads_);
  restore(load_artifact(artifact.path));
}

Session::Session(std::unique_ptr<ir::Graph> graph, SessionOptions options) : options_(std::move(options)) {
  GRAFT_CHECK(graph, "Session needs a graph");
  set_threads();
  prepared_ = compiler::prepare(std::move(graph), compile_options_);
  describe_io();
}

Session::Session(RestoredPlan plan, SessionOptions options) : options_(std::move(options)) {
  set_threads();
  restore(std::move(plan));
}

Session::~Session() = default;

void Session::set_threads() {
  if (options_.num_threads < 0 || options_.num_threads > 1024)
    fail(ErrorKind::invalid_argument, "thread count ", options_.num_threads, " is out of range (expected 1..1024)");
  num_threads_ = options_.num_threads > 0 ? options_.num_threads : default_num_threads();
  adapt_threads_ = adapt_threads_to_load(options_.adapt_threads);
  core_availability_ = options_.core_availability;
  max_specialized_plans_ = max_specialized_plans(options_.max_specialized_plans);
  max_memory_ = max_memory(options_.max_memory);
  plans_ = std::make_unique<PlanCache<Plan>>(static_cast<size_t>(max_specialized_plans_));
  compile_options_ = compile_options_of(options_, num_threads_);
}

void Session::describe_io() {
  const ir::Graph& graph = *prepared_.graph;
  for (const ir::Node* in : graph.inputs()) inputs_.push_back({in->output_names[0], in->output_types[0]});
  for (size_t i = 0; i < graph.outputs().size(); ++i)
    outputs_.push_back({graph.output_names()[i], graph.type_of(graph.outputs()[i])});
}

void Session::restore(RestoredPlan restored) {
  GRAFT_CHECK(restored.graph, "restored plan without a graph");
  restored_ = true;
  auto plan = std::make_shared<Plan>();
  plan->compiled.graph = std::move(restored.graph);
  plan->compiled.modules = std::move(restored.modules);
  plan->executor = std::make_unique<backend::Executor>(*plan->compiled.graph, plan->compiled.modules);
  prepared_.graph = plan->compiled.graph->clone();
  describe_io();
  std::vector<DType> dtypes;
  std::vector<Shape> shapes;
  for (const ValueInfo& info : inputs_) {
    auto shape = info.type.concrete_shape();
    if (!shape) fail(ErrorKind::invalid_model, "artifact input '", info.name, "' has no concrete shape (", info.type.to_string(), ")");
    dtypes.push_back(info.type.dtype);
    shapes.push_back(*shape);
  }
  plans_->insert(signature(dtypes, shapes), plan);
}

void Session::validate_inputs(const std::vector<Tensor>& inputs) const {
  if (inputs.size() != inputs_.size())
    fail(ErrorKind::invalid_argument, "the model takes ", inputs_.size(), " inputs, got ", inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const ValueInfo& info = inputs_[i];
    const Tensor& t = inputs[i];
    if (!t.is_defined()) fail(ErrorKind::invalid_argument, "input '", info.name, "' is missing");
    if (t.is_none()) {  // an empty optional
      if (!info.type.optional)
        fail(ErrorKind::invalid_argument, "input '", info.name, "': expected ", info.type.to_string(), ", got none");
      continue;
    }
    if (t.is_sequence() != info.type.sequence)
      fail(ErrorKind::invalid_argument, "input '", info.name, "': expected ", info.type.to_string(), ", got ",
           t.type_string());
    if (t.is_sequence() || info.type.optional) {
      if (info.type.dtype != DType::undefined && t.dtype() != info.type.dtype)
        fail(ErrorKind::invalid_argument, "input '", info.name, "': expected ", info.type.to_string(), ", got ",
             t.type_string());
      continue;  // the shapes are checked by the ops that read them
    }
    if (info.type.dtype != DType::undefined && t.dtype() != info.type.dtype)
      fail(ErrorKind::invalid_argument, "input '", info.name, "': expected dtype ", dtype_name(info.type.dtype),
           ", got ", dtype_name(t.dtype()));
    if (!info.type.has_rank) continue;
    if (t.rank() != static_cast<int64_t>(info.type.dims.size()))
      fail(ErrorKind::invalid_argument, "input '", info.name, "': expected shape ", info.type.to_string(),
           " (rank ", info.type.dims.size(), "), got ", t.type_string());
    for (size_t d = 0; d < info.type.dims.size(); ++d)
      if (info.type.dims[d].is_known() && info.type.dims[d].value != t.dim(static_cast<int64_t>(d)))
        fail(ErrorKind::invalid_argument, "input '", info.name, "': expected shape ", info.type.to_string(),
             ", got ", t.type_string(), " (dimension ", d, " differs)");
  }
}

std::shared_ptr<Session::Plan> Session::plan_for(const std::vector<DType>& dtypes, const std::vector<Shape>& shapes,
                                                 bool specialized) const {
  std::string key = signature(dtypes, shapes);
  std::lock_guard<std::mutex> lock(mutex_);
  if (specialized || !prepared_.unpartitioned) {  // fixed input shapes: one plan, always specialized
    if (plans_->contains(key)) return plans_->lookup(key).plan;
  } else {
    PlanCache<Plan>::Lookup found = plans_->lookup(key);
    if (found.choice == PlanCache<Plan>::Choice::cached) return found.plan;
    if (found.choice == PlanCache<Plan>::Choice::generic) return generic_plan(dtypes);
  }
  std::shared_ptr<Plan> plan = make_specialized_plan(dtypes, shapes);
  plans_->insert(key, plan);
  return plan;
}

std::shared_ptr<Session::Plan> Session::make_specialized_plan(const std::vector<DType>& dtypes,
                                                              const std::vector<Shape>& shapes) const {
  std::vector<ir::ValueType> input_types;
  for (size_t i = 0; i < dtypes.size(); ++i) input_types.push_back(ir::ValueType::of(dtypes[i], shapes[i]));
  auto plan = std::make_shared<Plan>();
  plan->compiled = compiler::specialize(prepared_, input_types, compile_options_);
  num_compiles_ += plan->compiled.num_compiles;
  if (!plan->compiled.fallbacks.empty()) {
    std::string shown;
    for (size_t i = 0; i < input_types.size(); ++i) shown += (i ? ", " : "") + input_types[i].to_string();
    for (compiler::CompileFallback fallback : plan->compiled.fallbacks) {
      fallback.inputs = shown;
      fallbacks_.push_back(std::move(fallback));
    }
  }
  // With fixed input shapes this is the only plan there will be: weights its
  // modules keep converted need not be kept twice (the module releases the
  // originals once converted; set_weight can still replace them whole).
  bool fixed_shapes = std::all_of(inputs_.begin(), inputs_.end(), [](const ValueInfo& in) { return in.type.is_concrete(); });
  if (fixed_shapes && plans_->size() == 0) mark_weights_only_converted(*plan->compiled.graph, plan->compiled.modules);
  plan->executor = std::make_unique<backend::Executor>(*plan->compiled.graph, plan->compiled.modules);
  return plan;
}

/// The graph as prepared (partitioned and fused with the model's symbolic
/// dimensions), made once per input dtypes (compiler::generic_plan).
std::shared_ptr<Session::Plan> Session::generic_plan(const std::vector<DType>& dtypes) const {
  std::string key;
  for (DType dtype : dtypes) key += std::string(dtype_name(dtype)) + ";";
  ++num_generic_runs_;
  if (auto it = generic_plans_.find(key); it != generic_plans_.end()) return it->second;
  auto plan = std::make_shared<Plan>();
  plan->compiled = compiler::generic_plan(prepared_, dtypes, compile_options_);
  num_compiles_ += plan->compiled.num_compiles;
  for (compiler::CompileFallback fallback : plan->compiled.fallbacks) {
    fallback.inputs = "any shapes (the shape-generic plan)";
    fallbacks_.push_back(std::move(fallback));
  }
  plan->executor = std::make_unique<backend::Executor>(*plan->compiled.graph, plan->compiled.modules);
  generic_plans_.emplace(key, plan);
  return plan;
}

void Session::set_weight(const std::string& name, const Tensor& value) {
  ir::Node* weight = nullptr;
  std::function<void(const ir::Graph&)> find = [&](const ir::Graph& graph) {
    for (const auto& node : graph.nodes()) {
      if (node->op() == ir::OpId::Constant && !weight &&
          (node->name == name || (!node->output_names.empty() && node->output_names[0] == name)))
        weight = node.get();
      if (node->subgraph && !weight) find(*node->subgraph);
    }
  };
  find(*prepared_.graph);
  if (!weight)
    fail(ErrorKind::invalid_argument, "the prepared model has no weight named '", name,
         "' (it may have been folded into another constant by a pass)");
  Tensor& current = weight->constant_value;
  if (value.dtype() != current.dtype() || value.shape() != current.shape())
    fail(ErrorKind::invalid_argument, "weight '", name, "' is ", current.type_string(), ", got ", value.type_string());
  // A value computed in the weight's own buffer (kUpdatedByAttribute): only
  // the version changes.
  if (value.raw_data() == current.raw_data()) {
    current.mark_modified();
    return;
  }
  // Subgraph bodies and plans share the constant's storage: one write updates them all.
  current.copy_from(value);
}

size_t Session::num_plans() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return plans_->size();
}

size_t Session::num_generic_runs() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return num_generic_runs_;
}

std::vector<compiler::CompileFallback> Session::compile_fallbacks() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return fallbacks_;
}

size_t Session::num_compiles() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return num_compiles_;
}

partition::PartitionReport Session::partition_report_for(const std::vector<ir::ValueType>& input_types) const {
  std::shared_ptr<Plan> plan = plan_for_types_impl(input_types);
  return plan->compiled.report ? *plan->compiled.report : prepared_.report;
}

Session::PlannedGraph Session::plan_for_types(const std::vector<ir::ValueType>& input_types) const {
  std::shared_ptr<Plan> plan = plan_for_types_impl(input_types);
  return PlannedGraph{plan->compiled.graph, plan->compiled.modules};
}

std::shared_ptr<Session::Plan> Session::plan_for_types_impl(const std::vector<ir::ValueType>& input_types) const {
  if (input_types.size() != inputs_.size())
    fail(ErrorKind::invalid_argument, "the model takes ", inputs_.size(), " inputs, got ", input_types.size(), " types");
  std::vector<DType> dtypes;
  std::vector<Shape> shapes;
  for (size_t i = 0; i < input_types.size(); ++i) {
    auto shape = input_types[i].concrete_shape();
    if (!shape) fail(ErrorKind::invalid_argument, "input '", inputs_[i].name, "': ", input_types[i].to_string(), " is not concrete");
    dtypes.push_back(input_types[i].dtype);
    shapes.push_back(*shape);
  }
  return plan_for(dtypes, shapes, true);
}

std::vector<Tensor> Session::run(const std::vector<Tensor>& inputs, backend::RunStats* stats) const {
  return run(inputs, backend::RunLimits{}, stats);
}

std::vector<Tensor> Session::run(const std::vector<Tensor>& inputs, const backend::RunLimits& limits,
                                 backend::RunStats* stats) const {
  validate_inputs(inputs);
  std::vector<DType> dtypes;
  std::vector<Shape> shapes;
  for (const Tensor& t : inputs) {
    dtypes.push_back(t.dtype());
    shapes.push_back(t.shape());
  }
  std::shared_ptr<Plan> plan = plan_for(dtypes, shapes, false);
  std::unique_ptr<backend::BufferPool> pool;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!idle_pools_.empty()) {
      pool = std::move(idle_pools_.back());
      idle_pools_.pop_back();
    }
  }
  if (!pool) pool = std::make_unique<backend::BufferPool>();
  pool->set_memory_limit(static_cast<size_t>(max_memory_));
  backend::RunOptions run_options;
  run_options.num_threads = num_threads_;
  // In progress until the run ends: only the time of runs counts towards
  // the decision (thread_count_policy.h).
  std::optional<CoreAvailability::Run> adapted;
  if (adapt_threads_ && num_threads_ > 1) {
    adapted.emplace(core_availability_ ? *core_availability_ : CoreAvailability::global(), num_threads_);
    run_options.num_threads = adapted->threads();
  }
  if (stats) stats->num_threads = run_options.num_threads;
  run_options.profile = options_.profile;
  run_options.limits = limits;
  std::vector<Tensor> outputs;
  try {
    outputs = plan->executor->run(inputs, *pool, run_options, stats);
  } catch (...) {
    std::lock_guard<std::mutex> lock(mutex_);
    idle_pools_.push_back(std::move(pool));
    throw;
  }
  adapted.reset();  // the background compiles below are not the run's
  {
    std::lock_guard<std::mutex> lock(mutex_);
    idle_pools_.push_back(std::move(pool));
  }
  if (stats) stats->generic_plan = plan->compiled.generic;
  // Fused kernels ran interpreted until now if they were not compiled yet:
  // their compiles may take a core from here on.
  codegen::CompileCache::global().start_background_compiles();
  return outputs;
}

std::map<std::string, Tensor> Session::run(const std::map<std::string, Tensor>& inputs, backend::RunStats* stats) const {
  std::vector<Tensor> ordered;
  for (const ValueInfo& info : inputs_) {
    auto it = inputs.find(info.name);
    if (it == inputs.end()) fail(ErrorKind::invalid_argument, "input '", info.name, "' is missing");
    ordered.push_back(it->second);
  }
  for (const auto& [name, tensor] : inputs) {
    bool known = false;
    for (const ValueInfo& info : inputs_) known = known || info.name == name;
    if (!known) fail(ErrorKind::invalid_argument, "the model has no input named '", name, "'");
  }
  std::vector<Tensor> outs = run(ordered, stats);
  std::map<std::string, Tensor> result;
  for (size_t i = 0; i < outs.size(); ++i) result[outputs_[i].name] = outs[i];
  return result;
}

}  // namespace graft::runtime
