// End to end: zoo models with pointwise fusion on (fused kernels through the
// fuse backend) and off give the same outputs within rtol 1e-4.
#include <gtest/gtest.h>

#include "codegen_test_util.h"
#include "graft/codegen/compile_cache.h"
#include "graft/frontend/onnx_import.h"
#include "graft/zoo/zoo.h"

namespace graft::codegen {
namespace {

/// Random inputs for a session's inputs; unknown dimensions become `extent`.
std::vector<Tensor> inputs_for(const runtime::Session& session, int64_t extent) {
  std::vector<Tensor> inputs;
  uint64_t seed = 5;
  for (const runtime::ValueInfo& info : session.inputs()) {
    Shape shape;
    for (const ir::Dim& d : info.type.dims) shape.push_back(d.is_known() ? d.value : extent);
    double hi = info.type.dtype == DType::int64 ? 100 : 1;
    inputs.push_back(graft::testing::random_of(info.type.dtype, shape, seed++, info.type.dtype == DType::int64 ? 0 : -1, hi));
  }
  return inputs;
}

size_t count_fused(const ir::Graph& graph) {
  size_t n = 0;
  for (const auto& node : graph.nodes()) n += node->op_type() == "graft.FusedPointwise";
  return n;
}

TEST(ZooFusion, FusedModelsMatchUnfusedRuns) {
  // BERT (4 layers): its GELU, residual and scaling chains are fused. Only the
  // ref backend, so that no backend (dnnl) claims the pointwise ops first.
  for (const char* name : {"bert"}) {
    std::string bytes = zoo::build_zoo_model(name, 1);
    runtime::SessionOptions on, off;
    on.num_threads = off.num_threads = 2;
    on.fusion = true;
    off.fusion = false;
    on.backends = off.backends = {"ref"};
    runtime::Session fused(frontend::load_onnx_from_memory(bytes), on);
    runtime::Session plain(frontend::load_onnx_from_memory(bytes), off);
    EXPECT_EQ(count_fused(plain.graph()), 0u);
    EXPECT_GT(count_fused(fused.graph()), 0u) << name;
    std::vector<Tensor> inputs = inputs_for(plain, std::string(name) == "bert" ? 1 : 3);
    fused.run(inputs);  // interprets the fused kernels while they compile
    CompileCache::global().wait_for_background_compiles();
    std::vector<Tensor> got = fused.run(inputs);
    std::vector<Tensor> want = plain.run(inputs);
    ASSERT_EQ(got.size(), want.size());
    for (size_t k = 0; k < got.size(); ++k)
      EXPECT_TRUE(graft::testing::close_enough(got[k], want[k], 1e-4, 1e-5)) << name << " output " << k;
  }
}

}  // namespace
}  // namespace graft::codegen
