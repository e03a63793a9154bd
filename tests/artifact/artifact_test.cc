// Compiled artifacts: round trips (zoo models and ccodegen modules), weight
// deduplication, refusing damaged files (every 64th truncation, 1,000 bit
// flips, 300 flips with a recomputed checksum), and the distinct messages
// for a newer format, missing CPU features and a non-graft file.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>

#include <unistd.h>
#include <openssl/evp.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include "../../src/runtime/artifact_checksum.h"
#include "graft/frontend/load_model.h"
#include "graft/backends/ccodegen.h"
#include "graft/frontend/onnx_import.h"
#if GRAFT_HAVE_DNNL
#include "../../backends/dnnl/dnnl_backend.h"
#endif
#include "graft/runtime/artifact.h"
#include "graft/runtime/cpu_features.h"
#include "graft/zoo/zoo.h"
#include "support/graph_runner.h"

using namespace graft;
using namespace graft::ir;
using graft::testing::expect_close;
using graft::testing::random_tensor;
namespace fs = std::filesystem;

namespace {

/// A fresh folder under the build tree, removed at the end of the test.
struct ScratchDir {
  fs::path path;
  explicit ScratchDir(const std::string& name) {
    // One folder per process: ctest runs the tests of this binary in parallel processes.
    path = fs::path(GRAFT_BINARY_DIR) / "artifact_test" / (name + "." + std::to_string(::getpid()));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~ScratchDir() { fs::remove_all(path); }
};

void write_file(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

std::string sha256(std::string_view bytes) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  EXPECT_TRUE(EVP_Digest(bytes.data(), bytes.size(), digest, &size, EVP_sha256(), nullptr));
  return std::string(reinterpret_cast<const char*>(digest), 32);
}

/// The checksum as docs/artifact-format.md defines it, written again here
/// from the document: format 1 hashes the bytes; formats 2 and 3 hash the
/// SHA-256 digests of their 4 MiB chunks, in order; format 4 the same with
/// 256 KiB chunks.
std::string documented_checksum(std::string_view body, uint32_t version) {
  if (version == 1) return sha256(body);
  const size_t chunk = version < 4 ? size_t{4} << 20 : size_t{256} << 10;
  std::string digests;
  for (size_t offset = 0; offset < body.size() || offset == 0; offset += chunk) {
    digests += sha256(body.substr(offset, std::min(chunk, body.size() - offset)));
    if (body.empty()) break;
  }
  return sha256(digests);
}

/// Recomputes the trailing checksum after a deliberate patch (for the format
/// version the header now says, clamped to the ones graft knows).
void fix_checksum(std::string& bytes) {
  uint32_t version = 0;
  std::memcpy(&version, bytes.data() + 8, 4);
  version = std::clamp<uint32_t>(version, 1, runtime::kArtifactFormatVersion);
  std::string digest = documented_checksum(std::string_view(bytes).substr(0, bytes.size() - 32), version);
  std::memcpy(bytes.data() + bytes.size() - 32, digest.data(), 32);
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "<no error>";
}

/// Compiles a zoo model to an artifact in `dir`; returns the artifact path.
fs::path compile_zoo(const std::string& model, const fs::path& dir, const std::map<std::string, Shape>& shapes) {
  fs::path onnx = dir / (model + ".onnx");
  write_file(onnx, zoo::build_zoo_model(model, 1));
  fs::path artifact = dir / (model + ".graft");
  runtime::ArtifactCompileOptions options;
  options.session.num_threads = 2;
  options.input_shapes = shapes;
  frontend::compile_artifact(onnx.string(), artifact.string(), options);
  return artifact;
}

void expect_same_as_onnx(const std::string& model, const Shape& shape) {
  ScratchDir dir("roundtrip_" + model);
  fs::path artifact = compile_zoo(model, dir.path, {{"input", shape}});
  // Weights a backend stores converted replace their originals: the file stays the ONNX file's size.
  EXPECT_LE(fs::file_size(artifact), fs::file_size(dir.path / (model + ".onnx")) * 11 / 10);
  // Copy the artifact elsewhere and delete the original folder's ONNX file.
  fs::path elsewhere = dir.path / "elsewhere";
  fs::create_directories(elsewhere);
  fs::copy_file(artifact, elsewhere / "copy.graft");
  runtime::SessionOptions options;
  options.num_threads = 2;
  std::unique_ptr<runtime::Session> loaded = frontend::load_model((dir.path / (model + ".onnx")).string(), options);
  runtime::Session& from_onnx = *loaded;
  runtime::Session restored(runtime::ArtifactPath{(elsewhere / "copy.graft").string()}, options);
  EXPECT_TRUE(restored.restored_from_artifact());
  EXPECT_EQ(restored.num_compiles(), 0u);
  Tensor x = random_tensor(shape, 3);
  std::vector<Tensor> want = from_onnx.run({x});
  std::vector<Tensor> got = restored.run({x});
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) expect_close(got[i], want[i], 1e-5, 1e-5);
  // A restored plan is fixed to the shapes it was compiled for.
  Shape other = shape;
  other.back() += 1;
  std::string message = error_of([&] { restored.run({random_tensor(other, 1)}); });
  EXPECT_NE(message.find("expected shape"), std::string::npos) << message;
}

/// A graph with two ccodegen subgraphs that both read one weight, and a ref op between.
std::unique_ptr<Graph> two_subgraph_model(const Tensor& weight) {
  auto body = [&](const std::string& name) {
    auto b = std::make_shared<Graph>();
    b->name = name;
    b->opset_imports[""] = 17;
    Node* x = b->add_input("x", ValueType::of(DType::float32, {4, 16}));
    Node* w = b->add_constant("w", weight);
    Node* mm = b->add_node("MatMul", {x->output(0), w->output(0)}, 1, name + "_mm");
    Node* act = b->add_node("Tanh", {mm->output(0)}, 1, name + "_tanh");
    b->add_output(act->output(0), "y");
    return b;
  };
  auto g = std::make_unique<Graph>();
  g->opset_imports[""] = 17;
  g->name = "two_subgraphs";
  Node* x = g->add_input("x", ValueType{DType::float32, true, {Dim::symbolic("batch"), Dim::known(16)}});
  Node* first = g->add_node("Subgraph", {x->output(0)}, 1, "cc_first", "graft");
  first->subgraph = body("first");
  first->backend = "ccodegen";
  Node* relu = g->add_node("Relu", {first->output(0)}, 1, "relu");
  Node* second = g->add_node("Subgraph", {relu->output(0)}, 1, "cc_second", "graft");
  second->subgraph = body("second");
  second->backend = "ccodegen";
  g->add_output(second->output(0), "y");
  return g;
}

/// The mlp's artifact bytes, built once per test binary.
const std::string& mlp_artifact() {
  static const std::string bytes = [] {
    ScratchDir dir("mlp_bytes");
    return read_file(compile_zoo("mlp", dir.path, {{"input", {2, 784}}}));
  }();
  return bytes;
}

}  // namespace

