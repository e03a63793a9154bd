// Finite-difference checks of gradient builders: a small forward graph over
// float64 inputs, a scalar loss sum(y * R) with fixed random R per output,
// autodiff::gradient's result compared with central differences.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <random>
#include <string>
#include <vector>

#include "graft/autodiff/gradient.h"
#include "graft/ops/type_inference.h"
#include "graft/runtime/session.h"
#include "support/graph_runner.h"

namespace graft::testing::autodiff_check {

/// How a differentiated input is drawn: uniform in [-1, 1], or in [0.5, 1.5]
/// (for logarithms, square roots, denominators).
enum class Domain { symmetric, positive };

/// One differentiated input of a case.
struct InputSpec {
  Shape shape;
  Domain domain = Domain::symmetric;
};

/// Builds the forward graph on the given inputs; returns its outputs (each
/// contributes to the loss).
using Builder = std::function<std::vector<ir::Value>(ir::Graph&, const std::vector<ir::Value>&)>;

inline Tensor random_double(const Shape& shape, Domain domain, uint64_t seed) {
  Tensor t(DType::float64, shape);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> dist(domain == Domain::positive ? 0.5 : -1.0,
                                              domain == Domain::positive ? 1.5 : 1.0);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<double>()[i] = dist(rng);
  return t;
}

/// A session on the reference kernels (no fusion), as the tests of passes use.
inline std::unique_ptr<runtime::Session> reference_session(const ir::Graph& graph) {
  runtime::SessionOptions options;
  options.passes = {"verify", "infer"};
  options.num_threads = 1;
  options.backends = {"ref"};
  options.fusion = false;
  options.verify_after_each_pass = true;
  return std::make_unique<runtime::Session>(graph.clone(), options);
}

/// The forward graph with inputs x0, x1, ... and output "loss".
inline std::unique_ptr<ir::Graph> make_forward(const std::vector<InputSpec>& inputs, const Builder& build,
                                               uint64_t seed) {
  auto g = std::make_unique<ir::Graph>();
  g->opset_imports[""] = 17;
  std::vector<ir::Value> xs;
  for (size_t i = 0; i < inputs.size(); ++i)
    xs.push_back(g->add_input("x" + std::to_string(i), ir::ValueType::of(DType::float64, inputs[i].shape))->output(0));
  std::vector<ir::Value> ys = build(*g, xs);
  ops::infer_types(*g);
  ir::Value loss;
  for (size_t k = 0; k < ys.size(); ++k) {
    std::optional<Shape> shape = g->type_of(ys[k]).concrete_shape();
    EXPECT_TRUE(shape.has_value()) << "output " << k << " has no known shape";
    if (!shape) return g;
    ir::Value r =
        g->add_constant("R" + std::to_string(k), random_double(*shape, Domain::symmetric, seed + 100 + k))->output(0);
    ir::Value term = g->add_node(ir::OpId::ReduceSum, {g->add_node(ir::OpId::Mul, {ys[k], r})->output(0)})->output(0);
    g->nodes().back()->attributes.set("keepdims", int64_t{0});
    loss = loss ? g->add_node(ir::OpId::Add, {loss, term})->output(0) : term;
  }
  g->add_output(loss, "loss");
  ops::infer_types(*g);
  return g;
}

/// Checks d loss / d x_i from autodiff against central differences with step
/// `h`: |analytic - numeric| <= atol + rtol * |numeric| per element.
inline void check_gradients(const std::string& what, const std::vector<InputSpec>& inputs, const Builder& build,
                            uint64_t seed = 1, double rtol = 1e-5, double atol = 1e-6, double h = 1e-6) {
  SCOPED_TRACE(what);
  std::unique_ptr<ir::Graph> forward = make_forward(inputs, build, seed);
  std::vector<std::string> wrt;
  std::vector<Tensor> values;
  for (size_t i = 0; i < inputs.size(); ++i) {
    wrt.push_back("x" + std::to_string(i));
    values.push_back(random_double(inputs[i].shape, inputs[i].domain, seed + i));
  }
  std::unique_ptr<ir::Graph> backward;
  try {
    backward = autodiff::gradient(*forward, "loss", wrt);
  } catch (const std::exception& e) {
    ADD_FAILURE() << "gradient failed: " << e.what();
    return;
  }
  std::vector<Tensor> analytic = reference_session(*backward)->run(values);
  ASSERT_EQ(analytic.size(), inputs.size() + 1);
  auto forward_session = reference_session(*forward);
  auto loss_at = [&](const std::vector<Tensor>& v) { return forward_session->run(v)[0].value_as_double(0); };
  EXPECT_NEAR(analytic[0].value_as_double(0), loss_at(values), 1e-9);
  for (size_t i = 0; i < inputs.size(); ++i) {
    ASSERT_EQ(analytic[i + 1].shape(), inputs[i].shape) << wrt[i] << "_grad";
    ASSERT_EQ(analytic[i + 1].dtype(), DType::float64) << wrt[i] << "_grad";
    for (int64_t e = 0; e < values[i].numel(); ++e) {
      std::vector<Tensor> plus = values, minus = values;
      plus[i] = values[i].clone();
      minus[i] = values[i].clone();
      plus[i].data<double>()[e] += h;
      minus[i].data<double>()[e] -= h;
      const double numeric = (loss_at(plus) - loss_at(minus)) / (2 * h);
      const double got = analytic[i + 1].data<double>()[e];
      ASSERT_LE(std::abs(got - numeric), atol + rtol * std::abs(numeric))
          << wrt[i] << "_grad element " << e << ": autodiff " << got << ", finite differences " << numeric;
      if (std::getenv("GRAFT_DEBUG_FD"))
        std::fprintf(stderr, "%s %s[%ld] %g %g\n", what.c_str(), wrt[i].c_str(), (long)e, got, numeric);
    }
  }
}

/// Adds a node of `op` with attributes and returns its first output.
inline ir::Value node(ir::Graph& g, ir::OpId op, const std::vector<ir::Value>& inputs,
                      std::vector<std::pair<std::string, ir::AttributeValue>> attributes = {}, int num_outputs = 1) {
  ir::Node* n = g.add_node(op, inputs, num_outputs);
  for (auto& [key, value] : attributes) n->attributes.set(key, std::move(value));
  return n->output(0);
}

/// A constant int64 tensor (1-D when `shape` is empty).
inline ir::Value ints(ir::Graph& g, const std::vector<int64_t>& values, Shape shape = {}) {
  static int counter = 0;
  if (shape.empty()) shape = {static_cast<int64_t>(values.size())};
  return g.add_constant("c" + std::to_string(counter++), Tensor::from_vector<int64_t>(values, shape))->output(0);
}

/// A constant float64 tensor.
inline ir::Value doubles(ir::Graph& g, const std::vector<double>& values, Shape shape) {
  static int counter = 0;
  return g.add_constant("d" + std::to_string(counter++), Tensor::from_vector<double>(values, shape))->output(0);
}

}  // namespace graft::testing::autodiff_check
