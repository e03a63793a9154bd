// graft train MODEL.onnx --data train.npz --loss NAME [--optimizer sgd|adamw] ... -o trained.onnx:
// trains the model's initializers with training::Trainer on batches cut from
// the arrays of an .npz file (one per model input, the first axis the
// sample), then writes the forward model with the trained initializers.
#include <cmath>
#include <cstring>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <numeric>
#include <optional>
#include <random>

#include "cli_support.h"
#include "command.h"
#include "graft/core/error.h"
#include "graft/frontend/onnx_import.h"
#include "graft/training/npz.h"
#include "graft/training/trainer.h"

namespace graft::cli {

namespace {

struct TrainOptions {
  std::string model;
  std::string output;
  std::string data;
  std::string loss;
  std::string parameters;
  std::string optimizer = "sgd";
  std::string learning_rate = "0.01";
  std::string final_learning_rate;
  std::string momentum = "0";
  std::string weight_decay = "0";
  bool nesterov = false;
  std::string beta1 = "0.9";
  std::string beta2 = "0.999";
  std::string epsilon = "1e-8";
  std::string batch_size = "32";
  std::string epochs = "1";
  bool shuffle = false;
  std::string seed = "0";
  std::string log;
  std::string threads;
  std::string backends;
  std::string fusion;
  bool recompute = false;
};

float parse_float(const std::string& text, const std::string& flag) {
  size_t used = 0;
  float value = 0;
  try {
    value = std::stof(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size() || !std::isfinite(value))
    fail(ErrorKind::invalid_argument, flag, ": '", text, "' is not a finite number");
  return value;
}

/// The samples `rows` (indices along the first axis) of `array`, as one batch.
Tensor gather_rows(const Tensor& array, const std::vector<int64_t>& rows) {
  Shape shape = array.shape();
  size_t row_bytes = array.nbytes() / static_cast<size_t>(shape[0]);
  shape[0] = static_cast<int64_t>(rows.size());
  Tensor batch = Tensor::uninitialized(array.dtype(), shape);
  const char* from = static_cast<const char*>(array.raw_data());
  char* to = static_cast<char*>(batch.raw_data());
  for (size_t i = 0; i < rows.size(); ++i)
    std::memcpy(to + i * row_bytes, from + static_cast<size_t>(rows[i]) * row_bytes, row_bytes);
  return batch;
}

int train(const TrainOptions& options) {
  if (options.model.empty()) fail(ErrorKind::invalid_argument, "train: give a model");
  if (options.output.empty()) fail(ErrorKind::invalid_argument, "train: give the output file with -o OUT.onnx");
  if (options.loss.empty()) fail(ErrorKind::invalid_argument, "train: give the loss with --loss NAME");
  if (options.data.empty()) fail(ErrorKind::invalid_argument, "train: give the training data with --data FILE.npz");
  training::TrainerOptions trainer_options;
  trainer_options.loss = options.loss;
  if (!options.parameters.empty()) trainer_options.parameters = parse_name_list(options.parameters, "--params");
  training::OptimizerOptions& optimizer = trainer_options.optimizer;
  optimizer.kind = training::parse_optimizer_kind(options.optimizer);
  optimizer.momentum = parse_float(options.momentum, "--momentum");
  optimizer.weight_decay = parse_float(options.weight_decay, "--weight-decay");
  optimizer.nesterov = options.nesterov;
  optimizer.beta1 = parse_float(options.beta1, "--beta1");
  optimizer.beta2 = parse_float(options.beta2, "--beta2");
  optimizer.epsilon = parse_float(options.epsilon, "--eps");
  trainer_options.learning_rate = parse_float(options.learning_rate, "--lr");
  std::optional<float> final_learning_rate;
  if (!options.final_learning_rate.empty()) {
    final_learning_rate = parse_float(options.final_learning_rate, "--lr-final");
    if (*final_learning_rate < 0) fail(ErrorKind::invalid_argument, "--lr-final: must be >= 0");
  }
  if (!options.threads.empty()) trainer_options.session.num_threads = parse_thread_count(options.threads, "--threads");
  if (!options.backends.empty()) trainer_options.session.backends = parse_name_list(options.backends, "--backends");
  trainer_options.session.fusion = parse_on_off(options.fusion, "--fusion");
  trainer_options.recompute_pointwise_activations = options.recompute;
  int64_t batch_size = parse_count(options.batch_size, "--batch-size", int64_t{1} << 30);
  int64_t epochs = parse_count(options.epochs, "--epochs", int64_t{1} << 30);
  int64_t seed = parse_count(options.seed, "--seed", INT64_MAX);
  if (batch_size == 0) fail(ErrorKind::invalid_argument, "--batch-size: must be at least 1");

  std::unique_ptr<ir::Graph> model = frontend::load_onnx(options.model);
  std::map<std::string, Tensor> data = training::load_npz(options.data);
  std::vector<std::string> input_names;
  for (const ir::Node* in : model->inputs()) input_names.push_back(in->output_names[0]);
  for (const auto& [name, array] : data)
    if (std::find(input_names.begin(), input_names.end(), name) == input_names.end())
      fail(
          ErrorKind::invalid_argument, options.data, ": array '", name, "' is not an input of the model (inputs: ",
          [&] {
            std::string list;
            for (const std::string& n : input_names) list += (list.empty() ? "" : ", ") + n;
            return list;
          }(),
          ")");
  int64_t samples = -1;
  std::string first;
  for (const std::string& name : input_names) {
    auto it = data.find(name);
    if (it == data.end())
      fail(ErrorKind::invalid_argument, options.data, ": no array for the model's input '", name, "'");
    if (it->second.rank() == 0)
      fail(ErrorKind::invalid_argument, options.data, ": array '", name,
           "' is a scalar; its first axis must be the sample");
    if (samples < 0) samples = it->second.dim(0), first = name;
    if (it->second.dim(0) != samples)
      fail(ErrorKind::invalid_argument, options.data, ": array '", name, "' holds ", it->second.dim(0),
           " samples but '", first, "' holds ", samples);
  }
  if (samples < batch_size)
    fail(ErrorKind::invalid_argument, options.data, ": ", samples, " samples, fewer than one batch of ", batch_size);

  training::Trainer trainer(*model, trainer_options);
  int64_t steps_per_epoch = samples / batch_size;
  int64_t total_steps = steps_per_epoch * epochs;
  std::vector<int64_t> order(static_cast<size_t>(samples));
  std::mt19937_64 random(static_cast<uint64_t>(seed));
  std::ofstream log;
  if (!options.log.empty()) {
    log.open(options.log);
    if (!log) fail(ErrorKind::io, options.log, ": cannot write the log");
    log << "step,loss\n";
  }
  std::cout << "training " << options.model << ": " << samples << " samples, " << steps_per_epoch << " batches of "
            << batch_size << " an epoch"
            << (samples % batch_size ? " (the last " + std::to_string(samples % batch_size) +
                                           " samples of each epoch's order are left out)"
                                     : "")
            << ", " << training::optimizer_kind_name(optimizer.kind) << ", lr " << trainer_options.learning_rate
            << "\n";
  for (int64_t epoch = 0; epoch < epochs; ++epoch) {
    std::iota(order.begin(), order.end(), int64_t{0});
    if (options.shuffle) std::shuffle(order.begin(), order.end(), random);
    double sum = 0;
    for (int64_t s = 0; s < steps_per_epoch; ++s) {
      std::vector<int64_t> rows(order.begin() + s * batch_size, order.begin() + (s + 1) * batch_size);
      std::map<std::string, Tensor> batch;
      for (const std::string& name : input_names) batch[name] = gather_rows(data.at(name), rows);
      if (final_learning_rate) {
        // Linear decay: step k of K runs at lr + (final - lr) k / (K - 1).
        double k = static_cast<double>(trainer.steps()),
               last = static_cast<double>(std::max<int64_t>(1, total_steps - 1));
        double lr = trainer_options.learning_rate;
        trainer.set_learning_rate(static_cast<float>(lr + (*final_learning_rate - lr) * k / last));
      }
      float loss = trainer.step(batch);
      if (!std::isfinite(loss))
        fail(ErrorKind::invalid_argument, "train: the loss is ", loss, " at step ", trainer.steps(), " (lower --lr?)");
      sum += loss;
      if (log) log << trainer.steps() << "," << std::setprecision(9) << loss << "\n";
    }
    std::cout << "epoch " << epoch + 1 << ": mean loss " << sum / static_cast<double>(steps_per_epoch) << "\n";
  }
  if (log) {
    log.close();
    if (!log) fail(ErrorKind::io, options.log, ": cannot write the log");
  }
  trainer.export_model(options.output);
  const training::StepStats& stats = trainer.last_step_stats();
  std::cout << "trained " << trainer.parameters().size() << " parameters in " << trainer.steps()
            << " steps; a step's intermediate values peak at " << format_bytes(stats.peak_bytes)
            << (options.recompute ? " with cheap activations recomputed" : "") << " (parameters "
            << format_bytes(stats.parameter_bytes) << ", optimizer state " << format_bytes(stats.state_bytes)
            << "); wrote " << options.output << "\n";
  return 0;
}

std::function<int()> setup_train(CLI::App& app) {
  auto options = std::make_shared<TrainOptions>();
  CLI::App* sub = app.add_subcommand("train", "train a model's initializers on .npz data and write the trained model");
  sub->add_option("model", options->model, "the .onnx model, with its loss");
  sub->add_option("-o,--output", options->output, "the trained .onnx model to write (without the loss)");
  sub->add_option("--data", options->data, ".npz file: one array per model input, the first axis the sample");
  sub->add_option("--loss", options->loss, "the name of the scalar loss value");
  sub->add_option("--params", options->parameters,
                  "comma-separated initializers to train (default: every floating-point initializer the loss reads)");
  sub->add_option("--optimizer", options->optimizer, "sgd (default) or adamw");
  sub->add_option("--lr", options->learning_rate, "learning rate (default 0.01)");
  sub->add_option(
      "--lr-final", options->final_learning_rate,
      "decay the learning rate linearly from --lr at the first step to this at the last (default: constant)");
  sub->add_option("--momentum", options->momentum, "sgd: momentum (default 0)");
  sub->add_flag("--nesterov", options->nesterov, "sgd: Nesterov momentum");
  sub->add_option("--weight-decay", options->weight_decay,
                  "sgd: L2 penalty; adamw: decoupled weight decay (default 0)");
  sub->add_option("--beta1", options->beta1, "adamw: first moment decay (default 0.9)");
  sub->add_option("--beta2", options->beta2, "adamw: second moment decay (default 0.999)");
  sub->add_option("--eps", options->epsilon, "adamw: epsilon (default 1e-8)");
  sub->add_option("--batch-size", options->batch_size, "samples per step (default 32)");
  sub->add_option("--epochs", options->epochs, "passes over the data (default 1)");
  sub->add_flag("--shuffle", options->shuffle, "shuffle the samples each epoch (default: in file order)");
  sub->add_option("--seed", options->seed, "seed of --shuffle (default 0)");
  sub->add_option("--log", options->log, "CSV file of the loss of every step (step,loss)");
  sub->add_option("--threads", options->threads, "intra-op threads, 1..1024 (default: GRAFT_NUM_THREADS or cores)");
  sub->add_option("--backends", options->backends,
                  "backends in priority order, comma-separated (default: GRAFT_BACKENDS, else all available)");
  sub->add_option("--fusion", options->fusion, "on|off: pointwise fusion (default: GRAFT_FUSION, else on)");
  sub->add_flag("--recompute", options->recompute,
                "recompute cheap pointwise activations in the backward part instead of keeping them from the "
                "forward part: a lower peak, the same steps");
  return [options] { return train(*options); };
}

}  // namespace

GRAFT_CLI_COMMAND(setup_train);

}  // namespace graft::cli
