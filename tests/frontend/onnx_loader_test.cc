// The ONNX loader reads initializer raw_data straight from the file into the
// tensors (src/frontend/model_bytes.h): same graph as a whole protobuf parse,
// the same errors for bad files, and protobuf's verdict where the wire walk
// hands over (a graph given twice, raw_data given twice).
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>

#include "graft/core/error.h"
#include "graft/frontend/onnx_import.h"

namespace graft {
namespace {

namespace fs = std::filesystem;

std::string varint(uint64_t v) {
  std::string out;
  while (v >= 0x80) {
    out += static_cast<char>((v & 0x7f) | 0x80);
    v >>= 7;
  }
  out += static_cast<char>(v);
  return out;
}

/// A length-delimited field (wire type 2).
std::string field(int number, const std::string& payload) {
  return varint(static_cast<uint64_t>(number) << 3 | 2) + varint(payload.size()) + payload;
}

std::string float_bytes(const std::vector<float>& values) {
  return std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float));
}

onnx::TensorProto raw_tensor(const std::string& name, onnx::TensorProto::DataType type, std::vector<int64_t> dims,
                             const std::string& raw) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(type);
  for (int64_t d : dims) t.add_dims(d);
  t.set_raw_data(raw);
  return t;
}

/// y = (x + w) + b with w from raw_data, b from float_data, plus a boolean
/// initializer `mask` (raw bytes 0 and 2) that the graph outputs.
onnx::ModelProto small_model() {
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.add_opset_import()->set_version(17);
  onnx::GraphProto* g = model.mutable_graph();
  g->set_name("loader");
  auto value = [](onnx::ValueInfoProto* v, const std::string& name, int type, std::vector<int64_t> dims) {
    v->set_name(name);
    auto* tt = v->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(type);
    for (int64_t d : dims) tt->mutable_shape()->add_dim()->set_dim_value(d);
  };
  value(g->add_input(), "x", onnx::TensorProto::FLOAT, {2, 3});
  value(g->add_output(), "y", onnx::TensorProto::FLOAT, {2, 3});
  value(g->add_output(), "mask_out", onnx::TensorProto::BOOL, {2});
  *g->add_initializer() = raw_tensor("w", onnx::TensorProto::FLOAT, {2, 3}, float_bytes({1, 2, 3, 4, 5, 6}));
  onnx::TensorProto* b = g->add_initializer();
  b->set_name("b");
  b->set_data_type(onnx::TensorProto::FLOAT);
  b->add_dims(3);
  for (float v : {10.f, 20.f, 30.f}) b->add_float_data(v);
  *g->add_initializer() = raw_tensor("mask", onnx::TensorProto::BOOL, {2}, std::string("\0\2", 2));
  auto node = [&](const std::string& op, std::vector<std::string> in, std::string out) {
    onnx::NodeProto* n = g->add_node();
    n->set_op_type(op);
    n->set_name(out);
    for (auto& i : in) n->add_input(i);
    n->add_output(out);
  };
  node("Add", {"x", "w"}, "t");
  node("Add", {"t", "b"}, "y");
  node("Identity", {"mask"}, "mask_out");
  return model;
}

class OnnxLoaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("graft_loader_test_" + std::to_string(getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string write(const std::string& name, const std::string& bytes) {
    std::string path = (dir_ / name).string();
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
  }

  fs::path dir_;
};

const ir::Node* constant(const ir::Graph& g, const std::string& name) {
  for (const auto& n : g.nodes())
    if (n->schema().name == "Constant" && n->name == name) return n.get();
  return nullptr;
}

std::vector<float> floats(const ir::Node* n) {
  auto v = n->constant_value.values<float>();
  return {v.begin(), v.end()};
}

TEST_F(OnnxLoaderTest, FileAndMemoryGiveTheSameWeights) {
  std::string bytes = small_model().SerializeAsString();
  for (const auto& g : {frontend::load_onnx(write("m.onnx", bytes)), frontend::load_onnx_from_memory(bytes)}) {
    ASSERT_TRUE(constant(*g, "w") && constant(*g, "b") && constant(*g, "mask"));
    EXPECT_EQ(floats(constant(*g, "w")), (std::vector<float>{1, 2, 3, 4, 5, 6}));
    EXPECT_EQ(floats(constant(*g, "b")), (std::vector<float>{10, 20, 30}));
    const Tensor& mask = constant(*g, "mask")->constant_value;
    ASSERT_EQ(mask.dtype(), DType::boolean);
    EXPECT_EQ(static_cast<const uint8_t*>(mask.raw_data())[0], 0);
    EXPECT_EQ(static_cast<const uint8_t*>(mask.raw_data())[1], 1);  // raw byte 2 is true
    EXPECT_EQ(reinterpret_cast<uintptr_t>(constant(*g, "w")->constant_value.raw_data()) % 64, 0u);
  }
}

TEST_F(OnnxLoaderTest, OpsetsUpTo22LoadAndLaterOnesAreRefusedByNumber) {
  // Opsets 19 to 22 changed the ops graft runs in ways it handles (see
  // onnx_import.cc); 23 brought ops it does not know.
  for (int64_t opset : {19, 20, 21, 22}) {
    onnx::ModelProto model = small_model();
    model.mutable_opset_import(0)->set_version(opset);
    auto g = frontend::load_onnx_from_memory(model.SerializeAsString());
    EXPECT_EQ(g->opset_imports.at(""), opset);
  }
  onnx::ModelProto model = small_model();
  model.mutable_opset_import(0)->set_version(23);
  try {
    frontend::load_onnx_from_memory(model.SerializeAsString());
    ADD_FAILURE() << "opset 23 loaded";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::unsupported);
    EXPECT_NE(std::string(e.what()).find("opset 23 is not supported (graft supports 1 to 22)"), std::string::npos)
        << e.what();
  }
}

TEST_F(OnnxLoaderTest, RawDataOfTheWrongSizeIsAnErrorNamingTheTensor) {
  onnx::ModelProto model = small_model();
  model.mutable_graph()->mutable_initializer(0)->set_raw_data(float_bytes({1, 2, 3, 4, 5}));
  std::string path = write("short.onnx", model.SerializeAsString());
  try {
    frontend::load_onnx(path);
    FAIL() << "loaded a tensor whose raw_data is short";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid_model);
    EXPECT_NE(std::string(e.what()).find("initializer 'w'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("raw data has 20 bytes"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
}

TEST_F(OnnxLoaderTest, EveryTruncationIsAnErrorOrAModel) {
  std::string bytes = small_model().SerializeAsString();
  for (size_t cut = 1; cut < bytes.size(); ++cut) {
    std::string path = write("cut.onnx", bytes.substr(0, cut));
    try {
      frontend::load_onnx(path);  // a cut at a field boundary can leave a smaller, valid model
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << "cut at " << cut << ": " << e.what();
    }
  }
  // Cut inside w's raw_data: protobuf's verdict, the same as before.
  size_t inside = bytes.find(float_bytes({1, 2, 3, 4, 5, 6})) + 8;
  std::string path = write("truncated.onnx", bytes.substr(0, inside));
  try {
    frontend::load_onnx(path);
    FAIL() << "loaded a truncated model";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid_model);
    EXPECT_NE(std::string(e.what()).find("truncated or not ONNX"), std::string::npos) << e.what();
  }
}

TEST_F(OnnxLoaderTest, EmptyFileAndDirectoryAreClearErrors) {
  std::string empty = write("empty.onnx", "");
  EXPECT_THROW(
      {
        try {
          frontend::load_onnx(empty);
        } catch (const Error& e) {
          EXPECT_NE(std::string(e.what()).find("empty"), std::string::npos) << e.what();
          throw;
        }
      },
      Error);
  try {
    frontend::load_onnx(dir_.string());
    FAIL() << "loaded a directory";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::io);
  }
  try {
    frontend::load_onnx((dir_ / "missing.onnx").string());
    FAIL() << "loaded a missing file";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::io);
  }
}

