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
#include <unordered_set>

#include "dnnl_support.h"
#include "graft/ir/graph.h"
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
  ir::OpCategory c = node.schema().category;
  if (const OpSupport* row = dnnl_op_support(node.op()); row && row->reference_kernel) return false;
  return c == ir::OpCategory::opaque || c == ir::OpCategory::reduce;
}
bool is_single_output_movement(const ir::Node& node) {
  return node.schema().category == ir::OpCategory::injective && node.num_outputs() == 1;
}

// True when an input of `node` comes from dnnl compute through at most
// `depth` pointwise ops and single-output data movement that dnnl supports.
bool fed_by_compute(const ir::Node& node, int depth) {
  for (const ir::Value& input : node.inputs) {
    if (!input) continue;
    const ir::Node& producer = *input.node;
    if (is_compute(producer) && dnnl_supports(producer)) return true;
    if (depth > 0 && (is_pointwise(producer) || is_single_output_movement(producer)) && dnnl_supports(producer) &&
        fed_by_compute(producer, depth - 1))
      return true;
  }
  return false;
}

bool is_scalar_constant_node(const ir::Value& v) {
  return v && v.node->op() == ir::OpId::Constant && v.node->constant_value.numel() == 1;
}

// Whether `node` is a step of a fake quantization of a graph input, as
// lower-quantize-dequantize writes it: Mul(Clip(Round(Div(x, s))), s) with x
// an Input. dnnl takes it with the convolution or matmul it feeds (an image
// model's first), which then reads x quantized (dnnl_int8.cc); a region of
// it alone has no compute and is filtered.
bool quantizes_graph_input(const ir::Node& node) {
  auto first = [&](const ir::Node& n) -> const ir::Node* {
    return n.inputs.empty() || !n.inputs[0] ? nullptr : n.inputs[0].node;
  };
  switch (node.op()) {
    case ir::OpId::Div:
      return node.inputs.size() == 2 && first(node) && first(node)->op() == ir::OpId::Input &&
             is_scalar_constant_node(node.inputs[1]);
    case ir::OpId::Round:
      return first(node) && first(node)->op() == ir::OpId::Div && quantizes_graph_input(*first(node));
    case ir::OpId::Clip:
      return first(node) && first(node)->op() == ir::OpId::Round && quantizes_graph_input(*first(node));
    case ir::OpId::Mul:
      return node.inputs.size() == 2 && first(node) && first(node)->op() == ir::OpId::Clip &&
             is_scalar_constant_node(node.inputs[1]) && quantizes_graph_input(*first(node));
    default:
      return false;
  }
}

partition::Support check(const ir::Node& node) {
  SupportResult r = dnnl_supports(node);
  if (!r) return partition::Support::no(r.reason);
  if (is_pointwise(node) && !fed_by_compute(node, kMaxChain) && !quantizes_graph_input(node))
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
// neither take nor give.
class DnnlSelector final : public partition::ContainOpSelector {
 public:
  using ContainOpSelector::ContainOpSelector;
  std::vector<const ir::Node*> Filter(std::vector<const ir::Node*> candidates) override {
    for (const ir::Node* n : candidates)
      if (is_compute(*n)) return keep_relu_masks_with_their_wheres(std::move(candidates));
    return {};
  }

 private:
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
