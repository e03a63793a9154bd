// fold-batch-norm, fuse-gelu, fuse-layer-norm, simplify-reshapes: the
// structure after the pass and the same outputs as before it.
#include <gtest/gtest.h>

#include "graft/ops/type_inference.h"
#include "graft/passes/pass.h"
#include "passes/pass_test_helpers.h"
#include "support/graph_runner.h"

using namespace graft;
using namespace graft::ir;
using graft::testing::expect_close;
using graft::testing::random_tensor;
using graft::testing::run_graph;
using namespace graft::testing::passes_helpers;

TEST(FoldBatchNorm, FoldsIntoConstantConv) {
  auto g = new_graph();
  Node* x = g->add_input("x", ValueType::of(DType::float32, {1, 4, 6, 6}));
  Node* w = g->add_constant("w", random_tensor({8, 4, 3, 3}, 1));
  Node* b = g->add_constant("b", random_tensor({8}, 2));
  Node* conv = g->add_node("Conv", {x->output(0), w->output(0), b->output(0)}, 1, "conv");
  Tensor var = random_tensor({8}, 6);
  for (int i = 0; i < 8; ++i) var.data<float>()[i] = std::abs(var.data<float>()[i]) + 0.1f;
  std::vector<Value> bn_in = {conv->output(0)};
  for (int i = 0; i < 3; ++i) bn_in.push_back(g->add_constant("p" + std::to_string(i), random_tensor({8}, 3 + i))->output(0));
  bn_in.push_back(g->add_constant("var", var)->output(0));
  Node* bn = g->add_node("BatchNormalization", bn_in, 1, "bn");
  g->add_output(op(*g, "Relu", {bn->output(0)})->output(0), "y");
  auto out = apply(*g, {"fold-batch-norm"});
  EXPECT_EQ(count_ops(*out, "BatchNormalization"), 0u);
  EXPECT_EQ(count_ops(*out, "Conv"), 1u);
  expect_same_outputs(*g, *out, {random_tensor({1, 4, 6, 6}, 9)});
}

TEST(FoldBatchNorm, LeavesSharedConvOutputAlone) {
  auto g = new_graph();
  Node* x = g->add_input("x", ValueType::of(DType::float32, {1, 2, 4, 4}));
  Node* conv = g->add_node("Conv", {x->output(0), g->add_constant("w", random_tensor({2, 2, 1, 1}, 1))->output(0)}, 1, "c");
  std::vector<Value> bn_in = {conv->output(0)};
  for (int i = 0; i < 4; ++i) bn_in.push_back(g->add_constant("p" + std::to_string(i), Tensor::from_vector<float>({1, 1}, {2}))->output(0));
  Node* bn = g->add_node("BatchNormalization", bn_in, 1, "bn");
  g->add_output(bn->output(0), "y");
  g->add_output(conv->output(0), "z");
  auto out = apply(*g, {"fold-batch-norm"});
  EXPECT_EQ(count_ops(*out, "BatchNormalization"), 1u);
}

TEST(FuseGelu, BertStyleAndTorchStyle) {
  auto g = new_graph();
  Node* x = g->add_input("x", ValueType::of(DType::float32, {4, 16}));
  // BERT zoo style: (x * 0.5) * (erf(x / sqrt2) + 1)
  Node* e1 = op(*g, "Erf", {op(*g, "Div", {x->output(0), scalar(*g, 1.41421354f)})->output(0)});
  Node* u1 = op(*g, "Add", {e1->output(0), scalar(*g, 1.0f)});
  Node* y1 = op(*g, "Mul", {op(*g, "Mul", {x->output(0), scalar(*g, 0.5f)})->output(0), u1->output(0)});
  // torch.onnx style: (x * (1 + erf(x * 0.7071))) * 0.5
  Node* e2 = op(*g, "Erf", {op(*g, "Mul", {x->output(0), scalar(*g, 0.70710678f)})->output(0)});
  Node* u2 = op(*g, "Add", {scalar(*g, 1.0f), e2->output(0)});
  Node* y2 = op(*g, "Mul", {op(*g, "Mul", {x->output(0), u2->output(0)})->output(0), scalar(*g, 0.5f)});
  g->add_output(y1->output(0), "y1");
  g->add_output(y2->output(0), "y2");
  auto out = apply(*g, {"fuse-gelu"});
  EXPECT_EQ(count_ops(*out, "Gelu"), 2u);
  EXPECT_EQ(count_ops(*out, "Erf"), 0u);
  EXPECT_EQ(count_ops(*out, "Mul"), 0u);
  expect_same_outputs(*g, *out, {random_tensor({4, 16}, 1)});
}

