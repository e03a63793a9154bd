// Property test: random fused DAGs over every kernel dtype
// (typed_random_dag.h) against the reference kernels on the unfused graph,
// through the interpreter and compiled by the LLVM JIT.
#include "typed_random_dag.h"

#include <gtest/gtest.h>

#include "graft/codegen/compile_cache.h"
#include "graft/codegen/interpreter.h"
#include "graft/runtime/buffer_pool.h"

namespace graft::codegen {
namespace {

using namespace graft::testing;

TEST(TypedRandomDags, InterpreterMatchesReference) {
  runtime::BufferPool pool;
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
  runtime::BufferPool pool;
  for (uint64_t seed = 100000; seed < 100300; ++seed) {
    TypedDag dag = make_typed_dag(seed);
    KernelIR ir = lower_body(*dag.graph).ir;
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

}  // namespace
}  // namespace graft::codegen
