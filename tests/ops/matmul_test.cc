// MatMul (broadcasting, 1-D promotion, dtypes), Gemm, MatMulInteger and
// QLinearMatMul against naive loops; type inference with symbolic dims.
#include <gtest/gtest.h>

#include "graft/ops/broadcast.h"
#include "ops/math_op_runner.h"

using namespace graft;
using namespace graft::testing;

namespace {

/// numpy.matmul on float64 values of any-dtype tensors (the reference).
Tensor reference_matmul(const Tensor& a, const Tensor& b, DType out_dtype) {
  Shape as = a.shape(), bs = b.shape();
  const bool a_vector = as.size() == 1, b_vector = bs.size() == 1;
  if (a_vector) as.insert(as.begin(), 1);
  if (b_vector) bs.push_back(1);
  const int64_t M = as[as.size() - 2], K = as.back(), N = bs.back();
  Shape a_batch(as.begin(), as.end() - 2), b_batch(bs.begin(), bs.end() - 2);
  Shape batch = broadcast_shapes(a_batch, b_batch, "test");
  Shape out = batch;
  if (!a_vector) out.push_back(M);
  if (!b_vector) out.push_back(N);
  Tensor y(out_dtype, out);
  const int64_t batches = shape_numel(batch);
  for (int64_t bi = 0; bi < batches; ++bi) {
    // Batch coordinate -> offsets in a and b (broadcast).
    int64_t rest = bi, a_off = 0, b_off = 0, a_mul = 1, b_mul = 1;
    for (size_t d = batch.size(); d-- > 0;) {
      int64_t coord = rest % batch[d];
      rest /= batch[d];
      size_t ad = d - (batch.size() - a_batch.size()), bd = d - (batch.size() - b_batch.size());
      if (d >= batch.size() - a_batch.size()) {
        if (a_batch[ad] != 1) a_off += coord * a_mul;
        a_mul *= a_batch[ad];
      }
      if (d >= batch.size() - b_batch.size()) {
        if (b_batch[bd] != 1) b_off += coord * b_mul;
        b_mul *= b_batch[bd];
      }
    }
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double s = 0;
        for (int64_t k = 0; k < K; ++k)
          s += a.value_as_double(a_off * M * K + i * K + k) * b.value_as_double(b_off * K * N + k * N + j);
        int64_t at = bi * M * N + i * N + j;
        visit_dtype(out_dtype, "test", [&]<typename T>() { y.data<T>()[at] = static_cast<T>(s); });
      }
  }
  return y;
}

Tensor random_of(DType dtype, const Shape& shape, uint64_t seed) {
  Tensor f = random_tensor(shape, seed);
  Tensor t(dtype, shape);
  visit_dtype(dtype, "test", [&]<typename T>() {
    for (int64_t i = 0; i < t.numel(); ++i) {
      float v = f.data<float>()[i];
      if constexpr (std::is_integral_v<T>)
        t.data<T>()[i] = static_cast<T>(std::lround(v * 5 + 5));
      else
        t.data<T>()[i] = static_cast<T>(v);
    }
  });
  return t;
}

}  // namespace

TEST(MatMul, BroadcastsBatchesAndPromotesVectors) {
  const std::vector<std::pair<Shape, Shape>> cases = {{{3, 4}, {4, 5}},
                                                      {{2, 3, 4}, {4, 5}},
                                                      {{4}, {4, 5}},
                                                      {{3, 4}, {4}},
                                                      {{4}, {4}},
                                                      {{2, 1, 3, 4}, {5, 4, 6}},
                                                      {{5, 3, 4}, {1, 4, 6}},
                                                      {{2, 3, 4}, {2, 4, 5}},
                                                      {{7, 64, 33}, {33, 100}},
                                                      {{12, 16, 8}, {12, 8, 16}},
                                                      {{3, 1, 4}, {4, 2}},
                                                      {{2, 5, 300}, {300}},
                                                      {{1, 130}, {130, 70}},
                                                      {{3, 0, 4}, {4, 5}},
                                                      {{3, 4, 0}, {0, 5}}};
  for (const auto& [sa, sb] : cases) {
    Tensor a = random_tensor(sa, 1), b = random_tensor(sb, 2);
    Tensor y = run_op("MatMul", {a, b})[0];
    SCOPED_TRACE(shape_to_string(sa) + " x " + shape_to_string(sb));
    expect_close(y, reference_matmul(a, b, DType::float32), 1e-4, 1e-5);
  }
}

