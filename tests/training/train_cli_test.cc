// graft train, run as a process: trains a small classifier from an .npz file,
// writes the trained model and the loss log; bad arguments and bad data end
// with one error line.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zip.h>

#include <filesystem>
#include <fstream>
#include <list>
#include <sstream>

#include "graft/frontend/npy.h"
#include "graft/frontend/onnx_import.h"
#include "support/cli_runner.h"
#include "support/graph_runner.h"
#include "support/training_mlp.h"

namespace graft {
namespace {

namespace fs = std::filesystem;
using ir::OpId;

using Result = graft::testing::CliResult;
using graft::testing::read_text;

class TrainCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("graft_train_cli_test_" + std::to_string(getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  Result graft(const std::string& args) { return graft::testing::run_graft(args, dir_); }

  /// testing::training_mlp of three classes: x[batch,6] -> Gemm -> Relu ->
  /// MatMul = logits; SoftmaxCrossEntropyLoss(logits, labels) = loss.
  std::string write_classifier() {
    auto g = testing::training_mlp({.batch = std::nullopt, .classes = 3, .output_bias = false, .logits_output = true});
    const std::string path = (dir_ / "classifier.onnx").string();
    frontend::save_onnx(*g, path);
    return path;
  }

  /// An .npz of the arrays (stored members), through .npy files written by graft.
  std::string write_npz(const std::string& name, const std::map<std::string, Tensor>& arrays) {
    const std::string path = (dir_ / name).string();
    int error = 0;
    zip_t* archive = zip_open(path.c_str(), ZIP_CREATE | ZIP_TRUNCATE, &error);
    EXPECT_NE(archive, nullptr);
    std::list<std::string> bytes;
    for (const auto& [array, tensor] : arrays) {
      const fs::path npy = dir_ / (array + ".npy");
      frontend::save_npy(tensor, npy.string());
      bytes.push_back(read_text(npy));
      zip_source_t* source = zip_source_buffer(archive, bytes.back().data(), bytes.back().size(), 0);
      EXPECT_GE(zip_file_add(archive, (array + ".npy").c_str(), source, ZIP_FL_OVERWRITE), 0);
    }
    EXPECT_EQ(zip_close(archive), 0);
    return path;
  }

  /// 64 samples of three classes that a linear rule separates.
  std::map<std::string, Tensor> separable_data(int64_t samples = 64) {
    Tensor x = testing::random_tensor({samples, 6}, 7);
    std::vector<int64_t> labels(static_cast<size_t>(samples));
    for (int64_t i = 0; i < samples; ++i) {
      const float* row = x.data<float>() + i * 6;
      labels[static_cast<size_t>(i)] = row[0] > 0.3f ? 0 : (row[1] > 0 ? 1 : 2);
    }
    return {{"x", x}, {"labels", Tensor::from_vector<int64_t>(labels, {samples})}};
  }

  fs::path dir_;
};

TEST_F(TrainCliTest, TrainsWritesTheModelAndTheLossLog) {
  const std::string model = write_classifier();
  const std::string data = write_npz("train.npz", separable_data());
  const std::string trained = (dir_ / "trained.onnx").string(), log = (dir_ / "losses.csv").string();
  Result r =
      graft("train '" + model + "' --data '" + data + "' --loss loss --optimizer adamw --lr 0.02 --batch-size 16 " +
            "--epochs 10 --shuffle --seed 3 --log '" + log + "' -o '" + trained + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("4 batches of 16"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("trained 3 parameters in 40 steps"), std::string::npos) << r.out;

  std::istringstream lines(read_text(log));
  std::string line;
  std::getline(lines, line);
  EXPECT_EQ(line, "step,loss");
  std::vector<double> losses;
  while (std::getline(lines, line)) losses.push_back(std::stod(line.substr(line.find(',') + 1)));
  ASSERT_EQ(losses.size(), 40u);
  EXPECT_LT(losses.back(), 0.6 * losses.front());

  auto written = frontend::load_onnx(trained);
  ASSERT_EQ(written->output_names(), std::vector<std::string>{"logits"});
  ASSERT_EQ(written->inputs().size(), 1u);
  bool changed = false;
  for (const auto& n : written->nodes())
    if (n->op() == OpId::Constant && n->output_names[0] == "w1")
      changed = n->constant_value.data<float>()[0] != testing::random_tensor({6, 16}, 1).data<float>()[0];
  EXPECT_TRUE(changed);
}

TEST_F(TrainCliTest, BadArgumentsAndDataAreOneLineErrors) {
  const std::string model = write_classifier();
  const std::string out = " -o '" + (dir_ / "t.onnx").string() + "'";
  auto data = separable_data();
  const std::string good = write_npz("good.npz", data);
  struct Case {
    std::string args, message;
  };
  std::map<std::string, Tensor> uneven = data;
  uneven["labels"] = Tensor::from_vector<int64_t>(std::vector<int64_t>(10, 0), {10});
  std::map<std::string, Tensor> extra = data;
  extra["y"] = testing::random_tensor({64, 2}, 9);
  std::map<std::string, Tensor> missing{{"x", data.at("x")}};
  const std::string not_npz = (dir_ / "bad.npz").string();
  std::ofstream(not_npz) << "not a zip";
  std::vector<Case> cases{
      {"'" + model + "' --loss loss" + out, "give the training data with --data"},
      {"'" + model + "' --data '" + good + "'" + out, "give the loss with --loss"},
      {"'" + model + "' --data '" + not_npz + "' --loss loss" + out, "not an .npz archive"},
      {"'" + model + "' --data '" + write_npz("uneven.npz", uneven) + "' --loss loss" + out,
       "array 'labels' holds 10 samples but 'x' holds 64"},
      {"'" + model + "' --data '" + write_npz("extra.npz", extra) + "' --loss loss" + out,
       "array 'y' is not an input of the model"},
      {"'" + model + "' --data '" + write_npz("missing.npz", missing) + "' --loss loss" + out,
       "no array for the model's input 'labels'"},
      {"'" + model + "' --data '" + good + "' --loss logits" + out, "must be a floating-point scalar"},
      {"'" + model + "' --data '" + good + "' --loss nope" + out, "no value named 'nope'"},
      {"'" + model + "' --data '" + good + "' --loss loss --optimizer adam" + out, "unknown optimizer 'adam'"},
      {"'" + model + "' --data '" + good + "' --loss loss --lr fast" + out, "--lr: 'fast' is not a finite number"},
      {"'" + model + "' --data '" + good + "' --loss loss --batch-size 100" + out, "fewer than one batch of 100"},
      {"'" + model + "' --data '" + good + "' --loss loss --batch-size 0" + out, "--batch-size: must be at least 1"},
      {"'" + model + "' --data '" + good + "' --loss loss --momentum -1" + out, "momentum is -1"},
  };
  for (const Case& c : cases) {
    Result r = graft("train " + c.args);
    EXPECT_NE(r.exit_code, 0) << c.args;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << c.args << "\n" << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
}

}  // namespace
}  // namespace graft
