// The JIT kernel function only processes dense runs whose length is a
// multiple of the vector width (4, 8 or 16 elements); its runner handles the
// last partial vector and strided runs through scratch buffers. These tests
// call the runner directly with every run length around the vector widths
// (0, 1, W-1, W, W+1, ...) and around the strided block size, with mixed
// element sizes (bool, int32, float32, int64, float64), and compare with the
// interpreter element for element; guard values after the run and between
// strided elements must stay untouched.
#include <gtest/gtest.h>

#include <cstring>

#include "codegen_test_util.h"
#include "graft/codegen/compile_cache.h"
#include "graft/codegen/interpreter.h"

namespace graft::codegen {
namespace {

/// a: float32, b: int32, c: bool, d: float64 ->
///   sigmoid(a) * 2 + erf(a)         float32
///   b / (b - 1), 0 where b == 1     int32 (integer division by zero in padding lanes)
///   c xor (a > 0)                   bool
///   cast(b, int64) * 3              int64
///   d * cast(a, float64) + exp(d)   float64
ir::KernelIR mixed_kernel() {
  ir::KernelIR ir;
  ir.input_dtypes = {DType::float32, DType::int32, DType::boolean, DType::float64};
  int32_t a = ir.add_input(0, DType::float32);
  int32_t b = ir.add_input(1, DType::int32);
  int32_t c = ir.add_input(2, DType::boolean);
  int32_t d = ir.add_input(3, DType::float64);
  int32_t s = ir.add_op(ir::ExprOp::sigmoid, DType::float32, a);
  int32_t f = ir.add_op(ir::ExprOp::add, DType::float32,
                        ir.add_op(ir::ExprOp::mul, DType::float32, s, ir.add_constant(DType::float32, 2)),
                        ir.add_op(ir::ExprOp::erf, DType::float32, a));
  int32_t q = ir.add_op(ir::ExprOp::div, DType::int32, b,
                        ir.add_op(ir::ExprOp::sub, DType::int32, b, ir.add_constant(DType::int32, 1)));
  int32_t positive = ir.add_op(ir::ExprOp::greater, DType::boolean, a, ir.add_constant(DType::float32, 0));
  int32_t x = ir.add_op(ir::ExprOp::logical_xor, DType::boolean, c, positive);
  int32_t wide = ir.add_op(ir::ExprOp::mul, DType::int64, ir.add_op(ir::ExprOp::cast, DType::int64, b),
                           ir.add_constant(DType::int64, 3));
  int32_t g = ir.add_op(ir::ExprOp::add, DType::float64,
                        ir.add_op(ir::ExprOp::mul, DType::float64, d, ir.add_op(ir::ExprOp::cast, DType::float64, a)),
                        ir.add_op(ir::ExprOp::exp, DType::float64, d));
  ir.outputs = {f, q, x, wide, g};
  return canonicalize(ir);
}

constexpr unsigned char kGuard = 0xA5;

/// Operand buffers for runs of up to `capacity` elements at `stride`, filled
/// with guard bytes, inputs then written with random values at the strided
/// positions.
struct Buffers {
  std::vector<std::vector<unsigned char>> bytes;
  std::vector<void*> ptrs;
  std::vector<size_t> sizes;

