// The small graphs of the dnnl op and backward tests: a graph under
// construction with its random inputs, checked against the reference kernels.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "dnnl_test_util.h"

namespace graft::testing {

using ir::Value;
using Attrs = std::function<void(ir::Attributes&)>;

/// A small graph under construction with its random inputs.
struct Case {
  std::unique_ptr<ir::Graph> graph = new_graph();
  std::vector<Tensor> inputs;
  uint64_t seed = 1;

  Value input(const Shape& shape) {
    inputs.push_back(random_tensor(shape, seed++));
    return graph->add_input("x" + std::to_string(inputs.size()), ir::ValueType::of(DType::float32, shape))->output(0);
  }
  Value constant(const Shape& shape, bool positive = false) {
    Tensor t = random_tensor(shape, 1000 + seed++);
    if (positive)
      for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = std::abs(t.data<float>()[i]) + 0.5f;
    return graph->add_constant("c" + std::to_string(seed), t)->output(0);
  }
  Value op(const std::string& type, const std::vector<Value>& in, const Attrs& attrs = {}) {
    ir::Node* n = graph->add_node(type, in, 1, type + std::to_string(seed++));
    if (attrs) attrs(n->attributes);
    return n->output(0);
  }
  /// A node of `op` with `outputs` outputs (a gradient op's several).
  ir::Node* node(ir::OpId op, const std::vector<Value>& in, int outputs, const Attrs& attrs = {}) {
    ir::Node* n = graph->add_node(op, in, outputs, std::string(ir::op_schema(op).name) + std::to_string(seed++));
    if (attrs) attrs(n->attributes);
    return n;
  }
  dnnl_backend::DnnlModuleStats check(const std::vector<Value>& outputs, double tolerance = 1e-4) {
    for (Value v : outputs) graph->add_output(v);
    return expect_dnnl_matches_reference(*graph, inputs, tolerance);
  }
  /// check() of every output of `nodes`.
  dnnl_backend::DnnlModuleStats check_every_output(const std::vector<ir::Node*>& nodes, double tolerance = 1e-4) {
    std::vector<Value> outputs;
    for (ir::Node* n : nodes)
      for (int k = 0; k < n->num_outputs(); ++k) outputs.push_back(n->output(k));
    return check(outputs, tolerance);
  }
};

inline Attrs ints(const std::string& name, std::vector<int64_t> v) {
  return [=](ir::Attributes& a) { a.set(name, v); };
}
inline Attrs all(std::vector<Attrs> list) {
  return [=](ir::Attributes& a) {
    for (const Attrs& f : list)
      if (f) f(a);
  };
}
inline Attrs one_int(const std::string& name, int64_t v) {
  return [=](ir::Attributes& a) { a.set(name, v); };
}
inline Attrs one_float(const std::string& name, float v) {
  return [=](ir::Attributes& a) { a.set(name, v); };
}
inline Attrs one_string(const std::string& name, std::string v) {
  return [=](ir::Attributes& a) { a.set(name, v); };
}

}  // namespace graft::testing