TEST(Artifact, MlpRoundTripMatchesOnnx) { expect_same_as_onnx("mlp", {2, 784}); }

TEST(Artifact, Resnet18RoundTripMatchesOnnx) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "a ResNet-18 inference is slow under AddressSanitizer; the mlp round trip covers the same code";
#endif
  expect_same_as_onnx("resnet18", {1, 3, 224, 224});
}

TEST(Artifact, ModelsWithSequenceValuesRoundTrip) {
  // x -> SplitToSequence (columns) -> SequenceErase (the last) ->
  // ConcatFromSequence -> MatMul: sequence-typed values inside a planned
  // graph whose MatMul a backend compiles.
  auto g = std::make_unique<Graph>();
  g->opset_imports[""] = 17;
  Value x = g->add_input("x", ValueType::of(DType::float32, {4, 5}))->output(0);
  Node* split = g->add_node("SplitToSequence", {x}, 1, "split");
  split->attributes.set("axis", int64_t{1});
  Node* erase = g->add_node("SequenceErase", {split->output(0)}, 1, "erase");
  Node* concat = g->add_node("ConcatFromSequence", {erase->output(0)}, 1, "concat");
  concat->attributes.set("axis", int64_t{1});
  Value w = g->add_constant("w", random_tensor({4, 3}, 8))->output(0);
  g->add_output(g->add_node("MatMul", {concat->output(0), w}, 1, "matmul")->output(0), "y");
  runtime::Session compiled(std::move(g));
  runtime::Session::PlannedGraph plan = compiled.plan_for_types({ValueType::of(DType::float32, {4, 5})});
  runtime::RestoredPlan restored_plan =
      runtime::load_artifact_from_memory(runtime::serialize_artifact(*plan.graph, plan.modules), "test artifact");
  bool sequence_kept = false;
  for (const auto& node : restored_plan.graph->nodes())
    if (node->name == "split") sequence_kept = node->output_types[0].sequence;
  EXPECT_TRUE(sequence_kept) << "the value type's sequence mark is saved";
  runtime::Session restored(std::move(restored_plan));
  Tensor in = random_tensor({4, 5}, 6);
  expect_close(restored.run({in})[0], compiled.run({in})[0], 0, 0);
}

