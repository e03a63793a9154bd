// Why a pointwise node stayed out of the fused nodes, decided after the fact
// from the fused graph: a node the code generator cannot compile says why
// (codegen::why_not_fusible); a fusible one is classified by its neighbours
// (producers and consumers that are fusible or fused): none at all means it
// was alone; only ones of another kind (forward/backward mark, device) means
// the kinds kept them apart; otherwise the pass refused the merge because
// it would close a cycle through a node outside the group (or could not
// rule that out in its linear walk).
#include "graft/fusion/explain_unfused.h"

#include "graft/codegen/op_expressions.h"
#include "graft/fusion/fusible.h"
#include "graft/ir/indexed_graph.h"

namespace graft::fusion {

namespace {

bool is_pointwise_op(const ir::Node& node) {
  const ir::OpSchema& schema = node.schema();
  return schema.domain.empty() &&
         (schema.category == ir::OpCategory::elementwise || schema.category == ir::OpCategory::broadcast);
}

bool is_fused_node(const ir::Node& node) {
  return node.op() == ir::OpId::FusedPointwise;
}

bool same_kind(const ir::Node& a, const ir::Node& b) { return a.is_backward == b.is_backward && a.device == b.device; }

}  // namespace

std::vector<UnfusedNode> explain_unfused(const ir::Graph& fused_graph) {
  ir::IndexedGraph graph(fused_graph);
  std::vector<UnfusedNode> out;
  for (uint32_t id = 0; id < graph.num_nodes(); ++id) {
    const ir::Node& node = graph.node(id);
    if (!is_pointwise_op(node) || (!node.backend.empty() && node.backend != kFuseBackend)) continue;
    UnfusedNode entry;
    entry.node = &node;
    if (!is_fusible(node)) {
      entry.reason = UnfusedNode::Reason::not_fusible;
      entry.detail = codegen::why_not_fusible(node);
      if (entry.detail.empty()) entry.detail = "the code generator does not take it";
      out.push_back(std::move(entry));
      continue;
    }
    bool any_neighbour = false, same_kind_neighbour = false, other_mark = false, other_device = false;
    auto look_at = [&](const ir::Node& other) {
      if (!is_fused_node(other) && !is_fusible(other)) return;
      any_neighbour = true;
      same_kind_neighbour = same_kind_neighbour || same_kind(node, other);
      other_mark = other_mark || other.is_backward != node.is_backward;
      other_device = other_device || !(other.device == node.device);
    };
    for (const ir::Entry& e : graph.inputs(id))
      if (e.present()) look_at(graph.node(e.node_id));
    for (uint32_t consumer : graph.consumers(id)) look_at(graph.node(consumer));
    if (!any_neighbour) {
      entry.reason = UnfusedNode::Reason::alone;
      entry.detail = "no pointwise neighbour to fuse with (a fused node holds two ops or more)";
    } else if (!same_kind_neighbour) {
      entry.reason = UnfusedNode::Reason::kind_differs;
      std::string mark =
          node.is_backward ? "forward nodes (it is a backward one)" : "backward nodes (it is a forward one)";
      std::string device = "on another device than its " + to_string(node.device);
      entry.detail = "its pointwise neighbours are " +
                     (other_mark && other_device ? mark + " or " + device
                      : other_mark               ? mark
                                                 : device) +
                     ", and such nodes are never fused together";
    } else {
      entry.reason = UnfusedNode::Reason::cycle;
      entry.detail =
          "joining its pointwise neighbours would close a cycle through a node outside them (or the linear-time "
          "pass could not rule that out)";
    }
    out.push_back(std::move(entry));
  }
  return out;
}

void record_fusion_in_report(const ir::Graph& fused_graph, partition::PartitionReport& report) {
  report.record_claimed_subgraphs(fused_graph, std::string(kFuseBackend));
  for (const UnfusedNode& unfused : explain_unfused(fused_graph)) {
    partition::DeclineKind kind = partition::DeclineKind::unsupported;
    if (unfused.reason == UnfusedNode::Reason::alone) kind = partition::DeclineKind::below_min_size;
    if (unfused.reason == UnfusedNode::Reason::cycle) kind = partition::DeclineKind::convexity;
    report.record_decline(unfused.node->name, unfused.node->op_type(),
                          partition::Decline{std::string(kFuseBackend), kind, unfused.detail});
  }
}

}  // namespace graft::fusion
