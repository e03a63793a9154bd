#include <gtest/gtest.h>

#include "graft/ops/type_inference.h"
#include "graft/passes/pass.h"
#include "support/graph_runner.h"

using namespace graft;
using namespace graft::ir;
using graft::testing::expect_close;
using graft::testing::random_tensor;
using graft::testing::run_graph;

namespace {

size_t count_ops(const Graph& g, std::string_view op) {
  size_t n = 0;
  for (const auto& node : g.nodes()) n += node->schema().name == op;
  return n;
}

std::unique_ptr<Graph> apply(const Graph& g, std::vector<std::string> names) {
  auto out = g.clone();
  passes::PassContext ctx;
  ctx.verify_after_each = true;
  passes::run_pipeline(out, names, ctx);
  return out;
}

}  // namespace

TEST(DeadCodeElimination, RemovesUnusedNodesKeepsInputs) {
  Graph g;
  g.opset_imports[""] = 17;
  Node* x = g.add_input("x", ValueType::of(DType::float32, {8}));
  Node* unused_in = g.add_input("unused", ValueType::of(DType::float32, {8}));
  Node* dead = g.add_node("Neg", {unused_in->output(0)}, 1, "dead");
  g.add_node("Relu", {dead->output(0)}, 1, "dead2");
  Node* live = g.add_node("Relu", {x->output(0)}, 1, "live");
  g.add_output(live->output(0), "y");
  auto out = apply(g, {"eliminate-dead-code"});
  EXPECT_EQ(out->num_nodes(), 3u);  // two inputs + live
  EXPECT_EQ(out->inputs().size(), 2u);
  EXPECT_EQ(count_ops(*out, "Neg"), 0u);
  std::vector<Tensor> in = {random_tensor({8}, 1), random_tensor({8}, 2)};
  expect_close(run_graph(*out, in)[0], run_graph(g, in)[0]);
}

TEST(EliminateIdentity, ForwardsAndKeepsOutputName) {
  Graph g;
  g.opset_imports[""] = 17;
  Node* x = g.add_input("x", ValueType::of(DType::float32, {4}));
  Node* id = g.add_node("Identity", {x->output(0)}, 1, "id");
  Node* r = g.add_node("Relu", {id->output(0)}, 1, "r");
  Node* d = g.add_node("Dropout", {r->output(0)}, 1, "drop");
  g.add_output(d->output(0), "y");
  auto out = apply(g, {"eliminate-identity"});
  EXPECT_EQ(count_ops(*out, "Identity"), 0u);
  EXPECT_EQ(count_ops(*out, "Dropout"), 0u);
  EXPECT_EQ(out->output_names()[0], "y");
  std::vector<Tensor> in = {random_tensor({4}, 3)};
  expect_close(run_graph(*out, in)[0], run_graph(g, in)[0]);
}

TEST(EliminateIdentity, RemovesTrainingModeDropoutOnlyWithRatioZero) {
  for (float ratio : {0.0f, 0.25f}) {
    Graph g;
    g.opset_imports[""] = 17;
    Node* x = g.add_input("x", ValueType::of(DType::float32, {4, 3}));
    Node* r = g.add_constant("ratio", Tensor::from_vector<float>({ratio}, {}));
    Node* t = g.add_constant("training", Tensor::from_vector<bool>({true}, {}));
    Node* d = g.add_node("Dropout", {x->output(0), r->output(0), t->output(0)}, 2, "drop");
    d->attributes.set("seed", int64_t{5});
    g.add_output(g.add_node("Relu", {d->output(0)}, 1, "relu")->output(0), "y");
    auto out = apply(g, {"eliminate-identity"});
    EXPECT_EQ(count_ops(*out, "Dropout"), ratio == 0.0f ? 0u : 1u) << "ratio " << ratio;
    std::vector<Tensor> in = {random_tensor({4, 3}, 3)};
    expect_close(run_graph(*out, in)[0], run_graph(g, in)[0]);
  }
}

TEST(FoldConstants, EvaluatesConstantSubgraphs) {
  Graph g;
  g.opset_imports[""] = 17;
  Node* x = g.add_input("x", ValueType::of(DType::float32, {2, 3}));
  Node* a = g.add_constant("a", Tensor::from_vector<float>({1, 2, 3}, {3}));
  Node* b = g.add_constant("b", Tensor::from_vector<float>({10, 20, 30}, {3}));
  Node* ab = g.add_node("Add", {a->output(0), b->output(0)}, 1, "ab");
  Node* neg = g.add_node("Neg", {ab->output(0)}, 1, "neg_ab");
  Node* y = g.add_node("Mul", {x->output(0), neg->output(0)}, 1, "y");
  g.add_output(y->output(0), "y");
  auto out = apply(g, {"fold-constants", "eliminate-dead-code"});
  EXPECT_EQ(count_ops(*out, "Add"), 0u);
  EXPECT_EQ(count_ops(*out, "Neg"), 0u);
  EXPECT_EQ(count_ops(*out, "Mul"), 1u);
  std::vector<Tensor> in = {random_tensor({2, 3}, 4)};
  expect_close(run_graph(*out, in)[0], run_graph(g, in)[0]);
}

