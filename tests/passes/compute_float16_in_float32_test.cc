// compute-float16-in-float32: which float16 nodes compute in float32
// between Casts, the rewritten graph's structure, and that it computes what
// the float16 graph computes on the reference kernels (bit for bit: they
// compute float16 in float32 and round each result too); in a Session the
// convolution then goes to dnnl where it is built in.
#include <gtest/gtest.h>

#include <cstring>

#include "graft/ir/type_inference.h"
#include "graft/runtime/backend.h"
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

TEST(ComputeFloat16InFloat32, ConvolutionsProductsAndReductionsComputeInFloat32BetweenCasts) {
  auto g = float16_graph();
  auto after = apply(*g, {"compute-float16-in-float32"});
  const Node* conv = node_named(*after, "conv");
  ASSERT_NE(conv, nullptr);
  // The Conv reads x through a Cast and W as a float32 constant, and computes float32.
  EXPECT_EQ(after->type_of(conv->inputs[0]).dtype, DType::float32);
  EXPECT_EQ(conv->inputs[0].node->schema().name, "Cast");
  EXPECT_EQ(conv->inputs[1].node->schema().name, "Constant");
  EXPECT_EQ(conv->inputs[1].node->constant_value.dtype(), DType::float32);
  EXPECT_EQ(conv->output_types[0].dtype, DType::float32);
  // Its float16 result, cast back, keeps the name the graph knew.
  size_t casts_back = 0;
  for (const auto& n : after->nodes())
    if (n->schema().name == "Cast" && n->inputs[0].node == conv) {
      ++casts_back;
      EXPECT_EQ(n->output_types[0].dtype, DType::float16);
      EXPECT_EQ(n->output_names[0], "conv_out");
    }
  EXPECT_EQ(casts_back, 1u);
  // ReduceMean and MatMul compute in float32; Relu, Slice and Shape read
  // float16 as they did; ArgMax has no float16 output and is left as it is.
  for (const auto& n : after->nodes()) {
    std::string_view name = n->schema().name;
    if (name == "ReduceMean" || name == "MatMul") EXPECT_EQ(n->output_types[0].dtype, DType::float32) << name;
    if (name == "Relu" || name == "Slice") EXPECT_EQ(n->output_types[0].dtype, DType::float16) << name;
    if (name == "ArgMax" || name == "Shape") EXPECT_EQ(after->type_of(n->inputs[0]).dtype, DType::float16) << name;
  }
  // x is cast once (Conv reads it; ArgMax reads the float16 x).
  EXPECT_EQ(count_ops(*after, "Cast"), 1u /* x */ + 1u /* Relu's input: conv back */ + 1u /* ReduceMean in */ +
                                           1u /* ReduceMean out */ + 1u /* MatMul in */ + 1u /* MatMul out */);
  // Graph outputs keep their dtypes.
  for (const Value& out : after->outputs()) {
    const std::string& name = after->output_names()[&out - after->outputs().data()];
    EXPECT_EQ(after->type_of(out).dtype, name == "s" || name == "a" ? DType::int64 : DType::float16) << name;
  }
  // A float32 graph is left alone.
  auto plain = new_graph();
  Value x = plain->add_input("x", ir::ValueType::of(DType::float32, {2, 3}))->output(0);
  plain->add_output(op(*plain, "Softmax", {x})->output(0), "y");
  passes::PassContext ctx;
  ir::infer_types(*plain);
  EXPECT_FALSE(passes::find_pass("compute-float16-in-float32")->run(plain, ctx));
}

TEST(ComputeFloat16InFloat32, ComputesWhatTheFloat16GraphComputes) {
  auto g = float16_graph();
  auto after = apply(*g, {"compute-float16-in-float32"});
  std::vector<Tensor> inputs = {half_tensor({1, 3, 8, 8}, 3)};
  std::vector<Tensor> want = run_graph(*g, inputs), got = run_graph(*after, inputs);
  ASSERT_EQ(got.size(), want.size());
  for (size_t k = 0; k < got.size(); ++k) {
    ASSERT_EQ(got[k].dtype(), want[k].dtype()) << k;
    ASSERT_EQ(got[k].shape(), want[k].shape()) << k;
    EXPECT_EQ(std::memcmp(got[k].raw_data(), want[k].raw_data(), got[k].nbytes()), 0) << "output " << k;
  }
}

TEST(ComputeFloat16InFloat32, ASessionGivesTheFloat16ConvolutionToTheFloat32Backends) {
  auto g = float16_graph();
  runtime::Session session(g->clone());
  std::vector<Tensor> inputs = {half_tensor({1, 3, 8, 8}, 4)};
  std::vector<Tensor> got = session.run(inputs);
  std::vector<Tensor> want = run_graph(*g, inputs);
  for (size_t k = 0; k < got.size(); ++k) expect_close(got[k], want[k], 4e-3, 4e-3);
  if (!runtime::find_backend("dnnl")) GTEST_SKIP() << "built without dnnl: the Conv runs on ref either way";
  bool found = false;
  for (const partition::NodePlacement& p : session.partition_report().nodes)
    if (p.op_type == "Conv") {
      found = true;
      EXPECT_EQ(p.backend, "dnnl") << session.partition_report().to_text();
    }
  EXPECT_TRUE(found);
}

}  // namespace
}  // namespace graft::testing