TEST(FuseGelu, KeepsPatternWhoseIntermediateIsReadElsewhere) {
  auto g = new_graph();
  Node* x = g->add_input("x", ValueType::of(DType::float32, {8}));
  Node* e = op(*g, "Erf", {op(*g, "Div", {x->output(0), scalar(*g, 1.41421354f)})->output(0)});
  Node* u = op(*g, "Add", {e->output(0), scalar(*g, 1.0f)});
  Node* y = op(*g, "Mul", {op(*g, "Mul", {x->output(0), scalar(*g, 0.5f)})->output(0), u->output(0)});
  g->add_output(y->output(0), "y");
  g->add_output(e->output(0), "erf");
  auto out = apply(*g, {"fuse-gelu"});
  EXPECT_EQ(count_ops(*out, "Gelu"), 0u);
}

TEST(FuseGelu, KeepOpsetLeavesGeluOutOfModelsBeforeOpset20) {
  // graft opt writes models for other runtimes: Gelu exists from opset 20 on.
  for (int64_t opset : {17, 20}) {
    SCOPED_TRACE(opset);
    auto g = new_graph();
    g->opset_imports[""] = opset;
    Node* x = g->add_input("x", ValueType::of(DType::float32, {4, 16}));
    Node* e = op(*g, "Erf", {op(*g, "Div", {x->output(0), scalar(*g, 1.41421354f)})->output(0)});
    Node* u = op(*g, "Add", {e->output(0), scalar(*g, 1.0f)});
    g->add_output(op(*g, "Mul", {op(*g, "Mul", {x->output(0), scalar(*g, 0.5f)})->output(0), u->output(0)})->output(0), "y");
    auto kept = g->clone();
    passes::PassContext ctx;
    ctx.keep_opset = true;
    passes::run_pipeline(kept, {"infer", "fuse-gelu"}, ctx);
    EXPECT_EQ(count_ops(*kept, "Gelu"), opset >= 20 ? 1u : 0u);
    EXPECT_EQ(count_ops(*apply(*g, {"fuse-gelu"}), "Gelu"), 1u);  // a Session runs Gelu at any opset
  }
}

TEST(PassContext, KeepOpsetAsksForTheOpsetAnOpCameWith) {
  passes::PassContext runtime, keep;
  keep.keep_opset = true;
  auto g = new_graph();  // opset 17
  EXPECT_TRUE(passes::may_add_ops_of_opset(*g, runtime, 20));
  EXPECT_FALSE(passes::may_add_ops_of_opset(*g, keep, 20));
  EXPECT_TRUE(passes::may_add_ops_of_opset(*g, keep, 17));
  g->opset_imports.erase("");  // no default-domain import: nothing may be added
  EXPECT_FALSE(passes::may_add_ops_of_opset(*g, keep, 1));
}

TEST(FuseLayerNorm, DecomposedPatternBecomesOneNode) {
  for (bool opset18 : {false, true}) {
    SCOPED_TRACE(opset18 ? "axes as input" : "axes as attribute");
    auto g = new_graph();
    if (opset18) g->opset_imports[""] = 18;
    Node* x = g->add_input("x", ValueType::of(DType::float32, {2, 5, 32}));
    auto mean_of = [&](Value v) {
      Node* m;
      if (opset18) {
        m = op(*g, "ReduceMean", {v, g->add_constant("axes" + std::to_string(g->num_nodes()), Tensor::from_vector<int64_t>({-1}, {1}))->output(0)});
      } else {
        m = op(*g, "ReduceMean", {v});
        m->attributes.set("axes", std::vector<int64_t>{-1});
      }
      return m->output(0);
    };
    Value d = op(*g, "Sub", {x->output(0), mean_of(x->output(0))})->output(0);
    Value var = mean_of(op(*g, "Pow", {d, scalar(*g, 2.0f)})->output(0));
    Value root = op(*g, "Sqrt", {op(*g, "Add", {var, scalar(*g, 1e-5f)})->output(0)})->output(0);
    Value n = op(*g, "Div", {d, root})->output(0);
    Value gamma = g->add_constant("gamma", random_tensor({32}, 2))->output(0);
    Value beta = g->add_constant("beta", random_tensor({32}, 3))->output(0);
    Node* y = op(*g, "Add", {op(*g, "Mul", {n, gamma})->output(0), beta});
    g->add_output(y->output(0), "y");
    auto out = apply(*g, {"fuse-layer-norm"});
    EXPECT_EQ(count_ops(*out, "LayerNormalization"), 1u);
    EXPECT_EQ(count_ops(*out, "ReduceMean"), 0u);
    EXPECT_EQ(count_ops(*out, "Sqrt"), 0u);
    expect_same_outputs(*g, *out, {random_tensor({2, 5, 32}, 1)}, 1e-4);
  }
}