TEST(MatMul, OtherDtypes) {
  for (DType dtype : {DType::float64, DType::float16, DType::int32, DType::int64, DType::uint32, DType::uint64}) {
    Tensor a = random_of(dtype, {2, 3, 5}, 3), b = random_of(dtype, {5, 4}, 4);
    Tensor y = run_op("MatMul", {a, b})[0];
    SCOPED_TRACE(dtype_name(dtype));
    double tol = dtype == DType::float16 ? 1e-2 : 1e-9;
    expect_close(y, reference_matmul(a, b, dtype), tol, tol);
  }
}

TEST(MatMul, RejectsMismatchedInnerDims) {
  EXPECT_THROW(run_op("MatMul", {random_tensor({3, 4}, 1), random_tensor({5, 2}, 2)}), Error);
  EXPECT_THROW(run_op("MatMul", {random_tensor({2, 3, 4}, 1), random_tensor({3, 4, 2}, 2)}), Error);
}

TEST(MatMul, InfersSymbolicShapes) {
  auto t = infer_op("MatMul", {ir::ValueType{DType::float32, true, {sym("B"), dim(1), sym("S"), dim(64)}},
                               ir::ValueType{DType::float32, true, {dim(12), dim(64), sym("T")}}});
  EXPECT_EQ(t[0].to_string(),
            ir::ValueType({DType::float32, true, {sym("B"), dim(12), sym("S"), sym("T")}}).to_string());
  t = infer_op("MatMul", {ir::ValueType{DType::float32, true, {sym("B"), dim(64)}},
                          ir::ValueType{DType::float32, true, {dim(64)}}});
  EXPECT_EQ(t[0], (ir::ValueType{DType::float32, true, {sym("B")}}));
  EXPECT_THROW(
      infer_op("MatMul", {ir::ValueType::of(DType::float32, {2, 3}), ir::ValueType::of(DType::float32, {4, 2})}),
      Error);
  t = infer_op("MatMul", {ir::ValueType::of_dtype(DType::float32), ir::ValueType::of(DType::float32, {4, 2})});
  EXPECT_EQ(t[0].dtype, DType::float32);
  EXPECT_FALSE(t[0].has_rank);
}

TEST(Gemm, TransposesAlphaBetaAndBroadcastC) {
  const std::vector<Shape> c_shapes = {{}, {1}, {5}, {1, 5}, {3, 1}, {3, 5}};
  for (int trans = 0; trans < 4; ++trans) {
    const bool ta = trans & 1, tb = trans & 2;
    Tensor a = random_tensor(ta ? Shape{4, 3} : Shape{3, 4}, 10 + trans);
    Tensor b = random_tensor(tb ? Shape{5, 4} : Shape{4, 5}, 20 + trans);
    for (const Shape& cs : c_shapes) {
      Tensor c = random_tensor(cs, 30);
      auto attributes = attrs({{"transA", int64_t{ta}}, {"transB", int64_t{tb}}, {"alpha", 0.5f}, {"beta", -2.0f}});
      Tensor y = run_op("Gemm", {a, b, c}, attributes)[0];
      ASSERT_EQ(y.shape(), (Shape{3, 5}));
      const auto c_strides = ops::broadcast_strides(cs, {3, 5});
      for (int64_t i = 0; i < 3; ++i)
        for (int64_t j = 0; j < 5; ++j) {
          double s = 0;
          for (int64_t k = 0; k < 4; ++k)
            s += a.value_as_double(ta ? k * 3 + i : i * 4 + k) * b.value_as_double(tb ? j * 4 + k : k * 5 + j);
          double want = 0.5 * s - 2.0 * c.value_as_double(i * c_strides[0] + j * c_strides[1]);
          EXPECT_NEAR(y.data<float>()[i * 5 + j], want, 1e-5) << shape_to_string(cs) << " trans " << trans;
        }
    }
  }
}

