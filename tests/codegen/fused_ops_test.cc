// Every fusible op x every kernel dtype it accepts, with and without
// broadcasting, fused alone, through the JIT and the interpreter, against the
// reference kernels on the unfused graph.
#include <gtest/gtest.h>

#include <cstdlib>

#include "op_cases.h"
#include "graft/codegen/compile_cache.h"

namespace graft::codegen {
namespace {

using graft::testing::close_enough;
using graft::testing::random_of;
using graft::testing::wrap_fused;
using namespace graft::testing;

/// Tolerances of the JIT's approximations (docs/codegen.md); exact elsewhere.
/// float16 results are float32 ones rounded: one float16 step apart at most.
double rtol_for(DType t) { return t == f32 ? 2e-5 : t == f64 ? 1e-12 : t == f16 ? 1e-3 : 0; }
double atol_for(DType t) { return t == f32 ? 1e-6 : t == f64 ? 1e-14 : t == f16 ? 1e-7 : 0; }

/// Runs `g` unfused (reference), fused with GRAFT_JIT=0 and fused with the
/// JIT (a second run, which executes the compiled kernel).
void check_fused(const ir::Graph& g, const std::vector<Tensor>& inputs, const std::string& what) {
  std::vector<Tensor> want = graft::testing::run_reference(g, inputs);
  auto fused = wrap_fused(g);
  for (const char* jit : {"0", "1"}) {
    setenv("GRAFT_JIT", jit, 1);
    std::vector<Tensor> got = graft::testing::run_compiled(*fused, inputs, {"verify"});
    unsetenv("GRAFT_JIT");
    ASSERT_EQ(got.size(), want.size());
    for (size_t k = 0; k < got.size(); ++k) {
      DType t = want[k].dtype();
      // The interpreter computes float16 values as the reference kernels do:
      // in float32 with the same functions, rounded after every op.
      bool exact = t == f16 && jit[0] == '0';
      EXPECT_TRUE(close_enough(got[k], want[k], exact ? 0 : rtol_for(t), exact ? 0 : atol_for(t)))
          << what << " GRAFT_JIT=" << jit;
    }
  }
}

TEST(FusedOps, EveryOpEveryDtypeWithAndWithoutBroadcast) {
  std::vector<graft::testing::BuiltCase> cases = graft::testing::build_op_cases();
  for (const auto& c : cases) {
    const ir::Node& node = *c.graph->outputs()[0].node;
    ASSERT_TRUE(is_fusible(node)) << c.label << ": " << why_not_fusible(node);
    check_fused(*c.graph, c.inputs, c.label);
  }
  EXPECT_GT(cases.size(), 150u);
}

TEST(FusedOps, CastBetweenEveryKernelDtype) {
  for (DType from : {f32, f64, f16, i32, i64, boolean}) {
    for (DType to : {f32, f64, f16, i32, i64, boolean}) {
      ir::Graph g;
      g.opset_imports[""] = 20;
      ir::Node* x = g.add_input("x", ir::ValueType::of(from, {5, 13}));
      ir::Node* n = g.add_node("Cast", {x->output(0)}, 1, "cast");
      n->attributes.set("to", int64_t(static_cast<int>(to)));
      g.add_output(n->output(0), "y");
      ops::infer_types(g);
      if (from == f64 && to == f16) {
        // Through float32 it would round twice where the reference rounds once.
        EXPECT_FALSE(is_fusible(*n)) << "Cast float64->float16";
        continue;
      }
      Tensor input = random_of(from, {5, 13}, 7, from == f16 ? -6e4 : -1e10, from == f16 ? 6e4 : 1e10);
      if (from == f32 || from == f64 || from == f16) {  // NaN, infinities, out-of-range and fractional values
        double specials[] = {NAN, INFINITY, -INFINITY, 3e19, -3e19, 2.5, -2.5, 0.0, -0.7, 2147483648.0, 1e300};
        for (int i = 0; i < 11; ++i) {
          if (from == f32) input.data<float>()[i] = static_cast<float>(specials[i]);
          else if (from == f16) input.data<float16_t>()[i] = float16_t(static_cast<float>(specials[i]));
          else input.data<double>()[i] = specials[i];
        }
      }
      if (to == f16 && from != boolean) {
        // Between float16 steps, halfway between them (ties to even), at and
        // beyond the largest float16 (65520 rounds to infinity), subnormal.
        const double edges[] = {1.0001220703125, 1.00048828125, 1.00146484375, 65504, 65519.99, 65520, 65536,
                                70000, -65520, 2049, 2051, 4097, 4098, -2051, 6e-8, 3e-8, 1e-8, -1.00048828125};
        int i = 11;
        for (double v : edges) {
          if (from == f32) input.data<float>()[i] = static_cast<float>(v);
          else if (from == f64) input.data<double>()[i] = v;
          else if (from == i32) input.data<int32_t>()[i] = static_cast<int32_t>(std::lround(v));
          else if (from == i64) input.data<int64_t>()[i] = std::lround(v);
          ++i;
        }
      }
      check_fused(g, {input}, std::string("Cast ") + std::string(dtype_name(from)) + "->" + std::string(dtype_name(to)));
    }
  }
}

TEST(FusedOps, WhereAndClipAndPowMixedDtypes) {
  for (DType t : {f32, f64, f16, i32, i64}) {
    ir::Graph g;
    g.opset_imports[""] = 20;
    ir::Node* c = g.add_input("c", ir::ValueType::of(boolean, {4, 1}));
    ir::Node* a = g.add_input("a", ir::ValueType::of(t, {4, 6}));
    ir::Node* b = g.add_input("b", ir::ValueType::of(t, {6}));
    ir::Node* lo = g.add_input("lo", ir::ValueType::of(t, {}));
    ir::Node* where = g.add_node("Where", {c->output(0), a->output(0), b->output(0)}, 1, "where");
    ir::Node* clip = g.add_node("Clip", {where->output(0), lo->output(0)}, 1, "clip");
    ir::Node* clip_both = g.add_node("Clip", {a->output(0), ir::Value{}, lo->output(0)}, 1, "clip_max_only");
    g.add_output(clip->output(0), "y");
    g.add_output(clip_both->output(0), "z");
    ops::infer_types(g);
    check_fused(g, {random_of(boolean, {4, 1}, 1), random_of(t, {4, 6}, 2), random_of(t, {6}, 3), random_of(t, {}, 4, -1, 1)},
                std::string("Where/Clip ") + std::string(dtype_name(t)));
  }
  // Pow with exponent dtypes other than the base's, and negative float bases.
  for (DType base : {f32, f64, f16, i32, i64}) {
    for (DType exponent : {f32, f64, f16, i32, i64}) {
      ir::Graph g;
      g.opset_imports[""] = 20;
      ir::Node* x = g.add_input("x", ir::ValueType::of(base, {3, 8}));
      ir::Node* y = g.add_input("y", ir::ValueType::of(exponent, {8}));
      ir::Node* p = g.add_node("Pow", {x->output(0), y->output(0)}, 1, "pow");
      g.add_output(p->output(0), "y");
      ops::infer_types(g);
      if (base == f16 && exponent != f16) {  // computed in float64, rounded once to float16: not fused
        EXPECT_FALSE(is_fusible(*p)) << "Pow float16^" << dtype_name(exponent);
        continue;
      }
      Tensor xs = random_of(base, {3, 8}, 5, -3, 3);
      Tensor ys = random_of(exponent, {8}, 6, -3, 3);
      if (exponent == f32 || exponent == f64)  // integral float exponents for negative bases
        for (int i = 0; i < 4; ++i) {
          if (exponent == f32) ys.data<float>()[i] = std::round(ys.data<float>()[i]);
          else if (exponent == f16) ys.data<float16_t>()[i] = float16_t(std::round(float(ys.data<float16_t>()[i])));
          else ys.data<double>()[i] = std::round(ys.data<double>()[i]);
        }
      check_fused(g, {xs, ys}, "Pow " + std::string(dtype_name(base)) + "^" + std::string(dtype_name(exponent)));
    }
  }
}

}  // namespace
}  // namespace graft::codegen
