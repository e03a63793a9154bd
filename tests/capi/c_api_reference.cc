// The C API test's fixture (CTest c_api_reference): writes the zoo's MLP as
// DIR/mlp.onnx, compiled for a [2,784] input as DIR/mlp.graft, an input as
// DIR/input.bin (float32 [2,784], raw) and what the C++ API computes from it
// as DIR/output.bin (float32 [2,10], raw), for c_api_test.c to compare with;
// and two small models for the C API's edge cases: DIR/passthrough.onnx
// (x float32 [batch,3] -> y = Identity(x), y2 = Identity(x), c = a Constant)
// and DIR/sequence.onnx (x -> SequenceConstruct(x), a sequence output).
#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>

#include <onnx/onnx_pb.h>

#include "graft/core/error.h"
#include "graft/frontend/load_model.h"
#include "graft/zoo/zoo.h"

namespace {

void write_file(const std::filesystem::path& path, const void* data, size_t size) {
  std::ofstream out(path, std::ios::binary);
  out.write(static_cast<const char*>(data), static_cast<std::streamsize>(size));
  if (!out) graft::fail(graft::ErrorKind::io, "cannot write '", path.string(), "'");
}

onnx::ModelProto small_model(const std::string& name) {
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.add_opset_import()->set_version(17);
  model.mutable_graph()->set_name(name);
  return model;
}

void add_tensor_value(onnx::ValueInfoProto* v, const std::string& name, std::vector<std::string> dims) {
  v->set_name(name);
  auto* tt = v->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx::TensorProto::FLOAT);
  for (const std::string& d : dims) {
    auto* dim = tt->mutable_shape()->add_dim();
    if (std::isdigit(static_cast<unsigned char>(d[0])))
      dim->set_dim_value(std::stoll(d));
    else
      dim->set_dim_param(d);
  }
}

void add_node(onnx::GraphProto* g, const std::string& op, std::vector<std::string> in, const std::string& out) {
  onnx::NodeProto* n = g->add_node();
  n->set_op_type(op);
  n->set_name(out);
  for (auto& i : in) n->add_input(i);
  n->add_output(out);
}

std::string passthrough_model() {
  onnx::ModelProto model = small_model("passthrough");
  onnx::GraphProto* g = model.mutable_graph();
  add_tensor_value(g->add_input(), "x", {"batch", "3"});
  add_node(g, "Identity", {"x"}, "y");
  add_node(g, "Identity", {"x"}, "y2");
  add_node(g, "Constant", {}, "c");
  onnx::AttributeProto* value = g->mutable_node(2)->add_attribute();
  value->set_name("value");
  value->set_type(onnx::AttributeProto::TENSOR);
  value->mutable_t()->set_data_type(onnx::TensorProto::FLOAT);
  value->mutable_t()->add_dims(3);
  for (float v : {1.f, 2.f, 3.f}) value->mutable_t()->add_float_data(v);
  add_tensor_value(g->add_output(), "y", {"batch", "3"});
  add_tensor_value(g->add_output(), "y2", {"batch", "3"});
  add_tensor_value(g->add_output(), "c", {"3"});
  return model.SerializeAsString();
}

std::string sequence_model() {
  onnx::ModelProto model = small_model("sequence");
  onnx::GraphProto* g = model.mutable_graph();
  add_tensor_value(g->add_input(), "x", {"2", "3"});
  add_node(g, "SequenceConstruct", {"x"}, "s");
  onnx::ValueInfoProto* s = g->add_output();
  s->set_name("s");
  s->mutable_type()->mutable_sequence_type()->mutable_elem_type()->mutable_tensor_type()->set_elem_type(
      onnx::TensorProto::FLOAT);
  return model.SerializeAsString();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: c_api_reference DIR\n";
    return 2;
  }
  try {
    const std::filesystem::path dir = argv[1];
    std::filesystem::create_directories(dir);
    const std::string model = graft::zoo::build_zoo_model("mlp", 0);
    write_file(dir / "mlp.onnx", model.data(), model.size());

    graft::Tensor input(graft::DType::float32, {2, 784});
    float* x = input.data<float>();
    for (int64_t i = 0; i < input.numel(); ++i) x[i] = static_cast<float>(std::sin(0.05 * static_cast<double>(i)));
    write_file(dir / "input.bin", input.raw_data(), input.nbytes());

    std::unique_ptr<graft::runtime::Session> session = graft::frontend::load_model((dir / "mlp.onnx").string());
    std::vector<graft::Tensor> outputs = session->run({input});
    write_file(dir / "output.bin", outputs.at(0).raw_data(), outputs.at(0).nbytes());

    const std::string passthrough = passthrough_model(), sequence = sequence_model();
    write_file(dir / "passthrough.onnx", passthrough.data(), passthrough.size());
    write_file(dir / "sequence.onnx", sequence.data(), sequence.size());

    graft::runtime::ArtifactCompileOptions options;
    options.session.backends = {"fuse"};  // quick to compile, also under the sanitizers
    options.input_shapes["input"] = {2, 784};
    graft::frontend::compile_artifact((dir / "mlp.onnx").string(), (dir / "mlp.graft").string(), options);
    std::cout << "wrote mlp.onnx, mlp.graft, input.bin and output.bin (" << outputs[0].type_string() << ") in "
              << dir.string() << "\n";
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "c_api_reference: " << e.what() << "\n";
    return 1;
  }
}
