// ccodegen against the reference kernels: each case builds a small float32
// graph, runs it with graft's reference kernels, compiles it with the
// ccodegen backend (real C compiler, real dlopen) and compares. Also: a
// module saved and loaded again, a Session running a graft.Subgraph node
// through ccodegen, the support checker, and a missing compiler.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <sstream>

#include "graft/backend/backend.h"
#include "graft/backends/ccodegen.h"
#include "graft/ops/type_inference.h"
#include "graft/partition/partitioner.h"
#include "graft/backend/backend.h"
#include "support/graph_runner.h"

using namespace graft;
using namespace graft::ir;
using graft::testing::expect_close;
using graft::testing::random_tensor;

namespace {

bool have_compiler() { return !backends::find_c_compiler().empty(); }

/// A graph under construction: inputs of fixed float32 shapes.
struct CaseGraph {
  std::unique_ptr<Graph> graph = std::make_unique<Graph>();
  std::vector<Tensor> inputs;
  explicit CaseGraph(int opset = 17) { graph->opset_imports[""] = opset; }
  Value input(const Shape& shape) {
    std::string name = "in" + std::to_string(inputs.size());
    inputs.push_back(random_tensor(shape, 100 + inputs.size()));
    return graph->add_input(name, ValueType::of(DType::float32, shape))->output(0);
  }
  Value constant(const Tensor& value) {
    return graph->add_constant("c" + std::to_string(graph->num_nodes()), value)->output(0);
  }
  Value node(const std::string& op, const std::vector<Value>& in, Attributes attrs = {}) {
    Node* n = graph->add_node(op, in, 1, op + std::to_string(graph->num_nodes()));
    n->attributes = attrs;
    return n->output(0);
  }
};

Attributes attrs(std::initializer_list<std::pair<std::string, AttributeValue>> list) {
  Attributes a;
  for (const auto& [k, v] : list) a.set(k, v);
  return a;
}

/// The reference: graft's own kernels only (no partitioning, no fusion).
std::vector<Tensor> run_reference(const Graph& graph, const std::vector<Tensor>& inputs) {
  runtime::SessionOptions options;
  options.passes = {"verify", "infer"};
  options.backends = {"ref"};
  options.fusion = false;
  options.num_threads = 2;
  runtime::Session session(graph.clone(), options);
  return session.run(inputs);
}

std::vector<Tensor> run_compiled(const backend::CompiledModule& module, const std::vector<Tensor>& inputs) {
  backend::BufferPool pool;
  backend::ModuleRunContext context{pool, 2, nullptr};
  return module.run(inputs, context);
}

/// Compiles `c` with ccodegen (after marking `outputs` as graph outputs) and
/// compares with the reference kernels; also checks that a saved and
/// reloaded module gives the same values.
void check_case(CaseGraph& c, const std::vector<Value>& outputs, double rtol = 1e-5, double atol = 1e-5) {
  if (!have_compiler()) GTEST_SKIP() << "no C compiler";
  for (size_t i = 0; i < outputs.size(); ++i) c.graph->add_output(outputs[i], "out" + std::to_string(i));
  ops::infer_types(*c.graph);
  std::vector<Tensor> want = run_reference(*c.graph, c.inputs);
  const backend::Backend& backend = backend::get_backend("ccodegen");
  auto module = backend.compile(*c.graph, {});
  std::vector<Tensor> got = run_compiled(*module, c.inputs);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) expect_close(got[i], want[i], rtol, atol);

  std::stringstream saved;
  module->save(saved);
  auto loaded = backend::load_module("ccodegen", saved, *c.graph);
  std::vector<Tensor> again = run_compiled(*loaded, c.inputs);
  for (size_t i = 0; i < again.size(); ++i) expect_close(again[i], got[i], 0, 0);
}

}  // namespace

