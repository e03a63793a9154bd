#include <gtest/gtest.h>

#include "graft/ir/graph_rebuilder.h"
#include "graft/ir/indexed_graph.h"
#include "graft/ir/type_inference.h"
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
