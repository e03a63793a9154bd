// The graft command-line tool, run as a process: zoo + run on the small mlp
// model, the other commands, and every kind of bad input, each of which must
// end with exit code 2 and exactly one "graft: error: ..." line on stderr.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "graft/backend/device_api.h"
#include "graft/frontend/load_model.h"
#include "graft/core/tensor.h"
#include "graft/frontend/npy.h"
#include "graft/runtime/artifact.h"
#include "graft/frontend/onnx_import.h"
#include "graft/ir/graph.h"
#include "graft/runtime/session.h"

namespace {

namespace fs = std::filesystem;

struct CommandResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void write_bytes(const fs::path& path, const std::string& bytes) {
  fs::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string quote(const std::string& s) { return "'" + s + "'"; }

/// A .npy (version 1.0) file with `shape` in the header and `values` as data;
/// the two need not agree.
std::string npy_bytes(const std::vector<int64_t>& shape, const std::vector<float>& values) {
  std::string dims;
  for (int64_t d : shape) dims += std::to_string(d) + ", ";
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + dims + "), }";
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string bytes = "\x93NUMPY";
  bytes += '\x01';
  bytes += '\x00';
  bytes += static_cast<char>(header.size() & 0xff);
  bytes += static_cast<char>(header.size() >> 8);
  bytes += header;
  bytes.append(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float));
  return bytes;
}

std::string tensor_pb(const graft::Tensor& t, const std::string& name) {
  onnx::TensorProto proto;
  proto.set_name(name);
  proto.set_data_type(static_cast<int32_t>(t.dtype()));
  for (int64_t d : t.shape()) proto.add_dims(d);
  proto.set_raw_data(std::string(static_cast<const char*>(t.raw_data()), t.nbytes()));
  return proto.SerializeAsString();
}

class CliTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = fs::temp_directory_path() / ("graft_cli_test_" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    mlp_ = (dir_ / "mlp.onnx").string();
    CommandResult r = graft("zoo mlp -o " + quote(mlp_));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    mlp_bytes_ = read_text(mlp_);
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }

  static CommandResult graft(const std::string& args, const std::string& environment = "") {
    static int counter = 0;
    ++counter;
    fs::path out = dir_ / ("stdout_" + std::to_string(counter));
    fs::path err = dir_ / ("stderr_" + std::to_string(counter));
    std::string command = environment + " " + quote(std::string(GRAFT_BINARY_DIR) + "/bin/graft") + " " + args + " >" +
                          quote(out.string()) + " 2>" + quote(err.string()) + " </dev/null";
    int status = std::system(command.c_str());
    CommandResult r;
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    r.out = read_text(out);
    r.err = read_text(err);
    return r;
  }

  /// Exit code 2 and one line "graft: error: ..." mentioning `needle`.
  static void expect_one_line_error(const CommandResult& r, const std::string& needle, const std::string& what) {
    EXPECT_EQ(r.exit_code, 2) << what << "\nstdout: " << r.out << "\nstderr: " << r.err;
    EXPECT_EQ(r.err.rfind("graft: error: ", 0), 0u) << what << ": " << r.err;
    ASSERT_FALSE(r.err.empty()) << what;
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << what << ": not one line: " << r.err;
    EXPECT_NE(r.err.find(needle), std::string::npos) << what << ": '" << needle << "' not in: " << r.err;
  }

  static std::string path(const std::string& name) { return (dir_ / name).string(); }

  /// The mlp with a Sigmoid after its first Relu: two pointwise ops in a row,
  /// one fused kernel. Writes relu_sigmoid.onnx and returns its path.
  static std::string write_relu_sigmoid_mlp() {
    onnx::ModelProto model;
    EXPECT_TRUE(model.ParseFromString(mlp_bytes_));
    onnx::GraphProto* g = model.mutable_graph();
    EXPECT_EQ(g->node(1).op_type(), "Relu");
    onnx::NodeProto* sigmoid = g->add_node();
    sigmoid->set_op_type("Sigmoid");
    sigmoid->set_name("added_sigmoid");
    sigmoid->add_input(g->node(1).output(0));
    sigmoid->add_output("added_sigmoid_out");
    g->mutable_node(2)->set_input(0, "added_sigmoid_out");
    // Keep the node list topological: move the new node right after the Relu.
    for (int i = g->node_size() - 1; i > 2; --i) g->mutable_node()->SwapElements(i, i - 1);
    write_bytes(path("relu_sigmoid.onnx"), model.SerializeAsString());
    return path("relu_sigmoid.onnx");
  }

  static inline fs::path dir_;
  static inline std::string mlp_;
  static inline std::string mlp_bytes_;
};

std::string checksum_line(const std::string& out) {
  size_t at = out.find("checksum:");
  return at == std::string::npos ? "" : out.substr(at, out.find('\n', at) - at);
}

TEST_F(CliTest, VersionNamesTheReleaseAndTheArtifactFormat) {
  CommandResult r = graft("--version");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, std::string("graft ") + GRAFT_VERSION + " (artifact format " +
                       std::to_string(graft::runtime::kArtifactFormatVersion) + ")\n");
}

TEST_F(CliTest, ZooListNamesEveryModel) {
  CommandResult r = graft("zoo --list");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* name : {"mlp", "resnet18", "resnet50", "mobilenet_v2", "squeezenet", "bert", "gru"})
    EXPECT_NE(r.out.find(name), std::string::npos) << name;
}

TEST_F(CliTest, RunPrintsOutputsDeterministically) {
  CommandResult r = graft("run " + quote(mlp_));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("input 'input': float32[1,784] random (seed 0)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("output 'output': float32[1,10]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("values: "), std::string::npos) << r.out;
  std::string checksum = checksum_line(r.out);
  EXPECT_NE(checksum.find("sum of abs"), std::string::npos) << r.out;

  CommandResult again = graft("run " + quote(mlp_) + " --threads 2");
  EXPECT_EQ(checksum_line(again.out), checksum);
  CommandResult other_seed = graft("run " + quote(mlp_) + " --seed 1");
  EXPECT_NE(checksum_line(other_seed.out), checksum);
}