TEST(Ccodegen, UnaryOps) {
  for (const char* op : {"Relu", "Sigmoid", "Tanh", "Exp", "Neg", "Abs", "Erf", "Floor", "Ceil", "Sin", "Cos",
                         "Softsign", "Softplus", "HardSwish", "Gelu", "Identity"}) {
    SCOPED_TRACE(op);
    CaseGraph c;
    Value x = c.input({2, 3, 5});
    check_case(c, {c.node(op, {x})});
  }
  CaseGraph c;
  Value x = c.input({4, 7});
  Value pos = c.node("Abs", {x});
  check_case(c, {c.node("Sqrt", {pos}), c.node("Log", {pos}), c.node("Reciprocal", {pos}),
                 c.node("LeakyRelu", {x}, attrs({{"alpha", 0.2f}})), c.node("Elu", {x}, attrs({{"alpha", 0.7f}})),
                 c.node("HardSigmoid", {x}), c.node("Selu", {x}), c.node("Gelu", {x}, attrs({{"approximate", std::string("tanh")}})),
                 c.node("Clip", {x, c.constant(Tensor::scalar(-0.25f)), c.constant(Tensor::scalar(0.5f))})});
}

TEST(Ccodegen, MathAtExtremes) {
  // ccodegen's own exp/erf/tanh (vectorizable polynomials) at the edges of their ranges.
  std::vector<float> values = {-200.0f, -88.5f, -87.0f, -20.0f, -5.0f, -1.0f, -1e-3f, -1e-6f, 0.0f, 1e-6f, 1e-3f,
                               0.5f, 1.0f, 3.0f, 10.0f, 20.0f, 80.0f, 88.0f, 88.5f, -100.0f, -INFINITY};
  Tensor x = Tensor::from_vector<float>(values, {static_cast<int64_t>(values.size())});
  CaseGraph c;
  Value in = c.input(x.shape());
  c.inputs[0] = x;
  check_case(c, {c.node("Exp", {in}), c.node("Erf", {in}), c.node("Tanh", {in}), c.node("Sigmoid", {in}),
                 c.node("Softmax", {in})},
             2e-6, 1e-6);
  CaseGraph nan;
  Value n = nan.input({3});
  nan.inputs[0] = Tensor::from_vector<float>({NAN, 1.0f, -1.0f}, {3});
  check_case(nan, {nan.node("Exp", {n}), nan.node("Erf", {n}), nan.node("Tanh", {n})});
}

TEST(Ccodegen, BroadcastOps) {
  CaseGraph c;
  Value a = c.input({4, 1, 6});
  Value b = c.input({5, 1});
  Value s = c.input({});
  Value w = c.constant(random_tensor({6}, 9));
  check_case(c, {c.node("Add", {a, b}), c.node("Sub", {b, a}), c.node("Mul", {a, s}), c.node("Div", {a, c.node("Add", {c.node("Abs", {b}), s})}),
                 c.node("Max", {a, b, s}), c.node("Min", {a, w}), c.node("Sum", {a, b, w}), c.node("Mean", {a, b}),
                 c.node("PRelu", {a, w}), c.node("Pow", {c.node("Abs", {a}), b})});
}

TEST(Ccodegen, LargePointwiseRunsInParallel) {
  CaseGraph c;
  Value x = c.input({64, 1024});
  Value bias = c.constant(random_tensor({1024}, 3));
  check_case(c, {c.node("Gelu", {c.node("Add", {x, bias})})});
}

TEST(Ccodegen, MatMul) {
  {
    CaseGraph c;
    Value a = c.input({2, 3, 4, 5});
    check_case(c, {c.node("MatMul", {a, c.constant(random_tensor({5, 6}, 1))})});
  }
  {
    CaseGraph c;
    check_case(c, {c.node("MatMul", {c.input({2, 1, 4, 5}), c.input({3, 5, 6})})});
  }
  {
    CaseGraph c;
    check_case(c, {c.node("MatMul", {c.input({5}), c.input({2, 5, 3})}), c.node("MatMul", {c.input({2, 4, 7}), c.input({7})})});
  }
}

