// float16 in fused kernels: the conversions of every code generator, bit for
// bit against graft::float16_t (what the reference kernels round with), on
// every float16 value, the float32 values next to each, the halfway points
// between neighbours and their neighbours (ties to even), the range's edges
// and NaN payloads; and a chain of float16 ops rounding after every op.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdlib>

#include "codegen_test_util.h"
#include "graft/codegen/compile_cache.h"
#include "graft/codegen/interpreter.h"
#include "graft/backend/buffer_pool.h"

namespace graft::codegen {
namespace {

/// The kernel `cast(x, to)` of one input of dtype `from`.
ir::KernelIR cast_kernel(DType from, DType to) {
  ir::KernelIR ir;
  ir.input_dtypes = {from};
  int32_t x = ir.add_input(0, from);
  ir.outputs = {ir.add_op(ir::ExprOp::cast, to, x)};
  return ir;
}

/// float32 -> float16 -> float32: the rounding after a float16 op.
ir::KernelIR round_trip_kernel() {
  ir::KernelIR ir;
  ir.input_dtypes = {DType::float32};
  int32_t x = ir.add_input(0, DType::float32);
  ir.outputs = {ir.add_op(ir::ExprOp::cast, DType::float32, ir.add_op(ir::ExprOp::cast, DType::float16, x))};
  return ir;
}

/// Float32 values around every float16 value and halfway point.
Tensor float32_probes() {
  std::vector<float> values;
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    float16_t h;
    h.bits = static_cast<uint16_t>(bits);
    float v = static_cast<float>(h);
    values.push_back(v);
    if (std::isnan(v)) {  // NaN payloads: the top mantissa bits survive
      values.push_back(std::bit_cast<float>(std::bit_cast<uint32_t>(v) | 0x1fffu));
      continue;
    }
    if (std::isinf(v)) continue;
    values.push_back(std::nextafter(v, INFINITY));
    values.push_back(std::nextafter(v, -INFINITY));
    float16_t next;
    next.bits = static_cast<uint16_t>(bits + 1);
    float up = static_cast<float>(next);
    if ((bits & 0x7fff) < 0x7bff && !std::isnan(up)) {  // halfway to the next float16, and around it
      float half = v + (up - v) / 2;
      values.insert(values.end(), {half, std::nextafter(half, INFINITY), std::nextafter(half, -INFINITY)});
    }
  }
  for (float v : {65504.0f, 65519.99f, 65520.0f, 65536.0f, 1e30f, -65520.0f, 3.0e-8f, 2.98e-8f, 5.96e-8f, 1e-40f,
                  std::bit_cast<float>(0x7fffffffu), std::bit_cast<float>(0xffc00001u)})
    values.push_back(v);
  return Tensor::from_vector(values, {static_cast<int64_t>(values.size())});
}

/// The runners to check: the interpreter, and the JIT where it is built in.
std::vector<std::shared_ptr<const KernelRunner>> runners(const ir::KernelIR& ir) {
  std::vector<std::shared_ptr<const KernelRunner>> result{std::make_shared<Interpreter>(ir)};
  auto jit = CompileCache::global().cpu_runner(ir);
  if (std::string(jit->kind()) == "llvm") result.push_back(jit);
  return result;
}

TEST(Float16Kernels, FromFloat32RoundsToNearestEvenAsTheReference) {
  backend::BufferPool pool;
  Tensor x = float32_probes();
  for (const ir::KernelIR& ir : {cast_kernel(DType::float32, DType::float16), round_trip_kernel()}) {
    for (const auto& runner : runners(ir)) {
      Tensor got = run_kernel(ir, *runner, std::vector<Tensor>{x}, pool)[0];
      for (int64_t i = 0; i < x.numel(); ++i) {
        float16_t want(x.data<float>()[i]);
        uint16_t got_bits = got.dtype() == DType::float16
                                ? got.data<float16_t>()[i].bits
                                : float16_t(got.data<float>()[i]).bits;  // round trip: exact in float16
        if (got.dtype() == DType::float32 && !std::isnan(got.data<float>()[i])) {
          ASSERT_EQ(got.data<float>()[i], static_cast<float>(want)) << runner->kind() << " at " << x.data<float>()[i];
        }
        ASSERT_EQ(got_bits, want.bits) << runner->kind() << " " << dtype_name(got.dtype()) << ": "
                                       << std::hexfloat << x.data<float>()[i];
      }
    }
  }
}

TEST(Float16Kernels, ToFloat32IsExactForEveryValue) {
  backend::BufferPool pool;
  Tensor h(DType::float16, {0x10000});
  for (uint32_t bits = 0; bits < 0x10000; ++bits) h.data<float16_t>()[bits].bits = static_cast<uint16_t>(bits);
  ir::KernelIR ir = cast_kernel(DType::float16, DType::float32);
  for (const auto& runner : runners(ir)) {
    Tensor got = run_kernel(ir, *runner, std::vector<Tensor>{h}, pool)[0];
    for (uint32_t bits = 0; bits < 0x10000; ++bits) {
      float want = static_cast<float>(h.data<float16_t>()[bits]);
      float value = got.data<float>()[bits];
      if (std::isnan(want)) {
        ASSERT_TRUE(std::isnan(value)) << runner->kind() << " bits " << bits;
        ASSERT_EQ(std::bit_cast<uint32_t>(value) & 0x807fe000u, std::bit_cast<uint32_t>(want) & 0x807fe000u)
            << "sign and payload, bits " << bits;
      } else {
        ASSERT_EQ(std::bit_cast<uint32_t>(value), std::bit_cast<uint32_t>(want)) << runner->kind() << " bits " << bits;
      }
    }
  }
}

TEST(Float16Kernels, AChainRoundsAfterEveryOpAsTheReference) {
  // ((x * 3) + y) - x with x, y near 1: computed in float32 without the
  // rounding of x * 3 to float16 in between, results differ in the last bit.
  ir::Graph g;
  g.opset_imports[""] = 17;
  Shape shape{4096};
  ir::Value x = g.add_input("x", ir::ValueType::of(DType::float16, shape))->output(0);
  ir::Value y = g.add_input("y", ir::ValueType::of(DType::float16, shape))->output(0);
  ir::Value three = g.add_constant("three", Tensor::from_vector(std::vector<float16_t>{float16_t(3.0f)}, {}))->output(0);
  ir::Value a = g.add_node("Mul", {x, three})->output(0);
  ir::Value b = g.add_node("Add", {a, y})->output(0);
  g.add_output(g.add_node("Sub", {b, x})->output(0), "z");
  ops::infer_types(g);
  std::vector<Tensor> inputs = {graft::testing::random_of(DType::float16, shape, 1, 0.9, 1.1),
                                graft::testing::random_of(DType::float16, shape, 2, 0.9, 1.1)};
  Tensor want = graft::testing::run_reference(g, inputs)[0];
  auto fused = graft::testing::wrap_fused(g);
  for (const char* jit : {"0", "1"}) {
    setenv("GRAFT_JIT", jit, 1);
    Tensor got = graft::testing::run_compiled(*fused, inputs, {"verify"})[0];
    unsetenv("GRAFT_JIT");
    ASSERT_EQ(got.dtype(), DType::float16);
    for (int64_t i = 0; i < want.numel(); ++i)
      ASSERT_EQ(got.data<float16_t>()[i].bits, want.data<float16_t>()[i].bits) << "GRAFT_JIT=" << jit << " at " << i;
  }
}

}  // namespace
}  // namespace graft::codegen
