/// \file
/// Trainer: trains a model's initializers on batches, one Session run per
/// step, and writes the trained model as a standard ONNX file.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "graft/core/tensor.h"
#include "graft/ir/graph.h"
#include "graft/runtime/session.h"
#include "graft/training/optimizer.h"
#include "graft/training/training_graph.h"

namespace graft::training {

/// What a Trainer trains and how.
struct TrainerOptions {
  /// The name of the model's scalar loss value (a graph output or any named value).
  std::string loss;
  /// The initializers to train; empty: every floating-point initializer the loss reads.
  std::vector<std::string> parameters;
  OptimizerOptions optimizer;
  /// The learning rate of the next steps (set_learning_rate changes it).
  float learning_rate = 0.01f;
  /// Threads, backends, fusion of the session that runs the steps. Its
  /// `passes` are ignored: the step runs the default pipeline without
  /// constant folding, which would fold the weights and optimizer state
  /// that each step replaces.
  runtime::SessionOptions session;
};

/// What the last step measured.
struct StepStats {
  /// Most bytes held at once by the step's intermediate values: the
  /// activations kept for the backward nodes, the gradients, the updates
  /// (backend::MemoryStats::peak_bytes of the run).
  size_t peak_bytes = 0;
  /// Bytes of the parameters and of the optimizer's state (not intermediate).
  size_t parameter_bytes = 0;
  size_t state_bytes = 0;
};

/// Trains a model. The training graph (training_graph.h) is built at the
/// first step, with the shapes of that step's inputs; every later step must
/// give inputs of the same shapes. After each step the new parameters and
/// optimizer state are written into the session's Constants in place
/// (Session::set_weight: the storage version is bumped, so a backend that
/// keeps a converted copy of a weight converts it again).
class Trainer {
 public:
  /// Copies `model` (which must have the loss). Throws invalid_argument for
  /// an empty loss name, a loss that is not a value of the model, a
  /// learning rate that is not finite and >= 0, or out-of-range hyperparameters.
  Trainer(const ir::Graph& model, TrainerOptions options);
  ~Trainer();

  /// One step on one batch: the model's inputs by name (every input, no
  /// other name). Returns the loss before the update. Throws
  /// invalid_argument naming what is wrong with the inputs (a missing or
  /// unknown name, a shape other than the first step's).
  float step(const std::map<std::string, Tensor>& inputs);

  /// Learning rate of the following steps (a schedule: no plan is rebuilt).
  void set_learning_rate(float learning_rate);
  float learning_rate() const { return options_.learning_rate; }
  /// Steps taken so far.
  int64_t steps() const { return steps_; }
  /// Measured by the last step.
  const StepStats& last_step_stats() const { return stats_; }
  /// The parameters being trained (after the first step: in the training
  /// graph's order; before it: as given, or empty for "every initializer").
  const std::vector<std::string>& parameters() const;
  /// The current value of a parameter (the initial one before any step).
  /// Throws invalid_argument for a name that is not a trained parameter.
  Tensor parameter(const std::string& name) const;
  /// The session that runs the steps (null before the first step).
  const runtime::Session* session() const { return session_.get(); }

  /// The forward model with the current parameters: the model's outputs but
  /// the loss (and whatever only the loss needed, such as the label input);
  /// the whole model, loss included, when the loss is its only output.
  std::unique_ptr<ir::Graph> trained_model() const;
  /// Writes trained_model() as an ONNX file (Error io on failure).
  void export_model(const std::string& path) const;

 private:
  void build(const std::map<std::string, Tensor>& inputs);

  std::unique_ptr<ir::Graph> model_;
  TrainerOptions options_;
  std::unique_ptr<runtime::Session> session_;
  TrainingGraph layout_;                   // names of the training graph (its graph moved into the session)
  std::vector<std::string> input_names_;   // the model's inputs, in order
  std::vector<Shape> input_shapes_;        // fixed at the first step
  std::map<std::string, Tensor> current_;  // the newest value of each parameter and state
  int64_t steps_ = 0;
  StepStats stats_;
};

}  // namespace graft::training
