// Broadcast ops: arithmetic, Mod, Pow, comparisons, logic, bitwise, PRelu,
// variadic Sum/Mean/Max/Min and Where, with numpy broadcasting, every dtype
// family, integer corner cases (division by zero) and in-place execution.
#include <cmath>
#include <functional>
#include <limits>

#include "ops/math_op_runner.h"

using namespace graft;
using graft::testing::attrs;
using graft::testing::expect_close;
using graft::testing::infer_op;
using graft::testing::random_tensor;
using graft::testing::run_op;

namespace {

template <typename T>
std::vector<T> values_of(const Tensor& t) {
  auto v = t.values<T>();
  return std::vector<T>(v.begin(), v.end());
}

/// Reference broadcast: out[idx] = f(a[idx'], b[idx'']) over the numpy broadcast shape.
Tensor reference_binary(const Tensor& a, const Tensor& b, const std::function<double(double, double)>& f,
                        DType out_dtype) {
  Shape shape = broadcast_shapes(a.shape(), b.shape(), "test");
  Tensor out(out_dtype, shape);
  size_t rank = shape.size();
  auto offset = [&](const Shape& s, const std::vector<int64_t>& index) {
    int64_t off = 0;
    size_t lead = rank - s.size();
    for (size_t d = 0; d < s.size(); ++d) off = off * s[d] + (s[d] == 1 ? 0 : index[d + lead]);
    return off;
  };
  std::vector<int64_t> index(rank, 0);
  for (int64_t i = 0; i < out.numel(); ++i) {
    int64_t r = i;
    for (size_t d = rank; d-- > 0;) {
      index[d] = r % shape[d];
      r /= shape[d];
    }
    double v = f(a.value_as_double(offset(a.shape(), index)), b.value_as_double(offset(b.shape(), index)));
    if (out_dtype == DType::float32)
      out.data<float>()[i] = static_cast<float>(v);
    else if (out_dtype == DType::boolean)
      out.data<bool>()[i] = v != 0;
    else
      GRAFT_CHECK(false, "unsupported reference dtype");
  }
  return out;
}

}  // namespace

TEST(Broadcast, ShapesCombineLikeNumpy) {
  struct Case {
    Shape a, b;
  };
  std::vector<Case> cases = {
      {{2, 3}, {2, 3}},        // same shape
      {{}, {2, 3}},            // scalar left
      {{2, 3}, {}},            // scalar right
      {{2, 3}, {3}},           // row
      {{2, 1}, {2, 3}},        // column
      {{4, 1, 3}, {2, 1}},     // rank-mismatched, both broadcast
      {{1, 5, 1}, {3, 1, 7}},  // every dimension broadcast on one side
      {{0, 3}, {1, 3}},        // empty
  };
  std::vector<std::pair<const char*, std::function<double(double, double)>>> ops = {
      {"Add", [](double x, double y) { return x + y; }},
      {"Sub", [](double x, double y) { return x - y; }},
      {"Mul", [](double x, double y) { return x * y; }},
      {"Div", [](double x, double y) { return x / y; }},
  };
  uint64_t seed = 1;
  for (const Case& c : cases) {
    Tensor a = random_tensor(c.a, seed++);
    Tensor b = random_tensor(c.b, seed++);
    for (const auto& [op, f] : ops) {
      SCOPED_TRACE(std::string(op) + " " + shape_to_string(c.a) + " " + shape_to_string(c.b));
      expect_close(run_op(op, {a, b})[0], reference_binary(a, b, f, DType::float32), 1e-6, 1e-6);
    }
    SCOPED_TRACE("Less");
    Tensor less = run_op("Less", {a, b})[0];
    Tensor want = reference_binary(
        a, b, [](double x, double y) { return x < y; }, DType::boolean);
    EXPECT_EQ(values_of<bool>(less), values_of<bool>(want));
  }
  EXPECT_THROW(run_op("Add", {random_tensor({2, 3}, 1), random_tensor({4}, 2)}), Error);
}

