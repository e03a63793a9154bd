// Large dense kernels take the streaming-store path (outputs beyond 8 MiB):
// chunk heads and tails, two outputs of different widths, an odd length.
#include <gtest/gtest.h>

#include "codegen_test_util.h"
#include "graft/codegen/compile_cache.h"
#include "graft/codegen/interpreter.h"
#include "graft/core/parallel.h"
#include "graft/backend/buffer_pool.h"

namespace graft::codegen {
namespace {

TEST(StreamingStores, LargeDenseKernelMatchesInterpreter) {
  ir::KernelIR ir;
  ir.input_dtypes = {DType::float32, DType::float32};
  int32_t a = ir.add_input(0, DType::float32);
  int32_t b = ir.add_input(1, DType::float32);
  int32_t s = ir.add_op(ir::ExprOp::sigmoid, DType::float32, ir.add_op(ir::ExprOp::add, DType::float32, a, b));
  int32_t wide = ir.add_op(ir::ExprOp::cast, DType::float64, ir.add_op(ir::ExprOp::mul, DType::float32, s, a));
  ir.outputs = {s, wide};
  ir = canonicalize(ir);
  auto runner = CompileCache::global().cpu_runner(ir);
  if (std::string(runner->kind()) == "llvm") {
    EXPECT_GT(runner->streaming_lanes(), 0);
  }
  const int64_t n = (int64_t(3) << 20) + 13;  // 12 MiB of float32 output, not a multiple of the lanes
  std::vector<Tensor> inputs = {graft::testing::random_of(DType::float32, {n}, 1),
                                graft::testing::random_of(DType::float32, {n}, 2)};
  backend::BufferPool pool;
  ScopedNumThreads threads(2);
  std::vector<Tensor> got = run_kernel(ir, *runner, inputs, pool);
  Interpreter interpreter(ir);
  std::vector<Tensor> want = run_kernel(ir, interpreter, inputs, pool);
  for (size_t k = 0; k < 2; ++k) EXPECT_TRUE(graft::testing::close_enough(got[k], want[k], 1e-5, 1e-6)) << k;
}

}  // namespace
}  // namespace graft::codegen
