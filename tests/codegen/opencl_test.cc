// The OpenCL emitter: every op case, float32 random DAGs and random DAGs over
// every kernel dtype, built by the OpenCL device (PoCL on the CPU where no
// GPU driver is installed) and run against the reference kernels. Skips,
// with the reason, where no OpenCL device with double precision is found.
#include <gtest/gtest.h>

#include "graft/codegen/compile_cache.h"
#include "graft/codegen/interpreter.h"
#include "graft/codegen/opencl_emitter.h"
#include "graft/runtime/buffer_pool.h"
#include "op_cases.h"
#include "random_dag.h"
#include "typed_random_dag.h"

namespace graft::codegen {
namespace {

using graft::testing::close_enough;

#define SKIP_WITHOUT_OPENCL()                                                             \
  do {                                                                                    \
    if (std::string why = opencl_unavailable_reason(); !why.empty()) GTEST_SKIP() << why; \
  } while (0)

TEST(OpenClEmitter, EveryOpCaseMatchesTheReference) {
  SKIP_WITHOUT_OPENCL();
  std::printf("OpenCL device: %s\n", opencl_device_description().c_str());
  std::vector<graft::testing::BuiltCase> cases = graft::testing::build_op_cases();
  std::vector<KernelIR> irs;
  for (const auto& c : cases) irs.push_back(lower_body(*c.graph).ir);
  std::vector<std::unique_ptr<OpenClKernel>> kernels = OpenClKernel::build_all(irs);  // one program
  ASSERT_EQ(kernels.size(), cases.size());
  for (size_t i = 0; i < cases.size(); ++i) {
    const graft::testing::BuiltCase& c = cases[i];
    std::vector<Tensor> got = kernels[i]->run(c.inputs);
    std::vector<Tensor> want = graft::testing::run_reference(*c.graph, c.inputs);
    ASSERT_EQ(got.size(), want.size());
    DType t = want[0].dtype();
    double rtol = t == DType::float32 ? 1e-5 : t == DType::float64 ? 1e-12 : 0;
    for (size_t k = 0; k < got.size(); ++k) EXPECT_TRUE(close_enough(got[k], want[k], rtol, rtol * 0.1)) << c.label;
  }
}

TEST(OpenClEmitter, RandomDagsMatchTheReference) {
  SKIP_WITHOUT_OPENCL();
  // 80 float32 DAGs and 80 over every dtype, as two programs.
  std::vector<graft::testing::RandomDag> dags;
  std::vector<graft::testing::TypedDag> typed;
  std::vector<KernelIR> irs, typed_irs;
  for (uint64_t seed = 40000; seed < 40080; ++seed) {
    dags.push_back(graft::testing::make_random_dag(seed, false));
    irs.push_back(lower_body(*dags.back().graph).ir);
    typed.push_back(graft::testing::make_typed_dag(seed));
    typed_irs.push_back(lower_body(*typed.back().graph).ir);
  }
  std::vector<std::unique_ptr<OpenClKernel>> kernels = OpenClKernel::build_all(irs);
  for (size_t i = 0; i < dags.size(); ++i) {
    std::vector<Tensor> got = kernels[i]->run(dags[i].inputs);
    std::vector<Tensor> want = graft::testing::run_reference(*dags[i].graph, dags[i].inputs);
    ASSERT_EQ(got.size(), want.size());
    for (size_t k = 0; k < got.size(); ++k)
      ASSERT_TRUE(close_enough(got[k], want[k], 1e-5, 1e-6)) << "dag " << i << "\n" << to_string(irs[i]);
  }
  std::vector<std::unique_ptr<OpenClKernel>> typed_kernels = OpenClKernel::build_all(typed_irs);
  for (size_t i = 0; i < typed.size(); ++i) {
    std::vector<Tensor> got = typed_kernels[i]->run(typed[i].inputs);
    std::vector<Tensor> want = graft::testing::run_reference(*typed[i].graph, typed[i].inputs);
    ASSERT_EQ(got.size(), want.size());
    for (size_t k = 0; k < got.size(); ++k)
      ASSERT_TRUE(close_enough(got[k], want[k], graft::testing::typed_dag_rtol(want[k].dtype(), typed_irs[i]),
                               graft::testing::typed_dag_atol(want[k].dtype(), typed_irs[i])))
          << "typed dag " << i << " output " << k << "\n"
          << to_string(typed_irs[i]);
  }
}

TEST(OpenClEmitter, OneKernelServesEveryShapeAndRefusesWrongInputs) {
  SKIP_WITHOUT_OPENCL();
  ir::Graph g;
  g.opset_imports[""] = 17;
  ir::Value x = g.add_input("x", ir::ValueType::of(DType::float32, {3}))->output(0);
  ir::Value b = g.add_input("b", ir::ValueType::of(DType::float32, {1}))->output(0);
  g.add_output(g.add_node("Tanh", {g.add_node("Add", {x, b})->output(0)})->output(0), "y");
  ir::infer_types(g);
  KernelIR ir = lower_body(g).ir;
  OpenClKernel kernel(ir);  // built once; shapes are run arguments
  runtime::BufferPool pool;
  Interpreter interpreter(ir);
  for (Shape shape : {Shape{1}, Shape{5, 7}, Shape{2, 3, 1000}, Shape{}}) {
    std::vector<Tensor> inputs = {graft::testing::random_of(DType::float32, shape, 1),
                                  graft::testing::random_of(DType::float32, {1}, 2)};
    std::vector<Tensor> got = kernel.run(inputs);
    std::vector<Tensor> want = run_kernel(ir, interpreter, inputs, pool);
    EXPECT_TRUE(close_enough(got[0], want[0], 1e-5, 1e-6)) << shape_to_string(shape);
  }
  // A second kernel of the same IR (say, another Session's) builds nothing.
  CompileCounters& counters = CompileCache::global().counters();
  uint64_t builds = counters.opencl_builds, hits = counters.opencl_memory_hits;
  OpenClKernel again(ir);
  EXPECT_EQ(counters.opencl_builds, builds);
  EXPECT_EQ(counters.opencl_memory_hits, hits + 1);
  std::vector<Tensor> inputs = {graft::testing::random_of(DType::float32, {6}, 3),
                                graft::testing::random_of(DType::float32, {1}, 4)};
  EXPECT_TRUE(close_enough(again.run(inputs)[0], run_kernel(ir, interpreter, inputs, pool)[0], 1e-5, 1e-6));
  Tensor ints(DType::int32, {3}), one(DType::float32, {1}), three(DType::float32, {3}), four(DType::float32, {4});
  EXPECT_THROW(kernel.run(std::vector<Tensor>{ints, one}), Error);    // a wrong dtype
  EXPECT_THROW(kernel.run(std::vector<Tensor>{three, four}), Error);  // shapes that do not broadcast
}

TEST(OpenClEmitter, EveryKernelSourceIsOpenClC) {
  // Without a device too: the sources name no CUDA construct.
  for (uint64_t seed = 0; seed < 50; ++seed) {
    std::string source = emit_opencl_source(lower_body(*graft::testing::make_typed_dag(seed).graph).ir, "k");
    EXPECT_NE(source.find("__kernel void k("), std::string::npos);
    for (const char* cuda : {"__device__", "__global__", "long long", "<T>", "__longlong_as_double", "asm("})
      EXPECT_EQ(source.find(cuda), std::string::npos) << cuda << " in seed " << seed;
  }
}

}  // namespace
}  // namespace graft::codegen
