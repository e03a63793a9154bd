// The CPU JIT's transcendental approximations on dense sweeps, against the
// C library in double precision (float32) or long double (float64). The
// bounds asserted here are the ones stated in docs/codegen.md.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <cstdio>
#include <functional>

#include "graft/codegen/compile_cache.h"
#include "graft/backend/buffer_pool.h"

namespace graft::codegen {
namespace {

struct Sweep {
  ir::ExprOp op;
  double lo, hi;
  bool logarithmic;           // points spaced evenly in log(x) (positive ranges)
  double max_ulp_float32;     // bound in units in the last place of the float32 result
  double max_rel_float64;     // bound in relative error of the float64 result
  double abs_floor;           // below this |reference|, compare absolute error to abs_floor * ulp
};

double reference(ir::ExprOp op, long double x, long double y = 0) {
  switch (op) {
    case ir::ExprOp::exp: return static_cast<double>(std::exp(x));
    case ir::ExprOp::expm1: return static_cast<double>(std::expm1(x));
    case ir::ExprOp::log: return static_cast<double>(std::log(x));
    case ir::ExprOp::log1p: return static_cast<double>(std::log1p(x));
    case ir::ExprOp::tanh: return static_cast<double>(std::tanh(x));
    case ir::ExprOp::sigmoid: return static_cast<double>(1.0L / (1.0L + std::exp(-x)));
    case ir::ExprOp::erf: return static_cast<double>(std::erf(x));
    case ir::ExprOp::pow: return static_cast<double>(std::pow(x, y));
    default: return NAN;
  }
}

/// Max error of one op over `n` points of [lo, hi] (binary ops: y sweeps [-4, 4]).
double measure(const Sweep& s, DType dtype, int64_t n) {
  ir::KernelIR ir;
  bool binary = s.op == ir::ExprOp::pow;
  ir.input_dtypes = binary ? std::vector<DType>{dtype, dtype} : std::vector<DType>{dtype};
  int32_t x = ir.add_input(0, dtype);
  int32_t y = binary ? ir.add_op(s.op, dtype, x, ir.add_input(1, dtype)) : ir.add_op(s.op, dtype, x);
  ir.outputs = {y};
  ir = canonicalize(ir);
  auto runner = CompileCache::global().cpu_runner(ir);
  if (std::string(runner->kind()) != "llvm") return -1;
  Tensor xs(dtype, {n}), ys(dtype, {n});
  for (int64_t i = 0; i < n; ++i) {
    double t = static_cast<double>(i) / static_cast<double>(n - 1);
    double v = s.logarithmic ? std::exp(std::log(s.lo) + t * (std::log(s.hi) - std::log(s.lo))) : s.lo + t * (s.hi - s.lo);
    double w = -4 + 8 * std::fmod(static_cast<double>(i) * 0.6180339887, 1.0);
    if (dtype == DType::float32) {
      xs.data<float>()[i] = static_cast<float>(v);
      ys.data<float>()[i] = static_cast<float>(w);
    } else {
      xs.data<double>()[i] = v;
      ys.data<double>()[i] = w;
    }
  }
  backend::BufferPool pool;
  std::vector<Tensor> inputs = binary ? std::vector<Tensor>{xs, ys} : std::vector<Tensor>{xs};
  Tensor out = run_kernel(ir, *runner, inputs, pool)[0];
  double worst = 0;
  for (int64_t i = 0; i < n; ++i) {
    double got = out.value_as_double(i);
    double want = reference(s.op, xs.value_as_double(i), ys.value_as_double(i));
    if (std::isnan(want) && std::isnan(got)) continue;
    if (std::isinf(want) || std::isinf(got)) {
      if (got != want && dtype == DType::float32 && std::abs(want) < 3.4e38) {
        // float32 overflow boundary: the reference in double may be just finite
        if (std::abs(want) > 3.40282e38) continue;
      }
      if (got != want) return INFINITY;
      continue;
    }
    double error;
    if (dtype == DType::float32) {
      double magnitude = std::max(std::abs(want), s.abs_floor);
      double ulp = std::ldexp(1.0, std::ilogb(std::max(magnitude, 1.1754943508222875e-38)) - 23);
      error = std::abs(got - want) / ulp;
    } else {
      error = std::abs(got - want) / std::max(std::abs(want), s.abs_floor);
    }
    worst = std::max(worst, error);
  }
  return worst;
}

TEST(Approximations, MaxErrorWithinStatedBounds) {
  const Sweep sweeps[] = {
      {ir::ExprOp::exp, -103, 88.7, false, 1, 3e-16, 0},
      {ir::ExprOp::expm1, -20, 20, false, 3, 5e-16, 0},
      {ir::ExprOp::log, 1e-40, 3e38, true, 3, 5e-16, 0},
      {ir::ExprOp::log, 0.5, 2, false, 3, 5e-16, 0},
      {ir::ExprOp::log1p, 1e-9, 1e6, true, 4, 7e-16, 0},
      {ir::ExprOp::log1p, -0.999, 1, false, 4, 7e-16, 0},
      {ir::ExprOp::tanh, -12, 12, false, 3.5, 6e-16, 0},
      {ir::ExprOp::tanh, 1e-8, 1, true, 3.5, 6e-16, 0},
      {ir::ExprOp::sigmoid, -80, 80, false, 2.5, 5e-16, 0},
      {ir::ExprOp::erf, -5, 5, false, 0.55, 3e-16, 0},
      {ir::ExprOp::erf, 1e-10, 1, true, 0.55, 3e-16, 0},
      {ir::ExprOp::pow, 1e-3, 1e3, true, 1, 3e-15, 0},
  };
  for (const Sweep& s : sweeps) {
    for (DType dtype : {DType::float32, DType::float64}) {
      double worst = measure(s, dtype, 1 << 18);
      if (worst < 0) GTEST_SKIP() << "the LLVM JIT is not available";
      double bound = dtype == DType::float32 ? s.max_ulp_float32 : s.max_rel_float64;
      std::printf("%-8s %-7s [%g, %g]: max error %.3g %s\n", std::string(to_string(s.op)).c_str(),
                  std::string(dtype_name(dtype)).c_str(), s.lo, s.hi, worst, dtype == DType::float32 ? "ulp" : "rel");
      EXPECT_LE(worst, bound) << to_string(s.op) << " " << dtype_name(dtype) << " on [" << s.lo << ", " << s.hi << "]";
    }
  }
}

/// Error in float32 ulps of the JIT's erf at the given points, against the C
/// library's erf in double.
std::vector<double> erf_ulp_errors(const std::vector<float>& points) {
  ir::KernelIR ir;
  ir.input_dtypes = {DType::float32};
  ir.outputs = {ir.add_op(ir::ExprOp::erf, DType::float32, ir.add_input(0, DType::float32))};
  ir = canonicalize(ir);
  auto runner = CompileCache::global().cpu_runner(ir);
  if (std::string(runner->kind()) != "llvm") return {};
  Tensor xs = Tensor::from_vector(points, {static_cast<int64_t>(points.size())});
  backend::BufferPool pool;
  std::vector<Tensor> inputs = {xs};
  Tensor out = run_kernel(ir, *runner, inputs, pool)[0];
  std::vector<double> errors;
  for (size_t i = 0; i < points.size(); ++i) {
    double got = out.data<float>()[i];
    double want = std::erf(static_cast<double>(points[i]));
    double ulp = std::ldexp(1.0, std::ilogb(std::max(std::abs(want), 1.1754943508222875e-38)) - 23);
    errors.push_back(std::abs(got - want) / ulp);
  }
  return errors;
}

TEST(Approximations, Float32ErfOnEvery256thFloat) {
  // Every 256th float32 of either sign up to 4.5 (beyond 3.92, erf rounds to
  // +-1): 8.5 million points, denormals included.
  std::vector<float> points;
  uint32_t last = std::bit_cast<uint32_t>(4.5f);
  for (uint32_t bits = 0; bits <= last; bits += 256) {
    float x = std::bit_cast<float>(bits);
    points.push_back(x);
    points.push_back(-x);
  }
  std::vector<double> errors = erf_ulp_errors(points);
  if (errors.empty()) GTEST_SKIP() << "the LLVM JIT is not available";
  double worst = 0;
  size_t at = 0;
  for (size_t i = 0; i < errors.size(); ++i)
    if (errors[i] > worst) worst = errors[i], at = i;
  std::printf("erf float32, every 256th float in [-4.5, 4.5]: max error %.3g ulp at %.9g\n", worst, points[at]);
  EXPECT_LE(worst, 0.55) << "at x = " << points[at];
}

TEST(Approximations, Float32ErfSpecialValues) {
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> points = {0.0f, -0.0f, inf, -inf, std::numeric_limits<float>::quiet_NaN(),
                                     1e-45f, -1e-45f, 1e-38f, 3.95f, -3.95f, 4.0f, 4.0001f, 10.0f, -1e30f};
  ir::KernelIR ir;
  ir.input_dtypes = {DType::float32};
  ir.outputs = {ir.add_op(ir::ExprOp::erf, DType::float32, ir.add_input(0, DType::float32))};
  ir = canonicalize(ir);
  auto runner = CompileCache::global().cpu_runner(ir);
  if (std::string(runner->kind()) != "llvm") GTEST_SKIP() << "the LLVM JIT is not available";
  Tensor xs = Tensor::from_vector(points, {static_cast<int64_t>(points.size())});
  backend::BufferPool pool;
  std::vector<Tensor> inputs = {xs};
  Tensor out = run_kernel(ir, *runner, inputs, pool)[0];
  for (size_t i = 0; i < points.size(); ++i) {
    float got = out.data<float>()[i];
    float want = static_cast<float>(std::erf(static_cast<double>(points[i])));
    if (std::isnan(points[i])) {
      EXPECT_TRUE(std::isnan(got));
      continue;
    }
    EXPECT_EQ(got, want) << "erf(" << points[i] << ")";
    EXPECT_EQ(std::signbit(got), std::signbit(points[i])) << "erf(" << points[i] << ")";
  }
}

}  // namespace
}  // namespace graft::codegen
