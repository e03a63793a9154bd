// Constant folding, in rounds. A round is one walk in topological order: a
// node is evaluated with its reference kernel when every input is a Constant
// in the new graph, and replaced by Constant nodes holding its outputs. Shape
// and Size nodes are folded as soon as their input's shape is fully known
// (after type inference), even when the input itself is not constant; this is
// what collapses the shape computations exporters emit. Types are inferred
// again after a round that changed something, and another round runs: a
// Reshape whose shape just became constant gets a known output shape, which
// a Shape further down can then fold (swin_t's window partitions chain
// several such steps). Random ops and control flow are never folded, nor,
// with PassContext::keep_quantized_weights, the int8 weights' DequantizeLinear
// that only products read as their weights (ops/quantized_weight.h).
#include <algorithm>
#include <new>
#include <string_view>

#include "graft/ir/graph_rebuilder.h"
#include "graft/ops/evaluate_node.h"
#include "graft/ops/op_context.h"
#include "graft/ops/quantized_weight.h"
#include "graft/ops/type_inference.h"
#include "graft/passes/pass.h"

namespace graft::passes {

namespace {

bool is_constant(ir::Value v) { return v.node && v.node->op() == ir::OpId::Constant; }

bool is_fused_pointwise(const ir::Node& n) { return n.op() == ir::OpId::FusedPointwise; }

bool may_fold(const ir::Node& n) {
  const ir::OpSchema& s = n.schema();
  if (is_fused_pointwise(n)) return n.subgraph != nullptr;
  if (s.category == ir::OpCategory::source || s.category == ir::OpCategory::control) return false;
  for (const ir::ValueType& t : n.output_types)
    if (!t.is_tensor()) return false;  // a Constant holds a tensor
  if (!s.kernel || !s.domain.empty()) return false;
  return !ir::is_random_op(s.id);
}

/// A graft.FusedPointwise whose inputs all became constants when a plan
/// fixed the input shapes: shape arithmetic (Shape -> Gather -> Mul ->
/// Concat) that the fusion pass took before the shapes were known. Its
/// pointwise body is evaluated node by node with the reference kernels.
/// Only small results are folded: a large one would duplicate a weight.
constexpr int64_t kMaxFoldedFusedElements = 4096;

std::vector<Tensor> evaluate(const ir::Node& n, std::vector<Tensor> inputs, ops::OutputAllocator& allocator,
                             int num_threads);

std::vector<Tensor> evaluate_fused_body(const ir::Node& fused, std::vector<Tensor> inputs, ops::OutputAllocator& allocator,
                                        int num_threads) {
  const ir::Graph& body = *fused.subgraph;
  for (size_t i = 0; i < fused.output_types.size(); ++i) {
    auto shape = fused.output_types[i].concrete_shape();
    if (!shape || shape_numel(*shape) > kMaxFoldedFusedElements) return {};
  }
  if (inputs.size() != body.inputs().size()) return {};
  ir::IndexedGraph g(body);
  std::vector<Tensor> values(g.num_entries());
  for (size_t i = 0; i < body.inputs().size(); ++i) values[g.entry_id(g.id_of(*body.inputs()[i]), 0)] = inputs[i];
  for (uint32_t id = 0; id < g.num_nodes(); ++id) {
    const ir::Node& n = g.node(id);
    if (n.schema().category == ir::OpCategory::source) {
      if (n.op() == ir::OpId::Constant) values[g.entry_id(id, 0)] = n.constant_value;
      continue;
    }
    if (!n.schema().kernel || n.subgraph) return {};
    std::vector<Tensor> in;
    for (const ir::Entry& e : g.inputs(id)) in.push_back(e.present() ? values[g.entry_id(e)] : Tensor());
    std::vector<Tensor> outs = evaluate(n, std::move(in), allocator, num_threads);
    for (size_t k = 0; k < outs.size(); ++k) values[g.entry_id(id, static_cast<uint32_t>(k))] = std::move(outs[k]);
  }
  std::vector<Tensor> outputs;
  for (const ir::Value& v : body.outputs()) outputs.push_back(values[g.entry_id(g.entry_of(v))]);
  return outputs;
}

/// The outputs of `n` on `inputs`: its reference kernel, or its body's for a
/// graft.FusedPointwise (empty when that body is not folded).
std::vector<Tensor> evaluate(const ir::Node& n, std::vector<Tensor> inputs, ops::OutputAllocator& allocator,
                             int num_threads) {
  if (is_fused_pointwise(n)) return evaluate_fused_body(n, std::move(inputs), allocator, num_threads);
  return ops::evaluate_node(n, std::move(inputs), allocator, num_threads);
}

/// Folding never makes a constant much larger than what it is made from: an
/// expansion (ConstantOfShape, Tile, Expand, Range of a huge size) runs when
/// the model runs, where the run's memory limit judges it, rather than while
/// the model loads.
constexpr uint64_t kMaxFoldedExpansionBytes = 64ull << 20;

bool output_too_large_to_fold(const ir::Node& n, const std::vector<ir::Value>& inputs) {
  uint64_t input_bytes = 0;
  for (const ir::Value& v : inputs)
    if (v && v.node->op() == ir::OpId::Constant) input_bytes += v.node->constant_value.nbytes();
  const uint64_t bound = std::max(kMaxFoldedExpansionBytes, input_bytes);
  for (const ir::ValueType& t : n.output_types) {
    auto shape = t.concrete_shape();
    if (!shape) continue;  // the kernel's allocations are checked when it runs
    double bytes = static_cast<double>(dtype_size(t.dtype));
    for (int64_t d : *shape) bytes *= static_cast<double>(d);
    if (bytes > static_cast<double>(bound)) return true;
  }
  return false;
}

/// Shape/Size of a value whose shape is fully known, else an undefined tensor.
Tensor fold_shape_query(const ir::Node& n, const ir::ValueType& input_type) {
  auto shape = input_type.concrete_shape();
  if (!shape) return {};
  if (n.op() == ir::OpId::Size) return Tensor::scalar<int64_t>(shape_numel(*shape));
  int64_t rank = static_cast<int64_t>(shape->size());
  int64_t start = n.attributes.get_int("start", 0), end = n.attributes.get_int("end", rank);
  if (start < 0) start += rank;
  if (end < 0) end += rank;
  start = std::clamp<int64_t>(start, 0, rank);
  end = std::clamp<int64_t>(end, start, rank);
  std::vector<int64_t> dims(shape->begin() + start, shape->begin() + end);
  return Tensor::from_vector(dims, {static_cast<int64_t>(dims.size())});
}

/// Whether node `id` is a quantized weight that only int8 products read, as
/// their weights (and no graph output is).
bool quantized_weight_of_products(const ir::IndexedGraph& g, uint32_t id) {
  if (!ops::is_quantized_weight(g.node(id))) return false;
  for (const ir::Entry& e : g.outputs())
    if (e.present() && e.node_id == id) return false;
  auto readers = g.consumers(id);
  if (readers.empty()) return false;
  for (uint32_t reader : readers) {
    auto inputs = g.inputs(reader);
    for (size_t i = 0; i < inputs.size(); ++i)
      if (inputs[i].present() && inputs[i].node_id == id && !ops::reads_as_weight(g.node(reader), i)) return false;
  }
  return true;
}

/// One round; true when anything was folded.
bool fold_once(std::unique_ptr<ir::Graph>& graph, PassContext& ctx) {
  ir::IndexedGraph indexed(*graph);
  ir::GraphRebuilder rebuilder(indexed);
  ops::HeapAllocator allocator;
  bool changed = false;
  for (uint32_t id = 0; id < indexed.num_nodes(); ++id) {
    const ir::Node& n = indexed.node(id);
    std::vector<ir::Value> inputs = rebuilder.mapped_inputs(id);
    std::vector<Tensor> outputs;
    if (may_fold(n) && (n.op() == ir::OpId::Shape || n.op() == ir::OpId::Size) && inputs.size() == 1 &&
        inputs[0]) {
      Tensor t = fold_shape_query(n, inputs[0].node->graph().type_of(inputs[0]));
      if (t.is_defined()) outputs.push_back(std::move(t));
    }
    const bool kept = ctx.keep_quantized_weights && quantized_weight_of_products(indexed, id);
    if (outputs.empty() && may_fold(n) && !kept) {
      bool all_constant = !inputs.empty();
      for (const ir::Value& v : inputs)
        if (v && !is_constant(v)) all_constant = false;
      if (all_constant && !output_too_large_to_fold(n, inputs)) {
        std::vector<Tensor> values;
        for (const ir::Value& v : inputs) values.push_back(v ? v.node->constant_value : Tensor());
        try {
          outputs = evaluate(n, std::move(values), allocator, ctx.num_threads);
        } catch (const Error& e) {
          // Too large for this host: left for the run, which names the node and the bytes.
          if (e.kind() != ErrorKind::resource_exhausted) throw;
          outputs.clear();
        } catch (const std::bad_alloc&) {
          outputs.clear();
        }
      }
    }
    bool folded = !outputs.empty();
    for (const Tensor& t : outputs)
      if (!t.is_defined() || t.is_sequence() || t.is_none()) folded = false;  // a Constant holds a tensor
    if (!folded) {
      rebuilder.copy(id);
      continue;
    }
    changed = true;
    for (size_t k = 0; k < outputs.size(); ++k) {
      std::string name = n.output_names[k].empty() ? n.name + "_folded_" + std::to_string(k) : n.output_names[k];
      ir::Node* c = rebuilder.target().add_constant(name, outputs[k]);
      c->name = name;
      rebuilder.alias(id, static_cast<uint32_t>(k), c->output(0));
    }
  }
  if (!changed) return false;
  graph = rebuilder.finish();
  return true;
}

}  // namespace

bool fold_constants(std::unique_ptr<ir::Graph>& graph, PassContext& ctx) {
  // Each round folds at least one more node, so the rounds end; the bound
  // keeps a pathological chain from taking long (the pipeline stays correct
  // with whatever is left unfolded).
  constexpr int kMaxRounds = 32;
  bool changed = false;
  for (int round = 0; round < kMaxRounds && fold_once(graph, ctx); ++round) {
    changed = true;
    ops::infer_types(*graph);
  }
  return changed;
}

}  // namespace graft::passes