TEST(SimplifyReshapes, TransposePairsAndReshapeChains) {
  auto g = new_graph();
  Node* x = g->add_input("x", ValueType::of(DType::float32, {2, 3, 4, 5}));
  Node* t1 = op(*g, "Transpose", {x->output(0)});
  t1->attributes.set("perm", std::vector<int64_t>{0, 2, 1, 3});
  Node* t2 = op(*g, "Transpose", {t1->output(0)});
  t2->attributes.set("perm", std::vector<int64_t>{0, 2, 1, 3});  // cancels t1
  Node* t3 = op(*g, "Transpose", {t2->output(0)});
  t3->attributes.set("perm", std::vector<int64_t>{0, 2, 3, 1});
  Node* t4 = op(*g, "Transpose", {t3->output(0)});
  t4->attributes.set("perm", std::vector<int64_t>{0, 1, 3, 2});  // composes with t3
  Node* r1 = op(*g, "Reshape", {t4->output(0), g->add_constant("s1", Tensor::from_vector<int64_t>({2, 0, 15}, {3}))->output(0)});
  Node* r2 = op(*g, "Reshape", {r1->output(0), g->add_constant("s2", Tensor::from_vector<int64_t>({6, -1}, {2}))->output(0)});
  g->add_output(r2->output(0), "y");
  auto out = apply(*g, {"simplify-reshapes"});
  EXPECT_EQ(count_ops(*out, "Transpose"), 1u);
  EXPECT_EQ(count_ops(*out, "Reshape"), 1u);
  expect_same_outputs(*g, *out, {random_tensor({2, 3, 4, 5}, 1)}, 0);
}

TEST(FoldPad, ZeroPadIntoAveragePoolAndConvAndEmptyPadRemoved) {
  auto g = new_graph();
  Node* x = g->add_input("x", ValueType::of(DType::float32, {1, 3, 7, 7}));
  Value pads = g->add_constant("pads", Tensor::from_vector<int64_t>({0, 0, 1, 1, 0, 0, 1, 1}, {8}))->output(0);
  Value none = g->add_constant("none", Tensor::from_vector<int64_t>({0, 0, 0, 0, 0, 0, 0, 0}, {8}))->output(0);
  Node* pool = op(*g, "AveragePool", {op(*g, "Pad", {x->output(0), pads})->output(0)});
  pool->attributes.set("kernel_shape", std::vector<int64_t>{3, 3});
  Node* conv = op(*g, "Conv", {op(*g, "Pad", {x->output(0), pads})->output(0),
                               g->add_constant("w", random_tensor({4, 3, 3, 3}, 1))->output(0)});
  conv->attributes.set("pads", std::vector<int64_t>{1, 0, 1, 0});
  Node* relu = op(*g, "Relu", {op(*g, "Pad", {x->output(0), none})->output(0)});
  g->add_output(pool->output(0), "pool");
  g->add_output(conv->output(0), "conv");
  g->add_output(relu->output(0), "relu");
  auto out = apply(*g, {"fold-pad"});
  EXPECT_EQ(count_ops(*out, "Pad"), 0u);
  expect_same_outputs(*g, *out, {random_tensor({1, 3, 7, 7}, 2)});
}

TEST(FoldPad, KeepsPadBeforeMaxPool) {
  auto g = new_graph();
  Node* x = g->add_input("x", ValueType::of(DType::float32, {1, 3, 7, 7}));
  Value pads = g->add_constant("pads", Tensor::from_vector<int64_t>({0, 0, 1, 1, 0, 0, 1, 1}, {8}))->output(0);
  Node* pool = op(*g, "MaxPool", {op(*g, "Pad", {x->output(0), pads})->output(0)});
  pool->attributes.set("kernel_shape", std::vector<int64_t>{3, 3});
  g->add_output(pool->output(0), "pool");
  auto out = apply(*g, {"fold-pad"});
  EXPECT_EQ(count_ops(*out, "Pad"), 1u);
}

