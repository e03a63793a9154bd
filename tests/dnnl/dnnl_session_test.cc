// Session partitions real models onto dnnl through the registered op
// checkers, and gives the reference's results. Built only where the partition
// API exists (tests/CMakeLists.txt).
#include "dnnl_test_util.h"
#include "graft/frontend/onnx_import.h"
#include "graft/compiler/shape_specialized_module.h"
#include "graft/runtime/simulated_load.h"
#include "graft/zoo/zoo.h"

namespace graft::testing {
namespace {

std::vector<Tensor> run_session(const std::string& model, const std::vector<std::string>& backends,
                                const std::vector<Tensor>& inputs) {
  runtime::SessionOptions options;
  options.backends = backends;
  options.num_threads = 2;
  runtime::Session session(frontend::load_onnx_from_memory(model), options);
  return session.run(inputs);
}

TEST(DnnlSession, Resnet18GoesToDnnlWhole) {
  std::string model = zoo::build_zoo_model("resnet18", 1);
  runtime::SessionOptions options;
  options.backends = {"dnnl"};
  options.num_threads = 2;
  runtime::Session session(frontend::load_onnx_from_memory(model), options);
  auto per_backend = session.partition_report().nodes_per_backend();
  EXPECT_EQ(per_backend["ref"], 0u) << session.partition_report().to_text();
  EXPECT_GT(per_backend["dnnl"], 40u);
  std::vector<Tensor> inputs = {random_tensor({1, 3, 224, 224}, 5)};
  std::vector<Tensor> got = session.run(inputs);
  std::vector<Tensor> want = run_session(model, {"ref"}, inputs);
  EXPECT_LE(max_relative_error(got[0], want[0]), 1e-4);
}

// x -> MatMul(w1) -> Relu -> MatMul(w2): dnnl keeps both weights converted.
std::unique_ptr<ir::Graph> two_matmuls(const ir::ValueType& input, const Tensor& w1, const Tensor& w2) {
  auto g = new_graph();
  ir::Value x = g->add_input("x", input)->output(0);
  ir::Value h = g->add_node("MatMul", {x, g->add_constant("w1", w1)->output(0)}, 1, "mm1")->output(0);
  h = g->add_node("Relu", {h}, 1, "relu")->output(0);
  g->add_output(g->add_node("MatMul", {h, g->add_constant("w2", w2)->output(0)}, 1, "mm2")->output(0), "y");
  return g;
}

/// The value of the Constant named `name`, in `g` or the bodies it holds.
const Tensor* find_constant(const ir::Graph& g, const std::string& name) {
  for (const auto& node : g.nodes()) {
    if (node->name == name && node->constant_value.is_defined()) return &node->constant_value;
    if (node->subgraph)
      if (const Tensor* t = find_constant(*node->subgraph, name)) return t;
  }
  return nullptr;
}
const Tensor& constant_named(const ir::Graph& g, const std::string& name) {
  const Tensor* t = find_constant(g, name);
  if (!t) throw std::runtime_error("no constant " + name);
  return *t;
}

// With fixed input shapes a session has one plan, so the originals of the
// weights dnnl keeps converted are released after the first run (placeholders:
// no memory). Results stay right, and set_weight still replaces a weight whole.
TEST(DnnlSession, FixedShapeModelsKeepConvertedWeightsOnly) {
  Tensor w1 = random_tensor({16, 32}, 1), w2 = random_tensor({32, 8}, 2), x = random_tensor({4, 16}, 3);
  runtime::SessionOptions options;
  options.num_threads = 2;
  runtime::Session session(two_matmuls(ir::ValueType::of(DType::float32, {4, 16}), w1.clone(), w2.clone()), options);
  ASSERT_GT(session.partition_report().nodes_per_backend()["dnnl"], 0u);
  std::vector<Tensor> first = session.run({x});
  EXPECT_TRUE(constant_named(session.graph(), "w1").storage()->is_placeholder());
  EXPECT_TRUE(constant_named(session.graph(), "w2").storage()->is_placeholder());
  runtime::SessionOptions reference;
  reference.backends = {"ref"};
  auto ref_run = [&](const Tensor& a, const Tensor& b) {
    return runtime::Session(two_matmuls(ir::ValueType::of(DType::float32, {4, 16}), a, b), reference).run({x})[0];
  };
  EXPECT_LE(max_relative_error(first[0], ref_run(w1, w2)), 1e-5);
  expect_close(session.run({x})[0], first[0], 0, 0);

  Tensor w1_new = random_tensor({16, 32}, 9);
  session.set_weight("w1", w1_new);
  EXPECT_LE(max_relative_error(session.run({x})[0], ref_run(w1_new, w2)), 1e-5);

  // A symbolic dimension allows other plans, which need the originals.
  ir::ValueType symbolic{DType::float32, true, {ir::Dim::symbolic("n"), ir::Dim::known(16)}};
  runtime::Session open_shapes(two_matmuls(symbolic, w1.clone(), w2.clone()), options);
  open_shapes.run({x});
  EXPECT_FALSE(constant_named(open_shapes.graph(), "w1").storage()->is_placeholder());
  Tensor x5 = random_tensor({5, 16}, 4);
  Tensor want = runtime::Session(two_matmuls(symbolic, w1, w2), reference).run({x5})[0];
  EXPECT_LE(max_relative_error(open_shapes.run({x5})[0], want), 1e-5) << "a second plan converts from the originals";
}

TEST(DnnlSession, WeightSetThroughTheSessionReachesTheModule) {
  std::string model = zoo::build_zoo_model("mlp", 1);
  runtime::SessionOptions options;
  options.backends = {"dnnl"};
  options.num_threads = 2;
  runtime::Session session(frontend::load_onnx_from_memory(model), options);
  std::vector<Tensor> inputs = {random_tensor({2, 784}, 5)};
  std::vector<Tensor> before = session.run(inputs);
  session.set_weight("layers.0.weight", random_tensor({512, 784}, 77));
  std::vector<Tensor> after = session.run(inputs);
  EXPECT_GT(max_relative_error(after[0], before[0]), 1e-3);
}

}  // namespace
}  // namespace graft::testing