TEST(Broadcast, LargeInputsRunInParallel) {
  Tensor a = random_tensor({300, 1000}, 3);
  Tensor row = random_tensor({1000}, 4);
  Tensor col = random_tensor({300, 1}, 5);
  expect_close(run_op("Mul", {a, row})[0], reference_binary(
                                               a, row, [](double x, double y) { return x * y; }, DType::float32));
  expect_close(run_op("Sub", {col, a})[0], reference_binary(
                                               col, a, [](double x, double y) { return x - y; }, DType::float32));
}

TEST(Broadcast, EveryNumericDtype) {
  // int8 and uint8 wrap; int64 and double are exact; float16 computes in float.
  Tensor i8 = run_op("Add", {Tensor::from_vector<int8_t>({100, -100, 5}, {3}), Tensor::scalar<int8_t>(100)})[0];
  EXPECT_EQ(values_of<int8_t>(i8), (std::vector<int8_t>{-56, 0, 105}));
  Tensor u8 =
      run_op("Sub", {Tensor::from_vector<uint8_t>({1, 200}, {2}), Tensor::from_vector<uint8_t>({2, 100}, {2})})[0];
  EXPECT_EQ(values_of<uint8_t>(u8), (std::vector<uint8_t>{255, 100}));
  Tensor u16 =
      run_op("Mul", {Tensor::from_vector<uint16_t>({65535}, {1}), Tensor::from_vector<uint16_t>({65535}, {1})})[0];
  EXPECT_EQ(u16.values<uint16_t>()[0], 1);  // 65535^2 mod 2^16, without signed overflow
  const int64_t big = std::numeric_limits<int64_t>::max();
  Tensor i64 =
      run_op("Add", {Tensor::from_vector<int64_t>({big, 3}, {2}), Tensor::from_vector<int64_t>({1, 4}, {2})})[0];
  EXPECT_EQ(values_of<int64_t>(i64), (std::vector<int64_t>{std::numeric_limits<int64_t>::min(), 7}));
  Tensor f64 = run_op("Div", {Tensor::from_vector<double>({1.0, 2.0}, {2}), Tensor::scalar(3.0)})[0];
  EXPECT_DOUBLE_EQ(f64.values<double>()[0], 1.0 / 3.0);
  Tensor f16 = run_op("Mul", {Tensor::from_vector<float16_t>({float16_t(1.5f), float16_t(-2.0f)}, {2}),
                              Tensor::scalar(float16_t(3.0f))})[0];
  ASSERT_EQ(f16.dtype(), DType::float16);
  EXPECT_EQ(static_cast<float>(f16.data<float16_t>()[0]), 4.5f);
  EXPECT_EQ(static_cast<float>(f16.data<float16_t>()[1]), -6.0f);
  Tensor bf16 = run_op("Add", {Tensor::scalar(bfloat16_t(1.0f)), Tensor::scalar(bfloat16_t(0.5f))})[0];
  EXPECT_EQ(static_cast<float>(bf16.data<bfloat16_t>()[0]), 1.5f);
}

TEST(Broadcast, IntegerDivisionTruncatesAndNeverTraps) {
  const int32_t min = std::numeric_limits<int32_t>::min();
  Tensor a = Tensor::from_vector<int32_t>({7, -7, 7, -7, 5, min, min}, {7});
  Tensor b = Tensor::from_vector<int32_t>({2, 2, -2, -2, 0, -1, 0}, {7});
  Tensor q = run_op("Div", {a, b})[0];
  EXPECT_EQ(values_of<int32_t>(q), (std::vector<int32_t>{3, -3, -3, 3, 0, min, 0}));
  Tensor u = run_op("Div", {Tensor::from_vector<uint8_t>({9, 9}, {2}), Tensor::from_vector<uint8_t>({2, 0}, {2})})[0];
  EXPECT_EQ(values_of<uint8_t>(u), (std::vector<uint8_t>{4, 0}));
  Tensor i64 = run_op("Div", {Tensor::from_vector<int64_t>({std::numeric_limits<int64_t>::min()}, {1}),
                              Tensor::scalar<int64_t>(-1)})[0];
  EXPECT_EQ(i64.values<int64_t>()[0], std::numeric_limits<int64_t>::min());
}

