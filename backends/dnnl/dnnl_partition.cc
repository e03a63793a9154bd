// What dnnl takes (DnnlBackend::property()): the checkers of its op table in
// a property that grows the largest convex regions of nodes dnnl supports
// (TVM BYOC style). Partitioning runs before shapes are concrete, so the
// checkers accept symbolic extents where compile() can resolve them later.
//
// Pointwise ops (the op table's elementwise and broadcast categories) are
// taken only next to dnnl's own compute: when an input comes, directly or
// through other pointwise ops and single-output data movement (injective ops
// with one output: Reshape, Flatten, Transpose, Slice, Concat, ...), from an
// op dnnl supports of the opaque or reduce category (convolution, matmul,
// pooling, normalization, softmax). There they become post-ops, or at least
// keep the region whole so that activations stay in oneDNN's blocked
// layouts. Elsewhere (an embedding sum; a recurrent cell's gate arithmetic on
// the pieces of a Split, as PyTorch exports GRUCell and LSTMCell) oneDNN would
// run one primitive per op, each a pass over memory, where the `fuse` backend
// compiles the whole chain into one kernel; the checker declines them with
// that reason.
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "dnnl_gelu_gradient.h"
#include "dnnl_int8.h"
#include "dnnl_support.h"
#include "graft/ir/graph.h"
#include "graft/ir/updated_constant.h"
#include "graft/partition/contain_op_selector.h"
#include "graft/partition/op_support.h"
#include "graft/partition/subgraph_property.h"