namespace graft::testing {
namespace {

// Pointwise ops next to dnnl compute stay with dnnl (post-ops); a recurrent
// cell's gate arithmetic on the pieces of a Split goes to `fuse` as one
// kernel. Both partitions give the reference's results.
TEST(DnnlSession, GateArithmeticAfterSplitIsLeftToFusion) {
  auto g = new_graph();
  ir::Value x = g->add_input("x", ir::ValueType::of(DType::float32, {4, 6}))->output(0);
  ir::Value img = g->add_input("img", ir::ValueType::of(DType::float32, {1, 4, 5, 5}))->output(0);
  ir::Node* gemm = g->add_node("Gemm", {x, g->add_constant("w", random_tensor({9, 6}, 3))->output(0)}, 1, "gemm");
  gemm->attributes.set("transB", int64_t{1});
  ir::Node* split = g->add_node("Split", {gemm->output(0)}, 3, "split");
  split->attributes.set("axis", int64_t{1});
  ir::Value z = g->add_node("Sigmoid", {split->output(0)}, 1, "gate_z")->output(0);
  ir::Value r = g->add_node("Mul", {split->output(1), z}, 1, "gate_r")->output(0);
  ir::Value h = g->add_node("Tanh", {split->output(2)}, 1, "gate_h")->output(0);
  g->add_output(g->add_node("Add", {h, r}, 1, "gate_sum")->output(0), "h");
  ir::Node* conv = g->add_node("Conv", {img, g->add_constant("k", random_tensor({4, 4, 3, 3}, 4))->output(0)}, 1, "conv");
  conv->attributes.set("pads", std::vector<int64_t>{1, 1, 1, 1});
  g->add_output(g->add_node("Relu", {conv->output(0)}, 1, "relu")->output(0), "y");

  runtime::SessionOptions options;
  options.backends = {"dnnl", "fuse", "ref"};
  options.num_threads = 2;
  runtime::Session session(g->clone(), options);
  std::map<std::string, std::string> backend_of;
  std::map<std::string, std::string> why_not_dnnl;
  for (const auto& n : session.partition_report().nodes) {
    backend_of[n.name] = n.backend;
    for (const auto& d : n.declined)
      if (d.backend == "dnnl") why_not_dnnl[n.name] = d.detail;
  }
  EXPECT_EQ(backend_of["conv"], "dnnl");
  EXPECT_EQ(backend_of["relu"], "dnnl");
  EXPECT_EQ(backend_of["gemm"], "dnnl");
  for (const char* gate : {"gate_z", "gate_r", "gate_h", "gate_sum"}) {
    EXPECT_NE(backend_of[gate], "dnnl") << gate;
    EXPECT_NE(why_not_dnnl[gate].find("away from dnnl compute"), std::string::npos) << gate << ": " << why_not_dnnl[gate];
  }
  size_t fused = 0;
  for (const auto& node : session.graph().nodes()) fused += node->op_type() == "graft.FusedPointwise";
  EXPECT_EQ(fused, 1u);

  std::vector<Tensor> inputs = {random_tensor({4, 6}, 5), random_tensor({1, 4, 5, 5}, 6)};
  runtime::SessionOptions reference;
  reference.backends = {"ref"};
  reference.fusion = false;
  std::vector<Tensor> want = runtime::Session(g->clone(), reference).run(inputs);
  std::vector<Tensor> got = session.run(inputs);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_LE(max_relative_error(got[i], want[i]), 1e-5) << "output " << i;
}

// A region of data movement alone (Concat, Reshape, Transpose of activations
// that reach dnnl nowhere else) stays off dnnl, reason `filtered`: a module
// would cost its overhead and reorders and gain nothing (raft_small had 194
// such one-node subgraphs). A region with a convolution keeps its movement.
TEST(DnnlSession, RegionsWithoutComputeStayOffDnnl) {
  auto g = new_graph();
  ir::Value a = g->add_input("a", ir::ValueType::of(DType::float32, {1, 4, 5, 5}))->output(0);
  ir::Value b = g->add_input("b", ir::ValueType::of(DType::float32, {1, 4, 5, 5}))->output(0);
  ir::Node* concat = g->add_node("Concat", {a, b}, 1, "concat");
  concat->attributes.set("axis", int64_t{1});
  ir::Node* transpose = g->add_node("Transpose", {concat->output(0)}, 1, "transpose");
  transpose->attributes.set("perm", std::vector<int64_t>{0, 2, 3, 1});
  g->add_output(transpose->output(0), "moved");
  ir::Node* concat2 = g->add_node("Concat", {a, b}, 1, "concat_into_conv");
  concat2->attributes.set("axis", int64_t{1});
  ir::Node* conv =
      g->add_node("Conv", {concat2->output(0), g->add_constant("k", random_tensor({4, 8, 3, 3}, 4))->output(0)}, 1, "conv");
  conv->attributes.set("pads", std::vector<int64_t>{1, 1, 1, 1});
  g->add_output(conv->output(0), "y");

  runtime::SessionOptions options;
  options.backends = {"dnnl", "ref"};
  options.num_threads = 2;
  runtime::Session session(g->clone(), options);
  std::map<std::string, std::string> backend_of;
  std::map<std::string, partition::DeclineKind> why_not_dnnl;
  for (const auto& n : session.partition_report().nodes) {
    backend_of[n.name] = n.backend;
    for (const auto& d : n.declined)
      if (d.backend == "dnnl") why_not_dnnl[n.name] = d.kind;
  }
  EXPECT_EQ(backend_of["conv"], "dnnl");
  EXPECT_EQ(backend_of["concat_into_conv"], "dnnl");
  for (const char* name : {"concat", "transpose"}) {
    EXPECT_EQ(backend_of[name], "ref") << name;
    ASSERT_TRUE(why_not_dnnl.count(name)) << name;
    EXPECT_EQ(why_not_dnnl[name], partition::DeclineKind::filtered) << name;
  }
  std::vector<Tensor> inputs = {random_tensor({1, 4, 5, 5}, 5), random_tensor({1, 4, 5, 5}, 6)};
  runtime::SessionOptions reference;
  reference.backends = {"ref"};
  std::vector<Tensor> want = runtime::Session(g->clone(), reference).run(inputs);
  std::vector<Tensor> got = session.run(inputs);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_LE(max_relative_error(got[i], want[i]), 1e-5) << "output " << i;
}

// A subgraph dnnl accepted when partitioning but cannot compile at plan time
// (here a MatMul whose input shape depends on a value computed at run time,
// as the box head of a detection model does on the count of proposals) keeps
// dnnl: a ShapeSpecializedModule compiles it when it runs, once per input
// shapes, and the plan's report says so. Results match at each shape.
TEST(DnnlSession, SubgraphWithRunTimeShapesCompilesWhenItRuns) {
  auto g = new_graph();
  ir::Value x = g->add_input("x", ir::ValueType::of(DType::float32, {64, 96}))->output(0);
  ir::Value shape = g->add_input("shape", ir::ValueType::of(DType::int64, {2}))->output(0);
  ir::Value r = g->add_node("Reshape", {x, shape}, 1, "reshape")->output(0);
  Tensor w = random_tensor({32, 16}, 7);
  ir::Value y = g->add_node("MatMul", {r, g->add_constant("w", w)->output(0)}, 1, "mm")->output(0);
  g->add_output(y, "y");
  runtime::SessionOptions options;
  options.backends = {"dnnl", "ref"};
  options.num_threads = 2;
  runtime::Session session(std::move(g), options);
  EXPECT_EQ(session.partition_report().nodes_per_backend()["dnnl"], 1u) << session.partition_report().to_text();
  Tensor in = random_tensor({64, 96}, 8);
  // [192, 32] x [32, 16]: 192 FLOPs per weight byte, compiled.
  auto check = [&](int64_t rows, int64_t columns) {
    Tensor dims = Tensor::from_vector<int64_t>({rows, columns}, {2});
    std::vector<Tensor> got = session.run(std::vector<Tensor>{in, dims});
    ASSERT_EQ(got[0].shape(), (Shape{rows, 16}));
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < 16; ++j) {
        double want = 0;
        for (int64_t k = 0; k < 32; ++k) want += in.data<float>()[i * 32 + k] * w.data<float>()[k * 16 + j];
        EXPECT_NEAR(got[0].data<float>()[i * 16 + j], want, 1e-4) << rows << " rows";
      }
  };
  check(192, 32);
  check(192, 32);
  runtime::Session::PlannedGraph plan = session.plan_for_types(
      {ir::ValueType::of(DType::float32, {64, 96}), ir::ValueType::of(DType::int64, {2})});
  const compiler::ShapeSpecializedModule* module = nullptr;
  for (const auto& node : plan.graph->nodes())
    if (node->subgraph) {
      EXPECT_EQ(node->backend, "dnnl") << node->describe();
      module = dynamic_cast<const compiler::ShapeSpecializedModule*>(plan.modules[node->index()].get());
    }
  ASSERT_NE(module, nullptr) << "the subgraph should have a ShapeSpecializedModule";
  EXPECT_EQ(module->num_compiles(), 1u) << "a second run at the same shapes compiles nothing";
  EXPECT_EQ(module->num_reference_runs(), 0u);
  const int64_t before = dnnl_backend::dnnl_compile_count();
  check(192, 32);
  EXPECT_EQ(dnnl_backend::dnnl_compile_count(), before);
  // A shape that does not fit the MatMul (96 columns against 32 rows of w) is
  // still the model's error.
  EXPECT_THROW(session.run(std::vector<Tensor>{in, Tensor::from_vector<int64_t>({64, 96}, {2})}), Error);
  ASSERT_EQ(session.compile_fallbacks().size(), 1u);
  EXPECT_TRUE(session.compile_fallbacks()[0].compiled_when_run);
}

// A subgraph without a product or convolution that dnnl cannot compile at
// plan time (shapes known only when it runs) runs on the reference kernels:
// compiling it again for every shape would cost more than it saves.
TEST(DnnlSession, SubgraphWithRunTimeShapesAndNoProductFallsBackToRef) {
  auto g = new_graph();
  ir::Value x = g->add_input("x", ir::ValueType::of(DType::float32, {2, 6}))->output(0);
  ir::Value shape = g->add_input("shape", ir::ValueType::of(DType::int64, {4}))->output(0);
  ir::Value r = g->add_node("Reshape", {x, shape}, 1, "reshape")->output(0);
  ir::Node* pool = g->add_node("MaxPool", {r}, 1, "pool");
  pool->attributes.set("kernel_shape", std::vector<int64_t>{1, 2});
  pool->attributes.set("strides", std::vector<int64_t>{1, 2});
  g->add_output(pool->output(0), "y");
  runtime::SessionOptions options;
  options.backends = {"dnnl", "ref"};
  options.num_threads = 2;
  runtime::Session session(std::move(g), options);
  ASSERT_EQ(session.partition_report().nodes_per_backend()["dnnl"], 1u) << session.partition_report().to_text();
  Tensor in = random_tensor({2, 6}, 8);
  std::vector<Tensor> got = session.run(std::vector<Tensor>{in, Tensor::from_vector<int64_t>({1, 1, 3, 4}, {4})});
  ASSERT_EQ(got[0].shape(), (Shape{1, 1, 3, 2}));
  for (int64_t i = 0; i < 6; ++i)
    EXPECT_EQ(got[0].data<float>()[i], std::max(in.data<float>()[2 * i], in.data<float>()[2 * i + 1]));
  runtime::Session::PlannedGraph plan = session.plan_for_types(
      {ir::ValueType::of(DType::float32, {2, 6}), ir::ValueType::of(DType::int64, {4})});
  for (const auto& node : plan.graph->nodes())
    if (node->subgraph) {
      EXPECT_EQ(node->backend, "ref") << node->describe();
    }
  ASSERT_EQ(session.compile_fallbacks().size(), 1u);
  EXPECT_FALSE(session.compile_fallbacks()[0].compiled_when_run);
}

// A dynamic batch (`x.view(x.size(0), -1)` in the model): the shape
// computation folds once a run gives the batch, so the MatMul after the
// Reshape compiles on dnnl instead of falling back to the reference kernels.
TEST(DnnlSession, ShapeComputationsOfADynamicBatchFoldWhenPlanning) {
  auto g = new_graph();
  ir::ValueType x_type{DType::float32, true, {ir::Dim::symbolic("batch"), ir::Dim::known(4), ir::Dim::known(3)}};
  ir::Value x = g->add_input("x", x_type)->output(0);
  ir::Value relu = g->add_node("Relu", {x}, 1, "relu")->output(0);
  ir::Value shape = g->add_node("Shape", {relu}, 1, "shape")->output(0);
  ir::Value zero = g->add_constant("zero", Tensor::scalar<int64_t>(0))->output(0);
  ir::Node* gather = g->add_node("Gather", {shape, zero}, 1, "batch");
  ir::Value axes = g->add_constant("axes", Tensor::from_vector<int64_t>({0}, {1}))->output(0);
  ir::Value batch = g->add_node("Unsqueeze", {gather->output(0), axes}, 1, "unsqueeze")->output(0);
  ir::Value minus_one = g->add_constant("minus_one", Tensor::from_vector<int64_t>({-1}, {1}))->output(0);
  ir::Node* concat = g->add_node("Concat", {batch, minus_one}, 1, "concat");
  concat->attributes.set("axis", int64_t{0});
  ir::Value flat = g->add_node("Reshape", {relu, concat->output(0)}, 1, "flatten")->output(0);
  Tensor w = random_tensor({12, 5}, 9);
  ir::Value y = g->add_node("MatMul", {flat, g->add_constant("w", w)->output(0)}, 1, "mm")->output(0);
  g->add_output(y, "y");
  std::unique_ptr<ir::Graph> reference_graph = g->clone();
  runtime::SessionOptions options;
  options.backends = {"dnnl", "ref"};
  options.num_threads = 2;
  runtime::Session session(std::move(g), options);
  Tensor in = random_tensor({3, 4, 3}, 10);
  std::vector<Tensor> got = session.run(std::vector<Tensor>{in});
  runtime::SessionOptions ref_options;
  ref_options.backends = {"ref"};
  runtime::Session reference(std::move(reference_graph), ref_options);
  EXPECT_LE(max_relative_error(got[0], reference.run(std::vector<Tensor>{in})[0]), 1e-5);
  runtime::Session::PlannedGraph plan = session.plan_for_types({ir::ValueType::of(DType::float32, {3, 4, 3})});
  size_t on_dnnl = 0;
  for (const auto& node : plan.graph->nodes()) {
    if (node->subgraph) {
      EXPECT_EQ(node->backend, "dnnl") << node->describe();
    }
    on_dnnl += node->backend == "dnnl";
    EXPECT_NE(node->op_type(), "Shape");
  }
  EXPECT_GE(on_dnnl, 1u);
}

// Symbolic height and width (an export with dynamic spatial axes): two
// convolutions' outputs of unknown size cannot be sized as a dnnl binary at
// load, so the residual Add stays on ref there; each plan partitions again
// with its concrete shapes and puts the whole graph on dnnl.
TEST(DnnlSession, SymbolicInputDimensionsArePartitionedAgainPerPlan) {
  auto g = new_graph();
  ir::ValueType x_type{DType::float32, true,
                       {ir::Dim::known(1), ir::Dim::known(4), ir::Dim::symbolic("H"), ir::Dim::symbolic("W")}};
  ir::Value x = g->add_input("x", x_type)->output(0);
  auto conv = [&](ir::Value in, const char* name, uint64_t seed) {
    ir::Value w = g->add_constant(std::string(name) + "_w", random_tensor({4, 4, 3, 3}, seed))->output(0);
    ir::Node* c = g->add_node("Conv", {in, w}, 1, name);
    c->attributes.set("pads", std::vector<int64_t>{1, 1, 1, 1});
    return c->output(0);
  };
  ir::Value a = conv(x, "conv_a", 21);
  ir::Value b = conv(a, "conv_b", 22);
  g->add_output(g->add_node("Add", {a, b}, 1, "residual")->output(0), "y");
  std::unique_ptr<ir::Graph> reference_graph = g->clone();
  runtime::SessionOptions options;
  options.backends = {"dnnl", "ref"};
  options.num_threads = 2;
  options.fusion = false;
  runtime::Session session(std::move(g), options);
  ASSERT_TRUE(session.partitions_per_plan());
  EXPECT_GT(session.partition_report().nodes_per_backend()["ref"], 0u)
      << "the load-time partition was expected to leave the Add on ref: " << session.partition_report().to_text();

  runtime::SessionOptions ref_options;
  ref_options.backends = {"ref"};
  runtime::Session reference(std::move(reference_graph), ref_options);
  for (int64_t size : {8, 13}) {
    Tensor in = random_tensor({1, 4, size, size}, static_cast<uint64_t>(30 + size));
    std::vector<Tensor> got = session.run(std::vector<Tensor>{in});
    EXPECT_LE(max_relative_error(got[0], reference.run(std::vector<Tensor>{in})[0]), 1e-4);
    ir::ValueType type = ir::ValueType::of(DType::float32, {1, 4, size, size});
    partition::PartitionReport report = session.partition_report_for({type});
    EXPECT_EQ(report.nodes_per_backend()["ref"], 0u) << report.to_text();
    EXPECT_EQ(report.nodes_per_backend()["dnnl"], 3u) << report.to_text();
    runtime::Session::PlannedGraph plan = session.plan_for_types({type});
    for (const auto& node : plan.graph->nodes()) EXPECT_NE(node->backend, "ref") << node->describe();
  }
  EXPECT_EQ(session.num_plans(), 2u);
  EXPECT_TRUE(session.compile_fallbacks().empty());

  // A weight set through the session reaches the plans that partitioned again.
  Tensor w = random_tensor({4, 4, 3, 3}, 40);
  session.set_weight("conv_a_w", w);
  reference.set_weight("conv_a_w", w);
  Tensor in = random_tensor({1, 4, 8, 8}, 41);
  EXPECT_LE(max_relative_error(session.run(std::vector<Tensor>{in})[0], reference.run(std::vector<Tensor>{in})[0]),
            1e-4);
}

}  // namespace
}  // namespace graft::testing

