// The Reduce* ops over every axes subset of a rank-4 tensor, with keepdims on
// and off, axes as attribute (old opsets) and as input (new opsets), against a
// naive reference; integer dtypes, empty sets, noop_with_empty_axes, inference.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "ops/math_op_runner.h"

using namespace graft;
using namespace graft::testing;

namespace {

struct ReduceRef {
  std::string op;
  std::function<double(const std::vector<double>&)> fn;
};

double sum_of(const std::vector<double>& v, const std::function<double(double)>& f) {
  double s = 0;
  for (double x : v) s += f(x);
  return s;
}

const std::vector<ReduceRef>& reference_ops() {
  static const std::vector<ReduceRef> ops = {
      {"ReduceSum", [](const auto& v) { return sum_of(v, [](double x) { return x; }); }},
      {"ReduceSumSquare", [](const auto& v) { return sum_of(v, [](double x) { return x * x; }); }},
      {"ReduceMean", [](const auto& v) { return sum_of(v, [](double x) { return x; }) / v.size(); }},
      {"ReduceL1", [](const auto& v) { return sum_of(v, [](double x) { return std::abs(x); }); }},
      {"ReduceL2", [](const auto& v) { return std::sqrt(sum_of(v, [](double x) { return x * x; })); }},
      {"ReduceLogSum", [](const auto& v) { return std::log(sum_of(v, [](double x) { return x; })); }},
      {"ReduceLogSumExp", [](const auto& v) { return std::log(sum_of(v, [](double x) { return std::exp(x); })); }},
      {"ReduceMax", [](const auto& v) { return *std::max_element(v.begin(), v.end()); }},
      {"ReduceMin", [](const auto& v) { return *std::min_element(v.begin(), v.end()); }},
      {"ReduceProd",
       [](const auto& v) {
         double p = 1;
         for (double x : v) p *= x;
         return p;
       }},
  };
  return ops;
}

/// Reference reduction of x over `axes` (a bit mask), in double.
Tensor reference_reduce(const Tensor& x, unsigned mask, bool keepdims, const ReduceRef& ref) {
  const Shape& s = x.shape();
  Shape out_shape, kept_shape;
  for (size_t d = 0; d < s.size(); ++d) {
    bool reduced = mask & (1u << d);
    if (!reduced)
      out_shape.push_back(s[d]);
    else if (keepdims)
      out_shape.push_back(1);
    kept_shape.push_back(reduced ? 1 : s[d]);
  }
  std::vector<std::vector<double>> groups(static_cast<size_t>(shape_numel(kept_shape)));
  auto strides = shape_strides(s), kept_strides = shape_strides(kept_shape);
  for (int64_t i = 0; i < x.numel(); ++i) {
    int64_t rest = i, k = 0;
    for (size_t d = 0; d < s.size(); ++d) {
      int64_t c = rest / strides[d];
      rest %= strides[d];
      if (!(mask & (1u << d))) k += c * kept_strides[d];
    }
    groups[static_cast<size_t>(k)].push_back(x.value_as_double(i));
  }
  Tensor y(DType::float32, out_shape);
  for (size_t k = 0; k < groups.size(); ++k) y.data<float>()[k] = static_cast<float>(ref.fn(groups[k]));
  return y;
}

std::vector<int64_t> axes_of(unsigned mask, int rank, bool negative) {
  std::vector<int64_t> axes;
  for (int d = 0; d < rank; ++d)
    if (mask & (1u << d)) axes.push_back(negative && d % 2 ? d - rank : d);
  return axes;
}

}  // namespace

TEST(Reduce, AllOpsAllAxesBothOpsetStyles) {
  // Positive values keep LogSum defined.
  Tensor x(DType::float32, {2, 3, 4, 5});
  Tensor r = random_tensor({2, 3, 4, 5}, 5);
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = 0.55f + 0.5f * r.data<float>()[i];
  for (const ReduceRef& ref : reference_ops()) {
    for (unsigned mask = 1; mask < 16; ++mask) {
      for (int keepdims = 0; keepdims < 2; ++keepdims) {
        SCOPED_TRACE(ref.op + " mask " + std::to_string(mask) + " keepdims " + std::to_string(keepdims));
        Tensor want = reference_reduce(x, mask, keepdims, ref);
        std::vector<int64_t> axes = axes_of(mask, 4, mask % 3 == 0);
        // Attribute style (opset 11).
        Tensor got = run_op(ref.op, {x}, attrs({{"axes", axes}, {"keepdims", int64_t{keepdims}}}), 11)[0];
        expect_close(got, want, 2e-5, 1e-5);
        // Input style (opset 18).
        got = run_op(ref.op, {x, Tensor::from_vector<int64_t>(axes, {static_cast<int64_t>(axes.size())})},
                     attrs({{"keepdims", int64_t{keepdims}}}), 18)[0];
        expect_close(got, want, 2e-5, 1e-5);
      }
    }
  }
}