TEST(Ccodegen, Gemm) {
  CaseGraph c;
  Value a = c.input({3, 40});
  Value at = c.input({40, 3});
  Value b = c.constant(random_tensor({8, 40}, 4));
  Value bn = c.constant(random_tensor({40, 8}, 5));
  Value bias = c.constant(random_tensor({8}, 6));
  Value col = c.constant(random_tensor({3, 1}, 7));
  check_case(c, {c.node("Gemm", {a, b, bias}, attrs({{"transB", int64_t{1}}})),
                 c.node("Gemm", {at, bn, col}, attrs({{"transA", int64_t{1}}, {"alpha", 0.5f}, {"beta", 2.0f}})),
                 c.node("Gemm", {at, b}, attrs({{"transA", int64_t{1}}, {"transB", int64_t{1}}})),
                 c.node("Gemm", {a, bn})});
}

TEST(Ccodegen, Softmax) {
  CaseGraph c;
  Value x = c.input({2, 3, 17});
  Value y = c.input({2, 5, 3});
  check_case(c, {c.node("Softmax", {x}), c.node("Softmax", {y}, attrs({{"axis", int64_t{1}}})),
                 c.node("LogSoftmax", {x}, attrs({{"axis", int64_t{-1}}}))});
  CaseGraph legacy(11);
  Value z = legacy.input({2, 3, 4});
  check_case(legacy, {legacy.node("Softmax", {z})});
}

