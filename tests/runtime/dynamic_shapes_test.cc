// Sessions whose input shapes vary: specialized plans up to the limit, the
// shape-generic plan beyond it (docs/dynamic-shapes.md), checked against a
// session on the reference kernels alone.
#include <gtest/gtest.h>

#include <string>

#include "graft/runtime/session.h"
#include "support/graph_runner.h"
#include "support/scoped_env.h"

using namespace graft;
using namespace graft::ir;
using graft::testing::expect_close;
using graft::testing::random_tensor;
using graft::testing::ScopedEnv;

namespace {

/// x [b?, t?, 8] -> MatMul(w [8, 16]) + bias -> Relu -> Reshape to [-1, 16] ->
/// Softmax, and the shape arithmetic an exporter writes around a Reshape
/// (Shape -> Gather -> Mul): a MatMul that dnnl claims, pointwise ops that
/// fusion takes, shapes that only the inputs decide.
std::unique_ptr<Graph> projection_graph() {
  auto g = std::make_unique<Graph>();
  g->opset_imports[""] = 17;
  Value x = g->add_input("x", ValueType{DType::float32, true, {Dim::symbolic("b"), Dim::symbolic("t"), Dim::known(8)}})
                ->output(0);
  Value w = g->add_constant("w", random_tensor({8, 16}, 11))->output(0);
  Value bias = g->add_constant("bias", random_tensor({16}, 12))->output(0);
  Value h = g->add_node("MatMul", {x, w}, 1, "mm")->output(0);
  h = g->add_node("Relu", {g->add_node("Add", {h, bias}, 1, "add")->output(0)}, 1, "relu")->output(0);
  Value shape = g->add_node("Shape", {x}, 1, "shape")->output(0);
  Value b =
      g->add_node("Gather", {shape, g->add_constant("i0", Tensor::from_vector<int64_t>({0}, {1}))->output(0)}, 1, "b")
          ->output(0);
  Value t =
      g->add_node("Gather", {shape, g->add_constant("i1", Tensor::from_vector<int64_t>({1}, {1}))->output(0)}, 1, "t")
          ->output(0);
  Value rows = g->add_node("Mul", {b, t}, 1, "rows")->output(0);
  Value target =
      g->add_node("Concat", {rows, g->add_constant("c16", Tensor::from_vector<int64_t>({16}, {1}))->output(0)}, 1,
                  "target")
          ->output(0);
  g->nodes().back()->attributes.set("axis", int64_t{0});
  Value flat = g->add_node("Reshape", {h, target}, 1, "flat")->output(0);
  Node* softmax = g->add_node("Softmax", {flat}, 1, "softmax");
  softmax->attributes.set("axis", int64_t{-1});
  g->add_output(softmax->output(0), "y");
  return g;
}

runtime::Session reference_session(std::unique_ptr<Graph> graph) {
  runtime::SessionOptions options;
  options.backends = {"ref"};
  options.fusion = false;
  return runtime::Session(std::move(graph), options);
}

runtime::SessionOptions with_max_plans(int max) {
  runtime::SessionOptions options;
  options.max_specialized_plans = max;
  return options;
}

}  // namespace

TEST(DynamicShapes, ShapesBeyondTheLimitRunOnTheGenericPlan) {
  runtime::Session session(projection_graph(), with_max_plans(2));
  runtime::Session reference = reference_session(projection_graph());
  const std::vector<Shape> shapes = {{1, 5, 8}, {2, 3, 8}, {1, 6, 8}, {3, 1, 8}, {1, 5, 8}, {4, 40, 8}, {2, 3, 8}};
  const std::vector<bool> generic = {false, false, true, true, false, true, false};
  for (size_t i = 0; i < shapes.size(); ++i) {
    Tensor x = random_tensor(shapes[i], 100 + i);
    backend::RunStats stats;
    Tensor y = session.run({x}, &stats)[0];
    SCOPED_TRACE("run " + std::to_string(i) + ", x " + x.type_string());
    EXPECT_EQ(stats.generic_plan, generic[i]);
    expect_close(y, reference.run({x})[0], 1e-5, 1e-6);
    EXPECT_LE(session.num_plans(), 2u);
  }
  EXPECT_EQ(session.num_plans(), 2u);
  EXPECT_EQ(session.num_generic_runs(), 3u);
}

