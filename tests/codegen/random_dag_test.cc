// Property test: random fused DAGs (chains, shared subexpressions, several
// outputs, broadcasting inputs) give the reference kernels' results — thousands
// through the interpreter, a sample through the LLVM JIT via the fuse backend.
#include "random_dag.h"

#include <gtest/gtest.h>

#include <random>

#include "codegen_test_util.h"
#include "graft/codegen/compile_cache.h"
#include "graft/codegen/interpreter.h"
#include "graft/backend/buffer_pool.h"

namespace graft::codegen {
namespace {

using graft::testing::close_enough;
using graft::testing::make_random_dag;
using graft::testing::RandomDag;

TEST(RandomDags, InterpreterMatchesReferenceOnThousands) {
  backend::BufferPool pool;
  for (uint64_t seed = 0; seed < 2000; ++seed) {
    RandomDag dag = make_random_dag(seed, false);
    LoweredKernel lowered = lower_body(*dag.graph);
    Interpreter interpreter(lowered.ir);
    std::vector<Tensor> got = run_kernel(lowered.ir, interpreter, dag.inputs, pool);
    std::vector<Tensor> want = graft::testing::run_reference(*dag.graph, dag.inputs);
    ASSERT_EQ(got.size(), want.size());
    for (size_t k = 0; k < got.size(); ++k)
      ASSERT_TRUE(close_enough(got[k], want[k], 1e-5, 1e-6)) << "seed " << seed << "\n" << to_string(lowered.ir);
  }
}

TEST(RandomDags, JitMatchesReferenceOnSample) {
  // Compiled here, synchronously (a Session's fuse backend interprets a
  // kernel's first runs while it compiles in the background).
  backend::BufferPool pool;
  for (uint64_t seed = 10000; seed < 10060; ++seed) {
    RandomDag dag = make_random_dag(seed, true);
    ir::KernelIR ir = lower_body(*dag.graph).ir;
    std::shared_ptr<const KernelRunner> runner = CompileCache::global().cpu_runner(ir);
    if (std::string(runner->kind()) != "llvm") GTEST_SKIP() << "the LLVM JIT is not available";
    std::vector<Tensor> got = run_kernel(ir, *runner, dag.inputs, pool);
    std::vector<Tensor> want = graft::testing::run_reference(*dag.graph, dag.inputs);
    ASSERT_EQ(got.size(), want.size());
    for (size_t k = 0; k < got.size(); ++k)
      ASSERT_TRUE(close_enough(got[k], want[k], 1e-4, 1e-5)) << "seed " << seed << "\n" << to_string(ir);
  }
}

}  // namespace
}  // namespace graft::codegen