  Buffers(const ir::KernelIR& ir, int64_t capacity, const std::vector<int64_t>& strides, uint64_t seed) {
    std::vector<DType> dtypes = ir.input_dtypes;
    for (DType t : ir.output_dtypes()) dtypes.push_back(t);
    for (size_t k = 0; k < dtypes.size(); ++k) {
      size_t size = dtype_size(dtypes[k]);
      int64_t span = std::max<int64_t>(1, capacity * std::max<int64_t>(strides[k], 1)) + 8;
      bytes.emplace_back(static_cast<size_t>(span) * size, kGuard);
      sizes.push_back(size);
      if (k < ir.input_dtypes.size()) {
        Tensor values = graft::testing::random_of(dtypes[k], {capacity}, seed + k, -3, 3);
        for (int64_t j = 0; j < capacity; ++j)
          std::memcpy(bytes[k].data() + static_cast<size_t>(j * strides[k]) * size,
                      static_cast<const char*>(values.raw_data()) + static_cast<size_t>(j) * size, size);
      }
    }
    for (auto& b : bytes) ptrs.push_back(b.data());
  }
};

/// Equal output bytes everywhere (written elements and guards); floats within
/// a relative 1e-5 (the JIT's approximations against the C library).
::testing::AssertionResult same_outputs(const ir::KernelIR& ir, const Buffers& got, const Buffers& want) {
  std::vector<DType> dtypes = ir.output_dtypes();
  for (size_t o = 0; o < dtypes.size(); ++o) {
    size_t k = ir.input_dtypes.size() + o;
    size_t size = got.sizes[k];
    for (size_t at = 0; at < got.bytes[k].size(); at += size) {
      const unsigned char* g = got.bytes[k].data() + at;
      const unsigned char* w = want.bytes[k].data() + at;
      if (std::memcmp(g, w, size) == 0) continue;
      bool is_guard = true;
      for (size_t i = 0; i < size; ++i) is_guard = is_guard && w[i] == kGuard;
      if (!is_guard && dtype_is_float(dtypes[o])) {
        double a, b;
        if (dtypes[o] == DType::float32) {
          float x, y;
          std::memcpy(&x, g, 4);
          std::memcpy(&y, w, 4);
          a = x, b = y;
        } else {
          std::memcpy(&a, g, 8);
          std::memcpy(&b, w, 8);
        }
        if (std::abs(a - b) <= 1e-5 * std::abs(b) + 1e-6) continue;
        return ::testing::AssertionFailure() << "output " << o << " element " << at / size << ": got " << a
                                             << ", want " << b;
      }
      return ::testing::AssertionFailure() << "output " << o << " element " << at / size
                                           << (is_guard ? ": guard overwritten" : ": differs");
    }
  }
  return ::testing::AssertionSuccess();
}

TEST(VectorTails, DenseRunsOfEveryLengthAroundTheVectorWidths) {
  ir::KernelIR ir = mixed_kernel();
  auto runner = CompileCache::global().cpu_runner(ir);
  if (std::string(runner->kind()) != "llvm") GTEST_SKIP() << "the LLVM JIT is not available";
  Interpreter interpreter(ir);
  std::vector<int64_t> unit(ir.input_dtypes.size() + ir.outputs.size(), 1);
  for (int64_t n = 0; n <= 3 * 16 + 2; ++n) {
    Buffers got(ir, n, unit, 7), want(ir, n, unit, 7);
    runner->run_contiguous(n, got.ptrs.data());
    interpreter.run_contiguous(n, want.ptrs.data());
    EXPECT_TRUE(same_outputs(ir, got, want)) << "n = " << n;
  }
}

TEST(VectorTails, UnusedInputsMayBeNull) {
  ir::KernelIR ir;
  ir.input_dtypes = {DType::float32, DType::float32};
  ir.outputs = {ir.add_op(ir::ExprOp::tanh, DType::float32, ir.add_input(1, DType::float32))};
  ir = canonicalize(ir);
  auto runner = CompileCache::global().cpu_runner(ir);
  std::vector<float> x = {-1, 0.5f, 2}, y(3, 0);
  std::vector<void*> ptrs = {nullptr, x.data(), y.data()};
  runner->run_contiguous(3, ptrs.data());
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(y[static_cast<size_t>(i)], std::tanh(x[static_cast<size_t>(i)]), 1e-6);
  std::vector<int64_t> strides = {0, 1, 1};
  runner->run_strided(3, ptrs.data(), strides.data());
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(y[static_cast<size_t>(i)], std::tanh(x[static_cast<size_t>(i)]), 1e-6);
}

TEST(VectorTails, StridedRunsAroundTheBlockSize) {
  ir::KernelIR ir = mixed_kernel();
  auto runner = CompileCache::global().cpu_runner(ir);
  if (std::string(runner->kind()) != "llvm") GTEST_SKIP() << "the LLVM JIT is not available";
  Interpreter interpreter(ir);
  // Inputs broadcast (0), dense (1) or strided (2, 3); outputs dense or strided.
  const std::vector<std::vector<int64_t>> stride_sets = {
      {0, 1, 2, 3, 1, 1, 1, 1, 1},
      {1, 0, 1, 0, 2, 1, 3, 1, 2},
      {3, 2, 0, 1, 1, 2, 1, 2, 1},
  };
  for (const auto& strides : stride_sets) {
    for (int64_t n : {0, 1, 3, 15, 16, 17, 255, 256, 257, 511, 600}) {
      Buffers got(ir, n, strides, 11), want(ir, n, strides, 11);
      runner->run_strided(n, got.ptrs.data(), strides.data());
      interpreter.run_strided(n, want.ptrs.data(), strides.data());
      EXPECT_TRUE(same_outputs(ir, got, want)) << "n = " << n << ", input 0 stride " << strides[0];
    }
  }
}

TEST(VectorTails, StreamingRunsEqualDenseRuns) {
  ir::KernelIR ir;
  ir.input_dtypes = {DType::float32};
  int32_t x = ir.add_input(0, DType::float32);
  int32_t s = ir.add_op(ir::ExprOp::sigmoid, DType::float32, x);
  ir.outputs = {s, ir.add_op(ir::ExprOp::cast, DType::float64, s)};
  ir = canonicalize(ir);
  auto runner = CompileCache::global().cpu_runner(ir);
  if (runner->streaming_lanes() == 0) GTEST_SKIP() << "no streaming variant on this host";
  const int64_t n = runner->streaming_lanes() * 5;
  Tensor input = graft::testing::random_of(DType::float32, {n}, 3);
  alignas(64) float dense32[80], stream32[80];
  alignas(64) double dense64[80], stream64[80];
  ASSERT_LE(n, 80);
  std::vector<void*> dense = {input.raw_data(), dense32, dense64}, stream = {input.raw_data(), stream32, stream64};
  runner->run_contiguous(n, dense.data());
  runner->run_streaming(n, stream.data());
  EXPECT_EQ(0, std::memcmp(dense32, stream32, static_cast<size_t>(n) * 4));
  EXPECT_EQ(0, std::memcmp(dense64, stream64, static_cast<size_t>(n) * 8));
}

}  // namespace
}  // namespace graft::codegen
