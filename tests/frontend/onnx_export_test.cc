// ONNX export (save_onnx, `graft opt`) of control flow: an If whose branches
// read a value of the enclosing graph by name must still find it after a
// round trip, whatever names the export gives (an unnamed outer value gets a
// generated one); of sequence and optional values; and of values whose
// element type graft does not know (left out, never written as UNDEFINED).
#include <gtest/gtest.h>
#include <unistd.h>

#include <onnx/onnx_pb.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>

#include "graft/frontend/onnx_import.h"
#include "graft/ir/graph.h"
#include "graft/ops/type_inference.h"
#include "support/graph_runner.h"

using namespace graft;

namespace {

// A branch reading one outer value (captured: its Input node is untyped, as
// the importer makes it), applying `op` to it twice or once.
std::shared_ptr<ir::Graph> branch(const std::string& op, const std::string& captured_name) {
  auto body = std::make_shared<ir::Graph>();
  body->opset_imports[""] = 17;
  ir::Value y = body->add_input(captured_name, ir::ValueType{})->output(0);
  std::vector<ir::Value> in = op == "Add" ? std::vector<ir::Value>{y, y} : std::vector<ir::Value>{y};
  body->add_output(body->add_node(op, in, 1, op + "_in_branch")->output(0), "branch_out");
  return body;
}

/// y = If(cond) then relu(x) + relu(x) else -relu(x), the branches reading
/// relu(x) (unnamed: the export makes up its name) from the outer graph.
std::unique_ptr<ir::Graph> if_graph() {
  auto g = std::make_unique<ir::Graph>();
  g->opset_imports[""] = 17;
  ir::Value cond = g->add_input("cond", ir::ValueType::of(DType::boolean, {}))->output(0);
  ir::Value x = g->add_input("x", ir::ValueType::of(DType::float32, {4}))->output(0);
  ir::Node* relu = g->add_node("Relu", {x}, 1);
  ir::Node* if_node = g->add_node("If", {cond, relu->output(0)}, 1, "if");
  if_node->num_captured_inputs = 1;
  if_node->attributes.set("then_branch", branch("Add", "relu_out"));
  if_node->attributes.set("else_branch", branch("Neg", "relu_out"));
  g->add_output(if_node->output(0), "y");
  return g;
}

TEST(OnnxExport, IfBranchesFindTheOuterValuesTheyRead) {
  auto g = if_graph();

  const std::string path =
      (std::filesystem::temp_directory_path() / ("graft_export_if_" + std::to_string(::getpid()) + ".onnx")).string();
  frontend::save_onnx(*g, path);
  auto loaded = frontend::load_onnx(path);
  std::filesystem::remove(path);
  Tensor xs = Tensor::from_vector<float>({-1, 2, -3, 4}, {4});
  for (bool c : {true, false}) {
    std::vector<Tensor> inputs = {Tensor::scalar<bool>(c), xs};
    Tensor want = graft::testing::run_graph(*g, inputs)[0];
    Tensor got = graft::testing::run_graph(*loaded, inputs)[0];
    ASSERT_EQ(got.shape(), want.shape());
    for (int64_t i = 0; i < got.numel(); ++i) EXPECT_EQ(got.data<float>()[i], want.data<float>()[i]) << c << " " << i;
  }
  // The branches declare no inputs of their own (If bodies take none).
  EXPECT_EQ(loaded->inputs().size(), 2u);
}

/// Every ValueInfo of `graph` and of its bodies.
void for_each_value_info(const onnx::GraphProto& graph, const std::function<void(const onnx::ValueInfoProto&)>& visit) {
  for (const auto& list : {graph.input(), graph.output(), graph.value_info()})
    for (const onnx::ValueInfoProto& info : list) visit(info);
  for (const onnx::NodeProto& node : graph.node())
    for (const onnx::AttributeProto& attribute : node.attribute())
      if (attribute.has_g()) for_each_value_info(attribute.g(), visit);
}

TEST(OnnxExport, UnknownElementTypesAreLeftOutNotWrittenAsUndefined) {
  // The branches' captured input and outputs have no inferred dtype. They
  // used to be written with elem_type 0 (UNDEFINED), which ONNX Runtime
  // refuses ("Invalid tensor data type 0"); the type is now left out, for
  // the reader to infer. Known types are written as before.
  auto g = if_graph();
  const std::string path =
      (std::filesystem::temp_directory_path() / ("graft_export_types_" + std::to_string(::getpid()) + ".onnx")).string();
  frontend::save_onnx(*g, path);
  onnx::ModelProto model;
  {
    std::ifstream in(path, std::ios::binary);
    ASSERT_TRUE(model.ParseFromIstream(&in));
  }
  std::filesystem::remove(path);
  size_t untyped = 0;
  for_each_value_info(model.graph(), [&](const onnx::ValueInfoProto& info) {
    if (!info.has_type()) {
      ++untyped;
      return;
    }
    ASSERT_TRUE(info.type().has_tensor_type()) << info.name();
    EXPECT_NE(info.type().tensor_type().elem_type(), 0) << info.name();
  });
  EXPECT_GT(untyped, 0u);  // the branch outputs
  ASSERT_EQ(model.graph().input_size(), 2);
  EXPECT_EQ(model.graph().input(1).type().tensor_type().elem_type(), onnx::TensorProto::FLOAT);
  EXPECT_EQ(model.graph().input(1).type().tensor_type().shape().dim(0).dim_value(), 4);
}

TEST(OnnxExport, SequenceAndOptionalValuesKeepTheirTypes) {
  auto g = std::make_unique<ir::Graph>();
  g->opset_imports[""] = 17;
  ir::ValueType float_items = ir::ValueType::of_dtype(DType::float32);
  ir::Value xs = g->add_input("xs", ir::ValueType::sequence_of(float_items))->output(0);
  ir::Value x = g->add_input("x", ir::ValueType::of(DType::float32, {2}))->output(0);
  ir::ValueType optional_vector = ir::ValueType::optional_of(ir::ValueType::of(DType::float32, {2}));
  ir::Value maybe = g->add_input("maybe", optional_vector)->output(0);
  g->add_output(g->add_node("OptionalHasElement", {maybe}, 1, "has")->output(0), "has");
  ir::Node* insert = g->add_node("SequenceInsert", {xs, x}, 1, "insert");
  insert->output_types[0] = ir::ValueType::sequence_of(float_items);
  g->add_output(insert->output(0), "ys");

  const std::string path =
      (std::filesystem::temp_directory_path() / ("graft_export_seq_" + std::to_string(::getpid()) + ".onnx")).string();
  frontend::save_onnx(*g, path);
  auto loaded = frontend::load_onnx(path);
  std::filesystem::remove(path);
  ASSERT_EQ(loaded->inputs().size(), 3u);
  EXPECT_EQ(loaded->inputs()[0]->output_types[0], ir::ValueType::sequence_of(float_items));
  EXPECT_FALSE(loaded->inputs()[1]->output_types[0].sequence);
  EXPECT_EQ(loaded->inputs()[2]->output_types[0], optional_vector);
  ops::infer_types(*loaded);  // the importer leaves node types to inference
  EXPECT_EQ(loaded->type_of(loaded->outputs()[1]), ir::ValueType::sequence_of(float_items));
  Tensor items = Tensor::sequence(DType::float32, {Tensor::from_vector<float>({1, 2, 3}, {3})});
  std::vector<Tensor> outs = graft::testing::run_graph(
      *loaded, {items, Tensor::from_vector<float>({4, 5}, {2}), Tensor::none(DType::float32)});
  EXPECT_FALSE(outs[0].data<bool>()[0]);
  Tensor ys = outs[1];
  ASSERT_TRUE(ys.is_sequence());
  ASSERT_EQ(ys.sequence_items().size(), 2u);
  EXPECT_EQ(ys.sequence_items()[1].data<float>()[1], 5.0f);
}

}  // namespace
