// The fuse-pointwise pass: structure of the fused graph (chains, diamonds,
// multi-output nodes, the cycle traps, forward/backward separation), and
// that fused graphs compute what the unfused ones do.
#include <gtest/gtest.h>

#include "graft/fusion/fuse_pointwise.h"
#include "graft/fusion/fusible.h"
#include "graft/ir/indexed_graph.h"
#include "graft/ir/verify.h"
#include "graft/passes/pass.h"
#include "support/graph_runner.h"

using namespace graft;
using namespace graft::ir;
using graft::testing::expect_close;
using graft::testing::random_tensor;

namespace {

const Shape kShape = {2, 8};

struct Builder {
  Graph g;
  Builder() { g.opset_imports[""] = 17; }
  Value input(const std::string& name, Shape shape = kShape) {
    return g.add_input(name, ValueType::of(DType::float32, shape))->output(0);
  }
  Value op(const std::string& type, std::vector<Value> inputs, const std::string& name, bool backward = false) {
    Node* n = g.add_node(type, inputs, 1, name);
    n->output_names[0] = name;
    n->is_backward = backward;
    return n->output(0);
  }
  Value constant(const std::string& name, Shape shape, uint64_t seed) {
    return g.add_constant(name, random_tensor(shape, seed))->output(0);
  }
  Value weight(const std::string& name) { return constant(name, {8, 8}, 99); }
  void output(Value v) { g.add_output(v); }
  /// Infers types (fusion decides on dtypes).
  std::unique_ptr<Graph> inferred() {
    auto out = g.clone();
    passes::PassContext ctx;
    passes::run_pipeline(out, {"verify", "infer"}, ctx);
    return out;
  }
};

std::vector<const Node*> fused_nodes(const Graph& g) {
  std::vector<const Node*> out;
  for (const auto& n : g.nodes())
    if (n->op_type() == "graft.FusedPointwise") out.push_back(n.get());
  return out;
}

/// Ops of a fused node's body other than Input and Constant, in node order.
std::vector<std::string> body_ops(const Node& fused) {
  std::vector<std::string> out;
  for (const auto& n : fused.subgraph->nodes())
    if (n->schema().category != OpCategory::source) out.push_back(n->name);
  std::sort(out.begin(), out.end());
  return out;
}

/// The graph with every fused node running its body on the reference kernels
/// (what the pass built, without the code generator's approximations).
std::unique_ptr<Graph> on_reference_kernels(const Graph& g) {
  auto out = g.clone();
  for (const auto& n : out->nodes())
    if (n->op_type() == "graft.FusedPointwise") n->backend = "ref";
  return out;
}

/// Runs the pass; checks verify() and that the fused graph computes exactly
/// what the original does on the reference kernels, and closely what it does
/// when the fused nodes are compiled by backend `fuse` (fusion off in every
/// session, only the ref backend partitioning, so nothing else changes).
/// `expected_fused` < 0: any number.
std::unique_ptr<Graph> fuse_and_check(const Graph& original, int expected_fused) {
  auto graph = original.clone();
  fusion::FusionStats stats;
  bool changed = fusion::fuse_pointwise(graph, &stats);
  if (expected_fused >= 0) {
    EXPECT_EQ(changed, expected_fused > 0);
    EXPECT_EQ(stats.fused_nodes, static_cast<size_t>(expected_fused));
  }
  verify(*graph);
  std::vector<Tensor> inputs;
  for (size_t i = 0; i < original.inputs().size(); ++i) {
    auto shape = original.inputs()[i]->output_types[0].concrete_shape();
    inputs.push_back(random_tensor(*shape, 10 + i));
  }
  runtime::SessionOptions options;
  options.passes = {"verify", "infer"};
  options.fusion = false;
  options.backends = {"ref"};
  options.num_threads = 1;
  runtime::Session reference_session(on_reference_kernels(*graph), options);
  runtime::Session compiled_session(graph->clone(), options);
  runtime::Session plain_session(original.clone(), options);
  auto want = plain_session.run(inputs);
  auto got = reference_session.run(inputs);
  auto compiled = compiled_session.run(inputs);
  EXPECT_EQ(got.size(), want.size());
  EXPECT_EQ(compiled.size(), want.size());
  for (size_t i = 0; i < got.size() && i < want.size(); ++i) expect_close(got[i], want[i], 0, 0);
  for (size_t i = 0; i < compiled.size() && i < want.size(); ++i) expect_close(compiled[i], want[i], 1e-5, 1e-6);
  for (size_t i = 0; i < original.outputs().size(); ++i)
    EXPECT_EQ(graph->output_names()[i], original.output_names()[i]);
  return graph;
}

}  // namespace