TEST(Broadcast, ModSignsFollowFmodAttribute) {
  Tensor a = Tensor::from_vector<int32_t>({7, -7, 7, -7, 5, std::numeric_limits<int32_t>::min()}, {6});
  Tensor b = Tensor::from_vector<int32_t>({3, 3, -3, -3, 0, -1}, {6});
  // fmod=0: the sign of the divisor (Python).
  EXPECT_EQ(values_of<int32_t>(run_op("Mod", {a, b})[0]), (std::vector<int32_t>{1, 2, -2, -1, 0, 0}));
  // fmod=1: the sign of the dividend (C).
  EXPECT_EQ(values_of<int32_t>(run_op("Mod", {a, b}, attrs({{"fmod", int64_t{1}}}))[0]),
            (std::vector<int32_t>{1, -1, 1, -1, 0, 0}));
  Tensor u = run_op("Mod", {Tensor::from_vector<uint16_t>({7, 7}, {2}), Tensor::from_vector<uint16_t>({4, 0}, {2})})[0];
  EXPECT_EQ(values_of<uint16_t>(u), (std::vector<uint16_t>{3, 0}));
  Tensor fa = Tensor::from_vector<float>({5.5f, -5.5f}, {2});
  Tensor fm = run_op("Mod", {fa, Tensor::scalar(2.0f)}, attrs({{"fmod", int64_t{1}}}))[0];
  EXPECT_EQ(values_of<float>(fm), (std::vector<float>{1.5f, -1.5f}));
  // Float inputs need fmod=1.
  EXPECT_THROW(run_op("Mod", {fa, Tensor::scalar(2.0f)}), Error);
}

TEST(Broadcast, PowMixesBaseAndExponentDtypes) {
  Tensor base = Tensor::from_vector<float>({1.5f, 2.0f, -3.0f}, {3});
  Tensor fp = run_op("Pow", {base, Tensor::scalar(2.0f)}, {}, 15)[0];
  EXPECT_EQ(values_of<float>(fp), (std::vector<float>{2.25f, 4.0f, 9.0f}));
  Tensor fe = run_op("Pow", {base, Tensor::from_vector<float>({0.5f, -1.0f, 3.0f}, {3})}, {}, 15)[0];
  EXPECT_FLOAT_EQ(fe.values<float>()[0], std::sqrt(1.5f));
  EXPECT_FLOAT_EQ(fe.values<float>()[1], 0.5f);
  EXPECT_FLOAT_EQ(fe.values<float>()[2], -27.0f);
  Tensor fi = run_op("Pow", {base, Tensor::from_vector<int64_t>({2, 3, 3}, {3})}, {}, 15)[0];
  ASSERT_EQ(fi.dtype(), DType::float32);
  EXPECT_EQ(values_of<float>(fi), (std::vector<float>{2.25f, 8.0f, -27.0f}));
  Tensor ii = run_op("Pow",
                     {Tensor::from_vector<int32_t>({2, 3, -2, 1, -1, 5}, {6}),
                      Tensor::from_vector<int32_t>({10, 3, 3, -4, -3, -1}, {6})},
                     {}, 15)[0];
  EXPECT_EQ(values_of<int32_t>(ii), (std::vector<int32_t>{1024, 27, -8, 1, -1, 0}));
  Tensor i_f = run_op("Pow", {Tensor::from_vector<int32_t>({1, 2, 3}, {3}), Tensor::from_vector<float>({1, 2, 3}, {3})},
                      {}, 15)[0];
  ASSERT_EQ(i_f.dtype(), DType::int32);
  EXPECT_EQ(values_of<int32_t>(i_f), (std::vector<int32_t>{1, 4, 27}));
  Tensor wrapped = run_op("Pow", {Tensor::scalar<int64_t>(3), Tensor::scalar<int64_t>(41)}, {}, 15)[0];
  uint64_t power = 1;
  for (int i = 0; i < 41; ++i) power *= 3;  // 3^41 overflows int64: wraps modulo 2^64
  EXPECT_EQ(static_cast<uint64_t>(wrapped.values<int64_t>()[0]), power);
  EXPECT_EQ(infer_op("Pow", {ir::ValueType::of(DType::float16, {2}), ir::ValueType::of(DType::int64, {})}, {}, 15)[0],
            ir::ValueType::of(DType::float16, {2}));
}

