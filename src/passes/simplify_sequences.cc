// Reads sequences whose items are known where the graph is built: a sequence
// made by SequenceEmpty or SequenceConstruct, then changed by SequenceInsert
// and SequenceErase at constant (or default) positions and passed through
// Identity, is a known list of tensor values. Then
//   - SequenceAt at a constant position is that item itself (no node);
//   - SequenceLength is a Constant;
//   - ConcatFromSequence is a Concat of the items (each Unsqueezed first when
//     new_axis is set, from opset 13 on, where Unsqueeze takes its axes as an
//     input).
// The sequence nodes that nothing reads any more are left to
// eliminate-dead-code; what reads the items is folded again (fold-constants). With unroll-loops, this turns the
// tensor_split and list patterns of exported models into plain tensor code whose shapes are known, which the backends
// take.
#include <optional>
#include <string>

#include "graft/ir/graph_rebuilder.h"
#include "graft/ops/type_inference.h"
#include "graft/ops/sequence_position.h"
#include "graft/passes/pass.h"
#include "pattern_util.h"

namespace graft::passes {
namespace {

using Items = std::vector<ir::Value>;

/// A constant position input (a scalar int32/int64) as an index into `size`
/// items; `insertion` allows `size` (one past the end). nullopt when the
/// position is not a constant or is out of range (the kernel reports it).
std::optional<size_t> constant_position(const ir::IndexedGraph& g, ir::Entry e, size_t size, bool insertion) {
  const Tensor* t = pattern::constant_of(g, e);
  if (!t || !ops::is_sequence_position(*t)) return std::nullopt;
  return ops::sequence_index(t->value_as_int64(0), size, insertion);
}

}  // namespace

bool simplify_sequences(std::unique_ptr<ir::Graph>& graph, PassContext& ctx) {
  bool has_sequence = false;
  for (const auto& node : graph->nodes())
    for (const ir::ValueType& t : node->output_types) has_sequence = has_sequence || t.sequence;
  if (!has_sequence) return false;
  ir::IndexedGraph g(*graph);
  ir::GraphRebuilder rebuilder(g);
  std::vector<std::optional<Items>> known(g.num_nodes());  // per node: the items of its sequence output
  auto opset = graph->opset_imports.find("");
  const bool unsqueeze_takes_axes = opset == graph->opset_imports.end() || opset->second >= 13;
  bool changed = false;
  for (uint32_t id = 0; id < g.num_nodes(); ++id) {
    const ir::Node& n = g.node(id);
    auto inputs = g.inputs(id);
    const std::optional<Items>* first = inputs.empty() || !inputs[0].present() ? nullptr : &known[inputs[0].node_id];
    const bool first_known = first && first->has_value();
    const ir::OpId op = n.op();
    if (op == ir::OpId::SequenceAt && first_known && inputs.size() == 2) {
      if (auto at = constant_position(g, inputs[1], (*first)->size(), false)) {
        rebuilder.alias(id, 0, (**first)[*at]);
        changed = true;
        continue;
      }
    }
    if (op == ir::OpId::SequenceLength && first_known) {
      ir::Node* length = rebuilder.target().add_constant(
          n.name + "/length", Tensor::scalar<int64_t>(static_cast<int64_t>((*first)->size())));
      rebuilder.replace(id, length);
      changed = true;
      continue;
    }
    if (op == ir::OpId::ConcatFromSequence && first_known && !(*first)->empty() && n.attributes.has("axis")) {
      const bool new_axis = n.attributes.get_int("new_axis", 0) != 0;
      if (!new_axis || unsqueeze_takes_axes) {
        const int64_t axis = n.attributes.get_int("axis");
        Items parts = **first;
        if (new_axis) {
          ir::Value axes =
              rebuilder.target().add_constant(n.name + "/axes", Tensor::from_vector<int64_t>({axis}, {1}))->output(0);
          for (size_t k = 0; k < parts.size(); ++k)
            parts[k] = rebuilder.target()
                           .add_node("Unsqueeze", {parts[k], axes}, 1, n.name + "/Unsqueeze" + std::to_string(k))
                           ->output(0);
        }
        ir::Node* concat = rebuilder.target().add_node("Concat", parts, 1, n.name + "/Concat");
        concat->attributes.set("axis", axis);
        rebuilder.replace(id, concat);
        changed = true;
        continue;
      }
    }
    rebuilder.copy(id);
    // What is known of this node's sequence output.
    std::vector<ir::Value> mapped = rebuilder.mapped_inputs(id);
    if (op == ir::OpId::SequenceEmpty) {
      known[id] = Items{};
    } else if (op == ir::OpId::SequenceConstruct) {
      known[id] = mapped;
    } else if (op == ir::OpId::Identity && first_known) {
      known[id] = *first;
    } else if (op == ir::OpId::SequenceInsert && first_known && mapped.size() >= 2) {
      Items items = **first;
      std::optional<size_t> at = mapped.size() > 2 && mapped[2] ? constant_position(g, inputs[2], items.size(), true)
                                                                : std::optional<size_t>(items.size());
      if (at) {
        items.insert(items.begin() + static_cast<std::ptrdiff_t>(*at), mapped[1]);
        known[id] = std::move(items);
      }
    } else if (op == ir::OpId::SequenceErase && first_known && !(*first)->empty()) {
      Items items = **first;
      std::optional<size_t> at = mapped.size() > 1 && mapped[1] ? constant_position(g, inputs[1], items.size(), false)
                                                                : std::optional<size_t>(items.size() - 1);
      if (at) {
        items.erase(items.begin() + static_cast<std::ptrdiff_t>(*at));
        known[id] = std::move(items);
      }
    }
  }
  if (!changed) return false;
  graph = rebuilder.finish();
  // The items read directly may have known shapes: fold the shape
  // computations that read them.
  ops::infer_types(*graph);
  fold_constants(graph, ctx);
  return true;
}

}  // namespace graft::passes