// lower-einsum: every batched-matrix-product form becomes MatMul (with
// Transposes of the last two axes where needed) and computes the same;
// other equations stay Einsums.
TEST(LowerEinsum, BatchedMatrixProductsBecomeMatMul) {
  struct Case {
    std::string equation;
    Shape a, b;
    bool lowered;
  };
  const std::vector<Case> cases = {
      {"bhid,bhjd->bhij", {2, 3, 4, 5}, {2, 3, 6, 5}, true},  // q k^T
      {"bhij,bhjd->bhid", {2, 3, 4, 6}, {2, 3, 6, 5}, true},  // attention x v
      {"bki,bkj->bij", {2, 5, 4}, {2, 5, 6}, true},
      {"bik,bjk->bji", {2, 4, 5}, {2, 6, 5}, true},           // output in the other order
      {"B I J, B J K -> B K I", {2, 4, 5}, {2, 5, 6}, true},  // spaces, capitals, swapped output
      {"ij,jk->ik", {4, 5}, {5, 6}, true},
      {"bij,bij->bij", {2, 4, 5}, {2, 4, 5}, false},          // elementwise
      {"bij,bjk->bk", {2, 4, 5}, {2, 5, 6}, false},           // sums i too
      {"...ij,...jk->...ik", {2, 4, 5}, {2, 5, 6}, false},    // ellipsis
  };
  uint64_t seed = 40;
  for (const Case& c : cases) {
    auto g = new_graph();
    Value a = g->add_input("a", ValueType::of(DType::float32, c.a))->output(0);
    Value b = g->add_input("b", ValueType::of(DType::float32, c.b))->output(0);
    Node* e = g->add_node("Einsum", {a, b}, 1, "einsum");
    e->attributes.set("equation", c.equation);
    g->add_output(e->output(0), "y");
    auto out = apply(*g, {"lower-einsum"});
    EXPECT_EQ(count_ops(*out, "Einsum"), c.lowered ? 0u : 1u) << c.equation;
    EXPECT_EQ(count_ops(*out, "MatMul"), c.lowered ? 1u : 0u) << c.equation;
    std::vector<Tensor> in = {random_tensor(c.a, seed++), random_tensor(c.b, seed++)};
    expect_close(run_graph(*out, in)[0], run_graph(*g, in)[0], 1e-5, 1e-5);
  }
}

namespace {

// x -> QuantizeLinear(s, z) [-> Cast to the same type] -> DequantizeLinear(s2, z2) -> y (a graph output).
std::unique_ptr<Graph> fake_quantize_graph(float s, Tensor z, float s2, Tensor z2, bool cast, Shape shape = {2, 64}) {
  auto g = new_graph();
  Node* x = g->add_input("x", ValueType::of(DType::float32, shape));
  const DType qtype = z.dtype();
  Node* q = g->add_node("QuantizeLinear", {x->output(0), scalar(*g, s), g->add_constant("z", z)->output(0)}, 1, "q");
  Value quantized = q->output(0);
  if (cast) {
    Node* c = g->add_node("Cast", {quantized}, 1, "cast");
    c->attributes.set("to", static_cast<int64_t>(qtype));
    quantized = c->output(0);
  }
  Node* dq = g->add_node("DequantizeLinear", {quantized, scalar(*g, s2), g->add_constant("z2", z2)->output(0)}, 1, "dq");
  g->add_output(dq->output(0), "y");
  return g;
}

// Values around every rounding boundary of scale `s` (k + 0.5 exactly and
// its float neighbours), beyond the quantized range both ways, and zero.
Tensor boundary_values(float s, const Shape& shape) {
  Tensor t(DType::float32, shape);
  float* v = t.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) {
    const float k = static_cast<float>(i % 300) - 150.0f;
    const float half = (k + 0.5f) * s;
    v[i] = i % 3 == 0 ? half : i % 3 == 1 ? std::nextafter(half, 1e9f) : std::nextafter(half, -1e9f);
  }
  v[0] = 1e6f;
  v[1] = -1e6f;
  v[2] = 0.0f;
  return t;
}

}  // namespace