TEST(DynamicShapes, AGenerationLoopMakesNoPlanPerStep) {
  // past [1, p, 4] ++ x [1, 1, 4] along axis 1, scaled: a key-value cache
  // that grows by one row a step, as a decoder's does.
  auto make = [] {
    auto g = std::make_unique<Graph>();
    g->opset_imports[""] = 17;
    Value past =
        g->add_input("past", ValueType{DType::float32, true, {Dim::known(1), Dim::symbolic("p"), Dim::known(4)}})
            ->output(0);
    Value x = g->add_input("x", ValueType::of(DType::float32, {1, 1, 4}))->output(0);
    Node* cat = g->add_node("Concat", {past, x}, 1, "cat");
    cat->attributes.set("axis", int64_t{1});
    Value half = g->add_constant("half", Tensor::from_vector<float>({0.5f}, {}))->output(0);
    g->add_output(g->add_node("Mul", {cat->output(0), half}, 1, "scaled")->output(0), "next");
    return g;
  };
  runtime::Session session(make(), with_max_plans(0));
  runtime::Session reference = reference_session(make());
  Tensor past(DType::float32, {1, 0, 4});
  for (int step = 0; step < 40; ++step) {
    Tensor x = random_tensor({1, 1, 4}, static_cast<uint64_t>(step));
    backend::RunStats stats;
    Tensor next = session.run(std::vector<Tensor>{past, x}, &stats)[0];
    EXPECT_TRUE(stats.generic_plan);
    expect_close(next, reference.run(std::vector<Tensor>{past, x})[0]);
    ASSERT_EQ(next.shape(), (Shape{1, step + 1, 4}));
    past = next;
  }
  EXPECT_EQ(session.num_plans(), 0u);
  EXPECT_EQ(session.num_generic_runs(), 40u);
  // An artifact's plan is specialized whatever the limit.
  runtime::Session::PlannedGraph planned =
      session.plan_for_types({ValueType::of(DType::float32, {1, 3, 4}), ValueType::of(DType::float32, {1, 1, 4})});
  EXPECT_TRUE(planned.graph->inputs()[0]->output_types[0].is_concrete());
  EXPECT_EQ(session.num_plans(), 1u);
}

TEST(DynamicShapes, ARecurringShapeIsSpecializedOnceTheOldPlanGoesUnused) {
  runtime::Session session(projection_graph(), with_max_plans(1));
  runtime::Session reference = reference_session(projection_graph());
  Tensor first = random_tensor({1, 2, 8}, 1), recurring = random_tensor({2, 7, 8}, 2);
  backend::RunStats stats;
  session.run({first}, &stats);
  EXPECT_FALSE(stats.generic_plan);
  size_t generic_runs = 0;
  for (int i = 0; i < 80; ++i) {
    Tensor y = session.run({recurring}, &stats)[0];
    generic_runs += stats.generic_plan;
    if (i % 20 == 0) expect_close(y, reference.run({recurring})[0]);
  }
  EXPECT_FALSE(stats.generic_plan);  // specialized by now
  EXPECT_GE(generic_runs, 60u);
  EXPECT_LT(generic_runs, 80u);
  EXPECT_EQ(session.num_plans(), 1u);
  session.run({first}, &stats);  // its plan was dropped
  EXPECT_TRUE(stats.generic_plan);
}

TEST(DynamicShapes, FixedShapesAlwaysGetTheirOnePlan) {
  auto g = projection_graph();
  g->inputs()[0]->output_types[0] = ValueType::of(DType::float32, {2, 3, 8});
  runtime::Session session(std::move(g), with_max_plans(0));
  backend::RunStats stats;
  for (int i = 0; i < 3; ++i) session.run({random_tensor({2, 3, 8}, 5)}, &stats);
  EXPECT_FALSE(stats.generic_plan);
  EXPECT_EQ(session.num_plans(), 1u);
  EXPECT_EQ(session.num_generic_runs(), 0u);
}

TEST(DynamicShapes, ThePlanLimitComesFromTheOptionOrGraftMaxPlans) {
  {
    ScopedEnv env("GRAFT_MAX_PLANS", "1");
    runtime::Session session(projection_graph());
    for (int64_t t = 1; t <= 4; ++t) session.run({random_tensor({1, t, 8}, 3)});
    EXPECT_EQ(session.num_plans(), 1u);
    EXPECT_EQ(session.num_generic_runs(), 3u);
    runtime::Session overridden(projection_graph(), with_max_plans(3));  // the option wins
    for (int64_t t = 1; t <= 4; ++t) overridden.run({random_tensor({1, t, 8}, 3)});
    EXPECT_EQ(overridden.num_plans(), 3u);
  }
  {
    ScopedEnv env("GRAFT_MAX_PLANS", nullptr);
    EXPECT_EQ(runtime::max_specialized_plans(std::nullopt), runtime::SessionOptions::kDefaultMaxSpecializedPlans);
  }
  for (const char* bad : {"abc", "-1", "1025", "3x", " ", "99999999999999999999999"}) {
    ScopedEnv env("GRAFT_MAX_PLANS", bad);
    try {
      runtime::Session session(projection_graph());
      FAIL() << "GRAFT_MAX_PLANS='" << bad << "' was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::invalid_argument);
      EXPECT_NE(std::string(e.what()).find("GRAFT_MAX_PLANS='" + std::string(bad) + "'"), std::string::npos)
          << e.what();
    }
  }
  try {
    runtime::Session session(projection_graph(), with_max_plans(5000));
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("5000"), std::string::npos) << e.what();
  }
}