TEST(Artifact, CcodegenModulesAndSharedWeightsRoundTrip) {
  if (backends::find_c_compiler().empty()) GTEST_SKIP() << "no C compiler";
  Tensor weight = random_tensor({16, 16}, 21);
  runtime::SessionOptions options;
  options.passes = {"verify", "infer"};
  options.num_threads = 2;
  options.backends = {"ref"};  // the Relu between the two subgraphs stays with ref
  options.fusion = false;
  runtime::Session compiled(two_subgraph_model(weight), options);
  runtime::Session::PlannedGraph plan = compiled.plan_for_types({ValueType::of(DType::float32, {4, 16})});
  EXPECT_EQ(compiled.num_compiles(), 2u);
  std::string bytes = runtime::serialize_artifact(*plan.graph, plan.modules);

  runtime::RestoredPlan restored_plan = runtime::load_artifact_from_memory(bytes, "test artifact");
  const runtime::ArtifactInfo& info = restored_plan.info;
  ASSERT_EQ(info.modules.size(), 2u);
  EXPECT_EQ(info.modules[0].type_key, "ccodegen");
  EXPECT_EQ(info.modules[1].node_name, "cc_second");
  EXPECT_EQ(info.weight_data_bytes, weight.nbytes()) << "the shared weight is stored once";
  EXPECT_EQ(info.cpu_features, runtime::host_cpu_features()) << "native code records the build machine's features";
  EXPECT_EQ(info.nodes_per_backend.at("ccodegen"), 2u);
  EXPECT_EQ(info.nodes_per_backend.at("ref"), 1u);

  runtime::Session restored(std::move(restored_plan), options);
  EXPECT_TRUE(restored.restored_from_artifact());
  EXPECT_EQ(restored.num_compiles(), 0u);
  Tensor x = random_tensor({4, 16}, 5);
  expect_close(restored.run({x})[0], compiled.run({x})[0], 0, 0);
}

TEST(Artifact, PartitionedCcodegenMlpRoundTrip) {
  if (backends::find_c_compiler().empty()) GTEST_SKIP() << "no C compiler";
  ScratchDir dir("ccodegen_mlp");
  fs::path onnx = dir.path / "mlp.onnx";
  write_file(onnx, zoo::build_zoo_model("mlp", 2));
  runtime::ArtifactCompileOptions options;
  options.session.backends = {"ccodegen", "ref"};
  options.session.num_threads = 2;
  options.input_shapes = {{"input", {3, 784}}};
  runtime::ArtifactInfo info = frontend::compile_artifact(onnx.string(), (dir.path / "mlp.graft").string(), options);
  ASSERT_FALSE(info.modules.empty());
  for (const auto& m : info.modules) EXPECT_EQ(m.type_key, "ccodegen") << m.node_name;
  EXPECT_EQ(info.cpu_features, runtime::host_cpu_features());
  fs::create_directories(dir.path / "elsewhere");
  fs::copy_file(dir.path / "mlp.graft", dir.path / "elsewhere" / "mlp.graft");
  runtime::SessionOptions run_options;
  run_options.num_threads = 2;
  runtime::Session restored(runtime::ArtifactPath{(dir.path / "elsewhere" / "mlp.graft").string()}, run_options);
  EXPECT_EQ(restored.num_compiles(), 0u);
  run_options.backends = {"ref"};
  std::unique_ptr<runtime::Session> reference_session = frontend::load_model(onnx.string(), run_options);
  runtime::Session& reference = *reference_session;
  Tensor x = random_tensor({3, 784}, 8);
  expect_close(restored.run({x})[0], reference.run({x})[0], 1e-4, 1e-4);
}

