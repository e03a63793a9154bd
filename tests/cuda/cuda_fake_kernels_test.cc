// The CUDA backend's own kernels, end to end, without a GPU: on the stand-in
// driver (fake_libcuda.cc) with every hand-written source built for the host
// (cuda_host_emulation.h), node kernels plan, upload, launch through
// cuLaunchKernel and copy back exactly as on a GPU, and their results are
// compared with the reference kernels: the MatMul, Gemm, Conv, pooling, Softmax/LayerNorm/
// reduction and data-movement cases the GPU runs (cuda_kernel_cases.h), and
// a model of such nodes through a Session on --device cuda against the CPU.
// Products go to a stand-in cuBLAS (fake_libcublas.cc, host SGEMM), which
// checks the backend's row-/column-major mapping, strides and batches, not
// cuBLAS. Pointwise kernels are the emitter's CUDA source built for the host
// (CudaHostPointwise), recognized by their PTX: a sample of op cases and a
// split model with fused kernels through a Session. Run by the ctest entry cuda_fake_driver; skipped otherwise.
#include <gtest/gtest.h>

#include <cstdlib>
#include <set>
#include <thread>

#include "cuda_host_emulation.h"
#include "cuda_kernel_cases.h"
#include "codegen/op_cases.h"
#include "cuda_test_util.h"
#include "graft/codegen/op_expressions.h"
#include "graft/frontend/load_model.h"
#include "graft/frontend/onnx_import.h"
#include "graft/fusion/fuse_pointwise.h"
#include "graft/passes/pass.h"
#include "graft/runtime/session.h"
#include "graft/zoo/zoo.h"

