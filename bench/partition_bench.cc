// partition_bench: the whole partitioning (seed, grow, trim, contract, build
// the new graph, the report) on synthetic graphs of 10k, 100k and 1M nodes and
// on the zoo models, in milliseconds per 1,000 nodes.
//
// Synthetic graphs look like deep networks: a main chain where each node reads
// the previous one and, one time in five, also a node up to 16 back (residual
// and branch fan-out); ops are a mix that two backends share: "pointwise"
// takes Relu/Add/Mul (Mul through a checker), "library" takes Softmax, and
// Sigmoid is taken by nobody (runs on ref). Types are set when the graph is
// built, so the time is partitioning alone. Times are process CPU
// milliseconds (best of a few runs), with the report lean (counts and sizes)
// and, in parentheses, detailed (every node's placement and reasons).
//
//   ./build/bench/partition_bench            (all sizes and zoo models)
//   ./build/bench/partition_bench 100000     (one synthetic size)
#include <chrono>
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <random>

#include "graft/frontend/onnx_import.h"
#include "graft/partition/contain_op_selector.h"
#include "graft/partition/partitioner.h"
#include "graft/passes/pass.h"
#include "graft/zoo/zoo.h"

using namespace graft;

namespace {

std::unique_ptr<ir::Graph> synthetic_graph(size_t num_nodes, uint64_t seed) {
  auto g = std::make_unique<ir::Graph>();
  g->opset_imports[""] = 17;
  const ir::ValueType type = ir::ValueType::of(DType::float32, {1, 16});
  std::vector<ir::Value> values = {g->add_input("x", type)->output(0)};
  std::mt19937_64 rng(seed);
  const char* unary[] = {"Relu", "Relu", "Sigmoid", "Softmax"};
  const char* binary[] = {"Add", "Add", "Mul"};
  for (size_t i = 0; i < num_nodes; ++i) {
    ir::Value previous = values.back();
    ir::Node* node;
    if (rng() % 5 == 0 && values.size() > 1) {
      size_t back = 1 + rng() % std::min<size_t>(16, values.size() - 1);
      node = g->add_node(binary[rng() % 3], {previous, values[values.size() - 1 - back]}, 1, "n" + std::to_string(i));
    } else {
      node = g->add_node(unary[rng() % 4], {previous}, 1, "n" + std::to_string(i));
    }
    node->output_types[0] = type;
    values.push_back(node->output(0));
  }
  g->add_output(values.back(), "y");
  return g;
}

std::vector<partition::BackendEntry> synthetic_backends() {
  partition::OpSupportTable checkers;
  checkers["Mul"] = [](const ir::Node& n) {
    return n.output_types[0].dtype == DType::float32 ? partition::Support::yes() : partition::Support::no("float32 only");
  };
  auto pointwise = std::make_shared<partition::ContainOpProperty>(std::set<std::string, std::less<>>{"Relu", "Add", "Mul"},
                                                                 checkers);
  pointwise->set_backend_name("pointwise");
  auto library = std::make_shared<partition::ContainOpProperty>(std::set<std::string, std::less<>>{"Softmax"});
  library->set_backend_name("library");
  return {{"pointwise", pointwise, {}}, {"library", library, {}}};
}

// For the zoo: "pointwise" takes elementwise/broadcast ops, "library" the opaque ones.
class CategorySelector : public partition::SubgraphSelector {
 public:
  explicit CategorySelector(bool opaque) : opaque_(opaque) {}
  bool Select(const ir::Node& n) override { return wanted(n); }
  bool SelectInput(const ir::Node&, const ir::Node& p) override { return wanted(p); }
  bool SelectOutput(const ir::Node&, const ir::Node& c) override { return wanted(c); }

 private:
  bool wanted(const ir::Node& n) const {
    ir::OpCategory c = n.schema().category;
    return opaque_ ? c == ir::OpCategory::opaque : (c == ir::OpCategory::elementwise || c == ir::OpCategory::broadcast);
  }
  bool opaque_;
};
class CategoryProperty : public partition::SubgraphProperty {
 public:
  explicit CategoryProperty(bool opaque) : opaque_(opaque) {}
  std::unique_ptr<partition::SubgraphSelector> CreateSubgraphSelector() const override {
    return std::make_unique<CategorySelector>(opaque_);
  }

 private:
  bool opaque_;
};

double partition_ms(std::unique_ptr<ir::Graph>& graph, const std::vector<partition::BackendEntry>& backends,
                    partition::PartitionReport* out, bool detailed = false) {
  // CPU time of this (single-threaded) process: on a shared machine it is
  // steadier than the wall clock, which also counts time other jobs run.
  std::clock_t start = std::clock();
  partition::PartitionReport report = partition::partition_graph(graph, backends, "ref", {}, detailed);
  double ms = 1000.0 * static_cast<double>(std::clock() - start) / CLOCKS_PER_SEC;
  if (out) *out = std::move(report);
  return ms;
}

void print_row(const std::string& name, size_t nodes, double ms, double detailed_ms,
               const partition::PartitionReport& report) {
  std::printf("%-14s %8zu nodes %9.1f ms %7.3f ms/1k nodes (detailed report: %7.3f ms/1k)  %s\n", name.c_str(), nodes,
              ms, ms * 1000.0 / nodes, detailed_ms * 1000.0 / nodes, report.summary_line().c_str());
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<size_t> sizes = {10000, 100000, 1000000};
  if (argc > 1) sizes = {static_cast<size_t>(std::strtoull(argv[1], nullptr, 10))};
  for (size_t n : sizes) {
    double best = 1e300, best_detailed = 1e300;
    partition::PartitionReport report;
    for (int repeat = 0; repeat < (n >= 1000000 ? 2 : 3); ++repeat) {
      auto graph = synthetic_graph(n, 42);
      best = std::min(best, partition_ms(graph, synthetic_backends(), &report));
      auto again = synthetic_graph(n, 42);
      best_detailed = std::min(best_detailed, partition_ms(again, synthetic_backends(), nullptr, true));
    }
    print_row("synthetic", n, best, best_detailed, report);
    std::printf("  phases (wall ms, last lean run): index %.1f, select+trim %.1f, report %.1f, rebuild %.1f\n",
                report.timings.index, report.timings.select, report.timings.report, report.timings.rebuild);
  }
  if (argc > 1) return 0;
  auto pointwise = std::make_shared<CategoryProperty>(false);
  pointwise->set_backend_name("pointwise");
  auto library = std::make_shared<CategoryProperty>(true);
  library->set_backend_name("library");
  std::vector<partition::BackendEntry> zoo_backends = {{"library", library, {}}, {"pointwise", pointwise, {}}};
  for (const char* name : {"resnet50", "mobilenet_v2", "bert", "squeezenet"}) {
    auto graph = frontend::load_onnx_from_memory(zoo::build_zoo_model(name));
    passes::PassContext context;
    passes::run_pipeline(graph, passes::default_pipeline(), context);
    size_t nodes = graph->num_nodes();
    double best = 1e300, best_detailed = 1e300;
    partition::PartitionReport report;
    for (int repeat = 0; repeat < 5; ++repeat) {
      auto copy = graph->clone();
      best = std::min(best, partition_ms(copy, zoo_backends, &report));
      auto again = graph->clone();
      best_detailed = std::min(best_detailed, partition_ms(again, zoo_backends, nullptr, true));
    }
    print_row(name, nodes, best, best_detailed, report);
  }
  return 0;
}