TEST(Artifact, WeightsAreAlignedViewsOfTheMapping) {
  ScratchDir dir("mapping");
  fs::path path = dir.path / "mlp.graft";
  write_file(path, mlp_artifact());
  runtime::RestoredPlan plan = runtime::load_artifact(path.string());
  size_t constants = 0;
  std::shared_ptr<Storage> shared;
  std::function<void(const Graph&)> visit = [&](const Graph& graph) {
    for (const auto& node : graph.nodes()) {
      if (node->subgraph) visit(*node->subgraph);
      if (node->schema().name != "Constant" || !node->constant_value.is_defined()) continue;
      if (node->constant_value.storage()->is_placeholder()) continue;  // stored converted (DnnlWeightsAreStoredConverted)
      ++constants;
      EXPECT_EQ(reinterpret_cast<uintptr_t>(node->constant_value.raw_data()) % 64, 0u) << node->describe();
      if (!shared) shared = node->constant_value.storage();
      EXPECT_EQ(node->constant_value.storage(), shared) << "every weight views the one mapping";
    }
  };
  visit(*plan.graph);
  EXPECT_GT(constants, 0u);
  // The file may go away: the mapping stays valid while weights exist.
  fs::remove(path);
  runtime::Session session(std::move(plan));
  EXPECT_EQ(session.run({random_tensor({2, 784}, 1)})[0].shape(), Shape({2, 10}));
}

TEST(Artifact, TruncationsAreRefused) {
  const std::string& bytes = mlp_artifact();
  for (size_t n = 0; n < bytes.size(); n += 64) {
    std::string message = error_of([&] { runtime::load_artifact_from_memory(std::string_view(bytes.data(), n)); });
    ASSERT_TRUE(message.find("truncated") != std::string::npos || message.find("not a graft artifact") != std::string::npos)
        << "cut at " << n << ": " << message;
  }
}

TEST(Artifact, BitFlipsAreRefused) {
  const std::string& bytes = mlp_artifact();
  std::mt19937_64 random(42);
  std::string copy = bytes;
  for (int i = 0; i < 1000; ++i) {
    size_t byte = random() % bytes.size();
    unsigned char bit = static_cast<unsigned char>(1u << (random() % 8));
    copy[byte] = static_cast<char>(copy[byte] ^ bit);
    std::string message = error_of([&] { runtime::load_artifact_from_memory(copy); });
    ASSERT_NE(message, "<no error>") << "flip at byte " << byte;
    ASSERT_FALSE(message.empty());
    copy[byte] = bytes[byte];
  }
}

TEST(Artifact, DamageBehindAValidChecksumNeverCrashes) {
  // A hostile file can carry a correct checksum: the parsers must still hold.
  // Flips land in the header, graph and weight table (module blobs may hold
  // native code, which is only ever loaded from a verified file).
  const std::string& bytes = mlp_artifact();
  uint64_t modules_offset = 0;
  std::memcpy(&modules_offset, bytes.data() + 96, 8);
  std::mt19937_64 random(7);
  int refused = 0;
  for (int i = 0; i < 300; ++i) {
    std::string copy = bytes;
    for (int flips = 0; flips < 3; ++flips) {
      size_t byte = random() % std::min<size_t>(modules_offset, 64 * 1024);
      copy[byte] = static_cast<char>(copy[byte] ^ (1u << (random() % 8)));
    }
    fix_checksum(copy);
    try {
      runtime::RestoredPlan plan = runtime::load_artifact_from_memory(copy);
    } catch (const Error&) {
      ++refused;
    }
  }
  EXPECT_GT(refused, 0);
}

TEST(Artifact, NewerFormatVersionHasItsOwnMessage) {
  std::string bytes = mlp_artifact();
  uint32_t version = runtime::kArtifactFormatVersion + 1;
  std::memcpy(bytes.data() + 8, &version, 4);
  fix_checksum(bytes);
  std::string message = error_of([&] { runtime::load_artifact_from_memory(bytes); });
  std::string expected = "built by a newer graft (format " + std::to_string(version) + ", this graft reads up to " +
                         std::to_string(runtime::kArtifactFormatVersion) + ")";
  EXPECT_NE(message.find(expected), std::string::npos) << message;
}