namespace graft::dnnl_backend {
namespace {

// Pointwise chains longer than this between a compute op and a node are not
// followed (oneDNN attaches a handful of post-ops; the bound keeps the check
// cheap on long chains).
constexpr int kMaxChain = 8;

bool is_pointwise(const ir::Node& node) {
  ir::OpCategory c = node.schema().category;
  return c == ir::OpCategory::elementwise || c == ir::OpCategory::broadcast;
}
// A node on a oneDNN primitive of its own; not one dnnl runs on graft's
// reference kernel (a training step's loss), which it takes only to keep
// the forward and the backward one region.
bool is_compute(const ir::Node& node) {
  if (node.op() == ir::OpId::DequantizeLinear) return false;  // weights (check_quantized_weight)
  ir::OpCategory c = node.schema().category;
  if (const OpSupport* row = dnnl_op_support(node.op()); row && row->reference_kernel) return false;
  if (sums_leading_axes_only(node)) return false;  // a reference kernel in the program too
  return c == ir::OpCategory::opaque || c == ir::OpCategory::reduce;
}
bool is_single_output_movement(const ir::Node& node) {
  return node.schema().category == ir::OpCategory::injective && node.num_outputs() == 1;
}

bool is_scalar_constant_node(const ir::Value& v) {
  return v && v.node->op() == ir::OpId::Constant && v.node->constant_value.numel() == 1 &&
         !ir::is_updated_in_place(*v.node);
}

// The Div of the fake quantization that `node` is a step of, as
// lower-quantize-dequantize writes a QuantizeLinear -> DequantizeLinear
// pair: Mul(Clip(Round(Div(x, s))), s) with scalar constant scales; nullptr
// for any other node. Only the steps up to `node` are checked (a checker
// sees producers, not readers).
const ir::Node* fake_quantization_div(const ir::Node& node) {
  const ir::Node* first = node.inputs.empty() || !node.inputs[0] ? nullptr : node.inputs[0].node;
  switch (node.op()) {
    case ir::OpId::Div:
      return node.inputs.size() == 2 && first && is_scalar_constant_node(node.inputs[1]) ? &node : nullptr;
    case ir::OpId::Round:
      return first && first->op() == ir::OpId::Div ? fake_quantization_div(*first) : nullptr;
    case ir::OpId::Clip:
      return first && first->op() == ir::OpId::Round ? fake_quantization_div(*first) : nullptr;
    case ir::OpId::Mul:
      return node.inputs.size() == 2 && first && first->op() == ir::OpId::Clip &&
                     is_scalar_constant_node(node.inputs[1])
                 ? fake_quantization_div(*first)
                 : nullptr;
    default:
      return nullptr;
  }
}

// Whether `node` is a step of a fake quantization that dnnl folds into
// int8 work (dnnl_int8.cc: only where oneDNN runs int8 without saturation;
// elsewhere the steps are float arithmetic, which `fuse` compiles into one
// kernel per chain where dnnl would run a primitive per step).
bool folds_as_int8(const ir::Node& node) {
  return fake_quantization_div(node) != nullptr && int8_runs_without_saturation();
}

// True when an input of `node` comes from dnnl compute through at most
// `depth` pointwise ops and single-output data movement that dnnl supports.
// The steps of a fake quantization that dnnl folds do not count: a QDQ
// model puts four on every activation an int8 product reads or writes.
bool fed_by_compute(const ir::Node& node, int depth) {
  for (const ir::Value& input : node.inputs) {
    if (!input) continue;
    const ir::Node& producer = *input.node;
    if (is_compute(producer) && dnnl_supports(producer)) return true;
    if (depth > 0 && (is_pointwise(producer) || is_single_output_movement(producer)) && dnnl_supports(producer) &&
        fed_by_compute(producer, folds_as_int8(producer) ? depth : depth - 1))
      return true;
  }
  return false;
}

// Whether `node` is a step of a fake quantization whose quantized value x
// (the Div's input) is a graph input, or, where dnnl folds it (int8), the
// result of compute or data movement, or fed by compute. dnnl takes such a step with the
// convolution or matmul it feeds (an image model's first; a BERT
// projection after a Transpose) or follows, which then reads x quantized
// or writes it requantized (dnnl_int8.cc); a region of such steps alone has
// no compute and is filtered.
bool is_dnnl_fake_quantization(const ir::Node& node) {
  const ir::Node* div = fake_quantization_div(node);
  if (!div) return false;
  const ir::Node& x = *div->inputs[0].node;
  if (x.op() == ir::OpId::Input) return true;
  return folds_as_int8(node) && (!is_pointwise(x) || fed_by_compute(*div, kMaxChain));
}

partition::Support check(const ir::Node& node) {
  SupportResult r = dnnl_supports(node);
  if (!r) return partition::Support::no(r.reason);
  if (is_pointwise(node) && !fed_by_compute(node, kMaxChain) && !is_dnnl_fake_quantization(node))
    return partition::Support::no("pointwise op away from dnnl compute (left to fuse: one kernel for the chain)");
  return partition::Support::yes();
}

// The generic regions of the checkers, less those without dnnl compute: a
// region of data movement or pointwise ops alone (a Concat, a Split, a
// Reshape between two convolutions that a reference-only op such as
// InstanceNormalization keeps apart) gains nothing from oneDNN and pays a
// module's overhead and the reorders of its inputs and outputs. torchvision's
// raft_small had 194 one-node dnnl subgraphs, 88 us each on average; its
// regions without compute go to `fuse` and `ref` (reason `filtered`).
//
// A Relu gradient's mask, Greater(x, 0), and the Where(mask, d_y, 0) that
// reads it are kept only together: dnnl runs the pair as one eltwise
// backward on x and never writes the boolean mask, which a dnnl module can
// neither take nor give. Likewise the Erf of a GELU gradient stays only with
// the whole expression (dnnl_gelu_gradient.h): dnnl runs it as one eltwise
// backward at its final product and has no primitive for an Erf alone.
class DnnlSelector final : public partition::ContainOpSelector {
 public:
  using ContainOpSelector::ContainOpSelector;
  std::vector<const ir::Node*> Filter(std::vector<const ir::Node*> candidates) override {
    for (const ir::Node* n : candidates)
      if (is_compute(*n))
        return keep_erfs_with_their_gelu_gradients(
            keep_weights_with_their_readers(keep_relu_masks_with_their_wheres(std::move(candidates))));
    return {};
  }

