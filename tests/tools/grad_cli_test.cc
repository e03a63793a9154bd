// graft grad, run as a process: a small classifier written as ONNX, its
// forward+backward graph written by the CLI, read back and run, compared with
// autodiff::gradient in process; bad arguments end with one error line.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "graft/autodiff/gradient.h"
#include "graft/frontend/onnx_import.h"
#include "graft/runtime/session.h"
#include "support/cli_runner.h"
#include "support/graph_runner.h"
#include "support/training_mlp.h"

namespace {

namespace fs = std::filesystem;
using graft::DType;
using graft::Tensor;
using graft::ir::OpId;
using graft::ir::Value;

using Result = graft::testing::CliResult;
using graft::testing::read_text;

class GradCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("graft_grad_cli_test_" + std::to_string(getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  Result graft(const std::string& args) { return graft::testing::run_graft(args, dir_); }

  /// graft::testing::training_mlp of batch 4, 5 hidden units and 3 classes, the
  /// labels a constant: x[4,6] -> Gemm(w1, b1) -> Relu -> MatMul(w2) ->
  /// SoftmaxCrossEntropyLoss(labels) = loss.
  std::string write_classifier() {
    auto g = graft::testing::training_mlp(
        {.batch = 4, .hidden = 5, .classes = 3, .output_bias = false, .constant_labels = {0, 2, 1, 2}});
    const std::string path = (dir_ / "classifier.onnx").string();
    graft::frontend::save_onnx(*g, path);
    return path;
  }

  fs::path dir_;
};

TEST_F(GradCliTest, WritesTheLossAndOneGradientPerInitializer) {
  const std::string model = write_classifier();
  const std::string train = (dir_ / "train.onnx").string();
  Result r = graft("grad '" + model + "' --loss loss --wrt initializers -o '" + train + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("with respect to 3 values"), std::string::npos) << r.out;

  auto written = graft::frontend::load_onnx(train);
  ASSERT_EQ(written->output_names(), (std::vector<std::string>{"loss", "w1_grad", "b1_grad", "w2_grad"}));
  auto in_process = graft::autodiff::gradient(*graft::frontend::load_onnx(model), "loss", {"w1", "b1", "w2"});
  std::vector<Tensor> inputs{graft::testing::random_tensor({4, 6}, 4)};
  auto got = graft::runtime::Session(std::move(written)).run(inputs);
  auto want = graft::testing::run_graph(*in_process, inputs);
  ASSERT_EQ(got.size(), 4u);
  for (size_t i = 0; i < got.size(); ++i) graft::testing::expect_close(got[i], want[i], 1e-4, 1e-6);

  // `graft run` takes the written file like any model.
  r = graft("run '" + train + "' --shape x=4,6");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("w2_grad"), std::string::npos) << r.out;
}

/// The number in "N activations kept for the backward nodes" of graft grad's report.
int kept_activations(const std::string& out) {
  const size_t at = out.find(" activations kept");
  if (at == std::string::npos) return -1;
  size_t begin = at;
  while (begin > 0 && std::isdigit(static_cast<unsigned char>(out[begin - 1]))) --begin;
  return std::stoi(out.substr(begin, at - begin));
}

TEST_F(GradCliTest, RecomputeKeepsFewerActivationsForTheSameGradients) {
  const std::string model = write_classifier();
  const std::string kept = (dir_ / "kept.onnx").string(), recomputed = (dir_ / "recomputed.onnx").string();
  Result plain = graft("grad '" + model + "' --loss loss -o '" + kept + "'");
  Result lean = graft("grad '" + model + "' --loss loss --recompute -o '" + recomputed + "'");
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  ASSERT_EQ(lean.exit_code, 0) << lean.err;
  // ReLU's output (read by w2's gradient) is recomputed from its input, which ReLU's gradient keeps.
  EXPECT_GT(kept_activations(plain.out), 0) << plain.out;
  EXPECT_LT(kept_activations(lean.out), kept_activations(plain.out)) << lean.out;
  EXPECT_NE(lean.out.find("cheap ones recomputed"), std::string::npos) << lean.out;
  std::vector<Tensor> inputs{graft::testing::random_tensor({4, 6}, 5)};
  auto want = graft::testing::run_graph(*graft::frontend::load_onnx(kept), inputs);
  auto got = graft::testing::run_graph(*graft::frontend::load_onnx(recomputed), inputs);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) graft::testing::expect_close(got[i], want[i], 1e-6, 1e-7);
}

