// Test helpers for the math op tests: run one node on given inputs through a
// Session, and reference arithmetic on plain vectors.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>
#include <vector>

#include "graft/ops/type_inference.h"
#include "support/graph_runner.h"

namespace graft::testing {

/// One node of `op_type` whose inputs are graph inputs fed with `inputs` (an
/// undefined Tensor marks an absent optional input). Returns all outputs.
inline std::vector<Tensor> run_op(const std::string& op_type, const std::vector<Tensor>& inputs,
                                  const ir::Attributes& attributes = {}, int opset = 13, int num_outputs = 1) {
  ir::Graph g;
  g.opset_imports[""] = opset;
  std::vector<ir::Value> values;
  std::vector<Tensor> fed;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].is_defined()) {
      values.push_back(ir::Value{});
      continue;
    }
    ir::Node* in = g.add_input("in" + std::to_string(i), ir::ValueType::of(inputs[i].dtype(), inputs[i].shape()));
    values.push_back(in->output(0));
    fed.push_back(inputs[i]);
  }
  ir::Node* n = g.add_node(op_type, values, num_outputs, "node");
  n->attributes = attributes;
  for (int i = 0; i < num_outputs; ++i) g.add_output(n->output(i), "out" + std::to_string(i));
  return run_graph(g, fed);
}

/// Output types inferred for one node whose inputs have the given types; an
/// input listed in `constants` is a Constant node holding that tensor instead.
inline std::vector<ir::ValueType> infer_op(const std::string& op_type, const std::vector<ir::ValueType>& types,
                                           const ir::Attributes& attributes = {}, int opset = 13, int num_outputs = 1,
                                           const std::map<size_t, Tensor>& constants = {}) {
  ir::Graph g;
  g.opset_imports[""] = opset;
  std::vector<ir::Value> values;
  for (size_t i = 0; i < types.size(); ++i) {
    auto it = constants.find(i);
    if (it != constants.end())
      values.push_back(g.add_constant("c" + std::to_string(i), it->second)->output(0));
    else
      values.push_back(g.add_input("in" + std::to_string(i), types[i])->output(0));
  }
  ir::Node* n = g.add_node(op_type, values, num_outputs, "node");
  n->attributes = attributes;
  for (int i = 0; i < num_outputs; ++i) g.add_output(n->output(i));
  ops::infer_types(g);
  return n->output_types;
}

/// A symbolic dimension.
inline ir::Dim sym(const std::string& name) { return ir::Dim::symbolic(name); }
/// A known dimension.
inline ir::Dim dim(int64_t v) { return ir::Dim::known(v); }

/// A float64 tensor of the given shape filled from a seeded uniform [lo, hi).
inline Tensor random_double_tensor(const Shape& shape, uint64_t seed, double lo = -1.0, double hi = 1.0) {
  Tensor t(DType::float64, shape);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<double>()[i] = dist(rng);
  return t;
}

/// Builds attributes from name/value pairs.
inline ir::Attributes attrs(std::initializer_list<std::pair<std::string, ir::AttributeValue>> items) {
  ir::Attributes a;
  for (const auto& [name, value] : items) a.set(name, value);
  return a;
}

/// Converts any tensor to float32 (for comparisons).
inline Tensor to_float(const Tensor& t) {
  Tensor out(DType::float32, t.shape());
  for (int64_t i = 0; i < t.numel(); ++i) out.data<float>()[i] = static_cast<float>(t.value_as_double(i));
  return out;
}

}  // namespace graft::testing