TEST(LowerQuantizeDequantize, PairBecomesFloatArithmeticWithTheSameValues) {
  const Shape shape = {2, 300};
  for (bool cast : {false, true}) {
    // uint8, one zero point: Div, Round, Clip, Mul.
    auto g = fake_quantize_graph(0.0371f, Tensor::scalar<uint8_t>(131), 0.0371f, Tensor::scalar<uint8_t>(131), cast, shape);
    auto out = apply(*g, {"lower-quantize-dequantize"});
    for (const char* gone : {"QuantizeLinear", "DequantizeLinear", "Cast"}) EXPECT_EQ(count_ops(*out, gone), 0u) << gone;
    for (const char* kept : {"Div", "Round", "Clip", "Mul"}) EXPECT_EQ(count_ops(*out, kept), 1u) << kept;
    EXPECT_EQ(count_ops(*out, "Add") + count_ops(*out, "Sub"), 0u);
    std::vector<Tensor> in = {boundary_values(0.0371f, shape)};
    Tensor want = run_graph(*g, in)[0], got = run_graph(*out, in)[0];
    for (int64_t i = 0; i < want.numel(); ++i) ASSERT_EQ(got.data<float>()[i], want.data<float>()[i]) << i;
  }
  // int8 with different scales and zero points on each side: Add and Sub too.
  auto g = fake_quantize_graph(0.05f, Tensor::scalar<int8_t>(-3), 0.1f, Tensor::scalar<int8_t>(7), true, shape);
  auto out = apply(*g, {"lower-quantize-dequantize"});
  EXPECT_EQ(count_ops(*out, "QuantizeLinear") + count_ops(*out, "DequantizeLinear"), 0u);
  EXPECT_EQ(count_ops(*out, "Add"), 1u);
  EXPECT_EQ(count_ops(*out, "Sub"), 1u);
  std::vector<Tensor> in = {boundary_values(0.05f, shape)};
  Tensor want = run_graph(*g, in)[0], got = run_graph(*out, in)[0];
  for (int64_t i = 0; i < want.numel(); ++i) ASSERT_EQ(got.data<float>()[i], want.data<float>()[i]) << i;
}

TEST(LowerQuantizeDequantize, LeavesPerAxisScalesAndSharedQuantizedValuesCorrect) {
  // Per-channel scales: left alone.
  auto g = new_graph();
  Node* x = g->add_input("x", ValueType::of(DType::float32, {1, 3, 4}));
  Node* q = g->add_node("QuantizeLinear", {x->output(0), g->add_constant("s", Tensor::from_vector<float>({0.1f, 0.2f, 0.3f}, {3}))->output(0),
                                           g->add_constant("z", Tensor::from_vector<uint8_t>({1, 2, 3}, {3}))->output(0)}, 1, "q");
  Node* dq = g->add_node("DequantizeLinear", {q->output(0), g->add_constant("s2", Tensor::from_vector<float>({0.1f, 0.2f, 0.3f}, {3}))->output(0),
                                             g->add_constant("z2", Tensor::from_vector<uint8_t>({1, 2, 3}, {3}))->output(0)}, 1, "dq");
  g->add_output(dq->output(0), "y");
  auto out = apply(*g, {"lower-quantize-dequantize"});
  EXPECT_EQ(count_ops(*out, "QuantizeLinear"), 1u);
  EXPECT_EQ(count_ops(*out, "DequantizeLinear"), 1u);

  // The quantized value also read elsewhere (a graph output): the
  // QuantizeLinear stays for it, the DequantizeLinear is replaced.
  auto shared = fake_quantize_graph(0.1f, Tensor::scalar<uint8_t>(128), 0.1f, Tensor::scalar<uint8_t>(128), false);
  for (const auto& node : shared->nodes())
    if (node->name == "q") shared->add_output(node->output(0), "quantized");
  auto lowered = apply(*shared, {"lower-quantize-dequantize"});
  EXPECT_EQ(count_ops(*lowered, "QuantizeLinear"), 1u);
  EXPECT_EQ(count_ops(*lowered, "DequantizeLinear"), 0u);
  std::vector<Tensor> in = {random_tensor({2, 64}, 3)};
  std::vector<Tensor> want = run_graph(*shared, in), got = run_graph(*lowered, in);
  ASSERT_EQ(got.size(), 2u);
  for (int64_t i = 0; i < want[0].numel(); ++i) ASSERT_EQ(got[0].data<float>()[i], want[0].data<float>()[i]) << i;
  for (int64_t i = 0; i < want[1].numel(); ++i) ASSERT_EQ(got[1].data<uint8_t>()[i], want[1].data<uint8_t>()[i]) << i;
}