TEST_F(CliTest, RunWithShapeRepeatAndStats) {
  CommandResult r = graft("run " + quote(mlp_) + " --shape input=3,784 --repeat 3 --stats");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("output 'output': float32[3,10]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("latency: median "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("over 3 runs"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("memory: peak "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("allocations"), std::string::npos) << r.out;
}

TEST_F(CliTest, AOneShotRunLeavesItsCompiledKernelsInTheDiskCache) {
  fs::path cache = dir_ / "one_shot_cache", model = dir_ / "gru_cell.onnx";
  fs::remove_all(cache);
  ASSERT_EQ(graft("zoo gru_cell -o " + quote(model.string())).exit_code, 0);
  // The GRU cell's gate arithmetic runs as fused kernels.
  CommandResult r = graft("run " + quote(model.string()) + " --report", "GRAFT_CACHE_DIR=" + quote(cache.string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_NE(r.out.find(" fuse "), std::string::npos) << r.out;
  size_t entries = 0;
  for (const auto& entry : fs::directory_iterator(cache)) entries += entry.is_regular_file() ? 1 : 0;
  EXPECT_GE(entries, 1u) << "the process exited without writing its kernels to GRAFT_CACHE_DIR";
}

/// The "jit: ..." line of `graft run --stats`.
std::string jit_line(const std::string& out) {
  size_t at = out.find("jit: ");
  return at == std::string::npos ? "" : out.substr(at, out.find('\n', at) - at);
}

TEST_F(CliTest, ASecondProcessRunsCachedKernelsWithoutLoadingLlvm) {
  fs::path cache = dir_ / "warm_cache", model = dir_ / "gru_cell_warm.onnx";
  fs::remove_all(cache);
  ASSERT_EQ(graft("zoo gru_cell -o " + quote(model.string())).exit_code, 0);
  std::string environment = "GRAFT_CACHE_DIR=" + quote(cache.string());
  auto run = [&](const std::string& name) {
    return graft("run " + quote(model.string()) + " --stats --output-dir " + quote((dir_ / name).string()), environment);
  };
  CommandResult cold = run("cold_outputs");
  ASSERT_EQ(cold.exit_code, 0) << cold.err;
  if (jit_line(cold.out).find(" 0 interpreted") == std::string::npos) GTEST_SKIP() << "no LLVM JIT: " << cold.out;
  EXPECT_NE(jit_line(cold.out).find("LLVM plugin loaded"), std::string::npos) << cold.out;
  EXPECT_EQ(jit_line(cold.out).find(" 0 kernels compiled"), std::string::npos) << cold.out;

  CommandResult warm = run("warm_outputs");
  ASSERT_EQ(warm.exit_code, 0) << warm.err;
  EXPECT_NE(jit_line(warm.out).find("jit: 0 kernels compiled"), std::string::npos) << warm.out;
  EXPECT_EQ(jit_line(warm.out).find(" 0 from GRAFT_CACHE_DIR"), std::string::npos) << warm.out;
  EXPECT_NE(jit_line(warm.out).find("LLVM plugin not loaded"), std::string::npos) << warm.out;
  EXPECT_TRUE(warm.err.empty()) << warm.err;
  // The cold process's first run interpreted its kernels (they compile
  // after it); the warm one ran them compiled: equal within the stated error
  // of the approximations (docs/codegen.md).
  for (const auto& entry : fs::directory_iterator(dir_ / "cold_outputs")) {
    graft::Tensor want = graft::frontend::load_npy(entry.path().string());
    graft::Tensor got = graft::frontend::load_npy((dir_ / "warm_outputs" / entry.path().filename()).string());
    ASSERT_EQ(got.shape(), want.shape());
    for (int64_t i = 0; i < want.numel(); ++i)
      ASSERT_NEAR(got.data<float>()[i], want.data<float>()[i], 1e-5 * (1 + std::abs(want.data<float>()[i]))) << i;
  }
  // Warm processes agree bit for bit.
  CommandResult again = run("warm_outputs_again");
  EXPECT_EQ(checksum_line(again.out), checksum_line(warm.out));

  // A damaged entry is rejected (counted), compiled again and rewritten: the next process is warm again.
  for (const auto& entry : fs::directory_iterator(cache)) {
    if (entry.path().extension() != ".gko") continue;
    std::string bytes = read_text(entry.path());
    bytes[bytes.size() - 5] = static_cast<char>(bytes[bytes.size() - 5] ^ 0x20);
    write_bytes(entry.path(), bytes);
  }
  CommandResult damaged = run("damaged_outputs");
  ASSERT_EQ(damaged.exit_code, 0) << damaged.err;
  EXPECT_EQ(jit_line(damaged.out).find("(0 damaged entries rejected"), std::string::npos) << damaged.out;
  EXPECT_EQ(jit_line(damaged.out).find("jit: 0 kernels compiled"), std::string::npos) << damaged.out;
  EXPECT_NE(jit_line(damaged.out).find("LLVM plugin loaded"), std::string::npos) << damaged.out;
  CommandResult repaired = run("repaired_outputs");
  EXPECT_NE(jit_line(repaired.out).find("LLVM plugin not loaded"), std::string::npos) << repaired.out;
  EXPECT_EQ(checksum_line(repaired.out), checksum_line(warm.out));

  // So is a damaged target record: that process loads LLVM to learn its target (and interprets its first
  // run while it does), finds the entry and writes the record again.
  for (const auto& entry : fs::directory_iterator(cache))
    if (entry.path().extension() == ".gkt") write_bytes(entry.path(), "damaged");
  CommandResult relearned = run("relearned_outputs");
  EXPECT_NE(jit_line(relearned.out).find("jit: 0 kernels compiled"), std::string::npos) << relearned.out;
  EXPECT_NE(jit_line(relearned.out).find("LLVM plugin loaded"), std::string::npos) << relearned.out;
  CommandResult rewarmed = run("rewarmed_outputs");
  EXPECT_NE(jit_line(rewarmed.out).find("LLVM plugin not loaded"), std::string::npos) << rewarmed.out;
}

TEST_F(CliTest, TimeoutAndMaxMemoryStopARunWithOneLineErrors) {
  CommandResult timed_out = graft("run " + quote(mlp_) + " --timeout 0.000001");
  EXPECT_EQ(timed_out.exit_code, 2) << timed_out.out;
  EXPECT_NE(timed_out.err.find("run passed its deadline before"), std::string::npos) << timed_out.err;
  CommandResult roomy = graft("run " + quote(mlp_) + " --timeout 60 --max-memory 64M");
  EXPECT_EQ(roomy.exit_code, 0) << roomy.err;
  CommandResult tight = graft("run " + quote(mlp_) + " --shape input=64,784 --max-memory 16K --backends ref --fusion off");
  EXPECT_EQ(tight.exit_code, 2) << tight.out;
  EXPECT_NE(tight.err.find("would pass the memory limit of 16 KiB"), std::string::npos) << tight.err;
  EXPECT_NE(tight.err.find("node '"), std::string::npos) << tight.err;
  for (const char* bad : {"--timeout -1", "--timeout soon", "--max-memory lots"}) {
    CommandResult r = graft("run " + quote(mlp_) + " " + bad);
    EXPECT_EQ(r.exit_code, 2) << bad;
    EXPECT_NE(r.err.find(std::string(bad).substr(0, std::string(bad).find(' '))), std::string::npos) << r.err;
  }
  CommandResult env = graft("run " + quote(mlp_), "GRAFT_MAX_MEMORY=plenty");
  EXPECT_EQ(env.exit_code, 2);
  EXPECT_NE(env.err.find("GRAFT_MAX_MEMORY 'plenty'"), std::string::npos) << env.err;
}

TEST_F(CliTest, ShapeGivesAnInputOfUnknownRankAnyRankScalarsIncluded) {
  // y = Relu(x) with x of unknown rank: graft run needs --shape for it.
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.add_opset_import()->set_version(17);
  onnx::GraphProto* g = model.mutable_graph();
  g->set_name("relu_any_rank");
  onnx::NodeProto* relu = g->add_node();
  relu->set_op_type("Relu");
  relu->add_input("x");
  relu->add_output("y");
  g->add_input()->set_name("x");
  g->mutable_input(0)->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  g->add_output()->set_name("y");
  g->mutable_output(0)->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  write_bytes(path("any_rank.onnx"), model.SerializeAsString());
  const std::string run = "run " + quote(path("any_rank.onnx"));

  expect_one_line_error(graft(run), "--shape x", "no --shape for an input of unknown rank");
  for (const char* scalar : {" --shape x=", " --shape x=[]"}) {
    CommandResult r = graft(run + scalar);
    ASSERT_EQ(r.exit_code, 0) << scalar << ": " << r.err;
    EXPECT_NE(r.out.find("output 'y': float32[]"), std::string::npos) << scalar << ": " << r.out;
  }
  // A shape as graft prints it, brackets and all, is read back.
  CommandResult bracketed = graft(run + " --shape x=[2,3]");
  ASSERT_EQ(bracketed.exit_code, 0) << bracketed.err;
  EXPECT_NE(bracketed.out.find("output 'y': float32[2,3]"), std::string::npos) << bracketed.out;
  expect_one_line_error(graft(run + " --shape x=[2,"), "--shape x '[2,'", "an unclosed bracket");
  expect_one_line_error(graft(run + " --shape =2"), "--shape '=2'", "no name");
}

TEST_F(CliTest, RunReadsNpyInputAndWritesNpyOutputs) {
  std::vector<float> values(2 * 784);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i % 17) / 17.0f - 0.5f;
  write_bytes(path("in.npy"), npy_bytes({2, 784}, values));
  CommandResult r = graft("run " + quote(mlp_) + " --input input=" + quote(path("in.npy")) + " --output-dir " +
                          quote(path("outputs")));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  graft::Tensor written = graft::frontend::load_npy(path("outputs/output.npy"));
  ASSERT_EQ(written.shape(), (graft::Shape{2, 10}));

  std::unique_ptr<graft::runtime::Session> loaded_mlp = graft::frontend::load_model(mlp_);
  graft::runtime::Session& session = *loaded_mlp;
  graft::Tensor input = graft::Tensor::from_vector(values, {2, 784});
  graft::Tensor expected = session.run(std::vector<graft::Tensor>{input})[0];
  for (int64_t i = 0; i < expected.numel(); ++i)
    EXPECT_FLOAT_EQ(written.data<float>()[i], expected.data<float>()[i]) << i;
}

TEST_F(CliTest, InfoDescribesTheModel) {
  CommandResult r = graft("info " + quote(mlp_));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("input: float32[batch,784]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("output: float32[batch,10]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("nodes: 5"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Gemm  3"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("unsupported ops: none"), std::string::npos) << r.out;
}

TEST_F(CliTest, InfoListsUnsupportedOpsOfModelsTheImporterRefuses) {
  onnx::ModelProto model;
  ASSERT_TRUE(model.ParseFromString(mlp_bytes_));
  model.mutable_graph()->mutable_node(1)->set_op_type("NoSuchOp");
  write_bytes(path("unknown_op.onnx"), model.SerializeAsString());
  CommandResult r = graft("info " + quote(path("unknown_op.onnx")));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("unsupported ops: NoSuchOp"), std::string::npos) << r.out;
  expect_one_line_error(graft("run " + quote(path("unknown_op.onnx"))), "NoSuchOp", "run with an unknown op");
}

TEST_F(CliTest, OptRunsPassesAndKeepsOutputs) {
  CommandResult list = graft("opt --list");
  ASSERT_EQ(list.exit_code, 0) << list.err;
  EXPECT_NE(list.out.find("fold-constants"), std::string::npos) << list.out;

  std::string optimized = path("mlp_opt.onnx");
  CommandResult r =
      graft("opt " + quote(mlp_) + " --passes infer,fold-constants,eliminate-dead-code -o " + quote(optimized));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  CommandResult before = graft("run " + quote(mlp_));
  CommandResult after = graft("run " + quote(optimized));
  ASSERT_EQ(after.exit_code, 0) << after.err;
  EXPECT_EQ(checksum_line(after.out), checksum_line(before.out));

  expect_one_line_error(graft("opt " + quote(mlp_) + " --passes no-such-pass -o " + quote(optimized)), "no-such-pass",
                        "unknown pass");
}

TEST_F(CliTest, OptWritesNoOpNewerThanTheModelsOpset) {
  // A GELU written out (x * 0.5 * (1 + erf(x / sqrt 2))) in an opset-17
  // model: graft opt used to write it as Gelu, an opset-20 op, which ONNX
  // Runtime refuses in an opset-17 model. It stays written out; the file
  // still runs the same.
  auto g = std::make_unique<graft::ir::Graph>();
  g->opset_imports[""] = 17;
  graft::ir::Value x = g->add_input("x", graft::ir::ValueType::of(graft::DType::float32, {2, 8}))->output(0);
  auto scalar = [&](float v, const char* name) { return g->add_constant(name, graft::Tensor::scalar(v))->output(0); };
  auto node = [&](const char* op, std::vector<graft::ir::Value> in) { return g->add_node(op, in)->output(0); };
  graft::ir::Value erf = node("Erf", {node("Div", {x, scalar(1.41421354f, "sqrt2")})});
  g->add_output(node("Mul", {node("Mul", {x, scalar(0.5f, "half")}), node("Add", {erf, scalar(1.0f, "one")})}), "y");
  std::string model = path("gelu17.onnx"), optimized = path("gelu17_opt.onnx");
  graft::frontend::save_onnx(*g, model);
  CommandResult r = graft("opt " + quote(model) + " -o " + quote(optimized));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  onnx::ModelProto written;
  std::ifstream in(optimized, std::ios::binary);
  ASSERT_TRUE(written.ParseFromIstream(&in));
  ASSERT_EQ(written.opset_import_size(), 1);
  EXPECT_EQ(written.opset_import(0).version(), 17);
  for (const auto& n : written.graph().node()) EXPECT_NE(n.op_type(), "Gelu");
  CommandResult before = graft("run " + quote(model)), after = graft("run " + quote(optimized));
  ASSERT_EQ(after.exit_code, 0) << after.err;
  EXPECT_EQ(checksum_line(after.out), checksum_line(before.out));
}

TEST_F(CliTest, OptKeepsAFloat16ModelFloat16) {
  // compute-float16-in-float32 is how graft's CPU computes float16: graft
  // opt's default leaves it out, so the file keeps its float16 weights.
  auto g = std::make_unique<graft::ir::Graph>();
  g->opset_imports[""] = 17;
  graft::ir::Value x = g->add_input("x", graft::ir::ValueType::of(graft::DType::float16, {2, 4}))->output(0);
  graft::Tensor w(graft::DType::float16, {4, 3});
  for (int64_t i = 0; i < w.numel(); ++i) w.data<graft::float16_t>()[i] = graft::float16_t(0.25f * static_cast<float>(i));
  g->add_output(g->add_node("MatMul", {x, g->add_constant("w", w)->output(0)})->output(0), "y");
  std::string model = path("half.onnx"), optimized = path("half_opt.onnx");
  graft::frontend::save_onnx(*g, model);
  CommandResult r = graft("opt " + quote(model) + " -o " + quote(optimized));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.find("compute-float16-in-float32"), std::string::npos) << r.out;
  onnx::ModelProto written;
  std::ifstream in(optimized, std::ios::binary);
  ASSERT_TRUE(written.ParseFromIstream(&in));
  bool float16_weight = false;
  for (const auto& t : written.graph().initializer()) float16_weight |= t.data_type() == onnx::TensorProto::FLOAT16;
  for (const auto& n : written.graph().node())
    for (const auto& a : n.attribute()) float16_weight |= a.has_t() && a.t().data_type() == onnx::TensorProto::FLOAT16;
  EXPECT_TRUE(float16_weight);
  CommandResult list = graft("opt --list");
  EXPECT_EQ(list.out.substr(list.out.find("default pipeline:")).find("compute-float16-in-float32"), std::string::npos);
  // Named, it runs.
  CommandResult named = graft("opt " + quote(model) + " --passes infer,compute-float16-in-float32 -o " + quote(optimized));
  ASSERT_EQ(named.exit_code, 0) << named.err;
  EXPECT_NE(named.out.find("compute-float16-in-float32"), std::string::npos) << named.out;
}

TEST_F(CliTest, BadModelFilesAreOneLineErrors) {
  expect_one_line_error(graft("run " + quote(path("missing.onnx"))), "missing.onnx", "missing file");
  write_bytes(path("empty.onnx"), "");
  expect_one_line_error(graft("run " + quote(path("empty.onnx"))), "empty.onnx", "empty file");
  expect_one_line_error(graft("info " + quote(path("empty.onnx"))), "empty.onnx", "info of an empty file");
  write_bytes(path("truncated.onnx"), mlp_bytes_.substr(0, mlp_bytes_.size() / 2));
  expect_one_line_error(graft("run " + quote(path("truncated.onnx"))), "truncated.onnx", "truncated model");
  write_bytes(path("text.onnx"), "this is not an ONNX model, it is a text file\n");
  expect_one_line_error(graft("run " + quote(path("text.onnx"))), "text.onnx", "non-ONNX file");
  expect_one_line_error(graft("info " + quote(path("text.onnx"))), "text.onnx", "info of a non-ONNX file");

  // A flipped bit in an op type ("Gemm" -> "gemm") and in a weight's dims.
  std::string flipped = mlp_bytes_;
  size_t at = flipped.find(std::string("\x22\x04Gemm", 6));
  ASSERT_NE(at, std::string::npos);
  flipped[at + 2] ^= 0x20;
  write_bytes(path("flipped_op.onnx"), flipped);
  expect_one_line_error(graft("run " + quote(path("flipped_op.onnx"))), "gemm", "bit-flipped op type");
  onnx::ModelProto model;
  ASSERT_TRUE(model.ParseFromString(mlp_bytes_));
  auto* weight = model.mutable_graph()->mutable_initializer(0);
  weight->set_dims(1, weight->dims(1) ^ 1);
  write_bytes(path("flipped_dims.onnx"), model.SerializeAsString());
  expect_one_line_error(graft("run " + quote(path("flipped_dims.onnx"))), "flipped_dims.onnx",
                        "bit-flipped weight dims");
}

TEST_F(CliTest, BitFlipsNeverCrash) {
  // Flip one bit at places in the model's structure: the header and node
  // list at the start, the graph's inputs, outputs and opset at the end (the
  // middle is weight data, where any flip gives a valid model). Each run
  // either works or fails with one line; none may crash.
  std::vector<size_t> offsets;
  for (size_t i = 0; i < 400; i += 41) offsets.push_back(i);
  for (size_t i = 1; i < 150; i += 53) offsets.push_back(mlp_bytes_.size() - i);
  for (size_t offset : offsets) {
    std::string bytes = mlp_bytes_;
    bytes[offset] ^= static_cast<char>(1 << (offset % 8));
    write_bytes(path("flip.onnx"), bytes);
    CommandResult r = graft("run " + quote(path("flip.onnx")));
    if (r.exit_code != 0) expect_one_line_error(r, "", "bit flip at " + std::to_string(offset));
  }
}

TEST_F(CliTest, BadInputsAreOneLineErrors) {
  std::vector<float> values(10, 0.5f);
  write_bytes(path("lying.npy"), npy_bytes({1, 784}, values));
  expect_one_line_error(graft("run " + quote(mlp_) + " --input input=" + quote(path("lying.npy"))), "lying.npy",
                        "npy header lies about its size");
  write_bytes(path("wrong_shape.npy"), npy_bytes({1, 783}, std::vector<float>(783, 0.25f)));
  expect_one_line_error(graft("run " + quote(mlp_) + " --input input=" + quote(path("wrong_shape.npy"))), "input",
                        "wrong-shape input");
  expect_one_line_error(graft("run " + quote(mlp_) + " --input nosuch=" + quote(path("wrong_shape.npy"))), "nosuch",
                        "--input for an unknown name");
  expect_one_line_error(graft("run " + quote(mlp_) + " --input input=" + quote(path("missing.npy"))), "missing.npy",
                        "missing npy");
}

TEST_F(CliTest, BadFlagsAreOneLineErrors) {
  for (const char* threads : {"-1", "0", "100000", "abc"})
    expect_one_line_error(graft("run " + quote(mlp_) + " --threads " + threads), "--threads",
                          std::string("--threads ") + threads);
  expect_one_line_error(graft("run " + quote(mlp_) + " --shape nosuch=1,784"), "nosuch", "--shape for unknown input");
  expect_one_line_error(graft("run " + quote(mlp_) + " --shape input=1,x"), "--shape", "malformed dims");
  expect_one_line_error(graft("run " + quote(mlp_) + " --shape input=1,-3"), "--shape", "negative dims");
  expect_one_line_error(graft("run " + quote(mlp_) + " --shape input=1,783"), "input", "--shape against a known dim");
  expect_one_line_error(graft("run " + quote(mlp_) + " --repeat abc"), "--repeat", "bad --repeat");
  expect_one_line_error(graft("run " + quote(mlp_), "GRAFT_NUM_THREADS=banana"), "GRAFT_NUM_THREADS",
                        "GRAFT_NUM_THREADS=banana");
  expect_one_line_error(graft("run"), "model", "no model");
  expect_one_line_error(graft("frobnicate"), "frobnicate", "unknown command");
  expect_one_line_error(graft("zoo nosuchmodel -o " + quote(path("x.onnx"))), "nosuchmodel", "unknown zoo model");
}

TEST_F(CliTest, RunFusionFlagAndVariable) {
  CommandResult on = graft("run " + quote(mlp_) + " --fusion on");
  ASSERT_EQ(on.exit_code, 0) << on.err;
  CommandResult off = graft("run " + quote(mlp_) + " --fusion off");
  ASSERT_EQ(off.exit_code, 0) << off.err;
  EXPECT_EQ(checksum_line(on.out), checksum_line(off.out));
  CommandResult env_off = graft("run " + quote(mlp_), "GRAFT_FUSION=0");
  EXPECT_EQ(env_off.exit_code, 0) << env_off.err;
  expect_one_line_error(graft("run " + quote(mlp_) + " --fusion maybe"), "--fusion", "--fusion maybe");
  expect_one_line_error(graft("run " + quote(mlp_), "GRAFT_FUSION=banana"), "GRAFT_FUSION='banana'",
                        "GRAFT_FUSION=banana");
}

TEST_F(CliTest, DevicesDescribesWhatGraftCanUseHere) {
  CommandResult r = graft("devices");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* line :
       {"cpu ", "backend ref ", "backend fuse ", "fused kernels ", "compile cache ", "cuda ", "opencl "})
    EXPECT_NE(("\n" + r.out).find(std::string("\n") + line), std::string::npos) << line << " in:\n" << r.out;
  EXPECT_NE(graft("devices", "GRAFT_JIT=0").out.find("interpreter (GRAFT_JIT=0)"), std::string::npos);
  // Every OpenCL device, with its memory and compute units; none without a platform.
  if (graft::backend::device_api(graft::DeviceType::opencl).device_count() > 0) {
    EXPECT_NE(r.out.find("\nopencl:0 "), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("global memory"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("compute units"), std::string::npos) << r.out;
  }
  CommandResult no_platform = graft("devices", "OCL_ICD_VENDORS=/nonexistent");
  EXPECT_EQ(no_platform.exit_code, 0) << no_platform.err;
  EXPECT_EQ(no_platform.out.find("\nopencl:0 "), std::string::npos) << no_platform.out;
  EXPECT_NE(no_platform.out.find("no OpenCL platform"), std::string::npos) << no_platform.out;
  CommandResult cached = graft("devices", "GRAFT_CACHE_DIR=" + quote(path("devices_cache")));
  EXPECT_NE(cached.out.find(path("devices_cache") + " (GRAFT_CACHE_DIR)"), std::string::npos) << cached.out;
  expect_one_line_error(graft("devices", "GRAFT_JIT=2"), "GRAFT_JIT", "GRAFT_JIT=2");
  expect_one_line_error(graft("devices", "GRAFT_NUM_THREADS=abc"), "GRAFT_NUM_THREADS", "GRAFT_NUM_THREADS=abc");
  CommandResult bad_cache = graft("devices", "GRAFT_CACHE_DIR=" + quote(mlp_));  // a file, not a directory
  expect_one_line_error(bad_cache, "GRAFT_CACHE_DIR", "GRAFT_CACHE_DIR=<a file>");
  EXPECT_TRUE(bad_cache.out.empty()) << "an error prints nothing else: " << bad_cache.out;
}

/// Writes an ONNX backend test case for the mlp: input_0.pb and output_0.pb
/// (graft's own output, optionally perturbed at element 3).
void write_mlp_case(const fs::path& dir, const std::string& model_bytes, int64_t batch, float perturbation) {
  write_bytes(dir / "model.onnx", model_bytes);
  std::vector<float> values(static_cast<size_t>(batch) * 784);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i % 13) / 13.0f;
  graft::Tensor input = graft::Tensor::from_vector(values, {batch, 784});
  write_bytes(dir / "test_data_set_0" / "input_0.pb", tensor_pb(input, "input"));
  std::unique_ptr<graft::runtime::Session> loaded = graft::frontend::load_model((dir / "model.onnx").string());
  graft::runtime::Session& session = *loaded;
  graft::Tensor output = session.run(std::vector<graft::Tensor>{input})[0];
  output.data<float>()[3] += perturbation;
  write_bytes(dir / "test_data_set_0" / "output_0.pb", tensor_pb(output, ""));
}

TEST_F(CliTest, OnnxTestReportsEachCaseAndASummary) {
  fs::path cases = dir_ / "cases";
  write_mlp_case(cases / "a_pass", mlp_bytes_, 1, 0.0f);
  write_mlp_case(cases / "b_fail", mlp_bytes_, 1, 1.0f);
  write_bytes(cases / "c_error" / "model.onnx", "garbage");
  onnx::ModelProto model;
  ASSERT_TRUE(model.ParseFromString(mlp_bytes_));
  model.mutable_graph()->mutable_node(1)->set_op_type("NoSuchOp");
  write_bytes(cases / "d_unsupported" / "model.onnx", model.SerializeAsString());

  CommandResult r = graft("onnx-test --jobs 3 " + quote(cases.string()));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("PASS a_pass\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("FAIL b_fail: test_data_set_0, output 'output': 1 of 10 elements differ; worst at [0,3]"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("ERROR c_error: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("UNSUPPORTED d_unsupported: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("NoSuchOp"), std::string::npos) << r.out;
  EXPECT_LT(r.out.find("a_pass"), r.out.find("b_fail")) << "cases print in order";
  EXPECT_LT(r.out.find("c_error"), r.out.find("d_unsupported")) << "cases print in order";
  EXPECT_NE(r.out.find("summary: 1 passed, 2 failed, 1 unsupported, 0 crashed, 0 timed out of 4"), std::string::npos)
      << r.out;

  EXPECT_EQ(graft("onnx-test --min-pass 1 " + quote(cases.string())).exit_code, 0);
  CommandResult below = graft("onnx-test --min-pass 2 " + quote(cases.string()));
  EXPECT_EQ(below.exit_code, 1) << below.out;
  // A single case folder works too.
  CommandResult single = graft("onnx-test " + quote((cases / "a_pass").string()));
  EXPECT_NE(single.out.find("summary: 1 passed, 0 failed"), std::string::npos) << single.out;
}

TEST_F(CliTest, OnnxTestKillsCasesPastTheTimeout) {
  // A batch of 4000 through the mlp is 3.2 GFLOP plus 12.5 MB of input to
  // parse: far longer than 5 ms on any machine (50 ms proved too short once
  // the loader stopped copying weights and mapping libLLVM at start-up).
  fs::path slow = dir_ / "slow_cases" / "slow";
  write_bytes(slow / "model.onnx", mlp_bytes_);
  graft::Tensor input(graft::DType::float32, {4000, 784});
  write_bytes(slow / "test_data_set_0" / "input_0.pb", tensor_pb(input, "input"));
  write_bytes(slow / "test_data_set_0" / "output_0.pb",
              tensor_pb(graft::Tensor(graft::DType::float32, {4000, 10}), ""));
  CommandResult r = graft("onnx-test --timeout 0.005 " + quote((dir_ / "slow_cases").string()));
  EXPECT_NE(r.out.find("TIMEOUT slow"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("0 crashed, 1 timed out of 1"), std::string::npos) << r.out;
}

TEST_F(CliTest, OnnxTestMissingFolder) {
  expect_one_line_error(graft("onnx-test " + quote(path("no_such_suite"))), "no_such_suite", "missing suite");
  EXPECT_EQ(graft("onnx-test --skip-missing " + quote(path("no_such_suite"))).exit_code, 77);
}

}  // namespace

TEST_F(CliTest, PartitionReportsEveryNodeAsTextJsonAndDot) {
  CommandResult text = graft("partition " + quote(mlp_) + " --backends ref");
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_EQ(text.out.rfind("partition: ref 5 nodes\n", 0), 0u) << text.out;
  EXPECT_NE(text.out.find("/layers/layers.1/Relu (Relu) -> ref"), std::string::npos) << text.out;
  // With the default backends every node is still accounted for.
  CommandResult all = graft("partition " + quote(mlp_));
  ASSERT_EQ(all.exit_code, 0) << all.err;
  EXPECT_EQ(all.out.rfind("partition: ", 0), 0u) << all.out;
  for (const char* node : {"layers.0/Gemm (Gemm) -> ", "layers.1/Relu (Relu) -> ", "layers.4/Gemm (Gemm) -> "})
    EXPECT_NE(all.out.find(node), std::string::npos) << node << " in " << all.out;

  std::string dot = path("partition.dot");
  CommandResult json = graft("partition " + quote(mlp_) + " --backends ref --format json --dot " + quote(dot));
  ASSERT_EQ(json.exit_code, 0) << json.err;
  EXPECT_NE(json.out.find("\"summary\": \"partition: ref 5 nodes\""), std::string::npos) << json.out;
  EXPECT_NE(json.out.find("\"op\": \"Gemm\""), std::string::npos) << json.out;
  EXPECT_EQ(read_text(dot).rfind("digraph partition {", 0), 0u);
}

TEST_F(CliTest, RunReportPrintsThePartitionSummary) {
  CommandResult r = graft("run " + quote(mlp_) + " --report --backends ref");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("partition: ref 5 nodes\n", 0), 0u) << r.out;
}

#if GRAFT_HAVE_DNNL
// x [1,4,H,W] -> Conv -> Conv, Add of both: with symbolic H and W the Add
// cannot be sized as a dnnl binary at load; given a shape, the plan's
// partition puts all three nodes on dnnl.
TEST_F(CliTest, SymbolicInputsArePartitionedAgainForTheShapesGiven) {
  auto g = std::make_unique<graft::ir::Graph>();
  g->opset_imports[""] = 17;
  graft::ir::ValueType x_type{graft::DType::float32, true,
                       {graft::ir::Dim::known(1), graft::ir::Dim::known(4), graft::ir::Dim::symbolic("H"), graft::ir::Dim::symbolic("W")}};
  graft::ir::Value x = g->add_input("x", x_type)->output(0);
  auto conv = [&](graft::ir::Value in, const std::string& name) {
    graft::Tensor w(graft::DType::float32, {4, 4, 3, 3});
    for (int64_t i = 0; i < w.numel(); ++i) w.data<float>()[i] = static_cast<float>(i % 7) * 0.01f;
    graft::ir::Node* c = g->add_node("Conv", {in, g->add_constant(name + "_w", w)->output(0)}, 1, name);
    c->attributes.set("pads", std::vector<int64_t>{1, 1, 1, 1});
    return c->output(0);
  };
  graft::ir::Value a = conv(x, "conv_a");
  g->add_output(g->add_node("Add", {a, conv(a, "conv_b")}, 1, "residual")->output(0), "y");
  std::string model = path("conv_hw.onnx");
  graft::frontend::save_onnx(*g, model);

  CommandResult load = graft("partition " + quote(model) + " --backends dnnl,ref --fusion off");
  ASSERT_EQ(load.exit_code, 0) << load.err;
  EXPECT_NE(load.out.find("residual (Add) -> ref"), std::string::npos) << load.out;
  CommandResult planned =
      graft("partition " + quote(model) + " --backends dnnl,ref --fusion off --shape x=1,4,8,8");
  ASSERT_EQ(planned.exit_code, 0) << planned.err;
  EXPECT_EQ(planned.out.rfind("partition: dnnl 3 nodes in 1 subgraph, ref 0 nodes\n", 0), 0u) << planned.out;
  CommandResult run = graft("run " + quote(model) + " --backends dnnl,ref --report --shape x=1,4,8,8");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.out.find("partition at inputs float32[1,4,8,8]: dnnl 3 nodes in 1 subgraph, ref 0 nodes\n"),
            std::string::npos)
      << run.out;
  // Every run on the shape-generic plan: the report says so instead of
  // making a plan only to show its partition; the output is the same.
  CommandResult generic =
      graft("run " + quote(model) + " --backends dnnl,ref --report --shape x=1,4,8,8", "GRAFT_MAX_PLANS=0");
  ASSERT_EQ(generic.exit_code, 0) << generic.err;
  EXPECT_NE(generic.out.find("plan: shape-generic (GRAFT_MAX_PLANS=0)"), std::string::npos) << generic.out;
  EXPECT_EQ(generic.out.find("partition at inputs"), std::string::npos) << generic.out;
  double generic_sum = 0, generic_abs = 0, planned_sum = 0, planned_abs = 0;
  ASSERT_EQ(
      std::sscanf(checksum_line(generic.out).c_str(), "checksum: sum %lf, sum of abs %lf", &generic_sum, &generic_abs),
      2);
  ASSERT_EQ(
      std::sscanf(checksum_line(run.out).c_str(), "checksum: sum %lf, sum of abs %lf", &planned_sum, &planned_abs), 2);
  EXPECT_NEAR(generic_sum, planned_sum, 1e-5 * std::abs(planned_abs));
  EXPECT_NEAR(generic_abs, planned_abs, 1e-5 * std::abs(planned_abs));
  expect_one_line_error(graft("run " + quote(model) + " --shape x=1,4,8,8", "GRAFT_MAX_PLANS=lots"),
                        "GRAFT_MAX_PLANS='lots' is not a number of plans", "GRAFT_MAX_PLANS=lots");
  expect_one_line_error(graft("partition " + quote(model) + " --shape x=1,4"), "rank 2 given", "--shape of a wrong rank");
  expect_one_line_error(graft("partition " + quote(model) + " --shape y=1,4,8,8"), "not an input of the model",
                        "--shape of an unknown input");
  expect_one_line_error(graft("partition " + quote(model) + " --shape x=1,4,8,8 --shape x=1,4,9,9"),
                        "--shape given twice for 'x'", "--shape given twice");
}
#endif

TEST_F(CliTest, PartitionErrorsAreOneLine) {
  expect_one_line_error(graft("partition " + quote(mlp_) + " --backends ref,tpu"), "unknown backend 'tpu' (available: ",
                        "unknown backend");
  expect_one_line_error(graft("run " + quote(mlp_) + " --backends ,ref"), "empty name", "empty backend name");
  expect_one_line_error(graft("partition " + quote(mlp_), "GRAFT_BACKENDS=nope"), "unknown backend 'nope'",
                        "GRAFT_BACKENDS");
  expect_one_line_error(graft("partition " + quote(mlp_) + " --format xml"), "--format 'xml'", "bad format");
  expect_one_line_error(graft("partition " + quote(mlp_) + " --annotations " + quote(path("missing.json"))),
                        "missing.json", "missing annotation file");
  write_bytes(path("broken.json"), "{\"pin\": ");
  expect_one_line_error(graft("partition " + quote(mlp_) + " --annotations " + quote(path("broken.json"))),
                        "not valid JSON", "malformed annotation file");
  write_bytes(path("ghost.json"), R"({"pin": {"ghost": "ref"}})");
  expect_one_line_error(graft("run " + quote(mlp_) + " --annotations " + quote(path("ghost.json"))), "'ghost'",
                        "annotation naming an unknown node");
  write_bytes(path("region.json"), R"({"regions": [{"backend": "ref", "nodes": ["/layers/layers.1/Relu"]}]})");
  expect_one_line_error(graft("partition " + quote(mlp_) + " --annotations " + quote(path("region.json"))),
                        "other than ref", "region on ref");
}

// The report lists members of fused kernels under `fuse`; --fusion off shows
// the partition alone; a bad --fusion value is one clear error.
TEST_F(CliTest, PartitionShowsFusedNodesUnderFuse) {
  write_relu_sigmoid_mlp();

  CommandResult fused = graft("partition " + quote(path("relu_sigmoid.onnx")) + " --backends ref");
  ASSERT_EQ(fused.exit_code, 0) << fused.err;
  EXPECT_EQ(fused.out.rfind("partition: fuse 2 nodes in 1 subgraph, ref 4 nodes\n", 0), 0u) << fused.out;
  EXPECT_NE(fused.out.find("added_sigmoid (Sigmoid) -> fuse [fused_pointwise_"), std::string::npos) << fused.out;
  CommandResult plain = graft("partition " + quote(path("relu_sigmoid.onnx")) + " --backends ref --fusion off");
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_EQ(plain.out.rfind("partition: ref 6 nodes\n", 0), 0u) << plain.out;
  expect_one_line_error(graft("partition " + quote(mlp_) + " --fusion maybe"), "--fusion", "bad --fusion value");

  // Running the fused kernel reads the JIT's variables: nonsense is an error naming them.
  std::string fused_run = "run " + quote(path("relu_sigmoid.onnx")) + " --backends ref --repeat 1";
  ASSERT_EQ(graft(fused_run, "GRAFT_JIT_LANES=8").exit_code, 0);
  expect_one_line_error(graft(fused_run, "GRAFT_JIT_LANES=5"), "GRAFT_JIT_LANES", "GRAFT_JIT_LANES=5");
  expect_one_line_error(graft(fused_run, "GRAFT_JIT=maybe"), "GRAFT_JIT", "GRAFT_JIT=maybe");
}

// Without the LLVM plugin beside libgraft.so, fused kernels still run (in the
// interpreter), and graft says so once instead of falling back silently.
TEST_F(CliTest, MissingJitPluginIsAWarningNotASilentFallback) {
  std::string model = write_relu_sigmoid_mlp();
  fs::path lonely = dir_ / "lib_without_plugin";
  fs::create_directories(lonely);
  // Under its soname, the name the graft binary asks the loader for (copy_file follows the links).
  fs::copy_file(fs::path(GRAFT_BINARY_DIR) / "libgraft.so", lonely / "libgraft.so.0", fs::copy_options::overwrite_existing);
  // The binary's RUNPATH names the build folder; LD_LIBRARY_PATH comes first.
  CommandResult r = graft("run " + quote(model) + " --backends ref --repeat 2", "LD_LIBRARY_PATH=" + quote(lonely.string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("the LLVM JIT is unavailable ("), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("fused kernels run in the interpreter"), std::string::npos) << r.err;
  size_t first = r.err.find("warning");
  EXPECT_EQ(r.err.find("warning", first + 1), std::string::npos) << "warned twice: " << r.err;
  EXPECT_NE(r.out.find("latency"), std::string::npos) << r.out;
}
