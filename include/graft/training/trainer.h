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
  /// Recompute cheap pointwise activations in the backward part instead of
  /// keeping them from the forward part (autodiff::GradientOptions): the
  /// same step, a lower StepStats::peak_bytes.
  bool recompute_pointwise_activations = false;
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

/// Trains a model. A training graph (training_graph.h) and the Session
/// that runs it are built for the input shapes of a step, at the first step
/// with those shapes (the gradient builders need known shapes), and kept
/// for later steps with the same shapes, so that a smaller last batch, or
/// sequences of another length, get their own plan. After each step the new
/// parameters and optimizer state are written into that session's Constants
/// in place (Session::set_weight: the storage version is bumped, so a backend
/// that keeps a converted copy of a weight converts it again); a plan that
/// missed steps gets the newest values before it runs. Every plan shares the
/// one optimizer state and step count.
class Trainer {
 public:
  /// Copies `model` (which must have the loss). Throws invalid_argument for
  /// an empty loss name, a loss that is not a value of the model, a
  /// learning rate that is not finite and >= 0, or out-of-range hyperparameters.
  Trainer(const ir::Graph& model, TrainerOptions options);
  ~Trainer();

  /// One step on one batch: the model's inputs by name (every input, no
  /// other name), of any shapes the model's input types allow. Returns the
  /// loss before the update. Throws invalid_argument naming what is wrong
  /// with the inputs (a missing or unknown name, a dtype, rank or dimension
  /// that the model's input type does not allow).
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
  /// The current value of a parameter (the initial one before any step), a
  /// copy: the steps update the weights in their buffers. Throws
  /// invalid_argument for a name that is not a trained parameter.
  Tensor parameter(const std::string& name) const;
  /// The session that ran the last step (null before the first step).
  const runtime::Session* session() const { return last_plan_ ? last_plan_->session.get() : nullptr; }
  /// The number of plans (sets of input shapes) built so far.
  size_t num_plans() const { return plans_.size(); }
  /// Plans kept at most; the least recently used one is dropped for a new one.
  static constexpr size_t kMaxPlans = 8;

  /// The forward model with the current parameters: the model's outputs but
  /// the loss (and whatever only the loss needed, such as the label input);
  /// the whole model, loss included, when the loss is its only output.
  std::unique_ptr<ir::Graph> trained_model() const;
  /// Writes trained_model() as an ONNX file (Error io on failure).
  void export_model(const std::string& path) const;

 private:
  /// The training graph's session for one set of input shapes.
  struct StepPlan {
    std::vector<Shape> input_shapes;  // of the model's inputs, in order
    std::unique_ptr<runtime::Session> session;
    int64_t synced_at_step = -1;  // steps_ when its Constants last held current_
    int64_t last_used = 0;
  };
  StepPlan& plan_for(const std::map<std::string, Tensor>& inputs);
  std::unique_ptr<StepPlan> build(const std::map<std::string, Tensor>& inputs);

  std::unique_ptr<ir::Graph> model_;
  TrainerOptions options_;
  std::vector<std::unique_ptr<StepPlan>> plans_;
  StepPlan* last_plan_ = nullptr;
  TrainingGraph layout_;                   // names of the training graph (every plan's are the same)
  std::vector<std::string> input_names_;   // the model's inputs, in order
  std::map<std::string, Tensor> current_;  // the newest value of each parameter and state (often the
                                           // last plan's Constant itself: updated in place)
  int64_t steps_ = 0;
  StepStats stats_;
};

}  // namespace graft::training
