// Helpers for the partition tests: properties built from predicates, running
// a graph with the executor, and the structural guarantees every partitioning
// must meet.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <set>

#include "graft/ir/indexed_graph.h"
#include "graft/ops/type_inference.h"
#include "graft/ir/verify.h"
#include "graft/partition/convexity.h"
#include "graft/partition/partitioner.h"
#include "graft/backend/executor.h"

namespace graft::testing {

/// A selector answering from predicates (default: grow to every selected node).
class PredicateSelector : public partition::SubgraphSelector {
 public:
  using NodePredicate = std::function<bool(const ir::Node&)>;
  using EdgePredicate = std::function<bool(const ir::Node&, const ir::Node&)>;
  PredicateSelector(NodePredicate select, EdgePredicate input, EdgePredicate output)
      : select_(std::move(select)), input_(std::move(input)), output_(std::move(output)) {}
  bool Select(const ir::Node& n) override { return select_(n); }
  bool SelectInput(const ir::Node& cur, const ir::Node& producer) override { return input_(cur, producer); }
  bool SelectOutput(const ir::Node& cur, const ir::Node& consumer) override { return output_(cur, consumer); }

 private:
  NodePredicate select_;
  EdgePredicate input_, output_;
};

/// A property whose selectors come from a factory.
class LambdaProperty : public partition::SubgraphProperty {
 public:
  using Factory = std::function<std::unique_ptr<partition::SubgraphSelector>()>;
  explicit LambdaProperty(Factory factory, size_t min_size = 1) : factory_(std::move(factory)), min_size_(min_size) {}
  std::unique_ptr<partition::SubgraphSelector> CreateSubgraphSelector() const override { return factory_(); }
  size_t MinSubgraphSize() const override { return min_size_; }

 private:
  Factory factory_;
  size_t min_size_;
};

/// A property selecting the nodes for which `pick` holds, growing through every edge to such nodes.
inline std::shared_ptr<partition::SubgraphProperty> predicate_property(const std::string& name,
                                                                       std::function<bool(const ir::Node&)> pick,
                                                                       size_t min_size = 1) {
  auto property = std::make_shared<LambdaProperty>(
      [pick] {
        return std::make_unique<PredicateSelector>(
            pick, [pick](const ir::Node&, const ir::Node& p) { return pick(p); },
            [pick](const ir::Node&, const ir::Node& c) { return pick(c); });
      },
      min_size);
  property->set_backend_name(name);
  return property;
}

/// Two sets, each convex alone, whose contraction makes the cycle A -> B -> A:
/// in -> x -> a1 -> b1 -> b3, in -> y -> b2 -> a2, x -> a2, y -> b3, with
/// A = {x, a1, a2} and B = {y, b1, b2, b3}; outputs a2 and b3.
inline std::unique_ptr<ir::Graph> crossed_graph() {
  auto g = std::make_unique<ir::Graph>();
  g->opset_imports[""] = 17;
  ir::Node* in = g->add_input("in", ir::ValueType::of(DType::float32, {4}));
  ir::Node* x = g->add_node("Relu", {in->output(0)}, 1, "x");
  ir::Node* y = g->add_node("Neg", {in->output(0)}, 1, "y");
  ir::Node* a1 = g->add_node("Relu", {x->output(0)}, 1, "a1");
  ir::Node* b1 = g->add_node("Relu", {a1->output(0)}, 1, "b1");
  ir::Node* b2 = g->add_node("Neg", {y->output(0)}, 1, "b2");
  ir::Node* a2 = g->add_node("Add", {x->output(0), b2->output(0)}, 1, "a2");
  ir::Node* b3 = g->add_node("Add", {b1->output(0), y->output(0)}, 1, "b3");
  g->add_output(a2->output(0), "o1");
  g->add_output(b3->output(0), "o2");
  ops::infer_types(*g);
  return g;
}

/// Runs `graph` with graft's executor (subgraph nodes run their bodies).
inline std::vector<Tensor> execute(const ir::Graph& graph, const std::vector<Tensor>& inputs) {
  backend::Executor executor(graph);
  backend::BufferPool pool;
  backend::RunOptions options;
  return executor.run(inputs, pool, options);
}

/// Asserts the guarantees of a partitioned graph: verify() passes; every
/// subgraph node's body is non-empty; in the original graph each reported
/// subgraph is connected and convex, the subgraphs are disjoint, and
/// contracting them all at once makes no cycle; every node is accounted for.
inline void expect_partition_guarantees(const ir::Graph& original, const ir::Graph& partitioned,
                                        const partition::PartitionReport& report) {
  ASSERT_NO_THROW(ir::verify(partitioned));
  ir::IndexedGraph indexed(original);
  ASSERT_EQ(report.nodes.size(), indexed.num_nodes());
  std::vector<int32_t> group_of(indexed.num_nodes(), -1);
  std::vector<std::vector<uint32_t>> members(report.subgraphs.size());
  for (uint32_t id = 0; id < indexed.num_nodes(); ++id) {
    int s = report.nodes[id].subgraph;
    if (s < 0) continue;
    group_of[id] = s;
    members[static_cast<size_t>(s)].push_back(id);
  }
  for (size_t s = 0; s < members.size(); ++s) {
    ASSERT_EQ(members[s].size(), report.subgraphs[s].nodes.size()) << "subgraph " << s << " is not disjoint";
    EXPECT_TRUE(partition::is_connected(indexed, members[s])) << "subgraph " << s << " is not connected";
    EXPECT_TRUE(partition::is_convex(indexed, members[s])) << "subgraph " << s << " is not convex";
  }
  EXPECT_TRUE(partition::check_contraction(indexed, group_of).acyclic);
  size_t subgraph_nodes = 0;
  for (const auto& node : partitioned.nodes()) subgraph_nodes += node->op_type() == "graft.Subgraph" && node->subgraph;
  EXPECT_GE(subgraph_nodes, report.subgraphs.size());
}

}  // namespace graft::testing