TEST_F(OnnxLoaderTest, AGraphGivenTwiceIsMergedAsProtobufDoes) {
  // Two ModelProto serializations back to back parse as one merged message:
  // the second graph's initializer joins the first's.
  onnx::ModelProto extra;
  *extra.mutable_graph()->add_initializer() =
      raw_tensor("extra", onnx::TensorProto::FLOAT, {2}, float_bytes({7, 8}));
  std::string bytes = small_model().SerializeAsString() + extra.SerializeAsString();
  auto g = frontend::load_onnx(write("twice.onnx", bytes));
  ASSERT_TRUE(constant(*g, "extra"));
  EXPECT_EQ(floats(constant(*g, "extra")), (std::vector<float>{7, 8}));
  EXPECT_EQ(floats(constant(*g, "w")), (std::vector<float>{1, 2, 3, 4, 5, 6}));
}

TEST_F(OnnxLoaderTest, TheLastRawDataFieldWins) {
  onnx::ModelProto model = small_model();
  onnx::GraphProto graph = model.graph();
  onnx::TensorProto w = graph.initializer(0);
  graph.mutable_initializer()->DeleteSubrange(0, 1);
  model.clear_graph();
  // w's bytes with a second raw_data field appended, as a writer could produce.
  std::string w_bytes = w.SerializeAsString() + field(9, float_bytes({6, 5, 4, 3, 2, 1}));
  std::string bytes = model.SerializeAsString() + field(7, graph.SerializeAsString() + field(5, w_bytes));
  onnx::ModelProto reference;
  ASSERT_TRUE(reference.ParseFromString(bytes));
  for (const auto& g : {frontend::load_onnx(write("raw_twice.onnx", bytes)), frontend::load_onnx_from_memory(bytes)}) {
    ASSERT_TRUE(constant(*g, "w"));
    EXPECT_EQ(floats(constant(*g, "w")), (std::vector<float>{6, 5, 4, 3, 2, 1}));
  }
}

TEST_F(OnnxLoaderTest, ExternalDataIsReadIntoTheTensor) {
  onnx::ModelProto model = small_model();
  onnx::TensorProto* w = model.mutable_graph()->mutable_initializer(0);
  w->clear_raw_data();
  w->set_data_location(onnx::TensorProto::EXTERNAL);
  auto* location = w->add_external_data();
  location->set_key("location");
  location->set_value("w.bin");
  auto* offset = w->add_external_data();
  offset->set_key("offset");
  offset->set_value("4");
  write("w.bin", "pad!" + float_bytes({1, 2, 3, 4, 5, 6}));
  auto g = frontend::load_onnx(write("external.onnx", model.SerializeAsString()));
  EXPECT_EQ(floats(constant(*g, "w")), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  // Too short: a clear error, nothing read past the end.
  write("w.bin", "pad!" + float_bytes({1, 2, 3}));
  try {
    frontend::load_onnx((dir_ / "external.onnx").string());
    FAIL() << "read external data past the end of its file";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid_model);
    EXPECT_NE(std::string(e.what()).find("has only 12"), std::string::npos) << e.what();
  }
}

TEST_F(OnnxLoaderTest, ValueKindsGraftCannotHoldAreErrorsNamingTheValue) {
  // The input x, declared as each kind in turn: what graft holds imports,
  // the rest is an error naming x (and no crash).
  struct Case {
    std::function<void(onnx::TypeProto*)> declare;
    bool imports;
    ErrorKind kind;
  };
  auto tensor_in = [](onnx::TypeProto* t) { t->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT); };
  std::vector<Case> cases = {
      {[&](onnx::TypeProto* t) { tensor_in(t->mutable_sequence_type()->mutable_elem_type()); }, true,
       ErrorKind::internal},
      {[&](onnx::TypeProto* t) { tensor_in(t->mutable_optional_type()->mutable_elem_type()); }, true,
       ErrorKind::internal},
      {[&](onnx::TypeProto* t) {
         tensor_in(t->mutable_optional_type()->mutable_elem_type()->mutable_sequence_type()->mutable_elem_type());
       },
       true, ErrorKind::internal},
      {[&](onnx::TypeProto* t) {  // a sequence of sequences
         tensor_in(t->mutable_sequence_type()->mutable_elem_type()->mutable_sequence_type()->mutable_elem_type());
       },
       false, ErrorKind::unsupported},
      {[&](onnx::TypeProto* t) { t->mutable_map_type()->set_key_type(onnx::TensorProto::INT64); }, false,
       ErrorKind::unsupported},
      {[](onnx::TypeProto* t) { t->mutable_sequence_type(); }, false, ErrorKind::invalid_model},  // no item type
      {[](onnx::TypeProto* t) { t->mutable_optional_type(); }, false, ErrorKind::invalid_model},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    onnx::ModelProto model;
    model.set_ir_version(8);
    model.add_opset_import()->set_version(17);
    onnx::GraphProto* g = model.mutable_graph();
    onnx::ValueInfoProto* in = g->add_input();
    in->set_name("x");
    cases[i].declare(in->mutable_type());
    onnx::NodeProto* n = g->add_node();
    n->set_op_type("Identity");
    n->add_input("x");
    n->add_output("y");
    g->add_output()->set_name("y");
    std::string bytes = model.SerializeAsString();
    try {
      auto graph = frontend::load_onnx_from_memory(bytes);
      EXPECT_TRUE(cases[i].imports) << "case " << i;
    } catch (const Error& e) {
      EXPECT_FALSE(cases[i].imports) << "case " << i << ": " << e.what();
      EXPECT_EQ(e.kind(), cases[i].kind) << "case " << i << ": " << e.what();
      EXPECT_NE(std::string(e.what()).find("'x'"), std::string::npos) << e.what();
    }
  }
}

