#include <gtest/gtest.h>

#include "graft/ir/graph_rebuilder.h"
#include "graft/ir/indexed_graph.h"
#include "graft/ops/type_inference.h"
#include "graft/ir/verify.h"

using namespace graft;
using namespace graft::ir;

namespace {
std::unique_ptr<Graph> diamond() {
  auto g = std::make_unique<Graph>();
  g->opset_imports[""] = 17;
  Node* x = g->add_input("x", ValueType::of(DType::float32, {2, 3}));
  Node* a = g->add_node("Relu", {x->output(0)}, 1, "a");
  Node* b = g->add_node("Neg", {x->output(0)}, 1, "b");
  Node* c = g->add_node("Add", {a->output(0), b->output(0)}, 1, "c");
  c->output_names[0] = "y";
  g->add_output(c->output(0), "y");
  return g;
}
}  // namespace

TEST(IndexedGraph, OrdersTopologicallyAndListsConsumers) {
  auto g = std::make_unique<Graph>();
  g->opset_imports[""] = 17;
  Node* x = g->add_input("x", ValueType::of(DType::float32, {4}));
  // Insert the consumer before its producer: insertion order is not topological.
  Node* late = g->add_node("Relu", {}, 1, "late");
  Node* early = g->add_node("Neg", {x->output(0)}, 1, "early");
  late->inputs = {early->output(0)};
  g->add_output(late->output(0));
  IndexedGraph indexed(*g);
  ASSERT_EQ(indexed.num_nodes(), 3u);
  EXPECT_LT(indexed.id_of(*early), indexed.id_of(*late));
  auto consumers = indexed.consumers(indexed.id_of(*x));
  ASSERT_EQ(consumers.size(), 1u);
  EXPECT_EQ(consumers[0], indexed.id_of(*early));
  EXPECT_EQ(indexed.num_entries(), 3u);
}

TEST(IndexedGraph, ConsumerReadingTwiceIsListedOnce) {
  auto g = diamond();
  Node* x = g->inputs()[0];
  Node* sq = g->add_node("Mul", {x->output(0), x->output(0)}, 1, "sq");
  g->add_output(sq->output(0), "sq");
  IndexedGraph indexed(*g);
  EXPECT_EQ(indexed.consumers(indexed.id_of(*x)).size(), 3u);
}

TEST(IndexedGraph, KeepsInsertionOrderWhenItIsTopological) {
  auto g = std::make_unique<Graph>();
  g->opset_imports[""] = 17;
  // Sources inserted after consumers of earlier sources: Kahn's algorithm
  // would list both sources first; insertion order is kept instead.
  Node* x = g->add_input("x", ValueType::of(DType::float32, {4}));
  Node* a = g->add_node("Relu", {x->output(0)}, 1, "a");
  Node* c = g->add_constant("c", Tensor(DType::float32, {1}));
  Node* b = g->add_node("Add", {a->output(0), c->output(0)}, 1, "b");
  g->add_output(b->output(0));
  IndexedGraph indexed(*g);
  for (const auto& node : g->nodes()) EXPECT_EQ(indexed.id_of(*node), node->index()) << node->describe();
  EXPECT_EQ(indexed.consumers(indexed.id_of(*a)).size(), 1u);
  ASSERT_EQ(indexed.inputs(indexed.id_of(*b)).size(), 2u);
  EXPECT_EQ(indexed.inputs(indexed.id_of(*b))[1], (Entry{indexed.id_of(*c), 0}));
}

TEST(IndexedGraph, WideNodeReadingOneProducerManyTimesIsListedOnce) {
  // More inputs than a node's own inputs are scanned for repeats (16).
  for (bool reversed : {false, true}) {
    auto g = std::make_unique<Graph>();
    g->opset_imports[""] = 17;
    Node* x = g->add_input("x", ValueType::of(DType::float32, {4}));
    Node* y = g->add_input("y", ValueType::of(DType::float32, {4}));
    Node* sum = g->add_node("Sum", {}, 1, "sum");
    Node* other = g->add_node("Sum", {}, 1, "other");
    for (int i = 0; i < 40; ++i) sum->inputs.push_back((i % 3 ? x : y)->output(0));
    for (int i = 0; i < 20; ++i) other->inputs.push_back(x->output(0));
    if (reversed) other->inputs.push_back(sum->output(0));  // a later producer: not in insertion order
    else sum->inputs.push_back(other->output(0));
    g->add_output((reversed ? other : sum)->output(0));
    IndexedGraph indexed(*g);
    auto x_consumers = indexed.consumers(indexed.id_of(*x));
    ASSERT_EQ(x_consumers.size(), 2u);
    EXPECT_LT(x_consumers[0], x_consumers[1]);
    EXPECT_EQ(indexed.consumers(indexed.id_of(*y)).size(), 1u);
    EXPECT_EQ(indexed.inputs(indexed.id_of(*sum)).size(), reversed ? 40u : 41u);
    Node* first = reversed ? sum : other;
    Node* second = reversed ? other : sum;
    EXPECT_LT(indexed.id_of(*first), indexed.id_of(*second));
    ASSERT_EQ(indexed.consumers(indexed.id_of(*first)).size(), 1u);
    EXPECT_EQ(indexed.consumers(indexed.id_of(*first))[0], indexed.id_of(*second));
  }
}

