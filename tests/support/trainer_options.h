// The training tests' trainer options: the loss "loss", an optimizer and its
// learning rate, on one thread unless asked; the rest at their defaults.
#pragma once

#include "graft/training/trainer.h"

namespace graft::testing {

/// TrainerOptions that minimize the output "loss" with `kind` at
/// `learning_rate`, the session on `threads` threads.
inline training::TrainerOptions trainer_options(training::OptimizerKind kind, float learning_rate, int threads = 1) {
  training::TrainerOptions options;
  options.loss = "loss";
  options.optimizer.kind = kind;
  options.learning_rate = learning_rate;
  options.session.num_threads = threads;
  return options;
}

}  // namespace graft::testing
