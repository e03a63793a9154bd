// Property test: random DAGs (elementwise, broadcast, injective and opaque ops,
// fan-in and fan-out, multi-output nodes, shared constants) partitioned by
// random selectors and checkers, including adversarial ones (random answers per
// call, Filters that disconnect or break convexity, several backends whose
// subgraphs would cross). Every partitioning must give disjoint, connected,
// convex subgraphs whose joint contraction is acyclic, pass verify(), account
// for every node, and compute the same outputs as the original graph.
#include <gtest/gtest.h>

#include <cstdlib>
#include <random>

#include "graft/ops/type_inference.h"
#include "graft/partition/contain_op_selector.h"
#include "partition_test_util.h"
#include "support/graph_runner.h"

using namespace graft;
using namespace graft::ir;
using graft::partition::BackendEntry;
using graft::testing::execute;
using graft::testing::expect_partition_guarantees;

namespace {

const char* kUnary[] = {"Relu", "Neg", "Abs", "Tanh", "Sigmoid"};
const char* kBinary[] = {"Add", "Mul", "Sub", "Max"};
const std::vector<std::string> kAllOps = {"Relu", "Neg", "Abs", "Tanh", "Sigmoid", "Add", "Mul", "Sub",
                                          "Max",  "Sum", "Softmax", "MatMul", "Split"};

struct RandomGraph {
  std::unique_ptr<Graph> graph;
  std::vector<Tensor> inputs;
};

RandomGraph random_graph(std::mt19937_64& rng) {
  auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  RandomGraph out;
  out.graph = std::make_unique<Graph>();
  Graph& g = *out.graph;
  g.opset_imports[""] = 17;
  struct Val {
    Value value;
    int rows;  // shape [rows, 3]
  };
  std::vector<Val> values;
  int num_inputs = uniform(1, 3);
  for (int i = 0; i < num_inputs; ++i) {
    int rows = uniform(1, 2);
    Node* in = g.add_input("in" + std::to_string(i), ValueType::of(DType::float32, {rows, 3}));
    values.push_back({in->output(0), rows});
    out.inputs.push_back(graft::testing::random_tensor({rows, 3}, rng()));
  }
  int num_constants = uniform(0, 2);
  for (int i = 0; i < num_constants; ++i) {
    Node* c = g.add_constant("c" + std::to_string(i), graft::testing::random_tensor({1, 3}, rng()));
    values.push_back({c->output(0), 1});
  }
  Node* weight = g.add_constant("w", graft::testing::random_tensor({3, 3}, rng()));
  // Producers are drawn mostly from recent values (long chains), sometimes from anywhere (long edges).
  auto pick = [&]() -> const Val& {
    if (uniform(0, 2) == 0) return values[static_cast<size_t>(uniform(0, static_cast<int>(values.size()) - 1))];
    int lo = std::max(0, static_cast<int>(values.size()) - 4);
    return values[static_cast<size_t>(uniform(lo, static_cast<int>(values.size()) - 1))];
  };
  int num_nodes = uniform(5, 30);
  for (int i = 0; i < num_nodes; ++i) {
    std::string name = "n" + std::to_string(i);
    int kind = uniform(0, 9);
    if (kind <= 3) {
      const Val& a = pick();
      Node* n = g.add_node(kUnary[uniform(0, 4)], {a.value}, 1, name);
      values.push_back({n->output(0), a.rows});
    } else if (kind <= 6) {
      const Val a = pick(), b = pick();
      Node* n = g.add_node(kBinary[uniform(0, 3)], {a.value, b.value}, 1, name);
      values.push_back({n->output(0), std::max(a.rows, b.rows)});
    } else if (kind == 7) {
      const Val a = pick(), b = pick(), c = pick();
      Node* n = g.add_node("Sum", {a.value, b.value, c.value}, 1, name);
      values.push_back({n->output(0), std::max({a.rows, b.rows, c.rows})});
    } else if (kind == 8) {
      const Val a = pick();
      Node* n = uniform(0, 1) ? g.add_node("Softmax", {a.value}, 1, name)
                              : g.add_node("MatMul", {a.value, weight->output(0)}, 1, name);
      values.push_back({n->output(0), a.rows});
    } else {
      const Val a = pick();
      if (a.rows != 2) {
        Node* n = g.add_node("Neg", {a.value}, 1, name);
        values.push_back({n->output(0), a.rows});
        continue;
      }
      Node* n = g.add_node("Split", {a.value}, 2, name);
      n->attributes.set("axis", int64_t{0});
      values.push_back({n->output(0), 1});
      values.push_back({n->output(1), 1});
    }
  }
  // Outputs: every value nobody reads, plus a few others.
  std::vector<bool> read(g.num_nodes() * 2, false);
  for (const auto& node : g.nodes())
    for (const Value& v : node->inputs) read[v.node->index() * 2 + static_cast<size_t>(v.index)] = true;
  int k = 0;
  for (const Val& v : values) {
    bool is_op = v.value.node->schema().category != OpCategory::source;
    if (is_op && (!read[v.value.node->index() * 2 + static_cast<size_t>(v.value.index)] || uniform(0, 7) == 0))
      g.add_output(v.value, "out" + std::to_string(k++));
  }
  if (k == 0) g.add_output(values.back().value, "out");
  ops::infer_types(g);
  return out;
}

// Selectors whose answers come from a seeded hash of the node (deterministic)
// or from a random stream (a different answer on every call).
class RandomSelector : public partition::SubgraphSelector {
 public:
  RandomSelector(uint64_t seed, int mode, int filter_mode)
      : seed_(seed), mode_(mode), filter_mode_(filter_mode), stream_(seed) {}
  bool Select(const Node& n) override { return decide(n, 0); }
  bool SelectInput(const Node& cur, const Node& producer) override { return decide(producer, 1 + cur.index()); }
  bool SelectOutput(const Node& cur, const Node& consumer) override { return decide(consumer, 2 + cur.index()); }
  std::vector<const Node*> Filter(std::vector<const Node*> candidates) override {
    if (filter_mode_ == 0) return candidates;
    std::vector<const Node*> out;
    for (const Node* n : candidates) {
      if (filter_mode_ == 1 && stream_() % 3 == 0) continue;  // drops random nodes (may disconnect)
      out.push_back(n);
      if (filter_mode_ == 2 && stream_() % 4 == 0) out.push_back(n);  // duplicates
    }
    if (filter_mode_ == 2) std::reverse(out.begin(), out.end());
    return out;
  }
  void Reset() override { ++resets_; }