 private:
  static std::vector<const ir::Node*> keep_erfs_with_their_gelu_gradients(std::vector<const ir::Node*> candidates) {
    bool any_erf = false;
    for (const ir::Node* n : candidates) any_erf = any_erf || n->op() == ir::OpId::Erf;
    if (!any_erf) return candidates;
    const ir::Graph& graph = candidates.front()->graph();
    std::unordered_map<const ir::Node*, std::vector<const ir::Node*>> readers;
    for (const auto& n : graph.nodes())
      for (const ir::Value& input : n->inputs)
        if (input) readers[input.node].push_back(n.get());
    std::unordered_set<const ir::Node*> outputs;
    for (const ir::Value& output : graph.outputs()) outputs.insert(output.node);
    const std::unordered_set<const ir::Node*> taken(candidates.begin(), candidates.end());
    std::unordered_set<const ir::Node*> whole;  // Erfs whose whole gradient expression is taken
    for (const ir::Node* n : candidates) {
      if (n->op() != ir::OpId::Mul) continue;
      std::optional<GeluGradient> match = match_gelu_gradient(
          *n, [&](const ir::Node& node) { return readers[&node]; },
          [&](const ir::Node& node) { return outputs.count(&node) > 0; });
      if (!match) continue;
      bool all_taken = true;
      for (const ir::Node* step : match->steps) all_taken = all_taken && taken.count(step);
      if (!all_taken) continue;
      for (const ir::Node* step : match->steps)
        if (step->op() == ir::OpId::Erf) whole.insert(step);
    }
    std::erase_if(candidates, [&](const ir::Node* n) { return n->op() == ir::OpId::Erf && !whole.count(n); });
    return candidates;
  }

  // A quantized weight goes with its readers: one read outside the
  // candidates stays out (the compiler folds it to float32 there), so that
  // the region never writes the weights dequantized for another.
  static std::vector<const ir::Node*> keep_weights_with_their_readers(std::vector<const ir::Node*> candidates) {
    bool any = false;
    for (const ir::Node* n : candidates) any = any || n->op() == ir::OpId::DequantizeLinear;
    if (!any) return candidates;
    const std::unordered_set<const ir::Node*> taken(candidates.begin(), candidates.end());
    std::unordered_set<const ir::Node*> read_outside;
    for (const auto& n : candidates.front()->graph().nodes())
      if (!taken.count(n.get()))
        for (const ir::Value& input : n->inputs)
          if (input && input.node->op() == ir::OpId::DequantizeLinear) read_outside.insert(input.node);
    for (const ir::Value& output : candidates.front()->graph().outputs()) read_outside.insert(output.node);
    std::vector<const ir::Node*> kept;
    for (const ir::Node* n : candidates)
      if (n->op() != ir::OpId::DequantizeLinear || !read_outside.count(n)) kept.push_back(n);
    return kept;
  }

  static std::vector<const ir::Node*> keep_relu_masks_with_their_wheres(std::vector<const ir::Node*> candidates) {
    std::unordered_set<const ir::Node*> masks;
    for (const ir::Node* n : candidates)
      if (n->op() == ir::OpId::Greater) masks.insert(n);
    if (masks.empty()) return candidates;
    const std::unordered_set<const ir::Node*> taken(candidates.begin(), candidates.end());
    // A mask read by a node outside the candidates (or by a graph output) goes.
    for (const auto& n : candidates.front()->graph().nodes())
      if (!taken.count(n.get()))
        for (const ir::Value& input : n->inputs)
          if (input) masks.erase(input.node);
    for (const ir::Value& output : candidates.front()->graph().outputs()) masks.erase(output.node);
    std::vector<const ir::Node*> kept;
    for (const ir::Node* n : candidates) {
      if (n->op() == ir::OpId::Greater && !masks.count(n)) continue;
      if (n->op() == ir::OpId::Where && !masks.count(n->inputs[0].node)) continue;
      kept.push_back(n);
    }
    return kept;
  }
};

class DnnlProperty final : public partition::ContainOpProperty {
 public:
  using ContainOpProperty::ContainOpProperty;
  std::unique_ptr<partition::SubgraphSelector> CreateSubgraphSelector() const override {
    return std::make_unique<DnnlSelector>(spec());
  }
};

}  // namespace

std::shared_ptr<const partition::SubgraphProperty> make_dnnl_property() {
  partition::OpSupportTable checkers;
  std::set<std::string, std::less<>> op_types;
  for (const OpSupport& row : dnnl_op_table()) {
    std::string op_type = ir::op_schema(row.op).qualified_name();
    checkers.emplace(op_type, check);
    op_types.insert(op_type);
  }
  auto property = std::make_shared<DnnlProperty>(op_types, checkers);
  property->set_backend_name("dnnl");
  return property;
}

}  // namespace graft::dnnl_backend
