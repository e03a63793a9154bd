/// \file
/// Reverse-mode automatic differentiation of a graph: the forward graph
/// extended with the backward nodes that compute the gradient of a scalar
/// loss with respect to chosen weights or inputs. Each op's backward nodes
/// come from the gradient builder declared with its semantics
/// (graft/ops/gradient.h).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "graft/ir/graph.h"

namespace graft::autodiff {

/// How gradient() builds the backward part.
struct GradientOptions {
  /// Recompute cheap pointwise forward values (Relu, Gelu, Sigmoid, Tanh,
  /// Add, Mul, ... chains) in the backward part from values it keeps anyway,
  /// instead of keeping them alive from the forward part until their backward
  /// use (autodiff/recompute.h): the same gradients, fewer bytes held across
  /// the step, a few more pointwise ops that fuse with the backward ones.
  bool recompute_pointwise_activations = false;
};

/// Returns the forward+backward graph of `graph`: its outputs are the loss
/// (the value named `loss`: a graph output or any named value), then
/// `<W>_grad` for each name W of `wrt` (initializers or graph inputs, in that
/// order). Backward nodes are marked is_backward. The gradient of a value read
/// by several nodes is the sum of their contributions; a gradient of a
/// broadcast shape is summed back to the shape of what was broadcast; nodes
/// on no path from a `wrt` value to the loss get no gradient, and a `wrt`
/// value no gradient reaches (the loss does not depend on it, or only through
/// inputs that are not differentiable, such as class weights) gets zeros.
/// Forward values the result does not need are dropped; integer shape
/// computations (Shape -> ... -> Reshape) are folded into constants first.
/// Throws invalid_argument when the loss or a wrt name is unknown or
/// repeated, the loss is not a scalar (one element), or a wrt value is not
/// floating point; unsupported when an op on a needed path has no gradient
/// builder, naming the op and the path from the loss to it, or when a builder
/// needs a shape that is not known.
std::unique_ptr<ir::Graph> gradient(const ir::Graph& graph, std::string loss, std::vector<std::string> wrt,
                                    const GradientOptions& options = {});

/// The names of the floating-point initializers the value named `loss`
/// depends on, in graph order: what `graft grad --wrt initializers`
/// differentiates. Initializers are the Constant nodes named as their value
/// (as the ONNX importer makes them); the values of ONNX Constant ops (clip
/// bounds, scales) keep their own node names and are not included.
std::vector<std::string> trainable_initializers(const ir::Graph& graph, const std::string& loss);

}  // namespace graft::autodiff
