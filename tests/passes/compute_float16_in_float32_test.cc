// compute-float16-in-float32: a float16 graph computes in float32 between
// Casts where float16 comes in and goes out (structure), within float16's
// rounding of what the float16 graph computes on the reference kernels, and
// closer to the float32 graph's results than those; a Cast in the model still
// rounds. In a Session the convolution then goes to dnnl where it is built in.
#include <gtest/gtest.h>

#include <cstring>

#include "graft/ops/type_inference.h"
#include "graft/backend/backend.h"
#include "graft/runtime/session.h"
#include "pass_test_helpers.h"

namespace graft::testing {
namespace {

using namespace passes_helpers;

Tensor half_tensor(const Shape& shape, uint64_t seed) {
  Tensor t(DType::float16, shape);
  uint64_t state = seed * 6364136223846793005ull + 1442695040888963407ull;
  for (int64_t i = 0; i < t.numel(); ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    t.data<float16_t>()[i] = float16_t(static_cast<float>(static_cast<int64_t>(state >> 40) % 2001 - 1000) / 1000.0f);
  }
  return t;
}

/// x[1,3,8,8] -> Conv(W) -> Relu -> ReduceMean -> y; the Conv's output also
/// feeds MatMul(., M) and Shape; ArgMax of x.
std::unique_ptr<Graph> float16_graph() {
  auto g = new_graph();
  Value x = g->add_input("x", ir::ValueType::of(DType::float16, {1, 3, 8, 8}))->output(0);
  Value w = g->add_constant("W", half_tensor({4, 3, 3, 3}, 1))->output(0);
  Value m = g->add_constant("M", half_tensor({6, 5}, 2))->output(0);
  Node* conv = g->add_node("Conv", {x, w}, 1, "conv");
  conv->attributes.set("pads", std::vector<int64_t>{1, 1, 1, 1});
  conv->output_names[0] = "conv_out";
  Value relu = op(*g, "Relu", {conv->output(0)})->output(0);
  Node* mean = op(*g, "ReduceMean", {relu});
  mean->attributes.set("axes", std::vector<int64_t>{1});
  Value sliced = op(*g, "Slice", {conv->output(0), g->add_constant("starts", Tensor::from_vector(std::vector<int64_t>{2}, {1}))->output(0),
                                 g->add_constant("ends", Tensor::from_vector(std::vector<int64_t>{8}, {1}))->output(0),
                                 g->add_constant("axes", Tensor::from_vector(std::vector<int64_t>{3}, {1}))->output(0)})
                     ->output(0);
  Node* matmul = op(*g, "MatMul", {sliced, m});
  Node* argmax = op(*g, "ArgMax", {x});
  g->add_output(mean->output(0), "y");
  g->add_output(matmul->output(0), "z");
  g->add_output(op(*g, "Shape", {conv->output(0)})->output(0), "s");
  g->add_output(argmax->output(0), "a");
  return g;
}

const Node* node_named(const Graph& g, const std::string& name) {
  for (const auto& n : g.nodes())
    if (n->name == name) return n.get();
  return nullptr;
}

TEST(ComputeFloat16InFloat32, Float16ValuesAreComputedInFloat32BetweenCasts) {
  auto g = float16_graph();
  auto after = apply(*g, {"compute-float16-in-float32"});
  const Node* conv = node_named(*after, "conv");
  ASSERT_NE(conv, nullptr);
  // The Conv reads x through a Cast and W as a float32 constant.
  EXPECT_EQ(conv->inputs[0].node->schema().name, "Cast");
  EXPECT_EQ(conv->inputs[1].node->schema().name, "Constant");
  EXPECT_EQ(conv->inputs[1].node->constant_value.dtype(), DType::float32);
  // Every node but the Casts computes in float32 and reads float32 values
  // (Relu, Slice, MatMul, ReduceMean, ArgMax and Shape read float32 from
  // the Conv directly, with no Cast pair between).
  for (const auto& n : after->nodes()) {
    std::string_view name = n->schema().name;
    if (name == "Cast" || name == "Constant" || name == "Input") continue;
    for (const Value& in : n->inputs)
      if (in) EXPECT_NE(after->type_of(in).dtype, DType::float16) << name;
    for (const ir::ValueType& t : n->output_types) EXPECT_NE(t.dtype, DType::float16) << name;
  }
  // Casts: x in; y and z out, named as before (Shape and ArgMax make int64).
  EXPECT_EQ(count_ops(*after, "Cast"), 3u);
  for (size_t i = 0; i < after->outputs().size(); ++i) {
    const std::string& name = after->output_names()[i];
    const Value out = after->outputs()[i];
    EXPECT_EQ(after->type_of(out).dtype, name == "s" || name == "a" ? DType::int64 : DType::float16) << name;
    if (name == "y" || name == "z") EXPECT_EQ(out.node->schema().name, "Cast") << name;
  }
  // Shape reads no values: of a float16 input it takes no Cast.
  auto shape_only = new_graph();
  ir::ValueType symbolic = ir::ValueType::of(DType::float16, {1, 3});
  symbolic.dims[0] = ir::Dim::symbolic("n");  // not folded to a constant
  Value h = shape_only->add_input("h", symbolic)->output(0);
  shape_only->add_output(op(*shape_only, "Shape", {h})->output(0), "s");
  EXPECT_EQ(count_ops(*apply(*shape_only, {"compute-float16-in-float32"}), "Cast"), 0u);
  // A float32 graph is left alone.
  auto plain = new_graph();
  Value x = plain->add_input("x", ir::ValueType::of(DType::float32, {2, 3}))->output(0);
  plain->add_output(op(*plain, "Softmax", {x})->output(0), "y");
  passes::PassContext ctx;
  ops::infer_types(*plain);
  EXPECT_FALSE(passes::find_pass("compute-float16-in-float32")->run(plain, ctx));
}

TEST(ComputeFloat16InFloat32, ACastInTheModelStillRounds) {
  // x -> Sqrt -> Cast(float16 -> float32) -> y: the Cast reads the float16
  // Sqrt, rounded, as the model says; Sqrt computes in float32.
  auto g = new_graph();
  Value x = g->add_input("x", ir::ValueType::of(DType::float16, {64}))->output(0);
  Node* cast = g->add_node("Cast", {op(*g, "Sqrt", {x})->output(0)}, 1, "cast");
  cast->attributes.set("to", int64_t(static_cast<int>(DType::float32)));
  g->add_output(cast->output(0), "y");
  auto after = apply(*g, {"compute-float16-in-float32"});
  std::vector<Tensor> inputs = {half_tensor({64}, 5)};
  Tensor want = run_graph(*g, inputs)[0], got = run_graph(*after, inputs)[0];
  EXPECT_EQ(std::memcmp(got.raw_data(), want.raw_data(), got.nbytes()), 0);
  EXPECT_EQ(count_ops(*after, "Cast"), 3u);  // x in, Sqrt out, the model's own
}

TEST(ComputeFloat16InFloat32, OpsWhoseResultJumpsReadRoundedValues) {
  // Floor(x + 2^-12) with x = 1 - 2^-11: the sum is halfway between two
  // float16 values and rounds to 1, whose floor is 1; unrounded it is 0.
  // Less(x + 2^-12, 1) alike: false rounded, true not.
  auto g = new_graph();
  Value x = g->add_input("x", ir::ValueType::of(DType::float16, {1}))->output(0);
  Value c = g->add_constant("c", Tensor::from_vector(std::vector<float16_t>{float16_t(0x1p-12f)}, {}))->output(0);
  Value one = g->add_constant("one", Tensor::from_vector(std::vector<float16_t>{float16_t(1.0f)}, {}))->output(0);
  Value sum = op(*g, "Add", {x, c})->output(0);
  g->add_output(op(*g, "Floor", {sum})->output(0), "floor");
  g->add_output(op(*g, "Less", {sum, one})->output(0), "less");
  auto after = apply(*g, {"compute-float16-in-float32"});
  std::vector<Tensor> inputs = {Tensor::from_vector(std::vector<float16_t>{float16_t(1.0f - 0x1p-11f)}, {1})};
  std::vector<Tensor> want = run_graph(*g, inputs), got = run_graph(*after, inputs);
  EXPECT_EQ(static_cast<float>(want[0].data<float16_t>()[0]), 1.0f);
  EXPECT_EQ(static_cast<float>(got[0].data<float16_t>()[0]), 1.0f);
  EXPECT_FALSE(want[1].data<bool>()[0]);
  EXPECT_FALSE(got[1].data<bool>()[0]);
}

TEST(ComputeFloat16InFloat32, ResultsAreTheFloat16GraphsWithinItsRoundingAndNearerTheFloat32Graphs) {
  auto g = float16_graph();
  auto after = apply(*g, {"compute-float16-in-float32"});
  // The same graph in float32, on the same (float16) values.
  auto wide = g->clone();
  for (const auto& n : wide->nodes()) {
    if (n->schema().name == "Constant" && n->constant_value.dtype() == DType::float16) {
      Tensor t(DType::float32, n->constant_value.shape());
      for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = n->constant_value.data<float16_t>()[i];
      n->constant_value = t;
    }
    for (ir::ValueType& t : n->output_types)
      if (t.dtype == DType::float16) t.dtype = DType::float32;
  }
  ops::infer_types(*wide);
  Tensor x = half_tensor({1, 3, 8, 8}, 3);
  Tensor x32(DType::float32, x.shape());
  for (int64_t i = 0; i < x.numel(); ++i) x32.data<float>()[i] = x.data<float16_t>()[i];
  std::vector<Tensor> want = run_graph(*g, {x}), got = run_graph(*after, {x}), exact = run_graph(*wide, {x32});
  ASSERT_EQ(got.size(), want.size());
  double distance_got = 0, distance_want = 0;
  for (size_t k = 0; k < got.size(); ++k) {
    ASSERT_EQ(got[k].dtype(), want[k].dtype()) << k;
    ASSERT_EQ(got[k].shape(), want[k].shape()) << k;
    expect_close(got[k], want[k], 4e-3, 4e-3);
    if (got[k].dtype() != DType::float16) continue;
    for (int64_t i = 0; i < got[k].numel(); ++i) {
      const double e = exact[k].value_as_double(i);
      distance_got += std::abs(got[k].value_as_double(i) - e);
      distance_want += std::abs(want[k].value_as_double(i) - e);
    }
  }
  EXPECT_LE(distance_got, distance_want);
}

TEST(ComputeFloat16InFloat32, ASessionGivesTheFloat16ConvolutionToTheFloat32Backends) {
  auto g = float16_graph();
  runtime::Session session(g->clone());
  std::vector<Tensor> inputs = {half_tensor({1, 3, 8, 8}, 4)};
  std::vector<Tensor> got = session.run(inputs);
  std::vector<Tensor> want = run_graph(*g, inputs);
  for (size_t k = 0; k < got.size(); ++k) expect_close(got[k], want[k], 4e-3, 4e-3);
  if (!backend::find_backend("dnnl")) GTEST_SKIP() << "built without dnnl: the Conv runs on ref either way";
  bool found = false;
  for (const partition::NodePlacement& p : session.partition_report().nodes)
    if (p.op_type == "Conv") {
      found = true;
      EXPECT_EQ(p.backend, "dnnl") << session.partition_report().to_text();
    }
  EXPECT_TRUE(found);
}

TEST(ComputeFloat16InFloat32, NodesThatAPlanInlinesComputeInFloat32Too) {
  // If(batch == 3) { MatMul(x, W) } else { Neg(x) } over float16 x[batch, 4]:
  // the condition folds only once a plan knows the batch, and the branch it
  // inlines then computes in float32 too (on dnnl), as at load.
  auto g = new_graph();
  ir::ValueType xt = ir::ValueType::of(DType::float16, {1, 4});
  xt.dims[0] = ir::Dim::symbolic("batch");
  Value x = g->add_input("x", xt)->output(0);
  Value w = g->add_constant("W", half_tensor({4, 4}, 6))->output(0);
  Value zero = g->add_constant("zero", Tensor::scalar<int64_t>(0))->output(0);
  Value three = g->add_constant("three", Tensor::scalar<int64_t>(3))->output(0);
  Value batch = op(*g, "Gather", {op(*g, "Shape", {x})->output(0), zero})->output(0);
  Value cond = op(*g, "Equal", {batch, three})->output(0);
  auto branch = [](bool product) {
    auto body = std::make_shared<Graph>();
    body->opset_imports[""] = 17;
    Value bx = body->add_input("x", ir::ValueType{})->output(0);
    Value bw = body->add_input("W", ir::ValueType{})->output(0);
    Node* n = product ? body->add_node("MatMul", {bx, bw}, 1, "product") : body->add_node("Neg", {bx}, 1, "neg");
    body->add_output(n->output(0), "out");
    return body;
  };
  Node* node = g->add_node("If", {cond, x, w}, 1, "if");
  node->num_captured_inputs = 2;
  node->attributes.set("then_branch", branch(true));
  node->attributes.set("else_branch", branch(false));
  g->add_output(node->output(0), "y");
  ops::infer_types(*g);
  runtime::Session session(g->clone());
  std::vector<Tensor> inputs = {half_tensor({3, 4}, 7)};
  expect_close(session.run(inputs)[0], run_graph(*g, inputs)[0], 4e-3, 4e-3);
  if (!backend::find_backend("dnnl")) GTEST_SKIP() << "built without dnnl";
  bool found = false;
  for (const partition::NodePlacement& p : session.partition_report_for({ir::ValueType::of(DType::float16, {3, 4})}).nodes)
    if (p.op_type == "MatMul") {
      found = true;
      EXPECT_EQ(p.backend, "dnnl");
    }
  EXPECT_TRUE(found);
}

}  // namespace
}  // namespace graft::testing