TEST(FusePointwise, ChainBecomesOneNode) {
  Builder b;
  Value x = b.input("x");
  Value r = b.op("Relu", {x}, "relu");
  Value n = b.op("Neg", {r}, "neg");
  Value e = b.op("Tanh", {n}, "tanh");
  b.output(e);
  auto g = fuse_and_check(*b.inferred(), 1);
  auto fused = fused_nodes(*g);
  ASSERT_EQ(fused.size(), 1u);
  EXPECT_EQ(g->num_nodes(), 2u);  // input + fused
  EXPECT_EQ(fused[0]->backend, "fuse");
  EXPECT_EQ(fused[0]->schema().domain, "graft");
  EXPECT_EQ(body_ops(*fused[0]), (std::vector<std::string>{"neg", "relu", "tanh"}));
  ASSERT_EQ(fused[0]->subgraph->inputs().size(), 1u);
  EXPECT_EQ(fused[0]->subgraph->inputs()[0]->output_types[0], ValueType::of(DType::float32, kShape));
  EXPECT_EQ(fused[0]->num_outputs(), 1);
  EXPECT_EQ(fused[0]->output_names[0], "tanh");
}

TEST(FusePointwise, DiamondWithBroadcastInputs) {
  Builder b;
  Value x = b.input("x");
  Value bias = b.input("bias", {8});
  Value a = b.op("Relu", {x}, "a");
  Value l = b.op("Add", {a, bias}, "left");
  Value r = b.op("Sigmoid", {a}, "right");
  Value d = b.op("Mul", {l, r}, "join");
  b.output(d);
  auto g = fuse_and_check(*b.inferred(), 1);
  auto fused = fused_nodes(*g);
  ASSERT_EQ(fused.size(), 1u);
  EXPECT_EQ(body_ops(*fused[0]).size(), 4u);
  EXPECT_EQ(fused[0]->inputs.size(), 2u);
  EXPECT_EQ(fused[0]->subgraph->inputs()[1]->output_types[0], ValueType::of(DType::float32, {8}));
}

TEST(FusePointwise, MultiOutputWhenInnerValuesAreUsedOutside) {
  Builder b;
  Value x = b.input("x");
  Value a = b.op("Relu", {x}, "a");
  Value n = b.op("Neg", {a}, "n");
  Value m = b.op("MatMul", {a, b.weight("w")}, "mm");  // reads the inner value a
  Value s = b.op("Exp", {n}, "s");
  b.output(s);
  b.output(m);
  b.output(n);  // an inner value that is also a graph output
  auto g = fuse_and_check(*b.inferred(), 1);
  auto fused = fused_nodes(*g);
  ASSERT_EQ(fused.size(), 1u);
  EXPECT_EQ(fused[0]->num_outputs(), 3);  // a (MatMul), n (graph output), s (graph output)
  EXPECT_EQ(fused[0]->subgraph->outputs().size(), 3u);
  EXPECT_EQ(fused[0]->output_names, (std::vector<std::string>{"a", "n", "s"}));
}

TEST(FusePointwise, FanOutToNonFusibleConsumers) {
  Builder b;
  Value x = b.input("x");
  Value a = b.op("Relu", {x}, "a");
  Value e = b.op("Sigmoid", {a}, "e");
  Value sm = b.op("Softmax", {e}, "softmax");
  Value mm = b.op("MatMul", {e, b.weight("w")}, "mm");
  b.output(b.op("Add", {sm, mm}, "sum"));
  auto g = fuse_and_check(*b.inferred(), 1);
  auto fused = fused_nodes(*g);
  ASSERT_EQ(fused.size(), 1u);
  EXPECT_EQ(fused[0]->num_outputs(), 1);
  EXPECT_EQ(body_ops(*fused[0]), (std::vector<std::string>{"a", "e"}));
}

// a -> b (not fusible) -> c and a -> c: fusing a and c would make a cycle
// through b.
TEST(FusePointwise, CycleTrapThroughNonFusibleNode) {
  Builder b;
  Value x = b.input("x");
  Value a = b.op("Relu", {x}, "a");
  Value s = b.op("Softmax", {a}, "b");
  Value c = b.op("Add", {a, s}, "c");
  b.output(c);
  fuse_and_check(*b.inferred(), 0);
}

TEST(FusePointwise, CycleTrapKeepsTheTwoSidesApart) {
  Builder b;
  Value x = b.input("x");
  Value a0 = b.op("Neg", {x}, "a0");
  Value a = b.op("Relu", {a0}, "a");
  Value s = b.op("Softmax", {a}, "b");
  Value c = b.op("Add", {a, s}, "c");
  Value c1 = b.op("Exp", {c}, "c1");
  b.output(c1);
  auto g = fuse_and_check(*b.inferred(), 2);
  auto fused = fused_nodes(*g);
  std::vector<std::vector<std::string>> groups;
  for (const Node* f : fused) groups.push_back(body_ops(*f));
  std::sort(groups.begin(), groups.end());
  EXPECT_EQ(groups, (std::vector<std::vector<std::string>>{{"a", "a0"}, {"c", "c1"}}));
}

