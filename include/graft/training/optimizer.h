/// \file
/// The optimizers a training graph applies to its parameters, with
/// PyTorch's exact update rules (torch.optim.SGD, torch.optim.AdamW).
#pragma once

#include <string>

namespace graft::training {

/// Which update rule a training graph applies.
enum class OptimizerKind {
  sgd,    ///< torch.optim.SGD (dampening 0): momentum, Nesterov, L2 weight decay
  adamw,  ///< torch.optim.AdamW: Adam with decoupled weight decay and bias correction
};

/// An optimizer and its hyperparameters (all but the learning rate, which
/// each step passes as a scalar input, so a schedule never rebuilds the plan).
struct OptimizerOptions {
  OptimizerKind kind = OptimizerKind::sgd;
  /// SGD: the momentum factor (0: plain SGD, no state).
  float momentum = 0.0f;
  /// SGD: Nesterov momentum (needs momentum > 0).
  bool nesterov = false;
  /// SGD: L2 penalty added to the gradient; AdamW: decoupled decay, the
  /// parameter is multiplied by 1 - lr * weight_decay before the update.
  float weight_decay = 0.0f;
  /// AdamW: decay rates of the first and second moment estimates.
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  /// AdamW: added to the denominator after the square root.
  float epsilon = 1e-8f;
};

/// "sgd" or "adamw" as an OptimizerKind; throws invalid_argument naming the
/// text otherwise.
OptimizerKind parse_optimizer_kind(const std::string& text);

/// "sgd" or "adamw".
const char* optimizer_kind_name(OptimizerKind kind);

/// Throws invalid_argument naming the hyperparameter that is out of range
/// (negative momentum or decay, betas outside [0, 1), epsilon <= 0, Nesterov
/// without momentum, a value that is not finite).
void validate(const OptimizerOptions& options);

}  // namespace graft::training