namespace graft::testing {
namespace {

/// x[2,3,8] -> Transpose(0,2,1) -> Softmax -> Reshape[2,24] -> LayerNorm ->
/// Concat(x flat) -> ReduceMax(axis 1): no pointwise and no product.
std::unique_ptr<ir::Graph> movement_model() {
  auto g = std::make_unique<ir::Graph>();
  g->opset_imports[""] = 20;
  ir::Value x = g->add_input("x", ir::ValueType::of(DType::float32, {2, 3, 8}))->output(0);
  ir::Node* t = g->add_node("Transpose", {x}, 1, "transpose");
  t->attributes.set("perm", std::vector<int64_t>{0, 2, 1});
  ir::Value s = g->add_node("Softmax", {t->output(0)}, 1, "softmax")->output(0);
  ir::Value shape = g->add_constant("shape", Tensor::from_vector<int64_t>({2, 24}, {2}))->output(0);
  ir::Value r = g->add_node("Reshape", {s, shape}, 1, "reshape")->output(0);
  ir::Value scale = g->add_constant("scale", random_tensor({24}, 5))->output(0);
  ir::Value bias = g->add_constant("bias", random_tensor({24}, 6))->output(0);
  ir::Value n = g->add_node("LayerNormalization", {r, scale, bias}, 1, "norm")->output(0);
  ir::Value flat = g->add_node("Reshape", {x, shape}, 1, "flat")->output(0);
  ir::Node* c = g->add_node("Concat", {n, flat}, 1, "concat");
  c->attributes.set("axis", int64_t{1});
  ir::Value axes = g->add_constant("axes", Tensor::from_vector<int64_t>({1}, {1}))->output(0);
  g->add_output(g->add_node("ReduceMax", {c->output(0), axes}, 1, "max")->output(0), "y");
  g->add_output(c->output(0), "all");
  for (const auto& node : g->nodes()) node->opset_version = 20;
  ops::infer_types(*g);
  return g;
}

class CudaFakeKernels : public ::testing::Test {
 protected:
  void SetUp() override {
    GRAFT_REQUIRE_FAKE_LIBCUDA();
    GRAFT_REQUIRE_NVRTC();  // the backend compiles every kernel before the stand-in runs its host build
    if (std::system("c++ --version > /dev/null 2>&1") != 0) GTEST_SKIP() << "no host C++ compiler";
    static std::vector<std::unique_ptr<CudaHostProgram>> programs;  // built once, kept loaded
    static std::string paths;
    if (programs.empty()) {
      for (const auto& [name, source] : cuda::registered_sources()) {
        programs.push_back(std::make_unique<CudaHostProgram>(name.substr(0, name.find(' '))));
        ASSERT_EQ(programs.back()->error(), "") << name;
        paths += (paths.empty() ? "" : ":") + programs.back()->path();
      }
    }
    setenv("GRAFT_FAKE_CUDA_KERNELS", paths.c_str(), 1);
  }
  void TearDown() override {
    unsetenv("GRAFT_FAKE_CUDA_KERNELS");
    unsetenv("GRAFT_FAKE_CUDA_MODULES");
  }
  /// Builds the host versions of the pointwise kernels of `nodes` (pointwise
  /// ops or graft.FusedPointwise, as the backend compiles them) and points
  /// the stand-in at them.
  void prepare_pointwise(const std::vector<const ir::Node*>& nodes) {
    CudaHostPointwise pointwise;
    for (const ir::Node* node : nodes)
      for (const ir::KernelIR& ir : cuda::pointwise_kernel_irs(*node)) pointwise.add(ir, cuda::target_architecture());
    ASSERT_GT(pointwise.size(), 0u);
    pointwise_programs_.push_back(pointwise.build());
    ASSERT_EQ(pointwise_programs_.back()->error(), "");
    setenv("GRAFT_FAKE_CUDA_MODULES", pointwise.modules(*pointwise_programs_.back()).c_str(), 1);
  }
  /// prepare_pointwise for the pointwise kernels the CUDA subgraphs of
  /// `session` will compile: each subgraph fused as the CUDA module fuses
  /// its body, then its fused and single pointwise nodes.
  void prepare_session(const runtime::Session& session) {
    std::vector<const ir::Node*> device_nodes;
    std::vector<std::unique_ptr<ir::Graph>> bodies;
    for (const auto& node : session.graph().nodes()) {
      if (!node->subgraph) continue;
      bodies.push_back(node->subgraph->clone());
      passes::PassContext context;
      passes::run_pipeline(bodies.back(), {"fold-batch-norm", "eliminate-dead-code"}, context);
      fusion::fuse_pointwise(bodies.back());
      for (const auto& inner : bodies.back()->nodes())
        if ((inner->op() == ir::OpId::FusedPointwise || codegen::why_not_fusible(*inner).empty()) &&
            cuda::kernel_support(*inner).empty())
          device_nodes.push_back(inner.get());
    }
    prepare_pointwise(device_nodes);
  }
  std::vector<std::unique_ptr<CudaHostProgram>> pointwise_programs_;
};

TEST_F(CudaFakeKernels, PointwiseKernelsOfTheEmitterMatchTheReference) {
  // A sample of the op cases (every float32 one would take minutes of host
  // compiles): unary, binary with broadcasting, three inputs, comparisons.
  std::set<std::string> ops{"Add", "Sigmoid", "Gelu", "Where", "Less"};
  std::vector<BuiltCase> cases;
  std::vector<const ir::Node*> nodes;
  for (BuiltCase& c : build_op_cases()) {
    if (c.inputs.empty() || c.inputs[0].dtype() != DType::float32) continue;
    const ir::Node& node = compute_node(*c.graph);
    if (!ops.count(node.op_type())) continue;
    nodes.push_back(&node);
    cases.push_back(std::move(c));
  }
  ASSERT_GE(cases.size(), 6u);
  prepare_pointwise(nodes);
  for (const BuiltCase& c : cases) {
    SCOPED_TRACE(c.label);
    expect_cuda_matches_reference(*c.graph, c.inputs, 1e-5, 1e-6);
  }
}

TEST_F(CudaFakeKernels, ASplitModelWithFusedKernelsRunsThroughASessionAndMatchesTheHost) {
  // x[4,64] -> Relu -> Add(W) -> CumSum (no CUDA kernel: the CPU) -> Mul -> Exp -> Mul(x) -> y
  auto build = [](Tensor weight) {
    auto g = std::make_unique<ir::Graph>();
    g->opset_imports[""] = 17;
    ir::Value x = g->add_input("x", ir::ValueType::of(DType::float32, {4, 64}))->output(0);
    ir::Value w = g->add_constant("W", std::move(weight))->output(0);
    ir::Value axis = g->add_constant("axis", Tensor::scalar<int64_t>(1))->output(0);
    ir::Value r = g->add_node("Relu", {x}, 1, "relu")->output(0);
    ir::Value a = g->add_node("Add", {r, w}, 1, "add")->output(0);
    ir::Value c = g->add_node("CumSum", {a, axis}, 1, "cumsum")->output(0);
    ir::Value scale = g->add_constant("scale", Tensor::scalar<float>(-0.05f))->output(0);
    ir::Value e = g->add_node("Exp", {g->add_node("Mul", {c, scale}, 1, "scale")->output(0)}, 1, "exp")->output(0);
    g->add_output(g->add_node("Mul", {e, x}, 1, "mul")->output(0), "y");
    for (const auto& n : g->nodes()) n->opset_version = 17;
    ops::infer_types(*g);
    return g;
  };
  Tensor weight = random_tensor({64}, 3);
  std::vector<Tensor> inputs{random_tensor({4, 64}, 4)};
  std::vector<Tensor> want = run_graph(*build(weight), inputs);
  runtime::SessionOptions options;
  options.device = Device{DeviceType::cuda, 0};
  options.num_threads = 2;
  runtime::Session session(build(weight), options);
  prepare_session(session);
  backend::RunStats stats;
  std::vector<Tensor> got = session.run(inputs, &stats);
  ASSERT_EQ(got.size(), 1u);
  expect_close(got[0], want[0], 1e-5, 1e-6);
  EXPECT_EQ(stats.bytes_to_device, 2u * 4 * 64 * 4);  // x, and CumSum's result
  EXPECT_EQ(stats.bytes_to_host, 2u * 4 * 64 * 4);    // the Add's result, and y
  // A second run reuses the resident weight and the loaded kernels.
  expect_close(session.run(inputs)[0], want[0], 1e-5, 1e-6);
}

TEST_F(CudaFakeKernels, MatMulGemmAndConvMatchTheReference) {
  cuda_cases::matmul();
  cuda_cases::gemm();
  cuda_cases::conv();
}

TEST_F(CudaFakeKernels, GruMatchesTheReference) { cuda_cases::gru(); }

TEST_F(CudaFakeKernels, PoolingMatchesTheReference) { cuda_cases::pooling(); }

TEST_F(CudaFakeKernels, SoftmaxLayerNormAndReductionsMatchTheReference) {
  cuda_cases::softmax_layer_norm_and_reductions();
}

TEST_F(CudaFakeKernels, DataMovementMatchesTheReference) { cuda_cases::data_movement(); }

TEST_F(CudaFakeKernels, AModelRunsWhollyOnTheDeviceAndMatchesTheCpu) {
  // x[2,3,8] -> Transpose(0,2,1) -> Softmax -> Reshape[2,24] -> LayerNorm -> Concat(x flat) -> ReduceMax(axis 1)
  auto build = [] { return movement_model(); };
  std::vector<Tensor> inputs{random_tensor({2, 3, 8}, 7)};
  runtime::SessionOptions cpu_options;
  cpu_options.num_threads = 2;
  runtime::Session cpu(build(), cpu_options);
  runtime::SessionOptions options = cpu_options;
  options.device = Device{DeviceType::cuda, 0};
  runtime::Session device(build(), options);
  std::map<std::string, size_t> per_backend = device.partition_report().nodes_per_backend();
  EXPECT_EQ(per_backend["cuda"], 7u) << device.partition_report().to_text();  // every node
  size_t elsewhere = 0;
  for (const auto& [backend, count] : per_backend) elsewhere += backend == "cuda" ? 0 : count;
  EXPECT_EQ(elsewhere, 0u) << device.partition_report().to_text();
  std::vector<Tensor> want = cpu.run(inputs);
  for (int run = 0; run < 2; ++run) {
    backend::RunStats stats;
    std::vector<Tensor> got = device.run(inputs, &stats);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_FALSE(got[i].on_device());
      expect_close(got[i], want[i], 1e-5, 1e-5);
    }
    EXPECT_EQ(stats.bytes_to_device, 2u * 3 * 8 * 4) << "only the input goes to the device";
    EXPECT_EQ(stats.bytes_to_host, (2u + 2 * 48) * 4) << "only the outputs come back";
  }
}

TEST_F(CudaFakeKernels, TwoSessionsRunAtOnceOnTheirOwnStreams) {
  runtime::SessionOptions options;
  options.device = Device{DeviceType::cuda, 0};
  options.num_threads = 1;
  runtime::Session a(movement_model(), options), b(movement_model(), options);
  std::vector<Tensor> in_a{random_tensor({2, 3, 8}, 30)}, in_b{random_tensor({2, 3, 8}, 31)};
  std::vector<Tensor> want_a = run_graph(*movement_model(), in_a), want_b = run_graph(*movement_model(), in_b);
  for (int round = 0; round < 3; ++round) {
    std::vector<Tensor> got_a, got_b;
    std::thread ta([&] { got_a = a.run(in_a); });
    std::thread tb([&] { got_b = b.run(in_b); });
    ta.join();
    tb.join();
    for (size_t i = 0; i < want_a.size(); ++i) {
      expect_close(got_a[i], want_a[i], 1e-5, 1e-5);
      expect_close(got_b[i], want_b[i], 1e-5, 1e-5);
    }
  }
}

TEST_F(CudaFakeKernels, SmallZooModelsRunWhollyOnTheDeviceAndMatchTheCpu) {
  // The models small enough for host emulation (the stand-in's SGEMM is a
  // plain loop), their inputs made concrete (batch 2) so that the session
  // partitions once and its CUDA subgraphs can be read: every node on the
  // device, outputs within rtol 1e-4 of the CPU's.
  for (const char* name : {"mlp", "gru"}) {
    SCOPED_TRACE(name);
    const std::string bytes = zoo::build_zoo_model(name);
    auto concrete = [&] {
      std::unique_ptr<ir::Graph> g = frontend::load_onnx_from_memory(bytes);
      for (ir::Node* input : g->inputs())
        for (ir::Dim& d : input->output_types[0].dims)
          if (!d.is_known()) d = ir::Dim::known(2);
      ops::infer_types(*g);
      return g;
    };
    runtime::SessionOptions cpu_options;
    cpu_options.num_threads = 2;
    runtime::Session cpu(concrete(), cpu_options);
    runtime::SessionOptions options = cpu_options;
    options.device = Device{DeviceType::cuda, 0};
    runtime::Session device(concrete(), options);
    size_t elsewhere = 0;
    for (const auto& [backend, count] : device.partition_report().nodes_per_backend())
      elsewhere += backend == "cuda" ? 0 : count;
    EXPECT_EQ(elsewhere, 0u) << device.partition_report().to_text();
    std::vector<Tensor> inputs;
    for (const runtime::ValueInfo& info : cpu.inputs()) {
      Shape s;
      for (const ir::Dim& d : info.type.dims) s.push_back(d.value);
      inputs.push_back(random_tensor(s, 20 + inputs.size()));
    }
    prepare_session(device);
    std::vector<Tensor> want = cpu.run(inputs);
    std::vector<Tensor> got = device.run(inputs);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) expect_close(got[i], want[i], 1e-4, 1e-4);
  }
}