TEST(Gemm, WithoutCAndOtherDtypes) {
  Tensor a = random_of(DType::float64, {3, 4}, 1), b = random_of(DType::float64, {4, 2}, 2);
  expect_close(run_op("Gemm", {a, b})[0], reference_matmul(a, b, DType::float64), 1e-12, 1e-12);
  Tensor ai = random_of(DType::int64, {3, 4}, 1), bi = random_of(DType::int64, {4, 2}, 2);
  Tensor ci = Tensor::from_vector<int64_t>({100, 200}, {2});
  Tensor yi = run_op("Gemm", {ai, bi, ci}, attrs({{"beta", 2.0f}}))[0];
  Tensor want = reference_matmul(ai, bi, DType::int64);
  for (int64_t i = 0; i < 6; ++i) EXPECT_EQ(yi.data<int64_t>()[i], want.data<int64_t>()[i] + 2 * (i % 2 ? 200 : 100));
  Tensor ah = random_of(DType::float16, {3, 4}, 1), bh = random_of(DType::float16, {4, 2}, 2);
  expect_close(to_float(run_op("Gemm", {ah, bh})[0]), to_float(reference_matmul(ah, bh, DType::float16)), 1e-2, 1e-2);
  EXPECT_THROW(run_op("Gemm", {random_tensor({3, 4}, 1), random_tensor({4, 2}, 2), random_tensor({3, 3}, 3)}), Error);
}

TEST(Gemm, InfersSymbolicShapes) {
  auto t = infer_op(
      "Gemm", {ir::ValueType{DType::float32, true, {dim(64), sym("N")}}, ir::ValueType::of(DType::float32, {10, 64})},
      attrs({{"transA", int64_t{1}}, {"transB", int64_t{1}}}));
  EXPECT_EQ(t[0], (ir::ValueType{DType::float32, true, {sym("N"), dim(10)}}));
}

TEST(MatMulInteger, ZeroPointsScalarPerRowAndPerColumn) {
  Tensor a = Tensor::from_vector<uint8_t>({11, 7, 3, 10, 6, 2, 9, 5, 1, 8, 4, 0}, {4, 3});
  Tensor b = Tensor::from_vector<int8_t>({1, -4, 2, 5, -3, 6}, {3, 2});
  for (int mode = 0; mode < 3; ++mode) {
    Tensor azp = mode == 0 ? Tensor::from_vector<uint8_t>({12}, {}) : Tensor::from_vector<uint8_t>({1, 2, 3, 4}, {4});
    Tensor bzp = mode == 2 ? Tensor::from_vector<int8_t>({-1, 2}, {2}) : Tensor::from_vector<int8_t>({0}, {});
    Tensor y = run_op("MatMulInteger", {a, b, azp, bzp}, {}, 10)[0];
    ASSERT_EQ(y.dtype(), DType::int32);
    for (int64_t i = 0; i < 4; ++i)
      for (int64_t j = 0; j < 2; ++j) {
        int32_t s = 0;
        for (int64_t k = 0; k < 3; ++k)
          s += (a.data<uint8_t>()[i * 3 + k] - azp.data<uint8_t>()[azp.numel() == 1 ? 0 : i]) *
               (b.data<int8_t>()[k * 2 + j] - bzp.data<int8_t>()[bzp.numel() == 1 ? 0 : j]);
        EXPECT_EQ(y.data<int32_t>()[i * 2 + j], s) << mode;
      }
  }
  Tensor y = run_op("MatMulInteger", {a, b}, {}, 10)[0];
  EXPECT_EQ(y.data<int32_t>()[0], 11 * 1 + 7 * 2 + 3 * -3);
}

TEST(QLinearMatMul, RequantizesWithRoundHalfToEven) {
  // y = round(sum((a - azp) * (b - bzp)) * a_scale * b_scale / y_scale) + y_zp, saturated.
  Tensor a = Tensor::from_vector<uint8_t>({208, 236, 0, 238, 3, 214, 255, 29}, {2, 4});
  Tensor b = Tensor::from_vector<uint8_t>({152, 51, 244, 60, 26, 255, 0, 127, 246, 127, 254, 247}, {4, 3});
  Tensor out = run_op("QLinearMatMul",
                      {a, Tensor::from_vector<float>({0.0066f}, {}), Tensor::from_vector<uint8_t>({113}, {}), b,
                       Tensor::from_vector<float>({0.00705f}, {}), Tensor::from_vector<uint8_t>({114}, {}),
                       Tensor::from_vector<float>({0.0107f}, {}), Tensor::from_vector<uint8_t>({118}, {})},
                      {}, 10)[0];
  // Expected values from the ONNX documentation example.
  EXPECT_EQ(std::vector<uint8_t>(out.data<uint8_t>(), out.data<uint8_t>() + 6),
            (std::vector<uint8_t>{168, 115, 255, 1, 66, 151}));
}