TEST(Graph, AttributeErrorsNameTheOwningNodeAsItIsNow) {
  auto g = std::make_unique<Graph>();
  Node* x = g->add_input("x", ValueType::of(DType::float32, {4}));
  Node* n = g->add_node("Relu", {x->output(0)}, 1, "before");
  n->name = "after";  // the owner is described when the message is written
  try {
    n->attributes.get_int("missing");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("node 'after' (Relu)"), std::string::npos) << e.what();
  }
  // A standalone copy keeps naming the node; assigning into a node's
  // attributes names that node.
  n->attributes.set("alpha", 1.0f);
  Attributes copy = n->attributes;
  EXPECT_EQ(copy.owner(), "node 'after' (Relu)");
  Node* m = g->add_node("Neg", {x->output(0)}, 1, "m");
  m->attributes = copy;
  EXPECT_EQ(m->attributes.owner(), "node 'm' (Neg)");
  EXPECT_FLOAT_EQ(m->attributes.get_float("alpha"), 1.0f);
  Node* c = g->copy_node(*n, {x->output(0)});
  c->name = "copied";
  EXPECT_EQ(c->attributes.owner(), "node 'copied' (Relu)");
  Attributes named;
  named.set_owner("an annotation");
  EXPECT_EQ(named.owner(), "an annotation");
}

TEST(Graph, AddNodeBySchemaAndValueNames) {
  auto g = std::make_unique<Graph>();
  g->opset_imports[""] = 17;
  Node* x = g->add_input("x", ValueType::of(DType::float32, {4}));
  const OpSchema* relu = find_op("", "Relu");
  ASSERT_NE(relu, nullptr);
  Node* unnamed = g->add_node(*relu, {x->output(0)});
  EXPECT_EQ(unnamed->op_type(), "Relu");
  EXPECT_EQ(unnamed->opset_version, 17);
  EXPECT_EQ(g->value_name(unnamed->output(0)), "#1:0");
  Node* named = g->add_node(*relu, {unnamed->output(0)}, 1, "relu2");
  EXPECT_EQ(g->value_name(named->output(0)), "relu2:0");
  EXPECT_EQ(g->value_name(x->output(0)), "x");
  EXPECT_EQ(g->value_name(Value{}), "<absent>");
}

TEST(IndexedGraph, CycleIsAnErrorNamingNodes) {
  auto g = std::make_unique<Graph>();
  g->opset_imports[""] = 17;
  Node* a = g->add_node("Relu", {}, 1, "loop_a");
  Node* b = g->add_node("Relu", {a->output(0)}, 1, "loop_b");
  a->inputs = {b->output(0)};
  g->add_output(b->output(0));
  try {
    IndexedGraph indexed(*g);
    FAIL() << "expected a cycle error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid_model);
    std::string msg = e.what();
    EXPECT_NE(msg.find("cycle"), std::string::npos) << msg;
    EXPECT_NE(msg.find("loop_a"), std::string::npos) << msg;
  }
}

TEST(Verify, RejectsWrongArity) {
  auto g = diamond();
  Node* x = g->inputs()[0];
  g->add_node("Add", {x->output(0)}, 1, "half_add");
  try {
    verify(*g);
    FAIL() << "expected an arity error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("half_add"), std::string::npos) << e.what();
  }
}

TEST(Verify, RejectsDuplicateValueNames) {
  auto g = diamond();
  Node* x = g->inputs()[0];
  Node* d = g->add_node("Relu", {x->output(0)}, 1, "dup");
  d->output_names[0] = "y";
  EXPECT_THROW(verify(*g), Error);
}

TEST(Graph, UnknownOpIsUnsupported) {
  Graph g;
  try {
    g.add_node("NoSuchOp", {});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::unsupported);
  }
}

TEST(Graph, CloneIsDeepAndEquivalent) {
  auto g = diamond();
  auto c = g->clone();
  ASSERT_EQ(c->num_nodes(), g->num_nodes());
  ASSERT_EQ(c->inputs().size(), 1u);
  EXPECT_NE(c->inputs()[0], g->inputs()[0]);
  EXPECT_EQ(&c->outputs()[0].node->graph(), c.get());
  EXPECT_EQ(c->output_names()[0], "y");
  verify(*c);
}

TEST(GraphRebuilder, CopiesInTopologicalOrderAndKeepsInterface) {
  auto g = diamond();
  IndexedGraph indexed(*g);
  GraphRebuilder rb(indexed);
  for (uint32_t id = 0; id < indexed.num_nodes(); ++id) rb.copy(id);
  auto out = rb.finish();
  EXPECT_EQ(out->num_nodes(), g->num_nodes());
  EXPECT_EQ(out->inputs().size(), 1u);
  EXPECT_EQ(out->output_names()[0], "y");
  verify(*out);
}

TEST(ValueType, PrintsSymbolicDims) {
  ValueType t{DType::float32, true, {Dim::symbolic("batch"), Dim::known(3), Dim{}}};
  EXPECT_EQ(t.to_string(), "float32[batch,3,?]");
  EXPECT_FALSE(t.is_concrete());
  EXPECT_EQ(ValueType::of_dtype(DType::int64).to_string(), "int64[?]");
}

TEST(OpTable, EveryRowHasValidArity) {
  for (const OpSchema& op : all_ops()) {
    EXPECT_GE(op.min_inputs, 0) << op.name;
    EXPECT_TRUE(op.max_inputs < 0 || op.max_inputs >= op.min_inputs) << op.name;
    EXPECT_TRUE(op.max_outputs < 0 || op.max_outputs >= op.min_outputs) << op.name;
    EXPECT_EQ(find_op(op.domain, op.name), &op) << op.name;
  }
  EXPECT_EQ(find_op("ai.onnx", "Conv"), find_op("", "Conv"));
}
