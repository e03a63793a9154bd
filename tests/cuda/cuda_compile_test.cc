// What the CUDA backend compiles, compiled here through NVRTC (it needs no
// GPU, so this runs wherever the CUDA toolkit is; skipped with a message
// where NVRTC is not): every hand-written source of the backend with every
// kernel its node kernels look up, the pointwise kernel of every float32 op
// case of the shared op case list (tests/codegen/op_cases.h) as the backend
// lowers it, and the fused bodies of a test graph and of zoo models. Also the
// reasons the support checks give for what the backend does not take.
#include <gtest/gtest.h>

#include <chrono>
#include <set>

#include "codegen/op_cases.h"
#include "cuda_test_util.h"
#include "graft/codegen/compile_cache.h"
#include "graft/codegen/cuda_emitter.h"
#include "graft/frontend/onnx_import.h"
#include "graft/fusion/fuse_pointwise.h"
#include "graft/ir/kernel_ir.h"
#include "graft/zoo/zoo.h"

namespace graft::testing {
namespace {

constexpr const char* kArchitecture = "compute_75";

TEST(CudaSources, EveryHandWrittenSourceCompilesThroughNvrtcWithEveryKernelItLaunches) {
  GRAFT_REQUIRE_NVRTC();
  std::vector<std::pair<std::string, const char*>> sources = cuda::registered_sources();
  ASSERT_GE(sources.size(), 4u) << "the strided-copy, gather, fill and nn sources";
  std::string all_ptx;
  for (const auto& [name, source] : sources) {
    SCOPED_TRACE(name);
    std::shared_ptr<const std::string> ptx;
    ASSERT_NO_THROW(ptx = cuda::program_ptx(source, kArchitecture));
    EXPECT_NE(ptx->find(".entry"), std::string::npos);
    // Compiled once per process: the same source gives the same PTX object.
    EXPECT_EQ(cuda::program_ptx(source, kArchitecture).get(), ptx.get());
    all_ptx += *ptx;
  }
  // Every function name a node kernel looks up (CudaFunction) is an entry.
  for (const char* entry :
       {"graft_fill_matrix", "graft_strided_copy_1", "graft_strided_copy_2", "graft_strided_copy_4",
        "graft_strided_copy_8", "graft_gather_1_i32", "graft_gather_8_i32", "graft_gather_4_i64",
        "graft_gather_8_i64", "graft_softmax_rows", "graft_softmax_strided", "graft_layer_norm", "graft_reduce",
        "graft_global_pool", "graft_pool2d", "graft_im2col", "graft_add_channel_bias", "graft_batch_norm", "graft_gru_step_lbr", "graft_gru_step_zr",
        "graft_gru_step_n"})
    EXPECT_NE(all_ptx.find(std::string(".entry ") + entry + "("), std::string::npos) << entry;
}

TEST(CudaSources, ABrokenSourceIsAnErrorWithNvrtcsLog) {
  GRAFT_REQUIRE_NVRTC();
  static const char* const broken = GRAFT_CUDA_PRELUDE "extern \"C\" __global__ void k(float* y) { y[0] = nope; }\n";
  try {
    cuda::program_ptx(broken, kArchitecture);
    ADD_FAILURE() << "a broken source compiled";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("nope"), std::string::npos) << e.what();
  }
}

/// Compiles every kernel IR of pointwise node `node` as the backend does
/// (the compile cache's CUDA PTX); returns how many.
size_t compile_pointwise(const ir::Node& node) {
  EXPECT_EQ(cuda::kernel_support(node), "") << node.describe();
  std::vector<ir::KernelIR> irs = cuda::pointwise_kernel_irs(node);
  for (const ir::KernelIR& ir : irs) {
    std::shared_ptr<const std::string> ptx = codegen::CompileCache::global().cuda_ptx(ir, kArchitecture);
    EXPECT_NE(ptx->find(".entry graft_kernel"), std::string::npos) << node.describe();
  }
  return irs.size();
}

TEST(CudaPointwise, EveryOpCaseCompilesThroughTheBackendsLowering) {
  GRAFT_REQUIRE_NVRTC();
  auto start = std::chrono::steady_clock::now();
  size_t kernels = 0;
  std::set<std::string> ops;
  // float32 cases, plain and broadcast (every dtype's kernel is compiled by
  // the emitter's own tests, tests/codegen/cuda_test.cc; this is the
  // backend's lowering of the node and its output groups).
  for (const BuiltCase& c : build_op_cases()) {
    if (c.inputs.empty() || c.inputs[0].dtype() != DType::float32) continue;
    SCOPED_TRACE(c.label);
    const ir::Node& node = compute_node(*c.graph);
    kernels += compile_pointwise(node);
    ops.insert(node.op_type());
  }
  EXPECT_GT(ops.size(), 45u);
  EXPECT_GT(kernels, 60u);
  std::cout << kernels << " pointwise kernels of " << ops.size() << " ops compiled in "
            << std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() << " s\n";
}

/// Sets every graph input's unknown dimensions to `extent` and infers types.
void make_concrete(ir::Graph& graph, int64_t extent) {
  for (ir::Node* input : graph.inputs()) {
    ir::ValueType& type = input->output_types[0];
    for (ir::Dim& d : type.dims)
      if (!d.is_known()) d = ir::Dim::known(extent);
  }
  ops::infer_types(graph);
}

size_t compile_fused_nodes(ir::Graph& graph) {
  size_t fused = 0;
  for (const auto& node : graph.nodes()) {
    if (node->op() != ir::OpId::FusedPointwise) continue;
    SCOPED_TRACE(node->describe());
    compile_pointwise(*node);
    ++fused;
  }
  return fused;
}

TEST(CudaPointwise, FusedBodiesCompileIncludingOutputsOfAnotherIterationSpace) {
  GRAFT_REQUIRE_NVRTC();
  // y = Exp(Relu(x) + w) * x over [4, 64], and s = Sigmoid(w) * 2 over [64]
  // from the same chain's operand: one body, two iteration spaces.
  auto g = std::make_unique<ir::Graph>();
  g->opset_imports[""] = 17;
  ir::Value x = g->add_input("x", ir::ValueType::of(DType::float32, {4, 64}))->output(0);
  ir::Value w = g->add_input("w", ir::ValueType::of(DType::float32, {64}))->output(0);
  ir::Value r = g->add_node("Relu", {x}, 1, "relu")->output(0);
  ir::Value a = g->add_node("Add", {r, w}, 1, "add")->output(0);
  ir::Value e = g->add_node("Exp", {a}, 1, "exp")->output(0);
  ir::Value y = g->add_node("Mul", {e, x}, 1, "mul")->output(0);
  ir::Value s = g->add_node("Sigmoid", {w}, 1, "sigmoid")->output(0);
  ir::Value s2 = g->add_node("Add", {s, s}, 1, "twice")->output(0);
  g->add_output(y, "y");
  g->add_output(s2, "s");
  for (const auto& n : g->nodes()) n->opset_version = 17;
  ops::infer_types(*g);
  fusion::fuse_pointwise(g);
  ops::infer_types(*g);
  EXPECT_GE(compile_fused_nodes(*g), 1u);
}

TEST(CudaPointwise, FusedBodiesOfZooModelsCompile) {
  GRAFT_REQUIRE_NVRTC();
  for (const char* name : {"bert", "resnet18"}) {
    SCOPED_TRACE(name);
    std::unique_ptr<ir::Graph> g = frontend::load_onnx_from_memory(zoo::build_zoo_model(name, 1));
    make_concrete(*g, 2);
    fusion::fuse_pointwise(g);
    ops::infer_types(*g);
    EXPECT_GT(compile_fused_nodes(*g), 0u);
  }
}

TEST(CudaSupport, NodesTheBackendDoesNotTakeAreRefusedWithAReason) {
  GRAFT_REQUIRE_NVRTC();
  {
    CudaOneNode c = cuda_one_node("MatMul", {{4, 8}, {8, 3}}, {}, 1, {DType::float64, DType::float64});
    EXPECT_NE(cuda::kernel_support(*c.node).find("float32 only"), std::string::npos);
  }
  {
    CudaOneNode c = cuda_one_node("Conv", {{1, 2, 5, 5, 5}, {3, 2, 3, 3, 3}});
    EXPECT_NE(cuda::kernel_support(*c.node).find("not a 2-D convolution"), std::string::npos);
  }
  {
    CudaOneNode c = cuda_one_node("ReduceSum", {{2, 3, 4}}, {{"axes", std::vector<int64_t>{0, 2}}});
    c.node->opset_version = 11;
    EXPECT_NE(cuda::kernel_support(*c.node).find("not consecutive"), std::string::npos);
  }
  {
    CudaOneNode c = cuda_one_node("Einsum", {{2, 3}, {3, 4}}, {{"equation", std::string("ij,jk->ik")}});
    EXPECT_EQ(cuda::kernel_support(*c.node), "no CUDA kernel for Einsum");
  }
  // And what it does take.
  std::vector<CudaOneNode> taken;
  taken.push_back(cuda_one_node("MatMul", {{2, 4, 8}, {8, 3}}));
  taken.push_back(cuda_one_node("Softmax", {{2, 5}}));
  taken.push_back(cuda_one_node("Transpose", {{2, 3, 4}}, {{"perm", std::vector<int64_t>{2, 0, 1}}}));
  taken.push_back(cuda_one_node("Conv", {{1, 4, 8, 8}, {6, 2, 3, 3}}, {{"group", int64_t{2}}}));
  taken.push_back(cuda_one_node("LayerNormalization", {{2, 8}, {8}, {8}}));
  taken.push_back(cuda_one_node("MaxPool", {{1, 2, 6, 6}}, {{"kernel_shape", std::vector<int64_t>{2, 2}}}));
  taken.push_back(cuda_one_node("GlobalAveragePool", {{1, 2, 6, 6}}));
  for (const CudaOneNode& c : taken)
    EXPECT_EQ(cuda::kernel_support(*c.node), "") << c.node->describe();
}

}  // namespace
}  // namespace graft::testing