// With keep_quantized_weights, a DequantizeLinear of int8 constants that a
// MatMul and a Conv read as their weights stays (the backend takes the int8
// values); one that an Add reads, one read as a MatMul's first operand, and
// uint8 weights with a zero point are folded as without the option. Both
// graphs compute the same outputs.
TEST(FoldConstants, KeepsQuantizedWeightsOfProductsWhenAsked) {
  Graph g;
  g.opset_imports[""] = 17;
  auto int8_constant = [&](const std::string& name, const Shape& shape, uint64_t seed) {
    Tensor t(DType::int8, shape);
    Tensor r = random_tensor(shape, seed);
    for (int64_t i = 0; i < t.numel(); ++i) t.data<int8_t>()[i] = static_cast<int8_t>(r.data<float>()[i] * 100.0f);
    return g.add_constant(name, std::move(t))->output(0);
  };
  auto dequantized = [&](const std::string& name, const Shape& shape, uint64_t seed) {
    Value scale = g.add_constant(name + ".scale", Tensor::scalar<float>(0.01f))->output(0);
    Value zero = g.add_constant(name + ".zero", Tensor::scalar<int8_t>(0))->output(0);
    return g.add_node("DequantizeLinear", {int8_constant(name, shape, seed), scale, zero}, 1, name + ".dq")->output(0);
  };
  Node* x = g.add_input("x", ValueType::of(DType::float32, {2, 4}));
  Node* image = g.add_input("image", ValueType::of(DType::float32, {1, 2, 5, 5}));
  Value product = g.add_node("MatMul", {x->output(0), dequantized("w", {4, 3}, 1)}, 1, "mm")->output(0);
  Value shifted = g.add_node("Add", {product, dequantized("b", {3}, 2)}, 1, "add")->output(0);
  Value left = g.add_node("MatMul", {dequantized("a", {3, 2}, 3), x->output(0)}, 1, "left")->output(0);
  Value conv = g.add_node("Conv", {image->output(0), dequantized("k", {3, 2, 3, 3}, 4)}, 1, "conv")->output(0);
  Tensor unsigned_weights(DType::uint8, {4, 2});
  for (int64_t i = 0; i < unsigned_weights.numel(); ++i)
    unsigned_weights.data<uint8_t>()[i] = static_cast<uint8_t>(100 + 7 * i);
  Value unsigned_dq = g.add_node("DequantizeLinear",
                                 {g.add_constant("u", std::move(unsigned_weights))->output(0),
                                  g.add_constant("u.scale", Tensor::scalar<float>(0.02f))->output(0),
                                  g.add_constant("u.zero", Tensor::scalar<uint8_t>(128))->output(0)},
                                 1, "u.dq")
                          ->output(0);
  Value unsigned_product = g.add_node("MatMul", {x->output(0), unsigned_dq}, 1, "mm_u")->output(0);
  g.add_output(shifted, "y");
  g.add_output(left, "z");
  g.add_output(conv, "c");
  g.add_output(unsigned_product, "u");
  for (bool keep : {false, true}) {
    auto out = g.clone();
    passes::PassContext ctx;
    ctx.verify_after_each = true;
    ctx.keep_quantized_weights = keep;
    passes::run_pipeline(out, {"infer", "fold-constants", "eliminate-dead-code"}, ctx);
    EXPECT_EQ(count_ops(*out, "DequantizeLinear"), keep ? 2u : 0u) << "keep " << keep;
    for (const auto& node : out->nodes())
      if (node->op() == OpId::DequantizeLinear) {
        EXPECT_TRUE(node->name == "w.dq" || node->name == "k.dq") << node->name;
        EXPECT_EQ(node->inputs[0].node->constant_value.dtype(), DType::int8);
      }
    std::vector<Tensor> in = {random_tensor({2, 4}, 5), random_tensor({1, 2, 5, 5}, 6)};
    std::vector<Tensor> want = run_graph(g, in), got = run_graph(*out, in);
    ASSERT_EQ(want.size(), 4u);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) expect_close(got[i], want[i], 0, 0);
  }
}