TEST_F(GradCliTest, ShapeFixesASymbolicBatch) {
  graft::ir::Graph g;
  g.opset_imports[""] = 17;
  graft::ir::ValueType x_type{DType::float32, true, {graft::ir::Dim::symbolic("batch"), graft::ir::Dim::known(3)}};
  Value x = g.add_input("x", x_type)->output(0);
  Value w = g.add_constant("w", graft::testing::random_tensor({3}, 1))->output(0);
  Value y = g.add_node(OpId::Mul, {x, w})->output(0);
  graft::ir::Node* mean = g.add_node(OpId::ReduceMean, {g.add_node(OpId::Mul, {y, y})->output(0)});
  mean->attributes.set("keepdims", int64_t{0});
  g.add_output(mean->output(0), "loss");
  const std::string model = (dir_ / "dynamic.onnx").string(), train = (dir_ / "train.onnx").string();
  graft::frontend::save_onnx(g, model);
  Result r = graft("grad '" + model + "' --loss loss -o '" + train + "'");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("is not known"), std::string::npos) << r.err;
  r = graft("grad '" + model + "' --loss loss --shape x=4,3 -o '" + train + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto out = graft::runtime::Session(graft::frontend::load_onnx(train)).run({graft::testing::random_tensor({4, 3}, 2)});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[1].shape(), (graft::Shape{3}));
  r = graft("grad '" + model + "' --loss loss --shape x=4,5 -o '" + train + "'");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("dimension 1 is 3 in the model"), std::string::npos) << r.err;
}

// GELU as exporters write it (x * 0.5 * (1 + erf(x / sqrt 2))) in an
// opset-17 model: graft grad differentiates one Gelu node where the file
// holds graft's backward ops anyway (a LayerNormalization's gradient), and
// the written-out form where the gradient graph is standard ONNX, which an
// opset-17 file must stay for other runtimes (Gelu is an opset-20 op). Both
// files compute the gradients of the model.
TEST_F(GradCliTest, GeluIsOneNodeWhereTheFileIsGraftsAnyway) {
  for (bool layer_norm : {false, true}) {
    SCOPED_TRACE(layer_norm ? "with LayerNormalization" : "standard ONNX only");
    graft::ir::Graph g;
    g.opset_imports[""] = 17;
    Value x = g.add_input("x", graft::ir::ValueType::of(DType::float32, {4, 6}))->output(0);
    auto scalar = [&](float v, const char* name) { return g.add_constant(name, Tensor::scalar(v))->output(0); };
    Value h = g.add_node(OpId::MatMul, {x, g.add_constant("w", graft::testing::random_tensor({6, 6}, 1))->output(0)})
                  ->output(0);
    if (layer_norm)
      h = g.add_node(OpId::LayerNormalization,
                     {h, g.add_constant("gamma", graft::testing::random_tensor({6}, 2))->output(0),
                      g.add_constant("beta", graft::testing::random_tensor({6}, 3))->output(0)})
              ->output(0);
    Value erf = g.add_node(OpId::Erf, {g.add_node(OpId::Div, {h, scalar(1.41421354f, "sqrt2")})->output(0)})->output(0);
    Value gelu = g.add_node(OpId::Mul, {g.add_node(OpId::Mul, {h, scalar(0.5f, "half")})->output(0),
                                        g.add_node(OpId::Add, {erf, scalar(1.0f, "one")})->output(0)})
                     ->output(0);
    graft::ir::Node* mean = g.add_node(OpId::ReduceMean, {g.add_node(OpId::Mul, {gelu, gelu})->output(0)});
    mean->attributes.set("keepdims", int64_t{0});
    g.add_output(mean->output(0), "loss");
    const std::string model = (dir_ / "gelu.onnx").string(), train = (dir_ / "gelu_train.onnx").string();
    graft::frontend::save_onnx(g, model);
    Result r = graft("grad '" + model + "' --loss loss --wrt w -o '" + train + "'");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto written = graft::frontend::load_onnx(train);
    int gelus = 0;
    for (const auto& n : written->nodes()) gelus += n->op() == OpId::Gelu;
    EXPECT_EQ(gelus, layer_norm ? 1 : 0);
    std::vector<Tensor> inputs{graft::testing::random_tensor({4, 6}, 4)};
    auto want = graft::testing::run_graph(*graft::autodiff::gradient(g, "loss", {"w"}), inputs);
    auto got = graft::testing::run_graph(*written, inputs);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) graft::testing::expect_close(got[i], want[i], 1e-5, 1e-6);
  }
}

TEST_F(GradCliTest, NamedValuesAndErrors) {
  const std::string model = write_classifier();
  const std::string train = (dir_ / "train.onnx").string();
  Result r = graft("grad '" + model + "' --loss loss --wrt w2,x -o '" + train + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(graft::frontend::load_onnx(train)->output_names(), (std::vector<std::string>{"loss", "w2_grad", "x_grad"}));

  for (const auto& [args, needle] :
       std::vector<std::pair<std::string, std::string>>{{"--loss nothing", "no value named 'nothing'"},
                                                        {"--loss loss --wrt labels", "not floating point"},
                                                        {"", "give the loss"}}) {
    r = graft("grad '" + model + "' " + args + " -o '" + train + "'");
    EXPECT_EQ(r.exit_code, 2) << args;
    EXPECT_EQ(r.err.rfind("graft: error: ", 0), 0u) << r.err;
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "one line: " << r.err;
    EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
  }
}

}  // namespace