namespace graft::testing {
namespace {

// A quantization-aware export (QDQ around each convolution): after
// lower-quantize-dequantize the fake quantization is Div, Round, Clip, Mul,
// which dnnl attaches to the convolution as post-ops (eltwise_linear, _round,
// _clip): one subgraph, where QuantizeLinear and DequantizeLinear ran on the
// reference kernels between two dnnl subgraphs per layer (quantized
// mobilenet_v2: 22 -> 3.4 ms). oneDNN divides by a scale as a product with
// its reciprocal: a value within one float step of a rounding boundary may
// land one quantization step away from the reference kernels' value.
TEST(DnnlSession, FakeQuantizedConvolutionsAreOneSubgraph) {
  auto g = new_graph();
  ir::Value x = g->add_input("x", ir::ValueType::of(DType::float32, {1, 8, 12, 12}))->output(0);
  const float scale = 0.02f;
  auto fake_quantize = [&](ir::Value v, const std::string& name) {
    ir::Value s = g->add_constant(name + ".s", Tensor::scalar<float>(scale))->output(0);
    ir::Value z = g->add_constant(name + ".z", Tensor::scalar<uint8_t>(100))->output(0);
    ir::Value q = g->add_node("QuantizeLinear", {v, s, z}, 1, name + ".q")->output(0);
    return g->add_node("DequantizeLinear", {q, s, z}, 1, name + ".dq")->output(0);
  };
  ir::Value h = fake_quantize(x, "in");
  ir::Node* conv = g->add_node("Conv", {h, g->add_constant("w", random_tensor({8, 8, 3, 3}, 4))->output(0)}, 1, "conv");
  conv->attributes.set("pads", std::vector<int64_t>{1, 1, 1, 1});
  ir::Value y = fake_quantize(g->add_node("Relu", {conv->output(0)}, 1, "relu")->output(0), "out");
  g->add_output(y, "y");

  runtime::SessionOptions options;
  options.backends = {"dnnl", "ref"};
  options.num_threads = 2;
  runtime::Session session(g->clone(), options);
  auto counts = session.partition_report().nodes_per_backend();
  EXPECT_EQ(counts["ref"], 0u) << session.partition_report().to_text();
  size_t subgraphs = 0;
  for (const auto& node : session.graph().nodes()) subgraphs += node->op_type() == "graft.Subgraph";
  EXPECT_EQ(subgraphs, 1u) << session.partition_report().to_text();

  std::vector<Tensor> inputs = {random_tensor({1, 8, 12, 12}, 5)};
  runtime::SessionOptions reference;
  reference.backends = {"ref"};
  reference.fusion = false;
  Tensor want = runtime::Session(g->clone(), reference).run(inputs)[0];
  Tensor got = session.run(inputs)[0];
  ASSERT_EQ(got.shape(), want.shape());
  int64_t differing = 0;
  for (int64_t i = 0; i < got.numel(); ++i) {
    const float d = std::abs(got.data<float>()[i] - want.data<float>()[i]);
    ASSERT_LE(d, scale * 1.001f) << i << ": " << got.data<float>()[i] << " vs " << want.data<float>()[i];
    differing += d > 0;
  }
  EXPECT_LE(differing, got.numel() / 100) << "more than 1% of the values a quantization step away";
}

}  // namespace
}  // namespace graft::testing