TEST_F(CudaFakeKernels, EveryNodeOfTheZooModelsIsPlacedOnTheDevice) {
  // Partitioning only (the stand-in runs no pointwise kernels): every node of
  // the benchmark models is the CUDA backend's, with copies at the ends.
  for (const auto& [name, shape] : std::vector<std::pair<std::string, Shape>>{
           {"resnet50", {1, 3, 224, 224}}, {"bert", {8, 128}}, {"gru", {2, 100, 500}}, {"mobilenet_v2", {1, 3, 224, 224}}}) {
    SCOPED_TRACE(name);
    runtime::SessionOptions options;
    options.device = Device{DeviceType::cuda, 0};
    options.num_threads = 2;
    std::unique_ptr<runtime::Session> session = frontend::load_model_from_memory(zoo::build_zoo_model(name), options);
    ASSERT_EQ(session->inputs().size(), 1u);
    DType dtype = session->inputs()[0].type.dtype;
    partition::PartitionReport report = session->partition_report_for({ir::ValueType::of(dtype, shape)});
    size_t on_device = 0, elsewhere = 0;
    for (const auto& [backend, count] : report.nodes_per_backend()) (backend == "cuda" ? on_device : elsewhere) += count;
    EXPECT_GT(on_device, 0u);
    EXPECT_EQ(elsewhere, 0u) << report.to_text();
  }
}

}  // namespace
}  // namespace graft::testing