TEST(FoldConstants, FoldsShapeOfKnownShapes) {
  Graph g;
  g.opset_imports[""] = 17;
  Node* x = g.add_input("x", ValueType::of(DType::float32, {2, 6}));
  Node* shape = g.add_node("Shape", {x->output(0)}, 1, "shape");
  Node* r = g.add_node("Reshape", {x->output(0), shape->output(0)}, 1, "reshape");
  g.add_output(r->output(0), "y");
  auto out = apply(g, {"infer", "fold-constants", "eliminate-dead-code"});
  EXPECT_EQ(count_ops(*out, "Shape"), 0u);
  std::vector<Tensor> in = {random_tensor({2, 6}, 5)};
  expect_close(run_graph(*out, in)[0], run_graph(g, in)[0]);
}

// x -> Reshape(x, Shape(x) * [1, 2] / [1, 2]) -> Shape -> Reshape: the second
// Shape's input has a known shape only once the first Reshape's shape is
// folded and types are inferred again (swin_t's window partitions); one run
// of the pass folds both.
TEST(FoldConstants, FoldsShapesThatBecomeKnownAfterEarlierFolds) {
  Graph g;
  g.opset_imports[""] = 17;
  Node* x = g.add_input("x", ValueType::of(DType::float32, {2, 6}));
  Node* two = g.add_constant("two", Tensor::from_vector<int64_t>({1, 2}, {2}));
  Node* shape = g.add_node("Shape", {x->output(0)}, 1, "shape");
  Node* doubled = g.add_node("Mul", {shape->output(0), two->output(0)}, 1, "doubled");
  Node* back = g.add_node("Div", {doubled->output(0), two->output(0)}, 1, "back");
  Node* r = g.add_node("Reshape", {x->output(0), back->output(0)}, 1, "reshape");
  Node* shape2 = g.add_node("Shape", {r->output(0)}, 1, "shape2");
  Node* flat = g.add_node("ReduceProd", {shape2->output(0)}, 1, "numel");
  flat->attributes.set("keepdims", int64_t{1});
  Node* r2 = g.add_node("Reshape", {r->output(0), flat->output(0)}, 1, "flatten");
  g.add_output(r2->output(0), "y");
  auto out = apply(g, {"infer", "fold-constants", "eliminate-dead-code"});
  EXPECT_EQ(count_ops(*out, "Shape"), 0u);
  EXPECT_EQ(count_ops(*out, "ReduceProd"), 0u);
  ASSERT_TRUE(out->type_of(out->outputs()[0]).is_concrete());
  std::vector<Tensor> in = {random_tensor({2, 6}, 6)};
  expect_close(run_graph(*out, in)[0], run_graph(g, in)[0]);
}

// Shape arithmetic the fusion pass took before the shapes were known (a
// graft.FusedPointwise of int64 values) folds once its inputs are constants,
// as they become when a plan fixes the input shapes.
TEST(FoldConstants, FoldsFusedShapeArithmeticWithConstantInputs) {
  auto body = std::make_shared<Graph>();
  body->opset_imports[""] = 17;
  Node* in = body->add_input("dims", ValueType::of(DType::int64, {2}));
  Node* two = body->add_constant("two", Tensor::scalar<int64_t>(2));
  Node* doubled = body->add_node("Mul", {in->output(0), two->output(0)}, 1, "doubled");
  Node* plus = body->add_node("Add", {doubled->output(0), two->output(0)}, 1, "plus");
  body->add_output(plus->output(0), "out");
  Graph g;
  g.opset_imports[""] = 17;
  g.opset_imports["graft"] = 1;
  Node* dims = g.add_constant("dims", Tensor::from_vector<int64_t>({3, 5}, {2}));
  Node* fused = g.add_node("FusedPointwise", {dims->output(0)}, 1, "fused", "graft");
  fused->subgraph = body;
  fused->backend = "fuse";
  g.add_output(fused->output(0), "y");
  auto out = apply(g, {"infer", "fold-constants", "eliminate-dead-code"});
  EXPECT_EQ(count_ops(*out, "FusedPointwise"), 0u);
  ASSERT_EQ(count_ops(*out, "Constant"), 1u);
  std::vector<Tensor> none;
  Tensor y = run_graph(*out, none)[0];
  EXPECT_EQ(y.to_int64_vector(), (std::vector<int64_t>{8, 12}));
}

TEST(FoldConstants, LeavesSymbolicShapesAlone) {
  Graph g;
  g.opset_imports[""] = 17;
  Node* x = g.add_input("x", ValueType{DType::float32, true, {Dim::symbolic("batch"), Dim::known(6)}});
  Node* shape = g.add_node("Shape", {x->output(0)}, 1, "shape");
  g.add_output(shape->output(0), "s");
  auto out = apply(g, {"infer", "fold-constants"});
  EXPECT_EQ(count_ops(*out, "Shape"), 1u);
}

TEST(PassRegistry, UnknownPassListsKnownOnes) {
  Graph g;
  auto p = g.clone();
  passes::PassContext ctx;
  try {
    passes::run_pipeline(p, {"verify", "no-such-pass"}, ctx);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("fold-constants"), std::string::npos) << e.what();
  }
}