namespace graft::testing {
namespace {

TEST(DnnlSession, WithACoreTakenByAnotherProcessRunsOnOneThreadWithPrimitivesMadeForIt) {
  std::string model = zoo::build_zoo_model("resnet18", 1);
  std::vector<Tensor> inputs = {random_tensor({1, 3, 224, 224}, 7)};
  runtime::SessionOptions quiet;
  quiet.backends = {"dnnl"};
  quiet.num_threads = 2;
  quiet.adapt_threads = true;
  quiet.core_availability = runtime::simulated_load(2, 0.1);
  runtime::SessionOptions loaded = quiet;
  loaded.core_availability = runtime::simulated_load(2, 1.0);
  runtime::Session quiet_session(frontend::load_onnx_from_memory(model), quiet);
  runtime::Session loaded_session(frontend::load_onnx_from_memory(model), loaded);
  std::vector<Tensor> want;
  // Each run's end decides; the second contended decision in a row reduces.
  for (int run = 0; run < 4; ++run) {
    backend::RunStats quiet_stats, loaded_stats;
    want = quiet_session.run(inputs, &quiet_stats);
    std::vector<Tensor> got = loaded_session.run(inputs, &loaded_stats);
    EXPECT_EQ(quiet_stats.num_threads, 2) << "run " << run;
    EXPECT_EQ(loaded_stats.num_threads, run < 2 ? 2 : 1) << "run " << run;
    EXPECT_LE(max_relative_error(got[0], want[0]), 1e-5) << "run " << run;
  }
  int recreated = 0, counts = 0;
  runtime::Session::PlannedGraph plan = loaded_session.plan_for_types({ir::ValueType::of(DType::float32, {1, 3, 224, 224})});
  for (const auto& module : plan.modules) {
    if (!module || module->type_key() != "dnnl") continue;
    dnnl_backend::DnnlModuleStats stats = dnnl_backend::dnnl_module_stats(*module);
    EXPECT_EQ(stats.built_threads, 2);
    ASSERT_EQ(stats.fewer_thread_counts, std::vector<int>{1});
    recreated += stats.recreated_primitives.at(0);
    ++counts;
  }
  EXPECT_GT(counts, 0);
  EXPECT_GT(recreated, 10) << "the convolutions were not made again for one thread";
}

TEST(DnnlSession, AdaptingToLoadCanBeTurnedOff) {
  std::string model = zoo::build_zoo_model("resnet18", 1);
  runtime::SessionOptions options;
  options.backends = {"dnnl"};
  options.num_threads = 2;
  options.adapt_threads = false;
  options.core_availability = runtime::simulated_load(2, 1.5);
  runtime::Session session(frontend::load_onnx_from_memory(model), options);
  for (int run = 0; run < 3; ++run) {
    backend::RunStats stats;
    session.run({random_tensor({1, 3, 224, 224}, 7)}, &stats);
    EXPECT_EQ(stats.num_threads, 2);
  }
}

}  // namespace
}  // namespace graft::testing
