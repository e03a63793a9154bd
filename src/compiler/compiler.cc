// The compiler driver: passes, partitioning and claims after it, and plans
// (DESIGN.md section 1). See include/graft/compiler/compiler.h.
#include "graft/compiler/compiler.h"
#include "graft/compiler/device_placement.h"

#include <algorithm>

#include "graft/backend/backend.h"
#include "graft/fusion/fusion_options.h"
#include "graft/ops/type_inference.h"
#include "graft/ir/verify.h"
#include "graft/partition/partitioner.h"
#include "graft/passes/pass.h"

namespace graft::compiler {

namespace {

std::vector<std::string> pipeline_of(const CompileOptions& options) {
  return options.passes.empty() ? passes::default_pipeline() : options.passes;
}

backend::CompileOptions module_options(const CompileOptions& options) {
  backend::CompileOptions module;
  module.num_threads = std::max(1, options.num_threads);
  module.emit_source_dir = options.emit_source_dir;
  module.device_id = options.device_id;
  return module;
}

/// With the inputs' shapes now concrete, the shape computations that the
/// model's symbolic dimensions kept at load (`x.view(x.size(0), -1)`:
/// Shape -> Gather -> Unsqueeze -> Concat -> Reshape, in most exports with a
/// dynamic batch) fold to constants, so that the values after them get
/// concrete types and the backends' subgraphs there compile (else they fall
/// back to the reference kernels). `float16_in_float32`: the pipeline
/// computes float16 in float32, so the nodes that unrolling or inlining
/// brings out of control-flow bodies do too.
void fold_shape_computations(std::unique_ptr<ir::Graph>& graph, bool float16_in_float32, bool keep_quantized_weights) {
  bool has_shape_query = false;
  for (const auto& node : graph->nodes())
    if (node->op() == ir::OpId::Shape || node->op() == ir::OpId::Size) has_shape_query = true;
  if (!has_shape_query) return;
  passes::PassContext ctx;
  ctx.keep_quantized_weights = keep_quantized_weights;
  // A Loop whose trip count, or an If whose condition, was a shape may now
  // unroll or inline.
  std::vector<std::string> pipeline = {"fold-constants", "simplify-control-flow", "eliminate-dead-code"};
  if (float16_in_float32) pipeline.insert(pipeline.end() - 1, "compute-float16-in-float32");
  passes::run_pipeline(graph, pipeline, ctx);
}

/// Whether fold-constants keeps int8 weights unevaluated: it runs, and a
/// backend of the order `options` resolves to takes them so
/// (Backend::takes_quantized_weights).
bool keeps_quantized_weights(const CompileOptions& options) {
  const std::vector<std::string> pipeline = pipeline_of(options);
  if (std::find(pipeline.begin(), pipeline.end(), "fold-constants") == pipeline.end()) return false;
  for (const std::string& name : backend::resolve_backend_order(options.backends))
    if (backend::get_backend(name).takes_quantized_weights()) return true;
  return false;
}

/// Folds the quantized weights that fold-constants kept for a backend and
/// that no backend took (their product went to another backend or to
/// `ref`): what is left outside the subgraphs is evaluated once here, as
/// fold-constants would have, not at every run.
void fold_quantized_weights_left_over(std::unique_ptr<ir::Graph>& graph) {
  bool any = false;
  for (const auto& node : graph->nodes()) any = any || node->op() == ir::OpId::DequantizeLinear;
  if (!any) return;
  passes::PassContext ctx;
  passes::run_pipeline(graph, {"fold-constants", "eliminate-dead-code"}, ctx);
}

}  // namespace

partition::PartitionReport partition(std::unique_ptr<ir::Graph>& graph, const CompileOptions& options) {
  const std::string& fallback = backend::fallback_backend().name();
  std::vector<partition::BackendEntry> entries;
  const std::vector<std::string> order = backend::resolve_backend_order(options.backends);
  for (const std::string& name : order) {
    const backend::Backend& b = backend::get_backend(name);
    partition::BackendEntry entry;
    entry.name = name;
    if (!b.runs_the_rest()) entry.property = b.property();
    entry.unavailable = b.unavailable_reason();
    entries.push_back(std::move(entry));
  }
  partition::PartitionReport report = partition::partition_graph(graph, entries, fallback, options.annotations);
  if (keeps_quantized_weights(options)) fold_quantized_weights_left_over(graph);
  // Backends claimed their subgraphs above; claims of their own (fusion) take what is left.
  if (fusion::fusion_enabled(options.fusion)) {
    for (const backend::Backend* b : backend::all_backends()) {
      // A backend used only when named and not named here is not asked: its
      // availability probes a driver (OpenCL's ICD loader maps PoCL and libLLVM).
      if (!b->in_default_order() && std::find(order.begin(), order.end(), b->name()) == order.end()) continue;
      if (!b->unavailable_reason().empty()) continue;
      if (b->claim_remaining(graph, &report) && options.verify_after_each_pass) ir::verify(*graph);
    }
  }
  if (place_on_devices(*graph, options.device_id, &report) && options.verify_after_each_pass) ir::verify(*graph);
  return report;
}

PreparedGraph prepare(std::unique_ptr<ir::Graph> graph, const CompileOptions& options) {
  GRAFT_CHECK(graph, "compiler::prepare needs a graph");
  passes::PassContext ctx;
  ctx.verify_after_each = options.verify_after_each_pass;
  ctx.num_threads = std::max(1, options.num_threads);
  ctx.keep_quantized_weights = keeps_quantized_weights(options);
  passes::run_pipeline(graph, pipeline_of(options), ctx);
  PreparedGraph prepared;
  // Backends decline what they cannot size (a Conv output whose height is a
  // symbol), so with symbolic input dimensions every plan partitions the
  // graph again once its input shapes are known (specialize).
  bool symbolic_inputs = false;
  for (const ir::Node* in : graph->inputs()) symbolic_inputs |= !in->output_types[0].is_concrete();
  if (symbolic_inputs) prepared.unpartitioned = graph->clone();
  prepared.report = partition(graph, options);
  if (options.verify_after_each_pass) ir::verify(*graph);
  prepared.graph = std::move(graph);
  return prepared;
}

Plan specialize(const PreparedGraph& prepared, const std::vector<ir::ValueType>& input_types,
                const CompileOptions& options) {
  Plan plan;
  std::unique_ptr<ir::Graph> planned = (prepared.unpartitioned ? prepared.unpartitioned : prepared.graph)->clone();
  GRAFT_CHECK(input_types.size() == planned->inputs().size(), "one type per input expected");
  for (size_t i = 0; i < input_types.size(); ++i) {
    ir::ValueType& type = planned->inputs()[i]->output_types[0];
    if (!type.is_tensor()) {
      if (type.dtype == DType::undefined) type.dtype = input_types[i].dtype;
    } else {  // sequences and optionals keep what the model declares of them
      type = input_types[i];
    }
  }
  ops::infer_types(*planned);
  const std::vector<std::string> pipeline = pipeline_of(options);
  fold_shape_computations(planned,
                          std::find(pipeline.begin(), pipeline.end(), "compute-float16-in-float32") != pipeline.end(),
                          keeps_quantized_weights(options));
  if (prepared.unpartitioned) plan.report = partition(planned, options);
  plan.modules = compile_modules(*planned, module_options(options), &plan.fallbacks);
  plan.graph = std::shared_ptr<ir::Graph>(std::move(planned));
  for (const auto& module : plan.modules) plan.num_compiles += module != nullptr;
  return plan;
}

Plan generic_plan(const PreparedGraph& prepared, const std::vector<DType>& input_dtypes,
                  const CompileOptions& options) {
  Plan plan;
  std::unique_ptr<ir::Graph> planned = prepared.graph->clone();
  bool dtype_set = false;
  for (size_t i = 0; i < input_dtypes.size(); ++i) {
    ir::ValueType& type = planned->inputs()[i]->output_types[0];
    if (type.dtype == DType::undefined) {
      type.dtype = input_dtypes[i];
      dtype_set = true;
    }
  }
  if (dtype_set) ops::infer_types(*planned);
  plan.generic = true;
  plan.modules = compile_modules(*planned, module_options(options), &plan.fallbacks, false);
  plan.graph = std::shared_ptr<ir::Graph>(std::move(planned));
  for (const auto& module : plan.modules) plan.num_compiles += module != nullptr;
  return plan;
}

}  // namespace graft::compiler