 private:
  bool decide(const Node& n, uint64_t salt) {
    uint64_t h = std::hash<std::string>{}(n.name) ^ (seed_ * 0x9e3779b97f4a7c15ULL);
    switch (mode_) {
      case 0: return h % 2 == 0;                                  // a fixed random half of the nodes
      case 1: return h % 5 != 0;                                  // most nodes: large non-convex candidates
      case 2: return stream_() % 2 == 0;                          // a new coin on every call
      default: return (h ^ (salt * 0xbf58476d1ce4e5b9ULL)) % 3 != 0;  // depends on the edge
    }
  }
  uint64_t seed_;
  int mode_, filter_mode_;
  std::mt19937_64 stream_;
  int resets_ = 0;
};

BackendEntry random_backend(std::mt19937_64& rng, int index) {
  std::string name = "b" + std::to_string(index);
  int kind = static_cast<int>(rng() % 3);
  size_t min_size = rng() % 4 == 0 ? 1 + rng() % 3 : 1;
  std::shared_ptr<partition::SubgraphProperty> property;
  if (kind == 0) {
    // ContainOp over a random subset of ops, with random checkers on some.
    std::set<std::string, std::less<>> ops;
    partition::OpSupportTable checkers;
    for (const std::string& op : kAllOps) {
      if (rng() % 2) continue;
      ops.insert(op);
      if (rng() % 3 == 0) {
        uint64_t salt = rng();
        checkers[op] = [salt](const Node& n) {
          return std::hash<std::string>{}(n.name) % 7 < salt % 7 ? partition::Support::yes()
                                                                   : partition::Support::no("random checker");
        };
      }
    }
    property = std::make_shared<partition::ContainOpProperty>(ops, checkers, min_size);
  } else {
    uint64_t seed = rng();
    int mode = static_cast<int>(rng() % 4);
    int filter_mode = static_cast<int>(rng() % 3);
    property = std::make_shared<graft::testing::LambdaProperty>(
        [seed, mode, filter_mode] { return std::make_unique<RandomSelector>(seed, mode, filter_mode); }, min_size);
  }
  property->set_backend_name(name);
  return BackendEntry{name, property, {}};
}

}  // namespace

TEST(RandomPartition, TenThousandGraphsKeepTheGuaranteesAndTheOutputs) {
  // GRAFT_RANDOM_PARTITION_TRIALS runs fewer graphs (e.g. under valgrind).
  const char* env = std::getenv("GRAFT_RANDOM_PARTITION_TRIALS");
  const int trials = env ? std::max(1, std::atoi(env)) : 10000;
  std::mt19937_64 rng(20261123);
  size_t subgraphs = 0, trimmed = 0, nodes_taken = 0, nodes_total = 0;
  for (int trial = 0; trial < trials; ++trial) {
    SCOPED_TRACE("trial " + std::to_string(trial));
    RandomGraph case_ = random_graph(rng);
    int num_backends = 1 + static_cast<int>(rng() % 3);
    std::vector<BackendEntry> backends;
    for (int b = 0; b < num_backends; ++b) backends.push_back(random_backend(rng, b));
    partition::Annotations annotations;
    if (rng() % 5 == 0) {
      const auto& nodes = case_.graph->nodes();
      const Node& n = *nodes[rng() % nodes.size()];
      if (n.schema().category != OpCategory::source) {
        if (rng() % 2)
          annotations.pinned[n.name] = rng() % 4 == 0 ? "ref" : backends[rng() % backends.size()].name;
        else
          annotations.forbidden[n.name].insert(backends[rng() % backends.size()].name);
      }
    }
    auto graph = case_.graph->clone();
    partition::PartitionReport report = partition::partition_graph(graph, backends, "ref", annotations);
    expect_partition_guarantees(*case_.graph, *graph, report);
    subgraphs += report.subgraphs.size();
    for (const auto& p : report.nodes) {
      if (p.is_source) continue;
      ++nodes_total;
      nodes_taken += p.backend != "ref";
      for (const auto& d : p.declined) trimmed += d.kind == partition::DeclineKind::convexity;
    }
    auto want = execute(*case_.graph, case_.inputs);
    auto got = execute(*graph, case_.inputs);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) graft::testing::expect_close(got[i], want[i], 0, 0);
    if (::testing::Test::HasFailure()) return;
  }
  // The generator must actually exercise the interesting cases.
  if (trials == 10000) {
    EXPECT_GT(subgraphs, 10000u);
    EXPECT_GT(trimmed, 1000u);
    EXPECT_GT(nodes_taken, nodes_total / 4);
  }
  std::cout << "random partition: " << subgraphs << " subgraphs, " << nodes_taken << " of " << nodes_total
            << " nodes taken, " << trimmed << " convexity declines\n";
}
