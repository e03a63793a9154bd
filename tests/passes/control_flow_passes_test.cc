// unroll-loops, simplify-sequences, inline-constant-if and
// simplify-control-flow: the exported tensor_split pattern (a Loop slicing a
// tensor into a sequence, then SequenceAt) and shape tests (If) become
// straight-line code with known shapes and the same outputs; what the passes
// must leave alone stays.
#include <gtest/gtest.h>

#include "graft/ops/type_inference.h"
#include "passes/pass_test_helpers.h"

using namespace graft;
using namespace graft::ir;
using namespace graft::testing::passes_helpers;
using graft::testing::random_tensor;
using graft::testing::run_graph;

namespace {

Value constant(Graph& g, const std::string& name, Tensor t) { return g.add_constant(name, std::move(t))->output(0); }
Value ints(Graph& g, const std::string& name, std::vector<int64_t> v, Shape shape) {
  return constant(g, name, Tensor::from_vector<int64_t>(v, shape));
}

/// How the Loop of split_loop_graph is written.
struct LoopForm {
  int64_t trips = 3;              // the trip count constant (the pieces are rows [0,1), [1,3), [3,6), ...)
  bool trips_from_input = false;  // the trip count is a graph input instead
  bool cond_from_data = false;    // the body's condition is iteration < 1 (the loop stops early)
  bool cond_passed_on = false;    // the body passes its condition input on (else: an outer true constant)
};

/// x [6,4] -> Loop { piece = x[splits[i]:splits[i+1]]; seq.append(piece);
/// acc = acc * 2; scan: float(i) } -> SequenceAt(seq, 0), SequenceAt(seq, -1),
/// SequenceLength(seq), ConcatFromSequence(seq), acc, scan.
std::unique_ptr<Graph> split_loop_graph(const LoopForm& form) {
  auto g = new_graph();
  Value x = g->add_input("x", ValueType::of(DType::float32, {6, 4}))->output(0);
  Value trips = form.trips_from_input ? g->add_input("trips", ValueType::of(DType::int64, {}))->output(0)
                                      : ints(*g, "trips", {form.trips}, {});
  Value cond = constant(*g, "true", Tensor::scalar<bool>(true));
  Value splits = ints(*g, "splits", {0, 1, 3, 6, 6, 6, 6, 6}, {8, 1});
  Value axes = ints(*g, "axes", {0}, {1});
  Value empty = g->add_node("SequenceEmpty", {}, 1, "empty")->output(0);
  Value acc0 = constant(*g, "acc0", Tensor::from_vector<float>({1, 2, 3, 4}, {4}));

  auto body = std::make_shared<Graph>();
  body->opset_imports[""] = 17;
  Value i = body->add_input("i", ValueType::of(DType::int64, {}))->output(0);
  Value c = body->add_input("c", ValueType::of(DType::boolean, {}))->output(0);
  Value seq = body->add_input("seq", ValueType::sequence_of(ValueType::of_dtype(DType::float32)))->output(0);
  Value acc = body->add_input("acc", ValueType::of(DType::float32, {4}))->output(0);
  // Captured: x, splits, axes, the outer true constant.
  Value bx = body->add_input("x", ValueType{})->output(0);
  Value bsplits = body->add_input("splits", ValueType{})->output(0);
  Value baxes = body->add_input("axes", ValueType{})->output(0);
  Value btrue = body->add_input("true", ValueType{})->output(0);
  Value one = constant(*body, "one", Tensor::scalar<int64_t>(1));
  Value start = op(*body, "Gather", {bsplits, i})->output(0);
  Value end = op(*body, "Gather", {bsplits, op(*body, "Add", {i, one})->output(0)})->output(0);
  Value piece = op(*body, "Slice", {bx, start, end, baxes})->output(0);
  Value seq_out = op(*body, "SequenceInsert", {seq, piece})->output(0);
  Value two = constant(*body, "two", Tensor::scalar<float>(2));
  Value acc_out = op(*body, "Mul", {acc, two})->output(0);
  Node* as_float = op(*body, "Cast", {i});
  as_float->attributes.set("to", int64_t{1});
  Value cond_out = form.cond_from_data   ? op(*body, "Less", {i, one})->output(0)
                   : form.cond_passed_on ? op(*body, "Identity", {c})->output(0)
                                         : op(*body, "Identity", {btrue})->output(0);
  body->add_output(cond_out, "cond_out");
  body->add_output(seq_out, "seq_out");
  body->add_output(acc_out, "acc_out");
  body->add_output(as_float->output(0), "scan_out");

  Node* loop = g->add_node("Loop", {trips, cond, empty, acc0, x, splits, axes, cond}, 3, "loop");
  loop->num_captured_inputs = 4;
  loop->attributes.set("body", body);
  Value s = loop->output(0);
  Node* first = op(*g, "SequenceAt", {s, ints(*g, "zero", {0}, {})});
  Node* last = op(*g, "SequenceAt", {s, ints(*g, "minus_one", {-1}, {})});
  Node* joined = op(*g, "ConcatFromSequence", {s});
  joined->attributes.set("axis", int64_t{0});
  g->add_output(first->output(0), "first");
  g->add_output(last->output(0), "last");
  g->add_output(op(*g, "SequenceLength", {s})->output(0), "length");
  g->add_output(joined->output(0), "joined");
  g->add_output(loop->output(1), "acc");
  g->add_output(loop->output(2), "scan");
  return g;
}

std::vector<Tensor> loop_inputs(const LoopForm& form) {
  std::vector<Tensor> in = {random_tensor({6, 4}, 3)};
  if (form.trips_from_input) in.push_back(Tensor::scalar<int64_t>(form.trips));
  return in;
}

bool all_outputs_concrete(Graph& g) {
  ops::infer_types(g);
  for (const Value& v : g.outputs())
    if (!g.type_of(v).is_concrete()) return false;
  return true;
}

}  // namespace