namespace {

/// `values` as a 1-D tensor of `dtype` (through Cast, exact for the small
/// values used here).
Tensor typed_vector(const std::vector<double>& values, DType dtype) {
  Tensor doubles = Tensor::from_vector<double>(values, {static_cast<int64_t>(values.size())});
  if (dtype == DType::float64) return doubles;
  return run_op("Cast", {doubles}, attrs({{"to", static_cast<int64_t>(dtype)}}))[0];
}

}  // namespace

TEST(Broadcast, PowOfEveryBaseAndExponentDtypePair) {
  // Each base dtype with each exponent dtype: the kernel converts exponents to
  // the type it computes in (int64, uint64, float or double), which must not
  // change a result. Small exact cases: integer bases truncate 2^-1 to 0.
  const std::vector<DType> numeric = {DType::int8,   DType::int16,  DType::int32,   DType::int64,
                                      DType::uint8,  DType::uint16, DType::uint32,  DType::uint64,
                                      DType::float16, DType::bfloat16, DType::float32, DType::float64};
  auto is_signed = [](DType d) {
    return d == DType::int8 || d == DType::int16 || d == DType::int32 || d == DType::int64 || dtype_is_float(d);
  };
  for (DType base_dtype : numeric) {
    for (DType exponent_dtype : numeric) {
      SCOPED_TRACE(std::string(dtype_name(base_dtype)) + " ^ " + std::string(dtype_name(exponent_dtype)));
      std::vector<double> bases = {2, 3, 0, 1, 2, 5};
      std::vector<double> exponents = {3, 2, 4, 0, 0, 1};
      if (is_signed(base_dtype)) bases.insert(bases.end(), {-1, -2});
      if (is_signed(base_dtype)) exponents.insert(exponents.end(), {3, 3});
      if (is_signed(exponent_dtype)) {
        bases.insert(bases.end(), {2, 1});
        exponents.insert(exponents.end(), {-1, -2});
      }
      if (dtype_is_float(exponent_dtype)) {
        bases.push_back(4);
        exponents.push_back(0.5);
      }
      Tensor y = run_op("Pow", {typed_vector(bases, base_dtype), typed_vector(exponents, exponent_dtype)}, {}, 15)[0];
      ASSERT_EQ(y.dtype(), base_dtype);
      for (size_t i = 0; i < bases.size(); ++i) {
        double expected = std::pow(bases[i], exponents[i]);
        if (!dtype_is_float(base_dtype)) expected = std::trunc(expected);
        EXPECT_EQ(y.value_as_double(static_cast<int64_t>(i)), expected) << bases[i] << " ^ " << exponents[i];
      }
    }
  }
  // An unsigned exponent above INT64_MAX stays unsigned: 3^(2^64-1) wraps
  // modulo 2^8 to an odd number, where a negative exponent would give 0.
  uint8_t expected = 1, factor = 3;
  for (uint64_t e = std::numeric_limits<uint64_t>::max(); e != 0; e >>= 1) {
    if (e & 1u) expected = static_cast<uint8_t>(expected * factor);
    factor = static_cast<uint8_t>(factor * factor);
  }
  Tensor big = run_op("Pow", {Tensor::scalar<int8_t>(3), Tensor::scalar<uint64_t>(std::numeric_limits<uint64_t>::max())},
                      {}, 15)[0];
  EXPECT_EQ(static_cast<uint8_t>(big.values<int8_t>()[0]), expected);
  EXPECT_NE(expected, 0);
}

