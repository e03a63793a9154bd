/// \file
/// The training graph: one step of training as one graph. The model's
/// forward nodes, the backward nodes of autodiff::gradient, and the
/// optimizer's update of every parameter, written in standard pointwise ops
/// (so the update fuses and JIT-compiles like any pointwise chain, apart from
/// the forward nodes: every node added here is marked is_backward).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "graft/autodiff/gradient.h"
#include "graft/ir/graph.h"
#include "graft/training/optimizer.h"

namespace graft::training {

/// Name of the float32 scalar input that carries the learning rate.
inline constexpr const char* kLearningRateInput = "graft.learning_rate";
/// Name of the float32 scalar input that carries the 1-based step number
/// (AdamW's bias correction; absent for SGD).
inline constexpr const char* kStepInput = "graft.step";

/// A training graph and what its outputs mean.
struct TrainingGraph {
  /// Inputs: the model's inputs (their shapes fixed), then
  /// kLearningRateInput, then (AdamW) kStepInput. Outputs: the loss, then the
  /// new value of each name of `updated`, in that order, named "<name>.next".
  std::unique_ptr<ir::Graph> graph;
  /// The parameters (initializers the optimizer updates), in the given order.
  std::vector<std::string> parameters;
  /// The optimizer's state tensors: Constant nodes of the graph, zeros at
  /// first ("<W>.momentum" for SGD with momentum; "<W>.exp_avg" and
  /// "<W>.exp_avg_sq" for AdamW), in parameter order.
  std::vector<std::string> states;
  /// parameters, then states: output 1 + i is the new value of updated[i].
  std::vector<std::string> updated;
  /// The names of the nodes of the optimizer's update (not its Constants).
  std::vector<std::string> update_nodes;
  /// Those of update_nodes that compute the scalars every parameter's update
  /// reads (AdamW's bias corrections, step size and decay factor, from the
  /// learning rate and the step number).
  std::vector<std::string> shared_scalar_nodes;
};

/// `forward` as the gradient is best taken of it: a copy in which GELU
/// written with Erf, as exporters write it (PyTorch's nn.GELU, BERT's
/// feed-forward layers), is one Gelu node (the `fuse-gelu` pass). Its
/// gradient is then one expression of x and dy, which dnnl runs as one
/// eltwise backward, and the forward keeps x alone for it, where the
/// gradients of the Erf, Div, Add and Mul nodes kept four values of x's
/// size. `graft grad` and build_training_graph differentiate this copy.
std::unique_ptr<ir::Graph> forward_for_gradient(const ir::Graph& forward);

/// Builds the training graph of `forward` for the scalar value named `loss`
/// and the float32 initializers `parameters` (empty: every floating-point
/// initializer the loss reads). The model's inputs must have known shapes
/// (fix them first: the gradient builders need them). Throws
/// invalid_argument for an unknown or non-float32 parameter, a loss that is
/// not a scalar, out-of-range hyperparameters, or a name the optimizer's
/// state would take twice; unsupported when an op on the way has no gradient.
/// `gradient` is passed to autodiff::gradient (recomputing activations),
/// which differentiates forward_for_gradient(forward).
TrainingGraph build_training_graph(const ir::Graph& forward, const std::string& loss,
                                   std::vector<std::string> parameters, const OptimizerOptions& optimizer,
                                   const autodiff::GradientOptions& gradient = {});

}  // namespace graft::training