// The checksum is the documented two-level SHA-256 (independently recomputed
// here) for files of many chunks, with and without a partial last chunk and
// a partial last batch of sixteen; damage in any chunk changes it.
TEST(Artifact, ChecksumIsTheDocumentedHashTree) {
  std::mt19937_64 random(3);
  for (size_t size : {size_t{0}, size_t{1000}, (size_t{9} << 20) + 5, (size_t{8} << 20), (size_t{4} << 20) * 3 + 77}) {
    std::string body(size, '\0');
    for (char& c : body) c = static_cast<char>(random());
    auto flat = runtime::artifact_format::artifact_checksum(reinterpret_cast<const uint8_t*>(body.data()), body.size(), 1);
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(flat.data()), 32), sha256(body));
    for (uint32_t version : {2u, 3u, 4u}) {
      auto tree =
          runtime::artifact_format::artifact_checksum(reinterpret_cast<const uint8_t*>(body.data()), body.size(), version);
      std::string got(reinterpret_cast<const char*>(tree.data()), 32);
      EXPECT_EQ(got, documented_checksum(body, version)) << size << " bytes, format " << version;
      EXPECT_NE(got, sha256(body));
    }
  }
  std::string body((size_t{9} << 20) + 5, '\0');
  for (char& c : body) c = static_cast<char>(random());
  std::string got = documented_checksum(body, 4);
  for (size_t at : {size_t{0}, (size_t{4} << 20) + 1, (size_t{256} << 10) * 17 + 3, body.size() - 1}) {
    std::string damaged = body;
    damaged[at] = static_cast<char>(damaged[at] ^ 1);
    auto tree = runtime::artifact_format::artifact_checksum(reinterpret_cast<const uint8_t*>(damaged.data()),
                                                            damaged.size(), 4);
    EXPECT_NE(std::string(reinterpret_cast<const char*>(tree.data()), 32), got) << at;
  }
}

// Artifacts of formats 1 (a flat SHA-256), 2 (no module tensors) and 3
// (4 MiB checksum chunks) still load and run; formats 1 and 2 cannot hold
// dnnl's converted weights.
TEST(Artifact, OlderFormatArtifactsStillLoad) {
  runtime::SessionOptions options;
  options.num_threads = 2;
  options.backends = {"ref"};
  runtime::Session compiled(frontend::load_onnx_from_memory(zoo::build_zoo_model("mlp", 1)), options);
  runtime::Session::PlannedGraph plan = compiled.plan_for_types({ValueType::of(DType::float32, {2, 784})});
  Tensor x = random_tensor({2, 784}, 4);
  for (uint32_t version : {1u, 2u, 3u}) {
    std::string bytes = runtime::serialize_artifact(*plan.graph, plan.modules, version);
    uint32_t written = 0;
    std::memcpy(&written, bytes.data() + 8, 4);
    EXPECT_EQ(written, version);
    EXPECT_EQ(bytes.substr(bytes.size() - 32), documented_checksum(std::string_view(bytes).substr(0, bytes.size() - 32), version));
    runtime::Session restored(runtime::load_artifact_from_memory(bytes), options);
    expect_close(restored.run({x})[0], compiled.run({x})[0], 0, 0);
    std::memcpy(bytes.data() + bytes.size() - 32, sha256(std::string_view(bytes).substr(0, bytes.size() - 32 - 1)).data(), 32);
    EXPECT_NE(error_of([&] { runtime::load_artifact_from_memory(bytes); }).find("checksum mismatch"), std::string::npos);
  }
}

#if GRAFT_HAVE_DNNL
// dnnl stores its weights converted (BatchNormalization folded in, reordered
// to the primitives' layouts) and the originals only it read are left out: a
// restored session never converts a weight, yet one can still be replaced
// whole (and is converted then).
TEST(Artifact, DnnlWeightsAreStoredConverted) {
  ScratchDir dir("dnnl_converted");
  fs::path path = dir.path / "mlp.graft";
  write_file(path, mlp_artifact());
  runtime::RestoredPlan plan = runtime::load_artifact(path.string());
  EXPECT_GT(plan.info.num_converted_only_weights, 0u);
  std::vector<const backend::CompiledModule*> dnnl_modules;
  for (const auto& module : plan.modules)
    if (module && module->type_key() == "dnnl") dnnl_modules.push_back(module.get());
  ASSERT_FALSE(dnnl_modules.empty());
  std::string superseded_name;
  Shape superseded_shape;
  std::function<void(const Graph&)> find = [&](const Graph& graph) {
    for (const auto& node : graph.nodes()) {
      if (node->subgraph) find(*node->subgraph);
      if (superseded_name.empty() && node->schema().name == "Constant" && node->constant_value.is_defined() &&
          node->constant_value.storage()->is_placeholder())
      {
        superseded_name = node->name;
        superseded_shape = node->constant_value.shape();
      }
    }
  };
  find(*plan.graph);
  ASSERT_FALSE(superseded_name.empty());
  runtime::SessionOptions options;
  options.num_threads = 2;
  runtime::Session restored(std::move(plan), options);
  runtime::Session from_onnx(frontend::load_onnx_from_memory(zoo::build_zoo_model("mlp", 1)), options);
  Tensor x = random_tensor({2, 784}, 6);
  expect_close(restored.run({x})[0], from_onnx.run({x})[0], 1e-5, 1e-5);
  for (const backend::CompiledModule* module : dnnl_modules)
    EXPECT_EQ(dnnl_backend::dnnl_module_stats(*module).weight_conversions, 0);
  // A weight kept only converted can still be replaced whole: the module converts the new value.
  Tensor replacement = random_tensor(superseded_shape, 12);
  restored.set_weight(superseded_name, replacement);
  from_onnx.set_weight(superseded_name, replacement);
  expect_close(restored.run({x})[0], from_onnx.run({x})[0], 1e-5, 1e-5);
}
#endif

