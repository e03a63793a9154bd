/// \file
/// GELU's gradient as one oneDNN eltwise backward (gelu_erf). The gradient
/// builder (ops/activations.cc) writes dx = dy * (Phi(x) + x phi(x)) in
/// standard ops, Phi through Erf, which oneDNN has no primitive for; the
/// dnnl backend takes the whole expression and runs it as one pass over x
/// and dy. The partitioner keeps the expression's Erf only together with
/// the rest of it (DnnlSelector::Filter), so that a training step's forward
/// and backward stay one subgraph around it.
#pragma once

#include <functional>
#include <optional>
#include <vector>

#include "graft/ir/graph.h"

namespace graft::dnnl_backend {

/// One GELU gradient: its final product dy * derivative, the values it
/// reads, and the nodes of the derivative that the eltwise backward replaces.
struct GeluGradient {
  const ir::Node* product = nullptr;   ///< Mul(dy, derivative): the gradient dx
  ir::Value x;                         ///< GELU's input
  ir::Value dy;                        ///< the gradient of GELU's output
  std::vector<const ir::Node*> steps;  ///< the derivative's nodes (the Erf among them), not `product`
};

/// The GELU gradient whose final product is `product`, as the Gelu gradient
/// builder writes it (exact form: the derivative 0.5 (1 + erf(x sqrt(1/2)))
/// + x (exp(-x^2 / 2) / sqrt(2 pi)), operands of each Add and Mul in either
/// order, the constants one-element; x, dy and the product of one type), or
/// nothing. `readers` gives the nodes
/// that read a node's outputs, `is_output` whether a node's output leaves the
/// graph: every step must be read only by other steps or by `product`.
std::optional<GeluGradient> match_gelu_gradient(
    const ir::Node& product, const std::function<std::vector<const ir::Node*>(const ir::Node&)>& readers,
    const std::function<bool(const ir::Node&)>& is_output);

}  // namespace graft::dnnl_backend