TEST(Ccodegen, Reductions) {
  for (const char* op : {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin"}) {
    SCOPED_TRACE(op);
    CaseGraph c(18);
    Value x = c.input({3, 4, 5});
    auto axes = [&](std::vector<int64_t> a) { return c.constant(Tensor::from_vector<int64_t>(a, {static_cast<int64_t>(a.size())})); };
    check_case(c, {c.node(op, {x, axes({-1})}), c.node(op, {x, axes({1})}, attrs({{"keepdims", int64_t{0}}})),
                   c.node(op, {x}), c.node(op, {x, axes({0, 2})})});
  }
  CaseGraph legacy(11);
  Value x = legacy.input({3, 4, 5});
  check_case(legacy, {legacy.node("ReduceMean", {x}, attrs({{"axes", std::vector<int64_t>{1, 2}}}))});
}

TEST(Ccodegen, ReshapeAndTranspose) {
  CaseGraph c;
  Value x = c.input({2, 6, 4});
  Value shape = c.constant(Tensor::from_vector<int64_t>({2, 6, 2, 2}, {4}));
  Value r = c.node("Reshape", {x, shape});
  Value t = c.node("Transpose", {r}, attrs({{"perm", std::vector<int64_t>{0, 2, 1, 3}}}));
  Value back = c.node("Transpose", {x});
  // A reshape feeding a computation (aliased), one that is an output (copied),
  // and an input passed straight through.
  check_case(c, {c.node("Relu", {t}), back, r, x});
}

TEST(Ccodegen, LayerNormalization) {
  CaseGraph c;
  Value x = c.input({2, 5, 48});
  Value scale = c.constant(random_tensor({48}, 3));
  Value bias = c.constant(random_tensor({48}, 4));
  Attributes last = attrs({{"epsilon", 1e-12f}});
  check_case(c, {c.node("LayerNormalization", {x, scale, bias}, last),
                 c.node("LayerNormalization", {x, c.constant(random_tensor({5, 48}, 5))}, attrs({{"axis", int64_t{1}}}))},
             1e-4, 1e-5);
}

TEST(Ccodegen, EncoderLikeSubgraph) {
  // LayerNorm-style mean/variance, a projection and an attention softmax.
  CaseGraph c(18);
  Value x = c.input({1, 16, 32});
  Value axes = c.constant(Tensor::from_vector<int64_t>({-1}, {1}));
  Value mean = c.node("ReduceMean", {x, axes});
  Value centered = c.node("Sub", {x, mean});
  Value var = c.node("ReduceMean", {c.node("Mul", {centered, centered}), axes});
  Value norm = c.node("Div", {centered, c.node("Sqrt", {c.node("Add", {var, c.constant(Tensor::scalar(1e-5f))})})});
  Value q = c.node("MatMul", {norm, c.constant(random_tensor({32, 32}, 11))});
  Value heads = c.node("Transpose", {c.node("Reshape", {q, c.constant(Tensor::from_vector<int64_t>({1, 16, 4, 8}, {4}))})},
                       attrs({{"perm", std::vector<int64_t>{0, 2, 1, 3}}}));
  Value keys = c.node("Transpose", {heads}, attrs({{"perm", std::vector<int64_t>{0, 1, 3, 2}}}));
  Value scores = c.node("Mul", {c.node("MatMul", {heads, keys}), c.constant(Tensor::scalar(0.125f))});
  check_case(c, {c.node("Softmax", {scores}), norm}, 1e-4, 1e-5);
}

TEST(Ccodegen, ChainReadTwiceByItsReader) {
  // Mul(s, s) reads one chained result twice: the chain is computed once in
  // the reader's loop (it used to be emitted twice, redefining its locals,
  // and the C compiler refused the module). Nested: t = s * s, u = t * t.
  CaseGraph c(5);
  Value x = c.input({3, 17});
  Value s = c.node("Relu", {c.node("Add", {x, c.constant(random_tensor({17}, 2))})});
  Value t = c.node("Mul", {s, s});
  Value u = c.node("Mul", {t, t});
  check_case(c, {c.node("Add", {u, c.node("Abs", {x})})}, 1e-5, 1e-6);
  backends::GeneratedC code = backends::generate_c(*c.graph);
  EXPECT_NE(code.source.find("computed inside its reader's loop"), std::string::npos) << code.source;
}

TEST(Ccodegen, EmitsReadableC) {
  CaseGraph c;
  Value x = c.input({8, 16});
  c.graph->add_output(c.node("Relu", {c.node("Add", {x, c.constant(random_tensor({16}, 1))})}), "y");
  ops::infer_types(*c.graph);
  backends::GeneratedC code = backends::generate_c(*c.graph);
  EXPECT_NE(code.source.find("Relu"), std::string::npos) << code.source;
  // The Add is computed inside the Relu's loop, not stored.
  EXPECT_NE(code.source.find("computed inside its reader's loop"), std::string::npos) << code.source;
  EXPECT_EQ(code.scratch_floats, 0u) << code.source;
  EXPECT_NE(code.source.find("void " + code.entry + "("), std::string::npos);
  EXPECT_EQ(code.constant_ids.size(), 1u);
  EXPECT_EQ(code.input_shapes, std::vector<Shape>{Shape({8, 16})});
}

TEST(Ccodegen, RunsSubgraphNodesInASession) {
  if (!have_compiler()) GTEST_SKIP() << "no C compiler";
  auto body = std::make_shared<Graph>();
  body->opset_imports[""] = 17;
  Node* bx = body->add_input("x", ValueType::of(DType::float32, {4, 8}));
  Node* relu = body->add_node("Relu", {bx->output(0)}, 1, "relu");
  Node* sm = body->add_node("Softmax", {relu->output(0)}, 1, "softmax");
  body->add_output(sm->output(0), "y");

  auto g = std::make_unique<Graph>();
  g->opset_imports[""] = 17;
  Node* x = g->add_input("x", ValueType::of(DType::float32, {4, 8}));
  Node* sub = g->add_node("Subgraph", {x->output(0)}, 1, "cc0", "graft");
  sub->subgraph = body;
  sub->backend = "ccodegen";
  g->add_output(sub->output(0), "y");

  Tensor in = random_tensor({4, 8}, 5);
  runtime::SessionOptions options;
  options.passes = {"verify", "infer"};
  runtime::Session session(std::move(g), options);
  std::vector<Tensor> got = session.run({in});
  std::vector<Tensor> want = run_reference(*body, {in});
  expect_close(got[0], want[0]);
}

TEST(Ccodegen, PartitionerHandsItSubgraphsWhenAsked) {
  if (!have_compiler()) GTEST_SKIP() << "no C compiler";
  // Not in a Session's default order (a compiler run per subgraph): only when named.
  auto order = backend::resolve_backend_order({});
  EXPECT_EQ(std::find(order.begin(), order.end(), "ccodegen"), order.end());

  CaseGraph c;
  Value x = c.input({4, 16});
  Value y = c.node("Softmax", {c.node("Tanh", {c.node("Add", {x, c.constant(random_tensor({16}, 2))})})});
  c.graph->add_output(y, "y");
  std::vector<Tensor> want = run_reference(*c.graph, c.inputs);
  runtime::SessionOptions options;
  options.backends = {"ccodegen", "ref"};
  options.num_threads = 2;
  runtime::Session session(c.graph->clone(), options);
  expect_close(session.run(c.inputs)[0], want[0]);
  EXPECT_GE(session.num_compiles(), 1u);
  size_t ccodegen_nodes = 0;
  for (const auto& node : session.graph().nodes()) ccodegen_nodes += node->backend == "ccodegen";
  EXPECT_EQ(ccodegen_nodes, 1u) << "one subgraph for the whole chain";
}

TEST(Ccodegen, SupportChecker) {
  if (!have_compiler()) GTEST_SKIP() << "no C compiler";
  Graph g;
  g.opset_imports[""] = 17;
  Node* f = g.add_input("f", ValueType::of(DType::float32, {2}));
  Node* i = g.add_input("i", ValueType::of(DType::int64, {2}));
  Node* add_f = g.add_node("Add", {f->output(0), f->output(0)});
  Node* add_i = g.add_node("Add", {i->output(0), i->output(0)});
  Node* conv = g.add_node("Conv", {f->output(0), f->output(0)});
  add_f->output_types[0] = ValueType::of(DType::float32, {2});
  add_i->output_types[0] = ValueType::of(DType::int64, {2});
  EXPECT_TRUE(backends::ccodegen_supports(*add_f).supported);
  auto int_add = backends::ccodegen_supports(*add_i);
  EXPECT_FALSE(int_add.supported);
  EXPECT_NE(int_add.reason.find("float32"), std::string::npos) << int_add.reason;
  auto c = backends::ccodegen_supports(*conv);
  EXPECT_FALSE(c.supported);
  EXPECT_NE(c.reason.find("Conv"), std::string::npos) << c.reason;
}

TEST(Ccodegen, MissingCompilerIsReported) {
  const char* old = std::getenv("CC");
  std::string saved = old ? old : "";
  ::setenv("CC", "/nonexistent/graft-test-cc", 1);
  const backend::Backend& backend = backend::get_backend("ccodegen");
  std::string reason = backend.unavailable_reason();
  EXPECT_NE(reason.find("/nonexistent/graft-test-cc"), std::string::npos) << reason;
  {
    Graph g;
    g.opset_imports[""] = 17;
    Node* x = g.add_input("x", ValueType::of(DType::float32, {2}));
    Node* relu = g.add_node("Relu", {x->output(0)});
    auto answer = backends::ccodegen_supports(*relu);
    EXPECT_FALSE(answer.supported);
    EXPECT_EQ(answer.reason, reason) << "every node is declined with the backend's reason";
  }
  CaseGraph c;
  c.graph->add_output(c.node("Relu", {c.input({2})}), "y");
  ops::infer_types(*c.graph);
  try {
    backend.compile(*c.graph, {});
    ADD_FAILURE() << "compiled without a compiler";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::unsupported);
    EXPECT_NE(std::string(e.what()).find("not an executable"), std::string::npos) << e.what();
  }
  if (old) ::setenv("CC", saved.c_str(), 1);
  else ::unsetenv("CC");
}

TEST(Ccodegen, CompilerErrorsCarryItsOutput) {
  if (!have_compiler()) GTEST_SKIP() << "no C compiler";
  try {
    backends::compile_c_to_shared_object("this is not C;", "a broken test file");
    ADD_FAILURE() << "compiled garbage";
  } catch (const Error& e) {
    std::string message = e.what();
    EXPECT_NE(message.find("a broken test file"), std::string::npos) << message;
    EXPECT_NE(message.find("error"), std::string::npos) << message;
  }
}