TEST(Artifact, MissingCpuFeaturesAreNamed) {
  std::string bytes = mlp_artifact();
  uint64_t lacking = ~runtime::host_cpu_features() & 0x1ff;  // a known feature this machine lacks, if any
  uint64_t feature = lacking ? (lacking & (~lacking + 1)) : (uint64_t{1} << 40);
  std::memcpy(bytes.data() + 24, &feature, 8);
  fix_checksum(bytes);
  std::string message = error_of([&] { runtime::load_artifact_from_memory(bytes); });
  EXPECT_NE(message.find("compiled for CPU features this machine lacks: " + runtime::cpu_feature_names(feature)),
            std::string::npos)
      << message;
}

TEST(Artifact, ChecksumMismatchHasItsOwnMessage) {
  std::string bytes = mlp_artifact();
  bytes[200] = static_cast<char>(bytes[200] ^ 1);
  std::string message = error_of([&] { runtime::load_artifact_from_memory(bytes); });
  EXPECT_NE(message.find("checksum mismatch"), std::string::npos) << message;
}

TEST(Artifact, NonGraftFilesAreNamed) {
  ScratchDir dir("non_graft");
  fs::path onnx = dir.path / "model.graft";
  write_file(onnx, zoo::build_zoo_model("mlp", 0));
  std::string message = error_of([&] { runtime::load_artifact(onnx.string()); });
  EXPECT_NE(message.find("not a graft artifact"), std::string::npos) << message;
  // load_model dispatches on the magic and the extension: a .graft file must be an artifact.
  message = error_of([&] { frontend::load_model(onnx.string()); });
  EXPECT_NE(message.find("not a graft artifact"), std::string::npos) << message;
  fs::copy_file(onnx, dir.path / "model.onnx");
  std::unique_ptr<runtime::Session> loaded = frontend::load_model((dir.path / "model.onnx").string());
  runtime::Session& session = *loaded;
  EXPECT_FALSE(session.restored_from_artifact());
  message = error_of([&] { runtime::load_artifact((dir.path / "missing.graft").string()); });
  EXPECT_NE(message.find("cannot open"), std::string::npos) << message;
}

TEST(Artifact, CompileNeedsConcreteShapes) {
  ScratchDir dir("shapes");
  fs::path onnx = dir.path / "mlp.onnx";
  write_file(onnx, zoo::build_zoo_model("mlp", 0));
  runtime::ArtifactCompileOptions options;
  std::string message = error_of([&] { frontend::compile_artifact(onnx.string(), (dir.path / "a.graft").string(), options); });
  EXPECT_NE(message.find("input 'input' has shape"), std::string::npos) << message;
  EXPECT_NE(message.find("give its shape"), std::string::npos) << message;
  options.shape_flag = "--shape";  // as graft compile says it
  message = error_of([&] { frontend::compile_artifact(onnx.string(), (dir.path / "a.graft").string(), options); });
  EXPECT_NE(message.find("give --shape input="), std::string::npos) << message;
  options.input_shapes = {{"nope", {1}}};
  message = error_of([&] { frontend::compile_artifact(onnx.string(), (dir.path / "a.graft").string(), options); });
  EXPECT_NE(message.find("'nope', which is not an input"), std::string::npos) << message;
}
