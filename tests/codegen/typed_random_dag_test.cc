// Property test: random fused DAGs over every kernel dtype
// (typed_random_dag.h) against the reference kernels on the unfused graph,
// through the interpreter and compiled by the LLVM JIT.
#include "typed_random_dag.h"

#include <gtest/gtest.h>

#include "graft/codegen/compile_cache.h"
#include "graft/codegen/interpreter.h"
#include "graft/backend/buffer_pool.h"
#include "graft/runtime/session.h"

namespace graft::codegen {
namespace {

using namespace graft::testing;

TEST(TypedRandomDags, InterpreterMatchesReference) {
  backend::BufferPool pool;
  for (uint64_t seed = 0; seed < 1500; ++seed) {
    TypedDag dag = make_typed_dag(seed);
    LoweredKernel lowered = lower_body(*dag.graph);
    Interpreter interpreter(lowered.ir);
    std::vector<Tensor> got = run_kernel(lowered.ir, interpreter, dag.inputs, pool);
    std::vector<Tensor> want = run_reference(*dag.graph, dag.inputs);
    ASSERT_EQ(got.size(), want.size());
    for (size_t k = 0; k < got.size(); ++k)
      ASSERT_TRUE(close_enough(got[k], want[k], typed_dag_rtol(want[k].dtype(), lowered.ir),
                               typed_dag_atol(want[k].dtype(), lowered.ir)))
          << "seed " << seed << " output " << k << "\n"
          << to_string(lowered.ir);
  }
}

TEST(TypedRandomDags, JitMatchesReference) {
  backend::BufferPool pool;
  for (uint64_t seed = 100000; seed < 100300; ++seed) {
    TypedDag dag = make_typed_dag(seed);
    ir::KernelIR ir = lower_body(*dag.graph).ir;
    std::shared_ptr<const KernelRunner> runner = CompileCache::global().cpu_runner(ir);
    if (std::string(runner->kind()) != "llvm") GTEST_SKIP() << "the LLVM JIT is not available";
    std::vector<Tensor> got = run_kernel(ir, *runner, dag.inputs, pool);
    std::vector<Tensor> want = run_reference(*dag.graph, dag.inputs);
    ASSERT_EQ(got.size(), want.size());
    for (size_t k = 0; k < got.size(); ++k)
      ASSERT_TRUE(
          close_enough(got[k], want[k], typed_dag_rtol(want[k].dtype(), ir), typed_dag_atol(want[k].dtype(), ir)))
          << "seed " << seed << " output " << k << "\n"
          << to_string(ir);
  }
}

// The whole path: DAGs with Softmax nodes between the fusible ops, run in a
// Session with fusion on (the pass cuts them into fused nodes that backend
// `fuse` compiles; the second run executes the compiled kernels) and off.
TEST(TypedRandomDags, FusedSessionsMatchUnfusedOnes) {
  runtime::SessionOptions off;
  off.num_threads = 2;
  off.backends = {"ref"};
  off.fusion = false;
  runtime::SessionOptions on = off;
  on.fusion = true;
  size_t fused_nodes = 0;
  for (uint64_t seed = 200000; seed < 200150; ++seed) {
    TypedDag dag = make_typed_dag(seed, true);
    runtime::Session fused(dag.graph->clone(), on), plain(dag.graph->clone(), off);
    for (const auto& node : fused.graph().nodes()) fused_nodes += node->op_type() == "graft.FusedPointwise";
    fused.run(dag.inputs);  // interprets the fused kernels while they compile
    CompileCache::global().wait_for_background_compiles();
    std::vector<Tensor> got = fused.run(dag.inputs), want = plain.run(dag.inputs);
    ASSERT_EQ(got.size(), want.size());
    DType coarsest = coarsest_float(*dag.graph);
    for (size_t k = 0; k < got.size(); ++k)
      ASSERT_TRUE(close_enough(got[k], want[k], typed_dag_rtol(want[k].dtype(), coarsest),
                               typed_dag_atol(want[k].dtype(), coarsest)))
          << "seed " << seed << " output " << k;
  }
  EXPECT_GT(fused_nodes, 100u);  // the pass did cut and fuse
}

}  // namespace
}  // namespace graft::codegen