TEST(Broadcast, ComparisonsAndLogic) {
  const float nan = std::nanf("");
  Tensor a = Tensor::from_vector<float>({1, 2, 3, nan}, {4});
  Tensor b = Tensor::scalar(2.0f);
  EXPECT_EQ(values_of<bool>(run_op("Equal", {a, b})[0]), (std::vector<bool>{false, true, false, false}));
  EXPECT_EQ(values_of<bool>(run_op("Greater", {a, b})[0]), (std::vector<bool>{false, false, true, false}));
  EXPECT_EQ(values_of<bool>(run_op("GreaterOrEqual", {a, b}, {}, 16)[0]),
            (std::vector<bool>{false, true, true, false}));
  EXPECT_EQ(values_of<bool>(run_op("Less", {a, b})[0]), (std::vector<bool>{true, false, false, false}));
  EXPECT_EQ(values_of<bool>(run_op("LessOrEqual", {a, b}, {}, 16)[0]), (std::vector<bool>{true, true, false, false}));
  Tensor ia = Tensor::from_vector<int64_t>({-1, 5}, {2, 1});
  Tensor ib = Tensor::from_vector<int64_t>({-1, 5, 7}, {3});
  Tensor eq = run_op("Equal", {ia, ib})[0];
  EXPECT_EQ(eq.shape(), (Shape{2, 3}));
  EXPECT_EQ(values_of<bool>(eq), (std::vector<bool>{true, false, false, false, true, false}));
  Tensor ba = Tensor::from_vector<bool>({true, true, false, false}, {2, 2});
  Tensor bb = Tensor::from_vector<bool>({true, false}, {2});
  EXPECT_EQ(values_of<bool>(run_op("Equal", {ba, bb})[0]), (std::vector<bool>{true, false, false, true}));
  EXPECT_EQ(values_of<bool>(run_op("And", {ba, bb})[0]), (std::vector<bool>{true, false, false, false}));
  EXPECT_EQ(values_of<bool>(run_op("Or", {ba, bb})[0]), (std::vector<bool>{true, true, true, false}));
  EXPECT_EQ(values_of<bool>(run_op("Xor", {ba, bb})[0]), (std::vector<bool>{false, true, true, false}));
  EXPECT_THROW(run_op("And", {a, b}), Error);
  EXPECT_THROW(run_op("Greater", {ba, bb}), Error);
}

TEST(Broadcast, BitwiseAndShifts) {
  Tensor a = Tensor::from_vector<int32_t>({0b1100, -1}, {2});
  Tensor b = Tensor::scalar<int32_t>(0b1010);
  EXPECT_EQ(values_of<int32_t>(run_op("BitwiseAnd", {a, b}, {}, 18)[0]), (std::vector<int32_t>{0b1000, 0b1010}));
  EXPECT_EQ(values_of<int32_t>(run_op("BitwiseOr", {a, b}, {}, 18)[0]), (std::vector<int32_t>{0b1110, -1}));
  EXPECT_EQ(values_of<int32_t>(run_op("BitwiseXor", {a, b}, {}, 18)[0]), (std::vector<int32_t>{0b0110, ~0b1010}));
  Tensor x = Tensor::from_vector<uint8_t>({16, 4, 1, 255}, {4});
  Tensor s = Tensor::from_vector<uint8_t>({1, 2, 8, 7}, {4});
  EXPECT_EQ(values_of<uint8_t>(run_op("BitShift", {x, s}, attrs({{"direction", std::string("RIGHT")}}), 11)[0]),
            (std::vector<uint8_t>{8, 1, 0, 1}));
  EXPECT_EQ(values_of<uint8_t>(run_op("BitShift", {x, s}, attrs({{"direction", std::string("LEFT")}}), 11)[0]),
            (std::vector<uint8_t>{32, 16, 0, 128}));
  Tensor x64 = Tensor::from_vector<uint64_t>({1}, {1});
  EXPECT_EQ(run_op("BitShift", {x64, Tensor::scalar<uint64_t>(63)}, attrs({{"direction", std::string("LEFT")}}), 11)[0]
                .values<uint64_t>()[0],
            1ull << 63);
  EXPECT_THROW(run_op("BitShift", {x, s}, {}, 11), Error);  // direction is required
  EXPECT_THROW(run_op("BitwiseAnd", {random_tensor({2}, 1), random_tensor({2}, 2)}, {}, 18), Error);
}

