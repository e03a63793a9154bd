// Graphs at the edges of what fusion handles, each run through the fusion
// pass and the JIT (the fuse backend) and compared with the same graph
// unfused on the reference kernels: fused nodes whose outputs have different
// shapes, empty tensors, rank 0, rank 8, iteration spaces larger than every
// input, rows longer than the JIT's blocks with operands broadcast along
// them (1, 4 and 8 bytes), three-way Where broadcasting, integer wrap-around
// and division by zero, a value that is two graph outputs, a graph input
// that is an output, outputs that share no iteration space (known from the
// types, or only at run time), one-element constants of higher rank, IsInf
// detecting neither infinity.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "codegen_test_util.h"
#include "graft/codegen/compile_cache.h"

namespace graft::codegen {
namespace {

using ir::Value;

/// A graph under construction (opset 17).
struct Builder {
  std::unique_ptr<ir::Graph> graph = std::make_unique<ir::Graph>();
  Builder() { graph->opset_imports[""] = 17; }
  Value input(const char* name, const Shape& shape, DType dtype = DType::float32) {
    return graph->add_input(name, ir::ValueType::of(dtype, shape))->output(0);
  }
  Value op(const char* op_type, const std::vector<Value>& inputs) {
    return graph->add_node(op_type, inputs)->output(0);
  }
};

/// graft.FusedPointwise nodes in a session's graph.
size_t fused_node_count(const runtime::Session& session) {
  size_t n = 0;
  for (const auto& node : session.graph().nodes()) n += node->op_type() == "graft.FusedPointwise";
  return n;
}

/// Runs `inputs` through `plain` and twice through `fused` (the first run
/// interprets; the second executes the kernels compiled meanwhile, and must
/// interpret nothing) and expects both fused runs to give the plain outputs.
void expect_runs_match(runtime::Session& fused, runtime::Session& plain, const std::vector<Tensor>& inputs) {
  std::vector<Tensor> want = plain.run(inputs);
  CompileCache& cache = CompileCache::global();
  for (int run = 0; run < 2; ++run) {
    const uint64_t interpreted = cache.counters().interpreted;
    std::vector<Tensor> got = fused.run(inputs);
    if (run == 1 && cpu_jit_unavailable_reason().empty()) {
      EXPECT_EQ(cache.counters().interpreted, interpreted) << "not compiled";
    }
    cache.wait_for_background_compiles();
    ASSERT_EQ(got.size(), want.size());
    for (size_t k = 0; k < got.size(); ++k) {
      EXPECT_EQ(got[k].shape(), want[k].shape()) << "run " << run << ", output " << k;
      EXPECT_TRUE(graft::testing::close_enough(got[k], want[k], 1e-5, 1e-6)) << "run " << run << ", output " << k;
    }
  }
}

/// Runs the graph with fusion on and off, on random inputs of the graph's
/// input shapes, and expects fused nodes and equal outputs.
void expect_fused_run_matches(Builder& b) {
  ops::infer_types(*b.graph);
  std::vector<Tensor> inputs;
  uint64_t seed = 1;
  for (const ir::Node* in : b.graph->inputs())
    inputs.push_back(
        graft::testing::random_of(in->output_types[0].dtype, *in->output_types[0].concrete_shape(), seed++));
  runtime::SessionOptions on = graft::testing::reference_options({"verify", "infer"}), off = on;
  on.fusion = true;
  runtime::Session fused(b.graph->clone(), on), plain(b.graph->clone(), off);
  EXPECT_GT(fused_node_count(fused), 0u);
  expect_runs_match(fused, plain, inputs);
}

TEST(FusionEdgeCases, OutputsOfDifferentShapes) {
  // relu(x) is read outside ([5]) and broadcast inside against y ([4, 5]).
  Builder b;
  Value x = b.input("x", {5}), y = b.input("y", {4, 5});
  Value a = b.op("Relu", {x});
  b.graph->add_output(a, "a");
  b.graph->add_output(b.op("Tanh", {b.op("Add", {a, y})}), "t");
  expect_fused_run_matches(b);
}

TEST(FusionEdgeCases, AnOutputSmallerThanTheIterationSpaceInBothDimensions) {
  Builder b;
  Value x = b.input("x", {1, 5}), y = b.input("y", {4, 1});
  Value e = b.op("Exp", {b.op("Neg", {x})});
  b.graph->add_output(e, "e");
  b.graph->add_output(b.op("Sigmoid", {b.op("Mul", {e, y})}), "s");
  expect_fused_run_matches(b);
}

TEST(FusionEdgeCases, OutputsThatShareNoIterationSpace) {
  // y = -s feeds Max(y, x[2,3]) and Sub(z[4,5], y): one fused node whose
  // outputs [2,3] and [4,5] do not broadcast together (it used to fail with
  // "shapes [2,3] and [4,5] cannot be broadcast"); it runs as one kernel per
  // output group. A third output, [4,1] * y, shares the [4,5] group.
  Builder b;
  Value s = b.input("s", {}), x = b.input("x", {2, 3}), z = b.input("z", {4, 5}), w = b.input("w", {4, 1});
  Value y = b.op("Neg", {s});
  b.graph->add_output(b.op("Max", {y, x}), "a");
  b.graph->add_output(b.op("Sub", {z, y}), "b");
  b.graph->add_output(b.op("Mul", {w, y}), "c");
  expect_fused_run_matches(b);
}

TEST(FusionEdgeCases, OutputsThatNeverShareAnIterationSpaceCompileOnlyTheirGroupsKernels) {
  // y = exp(s) read by Max(y, x[2,3]) and Sub(z[4,5], y): every run splits
  // the fused node's kernel in two, so the kernel computing both outputs is
  // never asked of the compile cache (it used to be compiled, and never run).
  Builder b;
  Value s = b.input("s", {}), x = b.input("x", {2, 3}), z = b.input("z", {4, 5});
  Value y = b.op("Exp", {s});
  b.graph->add_output(b.op("Max", {y, x}), "a");
  b.graph->add_output(b.op("Sub", {z, y}), "b");
  ops::infer_types(*b.graph);
  runtime::SessionOptions on = graft::testing::reference_options({"verify", "infer"});
  on.fusion = true;
  CompileCache& cache = CompileCache::global();
  cache.wait_for_background_compiles();
  auto lookups = [&] {
    const CompileCounters& c = cache.counters();
    return c.compiles + c.memory_hits + c.disk_hits + c.interpreted;
  };
  const uint64_t before = lookups();
  {
    runtime::Session fused(b.graph->clone(), on);
    ASSERT_EQ(fused_node_count(fused), 1u);
    const std::vector<Tensor> inputs = {graft::testing::random_of(DType::float32, {}, 1),
                                        graft::testing::random_of(DType::float32, {2, 3}, 2),
                                        graft::testing::random_of(DType::float32, {4, 5}, 3)};
    for (int run = 0; run < 3; ++run) {
      fused.run(inputs);
      cache.wait_for_background_compiles();
    }
  }
  EXPECT_EQ(lookups() - before, 2u) << "one kernel per output group, none for both outputs";
}

TEST(FusionEdgeCases, OutputsThatShareNoIterationSpaceOnlyAtRunTime) {
  // The same with symbolic dimensions: the fusion pass cannot tell from the
  // types, and the shapes given at run time decide.
  Builder b;
  Value s = b.input("s", {});
  ir::ValueType xt = ir::ValueType::of(DType::float32, {1, 1}), zt = xt;
  xt.dims = {ir::Dim::symbolic("m"), ir::Dim::symbolic("n")};
  zt.dims = {ir::Dim::symbolic("p"), ir::Dim::symbolic("q")};
  Value x = b.graph->add_input("x", xt)->output(0), z = b.graph->add_input("z", zt)->output(0);
  Value y = b.op("Sigmoid", {b.op("Neg", {s})});
  b.graph->add_output(b.op("Max", {y, x}), "a");
  b.graph->add_output(b.op("Sub", {z, y}), "b");
  ops::infer_types(*b.graph);
  runtime::SessionOptions on = graft::testing::reference_options({"verify", "infer"}), off = on;
  on.fusion = true;
  runtime::Session fused(b.graph->clone(), on), plain(b.graph->clone(), off);
  EXPECT_EQ(fused_node_count(fused), 1u);
  for (const auto& [xs, zs] : std::vector<std::pair<Shape, Shape>>{{{2, 3}, {4, 5}}, {{4, 5}, {4, 5}}, {{3, 1}, {1, 7}}}) {
    expect_runs_match(fused, plain,
                      {graft::testing::random_of(DType::float32, {}, 1), graft::testing::random_of(DType::float32, xs, 2),
                       graft::testing::random_of(DType::float32, zs, 3)});
  }
}

TEST(FusionEdgeCases, OneElementConstantsOfHigherRank) {
  // A one-element constant goes into the fused kernel as a scalar, unless
  // its rank is what gives a member's result its rank: x[3] + c[1,1] is
  // [1,3] (it came out [3]), s[] * k[1] is [1]. The same c beside a rank-2
  // operand adds no rank and may stay a scalar.
  Builder b;
  Value x = b.input("x", {3}), s = b.input("s", {}), m = b.input("m", {2, 3});
  Value c = b.graph->add_constant("c", Tensor::from_vector<float>({2.0f}, {1, 1}))->output(0);
  Value k = b.graph->add_constant("k", Tensor::from_vector<float>({-1.5f}, {1}))->output(0);
  b.graph->add_output(b.op("Relu", {b.op("Add", {x, c})}), "raised");
  b.graph->add_output(b.op("Tanh", {b.op("Mul", {s, k})}), "scalar_raised");
  b.graph->add_output(b.op("Sigmoid", {b.op("Sub", {m, c})}), "not_raised");
  expect_fused_run_matches(b);
}

TEST(FusionEdgeCases, IsInfDetectingNeitherInfinityKeepsTheShape) {
  // IsInf with both detections off is false everywhere, in x's shape (it
  // came out as a scalar: the kernel's expression read no input).
  Builder b;
  Value x = b.input("x", {4, 5});
  ir::Node* is_inf = b.graph->add_node("IsInf", {b.op("Relu", {x})});
  is_inf->attributes.set("detect_negative", int64_t{0});
  is_inf->attributes.set("detect_positive", int64_t{0});
  b.graph->add_output(b.op("Not", {is_inf->output(0)}), "none");
  expect_fused_run_matches(b);
}

TEST(FusionEdgeCases, ActivationsKeepNaNInFusedKernels) {
  // The kernels' Celu and HardSigmoid keep a NaN, as the reference kernels
  // now do (their clamps used to turn it into 0 and 1).
  Builder b;
  Value x = b.input("x", {64});
  Value celu = b.op("Celu", {x}), hard = b.op("HardSigmoid", {x});
  b.graph->add_output(b.op("Add", {celu, hard}), "sum");
  ops::infer_types(*b.graph);
  Tensor in = graft::testing::random_of(DType::float32, {64}, 3);
  for (int64_t i : {0, 17, 40, 63}) in.data<float>()[i] = std::numeric_limits<float>::quiet_NaN();
  runtime::SessionOptions on = graft::testing::reference_options({"verify", "infer"});
  on.fusion = true;
  runtime::Session fused(b.graph->clone(), on);
  fused.run({in});
  CompileCache::global().wait_for_background_compiles();
  Tensor got = fused.run({in})[0];
  for (int64_t i = 0; i < 64; ++i)
    EXPECT_EQ(std::isnan(got.data<float>()[i]), std::isnan(in.data<float>()[i])) << i << " " << got.data<float>()[i];
}

TEST(FusionEdgeCases, EmptyTensors) {
  Builder b;
  Value x = b.input("x", {0, 5}), y = b.input("y", {5});
  b.graph->add_output(b.op("Tanh", {b.op("Add", {b.op("Neg", {x}), y})}), "t");
  expect_fused_run_matches(b);
}

TEST(FusionEdgeCases, RankZero) {
  Builder b;
  Value x = b.input("x", {}), y = b.input("y", {});
  b.graph->add_output(b.op("Tanh", {b.op("Add", {b.op("Neg", {x}), y})}), "t");
  expect_fused_run_matches(b);
}

TEST(FusionEdgeCases, RankEightBroadcasting) {
  Builder b;
  Value x = b.input("x", {2, 1, 2, 1, 2, 1, 2, 3}), y = b.input("y", {1, 2, 1, 2, 1, 2, 1, 3});
  b.graph->add_output(b.op("Tanh", {b.op("Add", {b.op("Neg", {x}), y})}), "t");
  expect_fused_run_matches(b);
}

TEST(FusionEdgeCases, IterationSpaceLargerThanEveryInput) {
  Builder b;
  Value x = b.input("x", {37, 1}), y = b.input("y", {1, 1031});
  b.graph->add_output(b.op("Tanh", {b.op("Mul", {b.op("Neg", {x}), y})}), "t");
  expect_fused_run_matches(b);
}

TEST(FusionEdgeCases, ScalarAgainstALargeTensor) {
  Builder b;
  Value x = b.input("x", {}), y = b.input("y", {3, 70001});
  b.graph->add_output(b.op("Sqrt", {b.op("Abs", {b.op("Sub", {x, y})})}), "t");
  expect_fused_run_matches(b);
}

TEST(FusionEdgeCases, WhereBroadcastsAllThreeInputs) {
  Builder b;
  Value c = b.input("c", {4, 1, 1}, DType::boolean), x = b.input("x", {1, 3, 1}), y = b.input("y", {1, 1, 5});
  b.graph->add_output(b.op("Abs", {b.op("Where", {c, b.op("Neg", {x}), b.op("Exp", {y})})}), "t");
  expect_fused_run_matches(b);
}

TEST(FusionEdgeCases, LayerNormTailWithRowsLongerThanABlock) {
  // Mean and variance are broadcast along each row (the JIT fills their
  // block once per row): rows of 1030 are four blocks of 256 and a tail.
  Builder b;
  Value x = b.input("x", {5, 1030}), m = b.input("m", {5, 1}), v = b.input("v", {5, 1});
  Value g = b.input("g", {1030}), beta = b.input("beta", {1030});
  Value deviation = b.op("Sqrt", {b.op("Abs", {v})});
  Value normalized = b.op("Div", {b.op("Sub", {x, m}), deviation});
  b.graph->add_output(b.op("Add", {b.op("Mul", {normalized, g}), beta}), "y");
  expect_fused_run_matches(b);
}

TEST(FusionEdgeCases, OneByteAndEightByteOperandsBroadcastAlongLongRows) {
  Builder b;
  Value c = b.input("c", {3, 1}, DType::boolean), x = b.input("x", {3, 700}, DType::int64);
  Value y = b.input("y", {3, 1}, DType::int64);
  b.graph->add_output(b.op("Mul", {b.op("Where", {c, b.op("Neg", {x}), y}), x}), "t");
  expect_fused_run_matches(b);
}

TEST(FusionEdgeCases, IntegerWrapAroundAndDivisionByZero) {
  Builder b;
  Value x = b.input("x", {64}, DType::int32), y = b.input("y", {64}, DType::int32);
  Value m = b.op("Mul", {x, y});
  b.graph->add_output(b.op("Add", {b.op("Div", {m, b.op("Sub", {y, y})}), m}), "t");
  expect_fused_run_matches(b);
}

TEST(FusionEdgeCases, OneValueIsTwoGraphOutputsAndAnInputIsAnOutput) {
  Builder b;
  Value x = b.input("x", {3, 4});
  Value p = b.op("Mul", {x, x});
  b.graph->add_output(b.op("Relu", {b.op("Add", {p, x})}), "r");
  b.graph->add_output(p, "p");
  b.graph->add_output(p, "p_again");
  b.graph->add_output(x, "x_again");
  expect_fused_run_matches(b);
}

}  // namespace
}  // namespace graft::codegen
