// Random fused DAGs for the codegen property tests (interpreter, LLVM JIT,
// CUDA): chains, shared subexpressions, several outputs, broadcasting inputs.
#pragma once

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "codegen_test_util.h"

namespace graft::testing {

struct RandomDag {
  std::unique_ptr<ir::Graph> graph;
  std::vector<Tensor> inputs;
};

/// A random float32 DAG. `smooth` leaves out ops whose result jumps under a
/// one-ulp change of their input (Floor, comparisons), for approximate kernels.
inline RandomDag make_random_dag(uint64_t seed, bool smooth) {
  std::mt19937_64 rng(seed);
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<uint64_t>(n)); };
  RandomDag dag;
  dag.graph = std::make_unique<ir::Graph>();
  ir::Graph& g = *dag.graph;
  g.opset_imports[""] = 20;
  int rank = pick(5);
  Shape base(static_cast<size_t>(rank));
  for (int64_t& d : base) d = 1 + pick(4);
  std::vector<ir::Value> values;
  int n_inputs = 1 + pick(4);
  for (int i = 0; i < n_inputs; ++i) {
    Shape shape;
    int drop = pick(rank + 1);
    for (int d = drop; d < rank; ++d) shape.push_back(pick(3) == 0 ? 1 : base[static_cast<size_t>(d)]);
    values.push_back(g.add_input("x" + std::to_string(i), ir::ValueType::of(DType::float32, shape))->output(0));
    dag.inputs.push_back(random_of(DType::float32, shape, seed * 31 + static_cast<uint64_t>(i), -2, 2));
  }
  static const char* unary[] = {"Abs",         "Neg",  "Tanh", "Sigmoid", "Relu",     "Exp",
                                "Softsign",    "Erf",  "Sqrt", "Log",     "Softplus", "LeakyRelu",
                                "HardSigmoid", "Gelu", "Mish", "Sin",     "Floor",    "Elu"};
  static const char* binary[] = {"Add", "Sub", "Mul", "Div", "Max", "Min", "Pow", "Sum"};
  int n_nodes = 1 + pick(10);
  for (int k = 0; k < n_nodes; ++k) {
    auto operand = [&] { return values[static_cast<size_t>(pick(static_cast<int>(values.size())))]; };
    int kind = pick(10);
    ir::Node* node;
    if (kind < 5) {
      const char* op = unary[pick(18)];
      if (smooth && std::string(op) == "Floor") op = "Tanh";
      node = g.add_node(op, {operand()});
    } else if (kind < 9) {
      node = g.add_node(binary[pick(8)], {operand(), operand()});
    } else if (!smooth) {
      ir::Node* cond = g.add_node("Greater", {operand(), operand()});
      node = g.add_node("Where", {cond->output(0), operand(), operand()});
    } else {
      node = g.add_node("Clip", {operand()});
    }
    node->opset_version = 20;
    values.push_back(node->output(0));
  }
  g.add_output(values.back(), "y0");
  if (pick(3) == 0) g.add_output(values[static_cast<size_t>(n_inputs + pick(n_nodes))], "y1");
  ops::infer_types(g);
  return dag;
}

}  // namespace graft::testing