TEST(Broadcast, PReluSlopeBroadcastsToX) {
  Tensor x = random_tensor({3, 4, 5}, 9);
  Tensor slope = random_tensor({5}, 10);
  Tensor y = run_op("PRelu", {x, slope}, {}, 16)[0];
  expect_close(y, reference_binary(
                      x, slope, [](double v, double s) { return v < 0 ? s * v : v; }, DType::float32));
  Tensor channel_slope = random_tensor({3, 1, 1}, 11);
  expect_close(run_op("PRelu", {x, channel_slope}, {}, 16)[0],
               reference_binary(
                   x, channel_slope, [](double v, double s) { return v < 0 ? s * v : v; }, DType::float32));
  // The slope may not grow X.
  EXPECT_THROW(run_op("PRelu", {random_tensor({5}, 1), random_tensor({3, 5}, 2)}, {}, 16), Error);
  Tensor xi = Tensor::from_vector<int32_t>({-4, 4}, {2});
  EXPECT_EQ(values_of<int32_t>(run_op("PRelu", {xi, Tensor::scalar<int32_t>(3)}, {}, 16)[0]),
            (std::vector<int32_t>{-12, 4}));
}

TEST(Broadcast, VariadicSumMeanMaxMin) {
  Tensor a = Tensor::from_vector<float>({1, 5, -2, 8}, {2, 2});
  Tensor b = Tensor::from_vector<float>({3, -1}, {2});
  Tensor c = Tensor::scalar(2.0f);
  EXPECT_EQ(values_of<float>(run_op("Sum", {a, b, c})[0]), (std::vector<float>{6, 6, 3, 9}));
  EXPECT_EQ(values_of<float>(run_op("Mean", {a, b, c})[0]), (std::vector<float>{2, 2, 1, 3}));
  EXPECT_EQ(values_of<float>(run_op("Max", {a, b, c})[0]), (std::vector<float>{3, 5, 3, 8}));
  EXPECT_EQ(values_of<float>(run_op("Min", {a, b, c})[0]), (std::vector<float>{1, -1, -2, -1}));
  // Broadcast input first: the output is larger than input 0.
  EXPECT_EQ(values_of<float>(run_op("Max", {c, a})[0]), (std::vector<float>{2, 5, 2, 8}));
  EXPECT_EQ(values_of<float>(run_op("Sum", {a})[0]), values_of<float>(a));
  // NaN propagates through Max and Min from either side.
  const float nan = std::nanf("");
  Tensor n1 = Tensor::from_vector<float>({nan, 1}, {2});
  Tensor n2 = Tensor::from_vector<float>({1, nan}, {2});
  for (const char* op : {"Max", "Min"}) {
    Tensor y = run_op(op, {n1, n2})[0];
    EXPECT_TRUE(std::isnan(y.values<float>()[0])) << op;
    EXPECT_TRUE(std::isnan(y.values<float>()[1])) << op;
  }
  Tensor ints =
      run_op("Max", {Tensor::from_vector<uint32_t>({1, 9}, {2}), Tensor::from_vector<uint32_t>({4, 2}, {2})})[0];
  EXPECT_EQ(values_of<uint32_t>(ints), (std::vector<uint32_t>{4, 9}));
  EXPECT_THROW(run_op("Sum", {a, Tensor::from_vector<double>({1, 2}, {2})}), Error);
}