// The subset {w0, w} has a member (w) reached from {x} through a non-fusible
// node; v reads x and w0 only. Merging both subsets at v would close the
// cycle x -> z -> w inside one fused node. `late` delays v in topological
// order until after w (through a chain of Softmax nodes), so that both
// subsets exist when v is visited.
TEST(FusePointwise, CycleTrapThroughAnotherMemberOfTheSubset) {
  for (bool late : {false, true}) {
    Builder b;
    Value in0 = b.input("in0");
    Value in1 = b.input("in1");
    Value in2 = b.input("in2");
    Value x = b.op("Relu", {in0}, "x");
    Value w0 = b.op("Neg", {in1}, "w0");
    Value z = b.op("Softmax", {x}, "z");
    Value w = b.op("Add", {w0, z}, "w");
    Value s = b.op("Softmax", {b.op("Softmax", {b.op("Softmax", {in2}, "s1")}, "s2")}, "s3");
    Value v = late ? b.op("Sum", {x, w0, s}, "v") : b.op("Mul", {x, w0}, "v");
    b.output(w);
    b.output(v);
    if (!late) b.output(s);
    auto g = b.inferred();
    auto fused_graph = fuse_and_check(*g, -1);
    for (const Node* f : fused_nodes(*fused_graph)) {
      auto ops = body_ops(*f);
      bool has_x = std::count(ops.begin(), ops.end(), "x") > 0, has_w = std::count(ops.begin(), ops.end(), "w") > 0;
      EXPECT_FALSE(has_x && has_w) << "late=" << late << ": " << ::testing::PrintToString(ops);
    }
  }
}

TEST(FusePointwise, ForwardAndBackwardNeverShareAFusedNode) {
  Builder b;
  Value x = b.input("x");
  Value f1 = b.op("Relu", {x}, "f1");
  Value f2 = b.op("Neg", {f1}, "f2");
  Value b1 = b.op("Mul", {f2, x}, "b1", true);
  Value b2 = b.op("Sigmoid", {b1}, "b2", true);
  b.output(b2);
  auto g = fuse_and_check(*b.inferred(), 2);
  for (const Node* f : fused_nodes(*g)) {
    auto ops = body_ops(*f);
    if (f->is_backward) EXPECT_EQ(ops, (std::vector<std::string>{"b1", "b2"}));
    else EXPECT_EQ(ops, (std::vector<std::string>{"f1", "f2"}));
    for (const auto& n : f->subgraph->nodes())
      if (n->schema().category != OpCategory::source) {
        EXPECT_EQ(n->is_backward, f->is_backward);
      }
  }
}

TEST(FusePointwise, SingleNodesAreLeftAlone) {
  Builder b;
  Value x = b.input("x");
  Value r = b.op("Relu", {x}, "r");
  Value m = b.op("MatMul", {r, b.weight("w")}, "mm");
  Value r2 = b.op("Relu", {m}, "r2");
  b.output(r2);
  auto original = b.inferred();
  auto g = fuse_and_check(*original, 0);
  EXPECT_EQ(g->num_nodes(), original->num_nodes());
  EXPECT_TRUE(fused_nodes(*g).empty());
}

TEST(FusePointwise, ScalarConstantsMoveIntoTheBody) {
  Builder b;
  Value x = b.input("x");
  Value half = b.constant("half", {}, 5);
  Value row = b.constant("row", {8}, 6);
  Value m = b.op("Mul", {x, half}, "scaled");
  Value a = b.op("Add", {m, row}, "shifted");
  b.output(b.op("Tanh", {a}, "out"));
  auto g = fuse_and_check(*b.inferred(), 1);
  auto fused = fused_nodes(*g);
  ASSERT_EQ(fused.size(), 1u);
  EXPECT_EQ(fused[0]->inputs.size(), 2u);  // x and row; half is inside
  size_t constants = 0;
  for (const auto& n : fused[0]->subgraph->nodes()) constants += n->schema().name == "Constant";
  EXPECT_EQ(constants, 1u);
}

TEST(FusePointwise, NonKernelDtypesAndUnknownTypesAreNotFused) {
  Graph g;
  g.opset_imports[""] = 17;
  Node* x = g.add_input("x", ValueType::of(DType::bfloat16, kShape));
  Node* a = g.add_node("Abs", {x->output(0)}, 1, "a");
  Node* n = g.add_node("Neg", {a->output(0)}, 1, "n");
  g.add_output(n->output(0), "y");
  auto graph = g.clone();
  passes::PassContext ctx;
  passes::run_pipeline(graph, {"infer"}, ctx);
  EXPECT_FALSE(fusion::fuse_pointwise(graph));
  auto untyped = g.clone();  // no inference: dtypes undefined
  EXPECT_FALSE(fusion::fuse_pointwise(untyped));
}

TEST(FusePointwise, RegisteredAsAPass) {
  Builder b;
  Value x = b.input("x");
  b.output(b.op("Neg", {b.op("Relu", {x}, "r")}, "n"));
  auto graph = b.g.clone();
  passes::PassContext ctx;
  ctx.verify_after_each = true;
  ASSERT_NE(passes::find_pass("fuse-pointwise"), nullptr);
  passes::run_pipeline(graph, {"infer", "fuse-pointwise"}, ctx);
  EXPECT_EQ(fused_nodes(*graph).size(), 1u);
}