TEST(Reduce, EmptyAxesReduceAllOrNoop) {
  Tensor x = random_tensor({3, 4}, 1);
  double total = 0;
  for (int64_t i = 0; i < 12; ++i) total += x.data<float>()[i];
  Tensor y = run_op("ReduceSum", {x}, {}, 11)[0];
  EXPECT_EQ(y.shape(), (Shape{1, 1}));
  EXPECT_NEAR(y.data<float>()[0], total, 1e-5);
  Tensor empty_axes = Tensor::from_vector<int64_t>({}, {0});
  y = run_op("ReduceSum", {x, empty_axes}, attrs({{"keepdims", int64_t{0}}}), 13)[0];
  EXPECT_EQ(y.shape(), Shape{});
  EXPECT_NEAR(y.data<float>()[0], total, 1e-5);
  y = run_op("ReduceSum", {x, empty_axes}, attrs({{"noop_with_empty_axes", int64_t{1}}}), 13)[0];
  expect_close(y, x);
  y = run_op("ReduceMean", {x, Tensor()}, attrs({{"noop_with_empty_axes", int64_t{1}}}), 18)[0];
  expect_close(y, x);
}

TEST(Reduce, NoopWithEmptyAxesReducesEachElementAlone) {
  // Reducing over no axis is each element on its own: x for the sums, means
  // and extremes, but |x| for L1 and L2, x * x for SumSquare, log(x) for
  // LogSum (ONNX's reference and ONNX Runtime; graft returned x for all).
  Tensor x = Tensor::from_vector<float>({0.5f, -2.0f, 3.0f, -0.25f}, {2, 2});
  Tensor positive = Tensor::from_vector<float>({0.5f, 2.0f, 3.0f, 0.25f}, {2, 2});
  ir::Attributes noop = attrs({{"noop_with_empty_axes", int64_t{1}}});
  auto each = [](const Tensor& t, double (*f)(double)) {
    Tensor out(DType::float32, t.shape());
    for (int64_t i = 0; i < t.numel(); ++i) out.data<float>()[i] = static_cast<float>(f(t.data<float>()[i]));
    return out;
  };
  expect_close(run_op("ReduceSumSquare", {x, Tensor()}, noop, 18)[0], each(x, [](double v) { return v * v; }));
  expect_close(run_op("ReduceL1", {x, Tensor()}, noop, 18)[0], each(x, [](double v) { return std::abs(v); }));
  expect_close(run_op("ReduceL2", {x, Tensor()}, noop, 18)[0], each(x, [](double v) { return std::abs(v); }));
  expect_close(run_op("ReduceLogSum", {positive, Tensor()}, noop, 18)[0], each(positive, [](double v) { return std::log(v); }));
  expect_close(run_op("ReduceLogSumExp", {x, Tensor()}, noop, 18)[0], x);
  for (const char* op : {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd"})
    expect_close(run_op(op, {x, Tensor::from_vector<int64_t>({}, {0})}, noop, 18)[0], x);
}

TEST(Reduce, IntegerDtypesAndEmptySets) {
  Tensor xi = Tensor::from_vector<int64_t>({1, -2, 3, 4, 5, -6}, {2, 3});
  Tensor axes = Tensor::from_vector<int64_t>({1}, {1});
  auto run = [&](const std::string& op, const Tensor& x) {
    return run_op(op, {x, axes}, attrs({{"keepdims", int64_t{0}}}), 18)[0];
  };
  EXPECT_EQ(run("ReduceSum", xi).to_int64_vector(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(run("ReduceProd", xi).to_int64_vector(), (std::vector<int64_t>{-6, -120}));
  EXPECT_EQ(run("ReduceMax", xi).to_int64_vector(), (std::vector<int64_t>{3, 5}));
  EXPECT_EQ(run("ReduceMin", xi).to_int64_vector(), (std::vector<int64_t>{-2, -6}));
  EXPECT_EQ(run("ReduceMean", xi).to_int64_vector(), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(run("ReduceL1", xi).to_int64_vector(), (std::vector<int64_t>{6, 15}));
  Tensor x32 = Tensor::from_vector<int32_t>({7, 1, 9, 2}, {2, 2});
  Tensor y32 = run("ReduceMax", x32);
  EXPECT_EQ(y32.dtype(), DType::int32);
  EXPECT_EQ(y32.to_int64_vector(), (std::vector<int64_t>{7, 9}));
  Tensor x8 = Tensor::from_vector<uint8_t>({7, 1, 9, 200}, {2, 2});
  EXPECT_EQ(run("ReduceMin", x8).to_int64_vector(), (std::vector<int64_t>{1, 9}));
  // Reducing an axis of extent 0 gives the identity.
  Tensor empty(DType::float32, {2, 0});
  EXPECT_EQ(run("ReduceSum", empty).value_as_double(0), 0.0);
  EXPECT_EQ(run("ReduceProd", empty).value_as_double(1), 1.0);
  EXPECT_EQ(run("ReduceMax", empty).value_as_double(0), -INFINITY);
  EXPECT_EQ(run("ReduceLogSumExp", empty).value_as_double(0), -INFINITY);
  // float16 and float64 go through their compute types.
  Tensor xh(DType::float16, {2, 2});
  for (int i = 0; i < 4; ++i) xh.data<float16_t>()[i] = float16_t(static_cast<float>(i) + 0.5f);
  EXPECT_EQ(to_float(run("ReduceSum", xh)).values<float>()[1], 6.0f);
  Tensor xd = Tensor::from_vector<double>({1e300, 1e300, 1, 2}, {2, 2});
  EXPECT_NEAR(run("ReduceLogSumExp", xd).value_as_double(1), std::log(std::exp(1.0) + std::exp(2.0)), 1e-12);
  EXPECT_THROW(run_op("ReduceSum", {xi, Tensor::from_vector<int64_t>({2}, {1})}, {}, 13), Error);
  EXPECT_THROW(run_op("ReduceSum", {xi, Tensor::from_vector<int64_t>({1, -1}, {2})}, {}, 13), Error);
}

TEST(Reduce, MaxAndMinOfBoolAreAnyAndAll) {
  // Opset 20: ReduceMax and ReduceMin take bool. Other reductions of bool
  // are errors (they used to leave the output unwritten).
  std::vector<bool> values = {true, false, false, false, false, false, true, true, true};
  Tensor x(DType::boolean, {3, 3});
  for (size_t i = 0; i < values.size(); ++i) x.data<bool>()[i] = values[i];
  Tensor axes = Tensor::from_vector<int64_t>({1}, {1});
  ir::Attributes no_keepdims;
  no_keepdims.set("keepdims", int64_t{0});
  Tensor any = run_op("ReduceMax", {x, axes}, no_keepdims, 20)[0];
  Tensor all = run_op("ReduceMin", {x, axes}, no_keepdims, 20)[0];
  ASSERT_EQ(any.shape(), Shape({3}));
  ASSERT_EQ(all.dtype(), DType::boolean);
  const bool want_any[] = {true, false, true}, want_all[] = {false, false, true};
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(any.data<bool>()[i], want_any[i]) << i;
    EXPECT_EQ(all.data<bool>()[i], want_all[i]) << i;
  }
  EXPECT_THROW(run_op("ReduceSum", {x, axes}, no_keepdims, 20), Error);
}

TEST(Reduce, LogSumExpIsStable) {
  Tensor x = Tensor::from_vector<float>({1000, 1000, -1000, -1000}, {2, 2});
  Tensor y = run_op("ReduceLogSumExp", {x}, attrs({{"axes", std::vector<int64_t>{1}}}), 13)[0];
  EXPECT_NEAR(y.data<float>()[0], 1000 + std::log(2.0), 1e-3);
  EXPECT_NEAR(y.data<float>()[1], -1000 + std::log(2.0), 1e-3);
}

TEST(Reduce, InfersShapesWithConstantAndUnknownAxes) {
  ir::ValueType x{DType::float32, true, {sym("N"), dim(3), sym("S"), dim(5)}};
  auto t = infer_op("ReduceMean", {x}, attrs({{"axes", std::vector<int64_t>{1, -1}}}), 13);
  EXPECT_EQ(t[0], (ir::ValueType{DType::float32, true, {sym("N"), dim(1), sym("S"), dim(1)}}));
  t = infer_op("ReduceSum", {x, ir::ValueType::of(DType::int64, {1})}, attrs({{"keepdims", int64_t{0}}}), 13, 1,
               {{1, Tensor::from_vector<int64_t>({2}, {1})}});
  EXPECT_EQ(t[0], (ir::ValueType{DType::float32, true, {sym("N"), dim(3), dim(5)}}));
  t = infer_op("ReduceSum", {x, ir::ValueType::of(DType::int64, {1})}, {}, 13);
  EXPECT_TRUE(t[0].has_rank);
  EXPECT_EQ(t[0].dims.size(), 4u);
  EXPECT_FALSE(t[0].dims[1].is_known());
  t = infer_op("ReduceSum", {x, ir::ValueType::of(DType::int64, {1})}, attrs({{"keepdims", int64_t{0}}}), 13);
  EXPECT_FALSE(t[0].has_rank);
  t = infer_op("ReduceMax", {x}, {}, 11);
  EXPECT_EQ(t[0], (ir::ValueType{DType::float32, true, {dim(1), dim(1), dim(1), dim(1)}}));
}