TEST(Broadcast, WhereSelectsWithBroadcasting) {
  Tensor cond = Tensor::from_vector<bool>({true, false, true}, {3});
  Tensor x = Tensor::from_vector<int64_t>({1, 2}, {2, 1});
  Tensor y = Tensor::scalar<int64_t>(-1);
  Tensor out = run_op("Where", {cond, x, y}, {}, 16)[0];
  ASSERT_EQ(out.dtype(), DType::int64);
  ASSERT_EQ(out.shape(), (Shape{2, 3}));
  EXPECT_EQ(values_of<int64_t>(out), (std::vector<int64_t>{1, -1, 1, 2, -1, 2}));
  Tensor fx = random_tensor({2, 3}, 1), fy = random_tensor({2, 3}, 2);
  Tensor fcond = Tensor::from_vector<bool>({true, false, false, true, true, false}, {2, 3});
  Tensor f = run_op("Where", {fcond, fx, fy}, {}, 16)[0];
  for (int64_t i = 0; i < 6; ++i)
    EXPECT_EQ(f.data<float>()[i], fcond.data<bool>()[i] ? fx.data<float>()[i] : fy.data<float>()[i]);
  EXPECT_THROW(run_op("Where", {x, x, y}, {}, 16), Error);  // condition must be bool
}

TEST(Broadcast, TypeInference) {
  using ir::Dim;
  using ir::ValueType;
  ValueType a{DType::float32, true, {Dim::symbolic("n"), Dim::known(1), Dim::known(4)}};
  ValueType b{DType::float32, true, {Dim::known(3), Dim::known(1)}};
  ValueType want{DType::float32, true, {Dim::symbolic("n"), Dim::known(3), Dim::known(4)}};
  EXPECT_EQ(infer_op("Add", {a, b})[0], want);
  ValueType want_bool = want;
  want_bool.dtype = DType::boolean;
  EXPECT_EQ(infer_op("Less", {a, b})[0], want_bool);
  ValueType cond{DType::boolean, true, {Dim::known(4)}};
  ValueType x64 = ValueType::of(DType::int64, {3, 1});
  EXPECT_EQ(infer_op("Where", {cond, x64, ValueType::of(DType::int64, {})}, {}, 16)[0],
            ValueType::of(DType::int64, {3, 4}));
  EXPECT_EQ(infer_op("Sum", {a, b, ValueType::of(DType::float32, {})})[0], want);
  try {
    infer_op("Add", {ValueType::of(DType::float32, {2}), ValueType::of(DType::int64, {2})});
    FAIL();
  } catch (const Error& e) {
    std::string message = e.what();
    EXPECT_EQ(e.kind(), ErrorKind::invalid_model);
    EXPECT_NE(message.find("float32"), std::string::npos) << message;
    EXPECT_NE(message.find("int64"), std::string::npos) << message;
  }
  EXPECT_THROW(infer_op("Where", {cond, x64, ValueType::of(DType::float32, {})}, {}, 16), Error);
  EXPECT_THROW(infer_op("Mul", {ValueType::of(DType::float32, {2}), ValueType::of(DType::float32, {3})}), Error);
}

namespace {

/// Runs `graph` through a Session without constant folding; returns outputs and stats.
std::vector<Tensor> run_with_stats(std::unique_ptr<ir::Graph> graph, const std::vector<Tensor>& inputs,
                                   backend::RunStats& stats) {
  runtime::SessionOptions options;
  options.passes = {"verify", "infer"};
  options.num_threads = 2;
  runtime::Session session(std::move(graph), options);
  return session.run(inputs, &stats);
}

}  // namespace

