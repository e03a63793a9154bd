// Structure-aware fuzzing of ONNX models: a custom mutator parses the input
// as an onnx.ModelProto, edits what a hostile or broken exporter could get
// wrong -- a node's op, inputs and outputs, an attribute's value or type, a
// value's element type and dimensions, an initializer's dims, type and data,
// the opset -- in the main graph or any subgraph, and serializes it again.
// Byte-level mutation (onnx_model_fuzzer) mostly breaks the protobuf
// encoding; these edits keep it valid so the importer, the shape inference,
// the passes, the partitioner, the planner and the kernels see the damage.
// What each model then meets is the same as onnx_model_fuzzer's: load, plan,
// run on small inputs within the memory limit.
#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "fuzz_support.h"
#include "graft/runtime/artifact.h"

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);

namespace {

using Random = std::mt19937_64;

size_t pick(Random& random, size_t count) { return std::uniform_int_distribution<size_t>(0, count - 1)(random); }

int64_t interesting_int(Random& random) {
  static const int64_t values[] = {0, 1, 2, 3, -1, -2, 4, 7, 64, 255, 65535, int64_t{1} << 31, (int64_t{1} << 31) - 1,
                                   int64_t{1} << 40, std::numeric_limits<int64_t>::max(),
                                   std::numeric_limits<int64_t>::min()};
  return values[pick(random, std::size(values))];
}

float interesting_float(Random& random) {
  static const float values[] = {0.0f, -0.0f, 1.0f, -1.0f, 0.5f, 1e-30f, 1e30f, std::numeric_limits<float>::infinity(),
                                 -std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()};
  return values[pick(random, std::size(values))];
}

/// Every graph of the model: the main one and the bodies in attributes (If, Loop, Scan), nested.
void collect_graphs(onnx::GraphProto* graph, std::vector<onnx::GraphProto*>& graphs) {
  graphs.push_back(graph);
  for (onnx::NodeProto& node : *graph->mutable_node())
    for (onnx::AttributeProto& attribute : *node.mutable_attribute()) {
      if (attribute.has_g()) collect_graphs(attribute.mutable_g(), graphs);
      for (onnx::GraphProto& body : *attribute.mutable_graphs()) collect_graphs(&body, graphs);
    }
}

/// The value names of a graph: inputs, initializers and node outputs.
std::vector<std::string> value_names(const onnx::GraphProto& graph) {
  std::vector<std::string> names;
  for (const auto& input : graph.input()) names.push_back(input.name());
  for (const auto& initializer : graph.initializer()) names.push_back(initializer.name());
  for (const auto& node : graph.node())
    for (const auto& output : node.output()) names.push_back(output);
  names.push_back("");  // an absent optional input
  return names;
}

void mutate_node(onnx::GraphProto& graph, Random& random) {
  if (graph.node_size() == 0) return;
  onnx::NodeProto& node = *graph.mutable_node(static_cast<int>(pick(random, graph.node_size())));
  static const char* ops[] = {"Add", "Mul", "MatMul", "Gemm", "Conv", "Relu", "Reshape", "Transpose", "Concat",
                              "Slice", "Gather", "Expand", "Pad", "Resize", "Split", "Squeeze", "Unsqueeze",
                              "ReduceSum", "Softmax", "Cast", "Where", "TopK", "Tile", "Range", "ConstantOfShape",
                              "MaxPool", "BatchNormalization", "LayerNormalization", "Einsum", "Loop", "If", "Scan"};
  std::vector<std::string> names = value_names(graph);
  switch (pick(random, 7)) {
    case 0: node.set_op_type(ops[pick(random, std::size(ops))]); break;
    case 1:
      if (node.input_size()) node.set_input(static_cast<int>(pick(random, node.input_size())), names[pick(random, names.size())]);
      break;
    case 2: node.add_input(names[pick(random, names.size())]); break;
    case 3:
      if (node.input_size()) node.mutable_input()->RemoveLast();
      break;
    case 4:
      if (node.output_size()) node.set_output(static_cast<int>(pick(random, node.output_size())), names[pick(random, names.size())]);
      break;
    case 5: *graph.add_node() = node; break;  // the same outputs defined twice
    case 6: graph.mutable_node()->DeleteSubrange(static_cast<int>(pick(random, graph.node_size())), 1); break;
  }
}

void mutate_attribute(onnx::GraphProto& graph, Random& random) {
  if (graph.node_size() == 0) return;
  onnx::NodeProto& node = *graph.mutable_node(static_cast<int>(pick(random, graph.node_size())));
  static const char* names[] = {"axis", "axes", "perm", "keepdims", "kernel_shape", "strides", "pads", "dilations",
                                "group", "transA", "transB", "to", "mode", "k", "epsilon", "alpha", "split"};
  if (node.attribute_size() == 0 || pick(random, 4) == 0) {
    onnx::AttributeProto& added = *node.add_attribute();
    added.set_name(names[pick(random, std::size(names))]);
    if (pick(random, 2)) {
      added.set_type(onnx::AttributeProto::INT);
      added.set_i(interesting_int(random));
    } else {
      added.set_type(onnx::AttributeProto::INTS);
      for (size_t n = pick(random, 5); n > 0; --n) added.add_ints(interesting_int(random));
    }
    return;
  }
  onnx::AttributeProto& attribute = *node.mutable_attribute(static_cast<int>(pick(random, node.attribute_size())));
  switch (pick(random, 7)) {
    case 0: attribute.set_i(interesting_int(random)); break;
    case 1: attribute.set_f(interesting_float(random)); break;
    case 2:
      if (attribute.ints_size()) attribute.set_ints(static_cast<int>(pick(random, attribute.ints_size())), interesting_int(random));
      else attribute.add_ints(interesting_int(random));
      break;
    case 3:
      if (attribute.ints_size() && pick(random, 2)) attribute.mutable_ints()->RemoveLast();
      else attribute.add_ints(interesting_int(random));
      break;
    case 4: attribute.set_type(static_cast<onnx::AttributeProto::AttributeType>(pick(random, 15))); break;
    case 5: attribute.set_name(names[pick(random, std::size(names))]); break;
    case 6: attribute.set_s(std::string(pick(random, 3), 'x')); break;
  }
}

void mutate_type(onnx::TypeProto& type, Random& random) {
  if (!type.has_tensor_type()) return;
  onnx::TypeProto::Tensor& tensor = *type.mutable_tensor_type();
  onnx::TensorShapeProto& shape = *tensor.mutable_shape();
  switch (pick(random, 5)) {
    case 0: tensor.set_elem_type(static_cast<int32_t>(pick(random, 17))); break;
    case 1:
      if (shape.dim_size()) shape.mutable_dim(static_cast<int>(pick(random, shape.dim_size())))->set_dim_value(interesting_int(random));
      break;
    case 2:
      if (shape.dim_size()) shape.mutable_dim(static_cast<int>(pick(random, shape.dim_size())))->set_dim_param(pick(random, 2) ? "n" : "m");
      break;
    case 3: shape.add_dim()->set_dim_value(interesting_int(random) & 7); break;
    case 4:
      if (shape.dim_size()) shape.mutable_dim()->RemoveLast();
      else tensor.clear_shape();
      break;
  }
}

void mutate_value_info(onnx::GraphProto& graph, Random& random) {
  std::vector<onnx::ValueInfoProto*> values;
  for (auto& v : *graph.mutable_input()) values.push_back(&v);
  for (auto& v : *graph.mutable_output()) values.push_back(&v);
  for (auto& v : *graph.mutable_value_info()) values.push_back(&v);
  if (values.empty()) return;
  mutate_type(*values[pick(random, values.size())]->mutable_type(), random);
}

void mutate_tensor(onnx::TensorProto& tensor, Random& random) {
  switch (pick(random, 6)) {
    case 0:
      if (tensor.dims_size()) tensor.set_dims(static_cast<int>(pick(random, tensor.dims_size())), interesting_int(random));
      break;
    case 1:
      if (tensor.dims_size() && pick(random, 2)) tensor.mutable_dims()->RemoveLast();
      else tensor.add_dims(interesting_int(random) & 7);
      break;
    case 2: tensor.set_data_type(static_cast<int32_t>(pick(random, 17))); break;
    case 3:
      if (!tensor.raw_data().empty()) tensor.mutable_raw_data()->resize(pick(random, tensor.raw_data().size()));
      else tensor.add_float_data(interesting_float(random));
      break;
    case 4: tensor.add_int64_data(interesting_int(random)); break;
    case 5:
      tensor.set_data_location(onnx::TensorProto::EXTERNAL);
      break;
  }
}

void mutate_initializer(onnx::GraphProto& graph, Random& random) {
  std::vector<onnx::TensorProto*> tensors;
  for (auto& t : *graph.mutable_initializer()) tensors.push_back(&t);
  for (auto& node : *graph.mutable_node())
    for (auto& attribute : *node.mutable_attribute())
      if (attribute.has_t()) tensors.push_back(attribute.mutable_t());  // Constant values
  if (tensors.empty()) return;
  onnx::TensorProto& tensor = *tensors[pick(random, tensors.size())];
  if (pick(random, 8) == 0 && graph.input_size()) {
    tensor.set_name(graph.input(static_cast<int>(pick(random, graph.input_size()))).name());
    return;
  }
  mutate_tensor(tensor, random);
}

void mutate_model(onnx::ModelProto& model, Random& random) {
  std::vector<onnx::GraphProto*> graphs;
  collect_graphs(model.mutable_graph(), graphs);
  onnx::GraphProto& graph = *graphs[pick(random, graphs.size())];
  switch (pick(random, 6)) {
    case 0: mutate_node(graph, random); break;
    case 1: mutate_attribute(graph, random); break;
    case 2: mutate_value_info(graph, random); break;
    case 3: mutate_initializer(graph, random); break;
    case 4:
      if (model.opset_import_size()) model.mutable_opset_import(0)->set_version(interesting_int(random) & 31);
      break;
    case 5: mutate_node(graph, random); mutate_attribute(graph, random); break;
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  graft::fuzz::prepare_fuzzing_process();
  return 0;
}

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size, unsigned int seed) {
  onnx::ModelProto model;
  Random random(seed);
  // One in eight mutations stays byte-level, so inputs that do not parse yet can become models.
  if (pick(random, 8) == 0 || !model.ParseFromArray(data, static_cast<int>(size)) || !model.has_graph())
    return LLVMFuzzerMutate(data, size, max_size);
  for (size_t edits = 1 + pick(random, 3); edits > 0; --edits) mutate_model(model, random);
  std::string bytes = model.SerializeAsString();
  if (bytes.size() > max_size) return LLVMFuzzerMutate(data, size, max_size);
  std::memcpy(data, bytes.data(), bytes.size());
  return bytes.size();
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  if (graft::runtime::has_artifact_magic(bytes)) return -1;
  graft::fuzz::expect_graft_errors([&] { graft::fuzz::load_plan_and_run(bytes); });
  return 0;
}