/// A model whose output is `depth` If nodes nested in each other's then
/// branches (else branches are constants): each level is a graph, a node and
/// an attribute in protobuf, so the nesting is 3 messages per level.
onnx::ModelProto nested_if_model(int depth) {
  auto constant_graph = [](const std::string& name, float value) {
    onnx::GraphProto g;
    g.set_name(name);
    onnx::NodeProto* c = g.add_node();
    c->set_op_type("Constant");
    c->add_output(name + "_out");
    onnx::AttributeProto* a = c->add_attribute();
    a->set_name("value");
    a->set_type(onnx::AttributeProto::TENSOR);
    a->mutable_t()->set_data_type(onnx::TensorProto::FLOAT);
    a->mutable_t()->add_float_data(value);
    onnx::ValueInfoProto* out = g.add_output();
    out->set_name(name + "_out");
    out->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
    return g;
  };
  onnx::GraphProto inner = constant_graph("leaf", 7.0f);
  for (int level = 0; level < depth; ++level) {
    onnx::GraphProto outer;
    outer.set_name("level" + std::to_string(level));
    onnx::NodeProto* node = outer.add_node();
    node->set_op_type("If");
    node->add_input("cond");
    node->add_output("level" + std::to_string(level) + "_out");
    onnx::AttributeProto* then_branch = node->add_attribute();
    then_branch->set_name("then_branch");
    then_branch->set_type(onnx::AttributeProto::GRAPH);
    *then_branch->mutable_g() = inner;
    onnx::AttributeProto* else_branch = node->add_attribute();
    else_branch->set_name("else_branch");
    else_branch->set_type(onnx::AttributeProto::GRAPH);
    *else_branch->mutable_g() = constant_graph("else" + std::to_string(level), -1.0f);
    onnx::ValueInfoProto* out = outer.add_output();
    out->set_name("level" + std::to_string(level) + "_out");
    out->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
    inner = outer;
  }
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.add_opset_import()->set_version(17);
  *model.mutable_graph() = inner;
  model.mutable_graph()->set_name("nested");
  onnx::ValueInfoProto* cond = model.mutable_graph()->add_input();
  cond->set_name("cond");
  cond->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::BOOL);
  cond->mutable_type()->mutable_tensor_type()->mutable_shape();
  return model;
}

TEST_F(OnnxLoaderTest, IfNodesNestedFortyDeepLoadAndTooDeepNamesTheLimit) {
  auto graph = frontend::load_onnx_from_memory(nested_if_model(40).SerializeAsString());
  ASSERT_EQ(graph->outputs().size(), 1u);
  const std::string bytes = nested_if_model(200).SerializeAsString();
  for (int from_file = 0; from_file < 2; ++from_file) {
    try {
      if (from_file) frontend::load_onnx(write("deep.onnx", bytes));
      else frontend::load_onnx_from_memory(bytes);
      ADD_FAILURE() << "If nodes nested 200 deep loaded";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::invalid_model);
      EXPECT_NE(std::string(e.what()).find("deeper than graft's limit of 400 levels"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace graft