TEST(SimplifyControlFlow, TensorSplitLoopBecomesSlicesWithKnownShapes) {
  for (bool passed_on : {false, true}) {
    LoopForm form;
    form.cond_passed_on = passed_on;
    auto g = split_loop_graph(form);
    auto out = apply(*g, {"simplify-control-flow"});
    EXPECT_EQ(count_ops(*out, "Loop"), 0u);
    for (const char* sequence_op :
         {"SequenceEmpty", "SequenceInsert", "SequenceAt", "SequenceLength", "ConcatFromSequence"})
      EXPECT_EQ(count_ops(*out, sequence_op), 0u) << sequence_op;
    EXPECT_TRUE(all_outputs_concrete(*out));
    expect_same_outputs(*g, *out, loop_inputs(form), 0);
    std::vector<Tensor> results = run_graph(*out, loop_inputs(form));
    EXPECT_EQ(results[0].shape(), (Shape{1, 4}));
    EXPECT_EQ(results[1].shape(), (Shape{3, 4}));
    EXPECT_EQ(results[2].value_as_int64(0), 3);
    EXPECT_EQ(results[4].data<float>()[3], 32.0f);  // 4 * 2^3
    EXPECT_EQ(results[5].shape(), (Shape{3}));
  }
}

TEST(SimplifyControlFlow, ZeroTripsGiveTheInitialValues) {
  // Without scan outputs (whose shape nothing would give): a Loop of zero
  // iterations is its initial carried values.
  LoopForm form;
  form.trips = 0;
  auto g = split_loop_graph(form);
  auto& outputs = g->mutable_outputs();
  auto& names = g->mutable_output_names();
  // Keep the length and acc outputs only.
  std::vector<Value> kept = {outputs[2], outputs[4]};
  std::vector<std::string> kept_names = {names[2], names[4]};
  outputs = kept;
  names = kept_names;
  Node* loop = nullptr;
  for (const auto& n : g->nodes())
    if (n->schema().name == "Loop") loop = n.get();
  ASSERT_NE(loop, nullptr);
  loop->attributes.get_graph("body")->mutable_outputs().pop_back();  // no scan output
  loop->attributes.get_graph("body")->mutable_output_names().pop_back();
  loop->output_types.pop_back();
  loop->output_names.pop_back();
  auto before = apply(*g, {});  // without the SequenceAt nodes, which an empty sequence fails
  auto out = apply(*g, {"simplify-control-flow"});
  EXPECT_EQ(count_ops(*before, "Loop"), 1u);
  EXPECT_EQ(count_ops(*out, "Loop"), 0u);
  expect_same_outputs(*before, *out, loop_inputs(form), 0);
  EXPECT_EQ(run_graph(*out, loop_inputs(form))[0].value_as_int64(0), 0);
}

