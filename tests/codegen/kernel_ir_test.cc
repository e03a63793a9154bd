// Kernel IR: canonical form, stable hash, binary form, the op table's
// is_fusible answers, and the interpreter against the reference kernels.
#include <gtest/gtest.h>

#include <sstream>

#include "codegen_test_util.h"
#include "graft/codegen/interpreter.h"
#include "graft/ir/kernel_ir.h"
#include "graft/backend/buffer_pool.h"

namespace graft::codegen {
namespace {

using graft::testing::close_enough;
using graft::testing::random_of;

/// (a + b) * sigmoid(a), built with the nodes listed in a chosen order.
ir::KernelIR sample_ir(bool swapped) {
  ir::KernelIR ir;
  ir.input_dtypes = {DType::float32, DType::float32};
  int32_t a = ir.add_input(0, DType::float32);
  int32_t b = ir.add_input(1, DType::float32);
  int32_t sum = swapped ? ir.add_op(ir::ExprOp::add, DType::float32, b, a) : ir.add_op(ir::ExprOp::add, DType::float32, a, b);
  int32_t unused = ir.add_op(ir::ExprOp::exp, DType::float32, a);
  (void)unused;
  int32_t s = ir.add_op(ir::ExprOp::sigmoid, DType::float32, a);
  int32_t s2 = ir.add_op(ir::ExprOp::sigmoid, DType::float32, a);  // duplicate, merged
  int32_t m = ir.add_op(ir::ExprOp::mul, DType::float32, sum, s);
  int32_t m2 = ir.add_op(ir::ExprOp::mul, DType::float32, s2, sum);
  ir.outputs = {m, m2};
  return ir;
}

TEST(KernelIr, CanonicalFormIgnoresOrderDuplicatesAndDeadNodes) {
  ir::KernelIR one = canonicalize(sample_ir(false));
  ir::KernelIR two = canonicalize(sample_ir(true));
  EXPECT_EQ(one, two);
  EXPECT_EQ(stable_hash(one), stable_hash(two));
  EXPECT_EQ(one.exprs.size(), 5u) << to_string(one);
  EXPECT_EQ(one.outputs[0], one.outputs[1]);
}

TEST(KernelIr, BinaryFormRoundTripsAndRejectsDamage) {
  ir::KernelIR ir = canonicalize(sample_ir(false));
  std::string bytes = serialize(ir);
  std::istringstream in(bytes);
  EXPECT_EQ(ir::read_kernel_ir(in), ir);
  for (size_t cut : {size_t(0), size_t(3), size_t(10), bytes.size() - 1}) {
    std::istringstream truncated(bytes.substr(0, cut));
    EXPECT_THROW(ir::read_kernel_ir(truncated), Error) << cut;
  }
  std::string bad = bytes;
  bad[16] = 0x7f;  // a node's op byte
  std::istringstream damaged(bad);
  EXPECT_THROW(ir::read_kernel_ir(damaged), Error);
}

TEST(KernelIr, ValidateRejectsOutOfOrderArguments) {
  ir::KernelIR ir;
  ir.input_dtypes = {DType::float32};
  ir.add_op(ir::ExprOp::neg, DType::float32, 0);
  ir.outputs = {0};
  EXPECT_THROW(ir.validate(), Error);
}

TEST(KernelIr, Float16IsOnlyLoadedStoredAndConvertedToAndFromFloat32) {
  auto with = [](const std::function<void(ir::KernelIR&, int32_t)>& add) {
    ir::KernelIR ir;
    ir.input_dtypes = {DType::float16};
    int32_t h = ir.add_input(0, DType::float16);
    add(ir, h);
    ir.outputs = {static_cast<int32_t>(ir.exprs.size()) - 1};
    return ir;
  };
  ir::KernelIR fine = with([](ir::KernelIR& ir, int32_t h) {
    int32_t f = ir.add_op(ir::ExprOp::cast, DType::float32, h);
    ir.add_op(ir::ExprOp::cast, DType::float16, ir.add_op(ir::ExprOp::exp, DType::float32, f));
  });
  EXPECT_NO_THROW(fine.validate());
  for (const auto& bad : std::vector<std::function<void(ir::KernelIR&, int32_t)>>{
           [](ir::KernelIR& ir, int32_t h) { ir.add_op(ir::ExprOp::exp, DType::float16, h); },
           [](ir::KernelIR& ir, int32_t h) { ir.add_op(ir::ExprOp::cast, DType::float64, h); },
           [](ir::KernelIR& ir, int32_t h) { ir.add_op(ir::ExprOp::less, DType::boolean, h, h); },
           [](ir::KernelIR& ir, int32_t h) {
             ir.add_op(ir::ExprOp::cast, DType::float16, ir.add_op(ir::ExprOp::cast, DType::int32,
                                                               ir.add_op(ir::ExprOp::cast, DType::float32, h)));
           }}) {
    ir::KernelIR ir = with(bad);
    EXPECT_THROW(ir.validate(), Error) << to_string(ir);
  }
}

TEST(OpExpressions, IsFusibleFollowsOpsAndDtypes) {
  ir::Graph g;
  g.opset_imports[""] = 17;
  ir::Node* f = g.add_input("f", ir::ValueType::of(DType::float32, {4}));
  ir::Node* i = g.add_input("i", ir::ValueType::of(DType::int32, {4}));
  ir::Node* h = g.add_input("h", ir::ValueType::of(DType::float16, {4}));
  ir::Node* b = g.add_input("b", ir::ValueType::of(DType::bfloat16, {4}));
  ir::Node* exp_f = g.add_node("Exp", {f->output(0)});
  ir::Node* exp_h = g.add_node("Exp", {h->output(0)});
  ir::Node* exp_b = g.add_node("Exp", {b->output(0)});
  ir::Node* h_from_double = g.add_node("Cast", {g.add_node("Cast", {f->output(0)})->output(0)});
  h_from_double->inputs[0].node->attributes.set("to", int64_t(11));  // float64
  h_from_double->attributes.set("to", int64_t(10));                 // float16
  ir::Node* add_i = g.add_node("Add", {i->output(0), i->output(0)});
  ir::Node* mm = g.add_node("MatMul", {f->output(0), f->output(0)});
  ir::Node* cast = g.add_node("Cast", {f->output(0)});
  cast->attributes.set("to", int64_t(7));
  for (ir::Node* n : {exp_f, exp_h, exp_b, add_i, mm, cast, h_from_double}) g.add_output(n->output(0));
  ops::infer_types(g);
  EXPECT_TRUE(is_fusible(*exp_f));
  EXPECT_TRUE(is_fusible(*exp_h));  // float16: computed in float32, rounded after every op
  EXPECT_FALSE(is_fusible(*exp_b));
  EXPECT_FALSE(is_fusible(*h_from_double));  // float64 -> float32 -> float16 would round twice
  EXPECT_TRUE(is_fusible(*add_i));
  EXPECT_FALSE(is_fusible(*mm));
  EXPECT_NE(why_not_fusible(*mm).find("no pointwise expression"), std::string::npos);
  EXPECT_TRUE(is_fusible(*cast));
  // is_fusible builds no message, why_not_fusible does: the two agree.
  for (ir::Node* n : {exp_f, exp_h, exp_b, add_i, mm, cast, h_from_double})
    EXPECT_EQ(is_fusible(*n), why_not_fusible(*n).empty());
  EXPECT_NE(why_not_fusible(*exp_b).find("has dtype bfloat16"), std::string::npos) << why_not_fusible(*exp_b);
  EXPECT_NE(why_not_fusible(*h_from_double).find("float64 to float16"), std::string::npos);
  ir::Node* legacy = g.add_node("Add", {f->output(0), f->output(0)});
  legacy->attributes.set("broadcast", int64_t(1));
  ops::infer_types(g);
  EXPECT_FALSE(is_fusible(*legacy));
  EXPECT_NE(why_not_fusible(*legacy).find("legacy broadcast"), std::string::npos);
}

TEST(Interpreter, ChainWithBroadcastMatchesReference) {
  ir::Graph g;
  g.opset_imports[""] = 17;
  ir::Node* a = g.add_input("a", ir::ValueType::of(DType::float32, {3, 1, 5}));
  ir::Node* b = g.add_input("b", ir::ValueType::of(DType::float32, {4, 1}));
  ir::Node* add = g.add_node("Add", {a->output(0), b->output(0)});
  ir::Node* sig = g.add_node("Sigmoid", {add->output(0)});
  ir::Node* mul = g.add_node("Mul", {sig->output(0), a->output(0)});
  ir::Node* gt = g.add_node("Greater", {mul->output(0), b->output(0)});
  g.add_output(mul->output(0), "y");
  g.add_output(gt->output(0), "z");
  g.add_output(sig->output(0), "s");
  ops::infer_types(g);
  LoweredKernel lowered = lower_body(g);
  Interpreter interpreter(lowered.ir);
  std::vector<Tensor> inputs = {random_of(DType::float32, {3, 1, 5}, 1), random_of(DType::float32, {4, 1}, 2)};
  backend::BufferPool pool;
  std::vector<Tensor> got = run_kernel(lowered.ir, interpreter, inputs, pool);
  std::vector<Tensor> want = graft::testing::run_reference(g, inputs);
  ASSERT_EQ(got.size(), want.size());
  for (size_t k = 0; k < got.size(); ++k) EXPECT_TRUE(close_enough(got[k], want[k], 1e-6, 1e-7)) << k;
}

}  // namespace
}  // namespace graft::codegen
