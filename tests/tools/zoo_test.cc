// The model zoo: names, determinism, and that each model is a valid ONNX
// model with the architecture's node counts. (resnet50 and bert are left to
// the slower model tests: building them takes seconds.)
#include "graft/zoo/zoo.h"

#include <gtest/gtest.h>
#include <onnx/checker.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "graft/core/error.h"

namespace {

onnx::ModelProto parse(const std::string& bytes) {
  onnx::ModelProto model;
  EXPECT_TRUE(model.ParseFromString(bytes));
  return model;
}

std::map<std::string, int> op_histogram(const onnx::ModelProto& model) {
  std::map<std::string, int> counts;
  for (const auto& node : model.graph().node()) ++counts[node.op_type()];
  return counts;
}

TEST(Zoo, ListsTheModelsSorted) {
  std::vector<std::string> names = graft::zoo::zoo_model_names();
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  for (const char* expected : {"bert", "gru", "gru_cell", "mlp", "mobilenet_v2", "resnet18", "resnet50", "squeezenet"})
    EXPECT_NE(std::find(names.begin(), names.end(), expected), names.end()) << expected;
  EXPECT_FALSE(graft::zoo::zoo_model_description("resnet50").empty());
}

TEST(Zoo, UnknownNameIsAnInvalidArgument) {
  try {
    graft::zoo::build_zoo_model("resnet1000");
    FAIL() << "expected an error";
  } catch (const graft::Error& e) {
    EXPECT_EQ(e.kind(), graft::ErrorKind::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("mlp"), std::string::npos) << "lists the known names: " << e.what();
  }
}

TEST(Zoo, SameSeedSameBytesOtherSeedOtherWeights) {
  std::string a = graft::zoo::build_zoo_model("mlp", 7);
  EXPECT_EQ(a, graft::zoo::build_zoo_model("mlp", 7));
  std::string b = graft::zoo::build_zoo_model("mlp", 8);
  EXPECT_EQ(a.size(), b.size());
  EXPECT_NE(a, b);
}

TEST(Zoo, MlpIsGemmAndRelu) {
  onnx::ModelProto model = parse(graft::zoo::build_zoo_model("mlp"));
  onnx::checker::check_model(model);
  EXPECT_EQ(model.opset_import(0).version(), 17);
  EXPECT_EQ(op_histogram(model), (std::map<std::string, int>{{"Gemm", 3}, {"Relu", 2}}));
  ASSERT_EQ(model.graph().input_size(), 1);
  const auto& dims = model.graph().input(0).type().tensor_type().shape().dim();
  EXPECT_EQ(dims[0].dim_param(), "batch");
  EXPECT_EQ(dims[1].dim_value(), 784);
  EXPECT_EQ(model.graph().output(0).name(), "output");
  // Weights are He/Xavier scaled: the first layer's standard deviation is
  // sqrt(2/784) ~ 0.0505.
  const auto& weight = model.graph().initializer(0);
  ASSERT_EQ(weight.name(), "layers.0.weight");
  const float* values = reinterpret_cast<const float*>(weight.raw_data().data());
  size_t n = weight.raw_data().size() / sizeof(float);
  double sum_squares = 0;
  for (size_t i = 0; i < n; ++i) sum_squares += static_cast<double>(values[i]) * values[i];
  EXPECT_NEAR(std::sqrt(sum_squares / static_cast<double>(n)), 0.0505, 0.002);
}

TEST(Zoo, ResNet18HasTheTorchvisionLayout) {
  onnx::ModelProto model = parse(graft::zoo::build_zoo_model("resnet18"));
  onnx::checker::check_model(model);
  auto ops = op_histogram(model);
  EXPECT_EQ(ops["Conv"], 20);  // 1 stem + 16 in blocks + 3 downsample
  EXPECT_EQ(ops["BatchNormalization"], 20);
  EXPECT_EQ(ops["Add"], 8);
  EXPECT_EQ(ops["MaxPool"], 1);
  EXPECT_EQ(ops["GlobalAveragePool"], 1);
  EXPECT_EQ(ops["Gemm"], 1);
  int64_t parameters = 0;
  for (const auto& t : model.graph().initializer()) {
    int64_t n = 1;
    for (int64_t d : t.dims()) n *= d;
    if (t.name().find("running_") == std::string::npos) parameters += n;
  }
  EXPECT_EQ(parameters, 11689512);  // torchvision resnet18's parameter count
}

TEST(Zoo, MobileNetV2AndSqueezeNet) {
  onnx::ModelProto mobilenet = parse(graft::zoo::build_zoo_model("mobilenet_v2"));
  onnx::checker::check_model(mobilenet);
  auto ops = op_histogram(mobilenet);
  EXPECT_EQ(ops["Conv"], 52);
  EXPECT_EQ(ops["Clip"], 35);
  EXPECT_EQ(ops["Add"], 10);
  onnx::ModelProto squeezenet = parse(graft::zoo::build_zoo_model("squeezenet"));
  onnx::checker::check_model(squeezenet);
  ops = op_histogram(squeezenet);
  EXPECT_EQ(ops["Conv"], 26);
  EXPECT_EQ(ops["Concat"], 8);
  EXPECT_EQ(ops["MaxPool"], 3);
}

TEST(Zoo, GruUsesTheOnnxGruOp) {
  onnx::ModelProto model = parse(graft::zoo::build_zoo_model("gru"));
  onnx::checker::check_model(model);
  EXPECT_EQ(op_histogram(model), (std::map<std::string, int>{{"Add", 1}, {"GRU", 1}, {"Squeeze", 1}}));
  EXPECT_EQ(model.graph().output_size(), 2);
}

}  // namespace