TEST(SimplifyControlFlow, LeavesLoopsItCannotUnroll) {
  LoopForm from_input, early_exit, too_long;
  from_input.trips_from_input = true;  // unknown trip count
  early_exit.cond_from_data = true;    // the body may stop the loop
  too_long.trips = 65;                 // above the bound
  for (const LoopForm& form : {from_input, early_exit, too_long}) {
    auto g = split_loop_graph(form);
    auto out = apply(*g, {"simplify-control-flow"});
    EXPECT_EQ(count_ops(*out, "Loop"), 1u);
    if (form.trips <= 8) expect_same_outputs(*g, *out, loop_inputs(form), 0);  // (65 slices of [6,4] run past it)
  }
}

TEST(SimplifyControlFlow, IfWithAConstantConditionBecomesItsBranch) {
  for (bool constant_condition : {true, false}) {
    auto g = new_graph();
    Value x = g->add_input("x", ValueType::of(DType::float32, {2, 3}))->output(0);
    Value flag = g->add_input("flag", ValueType::of(DType::boolean, {}))->output(0);
    // The condition: rank(x) == 2, a shape test that folds; or a graph input.
    Value rank = op(*g, "Size", {op(*g, "Shape", {x})->output(0)})->output(0);
    Value cond = constant_condition ? op(*g, "Equal", {rank, ints(*g, "two", {2}, {})})->output(0) : flag;
    auto branch = [](const std::string& type) {
      auto body = std::make_shared<Graph>();
      body->opset_imports[""] = 17;
      Value captured = body->add_input("x", ValueType{})->output(0);
      body->add_output(body->add_node(type, {captured}, 1, type)->output(0), "out");
      return body;
    };
    Node* node = g->add_node("If", {cond, x}, 1, "if");
    node->num_captured_inputs = 1;
    node->attributes.set("then_branch", branch("Relu"));
    node->attributes.set("else_branch", branch("Neg"));
    g->add_output(op(*g, "Sigmoid", {node->output(0)})->output(0), "y");
    auto out = apply(*g, {"fold-constants", "simplify-control-flow"});
    EXPECT_EQ(count_ops(*out, "If"), constant_condition ? 0u : 1u);
    EXPECT_EQ(all_outputs_concrete(*out), constant_condition);
    for (bool f : {true, false}) expect_same_outputs(*g, *out, {random_tensor({2, 3}, 4), Tensor::scalar<bool>(f)}, 0);
  }
}

TEST(SimplifySequences, KnownItemsAreReadDirectly) {
  auto g = new_graph();
  Value a = g->add_input("a", ValueType::of(DType::float32, {2, 3}))->output(0);
  Value b = g->add_input("b", ValueType::of(DType::float32, {2, 3}))->output(0);
  Value c = g->add_input("c", ValueType::of(DType::float32, {2, 3}))->output(0);
  Value at = g->add_input("at", ValueType::of(DType::int64, {}))->output(0);
  Value seq = op(*g, "SequenceConstruct", {a, b})->output(0);                      // [a, b]
  seq = op(*g, "SequenceInsert", {seq, c, ints(*g, "zero", {0}, {})})->output(0);  // [c, a, b]
  seq = op(*g, "SequenceErase", {seq, ints(*g, "one", {1}, {})})->output(0);       // [c, b]
  Node* stacked = op(*g, "ConcatFromSequence", {seq});
  stacked->attributes.set("axis", int64_t{-1});
  stacked->attributes.set("new_axis", int64_t{1});
  g->add_output(stacked->output(0), "stacked");
  g->add_output(op(*g, "SequenceLength", {seq})->output(0), "length");
  g->add_output(op(*g, "SequenceAt", {seq, at})->output(0), "picked");  // a position known only at run time
  auto out = apply(*g, {"simplify-sequences"});
  EXPECT_EQ(count_ops(*out, "ConcatFromSequence"), 0u);
  EXPECT_EQ(count_ops(*out, "SequenceLength"), 0u);
  EXPECT_EQ(count_ops(*out, "SequenceAt"), 1u);
  for (int64_t position : {0, -1})
    expect_same_outputs(*g, *out,
                        {random_tensor({2, 3}, 1), random_tensor({2, 3}, 2), random_tensor({2, 3}, 3),
                         Tensor::scalar<int64_t>(position)},
                        0);
  std::vector<Tensor> results = run_graph(
      *out, {random_tensor({2, 3}, 1), random_tensor({2, 3}, 2), random_tensor({2, 3}, 3), Tensor::scalar<int64_t>(0)});
  EXPECT_EQ(results[0].shape(), (Shape{2, 3, 2}));
  EXPECT_EQ(results[1].value_as_int64(0), 2);
}