TEST(Broadcast, InPlaceReuseGivesCorrectOutputs) {
  // t = Exp(x) dies in Sub(row, t): the output reuses input 1's buffer while
  // input 0 broadcasts. u = Relu(Sub) dies in Add(u, u) (same buffer twice: no
  // reuse may overwrite it early). Then Neg in place.
  auto g = std::make_unique<ir::Graph>();
  g->opset_imports[""] = 17;
  ir::Node* x = g->add_input("x", ir::ValueType::of(DType::float32, {64, 512}));
  ir::Node* row = g->add_input("row", ir::ValueType::of(DType::float32, {512}));
  ir::Node* t = g->add_node("Exp", {x->output(0)}, 1, "exp");
  ir::Node* d = g->add_node("Sub", {row->output(0), t->output(0)}, 1, "sub");
  ir::Node* u = g->add_node("Relu", {d->output(0)}, 1, "relu");
  ir::Node* s = g->add_node("Add", {u->output(0), u->output(0)}, 1, "add");
  ir::Node* n = g->add_node("Neg", {s->output(0)}, 1, "neg");
  ir::Node* m = g->add_node("Max", {n->output(0), row->output(0), x->output(0)}, 1, "max");
  g->add_output(m->output(0), "y");
  Tensor xv = random_tensor({64, 512}, 21);
  Tensor rv = random_tensor({512}, 22);
  Tensor x_copy = xv.clone();
  backend::RunStats stats;
  Tensor y = run_with_stats(std::move(g), {xv, rv}, stats)[0];
  Tensor want(DType::float32, {64, 512});
  for (int64_t i = 0; i < 64; ++i)
    for (int64_t j = 0; j < 512; ++j) {
      float xe = x_copy.data<float>()[i * 512 + j], r = rv.data<float>()[j];
      float relu = std::max(r - std::exp(xe), 0.0f);
      want.data<float>()[i * 512 + j] = std::max(std::max(-(relu + relu), r), xe);
    }
  expect_close(y, want);
  // Graph inputs are never overwritten.
  expect_close(xv, x_copy, 0, 0);
  // Fewer buffers than ops: Relu, Neg and Max run in place.
  EXPECT_LT(stats.memory.allocations, 5u);
  EXPECT_GT(stats.memory.allocations, 0u);
}

TEST(Broadcast, LegacyOpsetsAlignAtAxis) {
  // Opset 6: B of shape [3] placed at axis 1 of A [2,3,4] is read as [3,1].
  Tensor a = random_tensor({2, 3, 4}, 31);
  Tensor b = Tensor::from_vector<float>({10, 20, 30}, {3});
  Tensor y = run_op("Add", {a, b}, attrs({{"broadcast", int64_t{1}}, {"axis", int64_t{1}}}), 6)[0];
  ASSERT_EQ(y.shape(), (Shape{2, 3, 4}));
  for (int64_t i = 0; i < 24; ++i) EXPECT_FLOAT_EQ(y.data<float>()[i], a.data<float>()[i] + 10.0f * (1 + (i / 4) % 3));
  EXPECT_EQ(infer_op("Mul", {ir::ValueType::of(DType::float32, {2, 3, 4}), ir::ValueType::of(DType::float32, {3})},
                     attrs({{"broadcast", int64_t{1}}, {"axis", int64_t{1}}}), 6)[0],
            ir::ValueType::of(DType::float32, {2, 3, 4}));
  EXPECT_THROW(run_op("Add", {a, b}, attrs({{"broadcast", int64_t{1}}, {"axis", int64_t{2}}}), 6), Error);
  // Opset 6 PRelu: a 1-D slope of the channel count is per channel.
  Tensor x = random_tensor({2, 3, 4}, 32);
  Tensor y_prelu = run_op("PRelu", {x, b}, {}, 6)[0];
  for (int64_t i = 0; i < 24; ++i) {
    float v = x.data<float>()[i];
    EXPECT_FLOAT_EQ(y_prelu.data<float>()[i], v < 0 ? v * 10.0f * (1 + (i / 4) % 3) : v);
  }
}
