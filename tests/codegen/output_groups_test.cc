// Splitting a fused kernel whose outputs share no iteration space: the
// grouping of output shapes, and partial kernels that compute a group's
// outputs exactly as the whole kernel would.
#include <gtest/gtest.h>

#include "codegen_test_util.h"
#include "graft/codegen/interpreter.h"
#include "graft/codegen/kernel_runner.h"
#include "graft/codegen/output_groups.h"
#include "graft/backend/buffer_pool.h"

namespace graft::codegen {
namespace {

using Groups = std::vector<std::vector<int32_t>>;

TEST(OutputGroups, OneGroupWhenEveryOutputHasOneShape) {
  std::vector<Shape> shapes = {{2, 3}, {2, 3}, {1, 2, 3}, {1, 1, 2, 3}};
  EXPECT_EQ(group_outputs_by_iteration_space(shapes), (Groups{{0, 1, 2, 3}}));
  EXPECT_EQ(group_outputs_by_iteration_space(std::vector<Shape>{}), Groups{});
}

TEST(OutputGroups, OutputsOfOtherShapesGoToSeparateGroups) {
  // [2,3] and [4,5] do not broadcast; [4,1] and [1,3] do broadcast with one
  // of them but are smaller: each of their elements would be computed and
  // stored again along the dimension they lack.
  std::vector<Shape> shapes = {{2, 3}, {4, 5}, {4, 1}, {1, 3}, {7}, {1, 4, 5}, {3}};
  EXPECT_EQ(group_outputs_by_iteration_space(shapes), (Groups{{0}, {1, 5}, {2}, {3, 6}, {4}}));
  // A scalar and the tensor it would broadcast over.
  EXPECT_EQ(group_outputs_by_iteration_space(std::vector<Shape>{{2, 3}, {}, {1}}), (Groups{{0}, {1, 2}}));
}

TEST(OutputGroups, AnOptimizerUpdateOfAConvolutionAndABatchNormIsTwoDenseKernels) {
  // A fused AdamW update of a 1x1 convolution's weight [512,256,1,1] and a
  // batch normalization's scale [256] (resnet18's downsampling path): the
  // shapes broadcast to [512,256,1,256], where the weight would be read and
  // written 256 times at stride 0 and the scale computed 131,072 times. Each
  // group must be one dense run of its own elements.
  ir::KernelIR ir;
  ir.input_dtypes = {DType::float32, DType::float32, DType::float32, DType::float32, DType::float32};
  int32_t w = ir.add_input(0, DType::float32), gw = ir.add_input(1, DType::float32);
  int32_t s = ir.add_input(2, DType::float32), gs = ir.add_input(3, DType::float32);
  int32_t lr = ir.add_input(4, DType::float32);
  int32_t w_next = ir.add_op(ir::ExprOp::sub, DType::float32, w, ir.add_op(ir::ExprOp::mul, DType::float32, gw, lr));
  int32_t s_next = ir.add_op(ir::ExprOp::sub, DType::float32, s, ir.add_op(ir::ExprOp::mul, DType::float32, gs, lr));
  ir.outputs = {w_next, s_next};
  const std::vector<Shape> inputs = {{512, 256, 1, 1}, {512, 256, 1, 1}, {256}, {256}, {}};
  const std::vector<Shape> outputs = kernel_output_shapes(ir, inputs);
  GroupedKernels grouped = kernels_by_output_group(ir, outputs);
  ASSERT_EQ(grouped.groups, (Groups{{0}, {1}}));
  for (size_t g = 0; g < grouped.groups.size(); ++g) {
    std::vector<Shape> group_shapes;
    for (int32_t o : grouped.groups[g]) group_shapes.push_back(outputs[static_cast<size_t>(o)]);
    LaunchGeometry geometry = launch_geometry(grouped.kernels[g], inputs, group_shapes);
    EXPECT_TRUE(geometry.dense_apart_from_broadcast_inputs()) << g;
    EXPECT_EQ(geometry.num_elements(), g == 0 ? 512 * 256 : 256);
  }
}

/// y = -s; a = max(y, x); b = z - y; c = exp(w) (reads only w).
ir::KernelIR three_output_ir() {
  ir::KernelIR ir;
  ir.input_dtypes = {DType::float32, DType::float32, DType::float32, DType::float32};
  int32_t s = ir.add_input(0, DType::float32), x = ir.add_input(1, DType::float32);
  int32_t z = ir.add_input(2, DType::float32), w = ir.add_input(3, DType::float32);
  int32_t y = ir.add_op(ir::ExprOp::neg, DType::float32, s);
  int32_t a = ir.add_op(ir::ExprOp::max, DType::float32, y, x);
  int32_t b = ir.add_op(ir::ExprOp::sub, DType::float32, z, y);
  int32_t c = ir.add_op(ir::ExprOp::exp, DType::float32, w);
  ir.outputs = {a, b, c};
  return ir;
}

TEST(OutputGroups, PartialKernelKeepsOnlyWhatItsOutputsRead) {
  ir::KernelIR ir = three_output_ir();
  ir::KernelIR part = kernel_for_outputs(ir, std::vector<int32_t>{1});
  part.validate();
  EXPECT_EQ(part.input_dtypes, ir.input_dtypes);  // input slots unchanged
  ASSERT_EQ(part.outputs.size(), 1u);
  EXPECT_EQ(part.exprs.size(), 4u) << to_string(part);  // s, z, -s, z - y
  for (const ir::Expr& e : part.exprs) EXPECT_TRUE(e.op != ir::ExprOp::input || e.index == 0 || e.index == 2);
  // Outputs in the order asked.
  ir::KernelIR swapped = kernel_for_outputs(ir, std::vector<int32_t>{2, 0});
  ASSERT_EQ(swapped.outputs.size(), 2u);
  EXPECT_EQ(swapped.exprs[static_cast<size_t>(swapped.outputs[0])].op, ir::ExprOp::exp);
  EXPECT_EQ(swapped.exprs[static_cast<size_t>(swapped.outputs[1])].op, ir::ExprOp::max);
}

TEST(OutputGroups, PartialKernelsComputeWhatTheWholeKernelDoes) {
  // With shapes that all broadcast, the whole kernel runs; each partial
  // kernel's outputs must equal its. Inputs a partial kernel does not read
  // may have any shape: here they are given shapes that would not broadcast.
  ir::KernelIR ir = three_output_ir();
  backend::BufferPool pool;
  std::vector<Tensor> inputs = {graft::testing::random_of(DType::float32, {}, 1),
                                graft::testing::random_of(DType::float32, {4, 5}, 2),
                                graft::testing::random_of(DType::float32, {1, 5}, 3),
                                graft::testing::random_of(DType::float32, {4, 1}, 4)};
  Interpreter whole(ir);
  std::vector<Tensor> want = run_kernel(ir, whole, inputs, pool);
  for (const std::vector<int32_t>& outputs : Groups{{0}, {1}, {2}, {0, 2}, {1, 0}}) {
    ir::KernelIR part = kernel_for_outputs(ir, outputs);
    Interpreter runner(part);
    std::vector<Tensor> odd = inputs;
    for (int32_t slot = 0; slot < 4; ++slot) {
      bool read = false;
      for (const ir::Expr& e : part.exprs) read |= e.op == ir::ExprOp::input && e.index == slot;
      if (!read) odd[static_cast<size_t>(slot)] = graft::testing::random_of(DType::float32, {3, 7}, 9);
    }
    std::vector<Tensor> got = run_kernel(part, runner, odd, pool);
    ASSERT_EQ(got.size(), outputs.size());
    for (size_t k = 0; k < outputs.size(); ++k)
      EXPECT_TRUE(graft::testing::close_enough(got[k], want[static_cast<size_t>(outputs[k])], 0, 0)) << k;
  }
}

TEST(OutputGroups, KernelsByOutputGroupIsTheWholeKernelOrOnePerGroup) {
  ir::KernelIR ir = three_output_ir();
  GroupedKernels one = kernels_by_output_group(ir, std::vector<Shape>{{4, 5}, {4, 5}, {1, 4, 5}});
  EXPECT_EQ(one.groups, (Groups{{0, 1, 2}}));
  ASSERT_EQ(one.kernels.size(), 1u);
  EXPECT_EQ(to_string(one.kernels[0]), to_string(ir));
  // a [2,3] and b [4,5] do not broadcast; c [4,5] joins b.
  GroupedKernels split = kernels_by_output_group(ir, std::vector<Shape>{{2, 3}, {4, 5}, {4, 5}});
  EXPECT_EQ(split.groups, (Groups{{0}, {1, 2}}));
  ASSERT_EQ(split.kernels.size(), 2u);
  EXPECT_EQ(to_string(split.kernels[0]), to_string(kernel_for_outputs(ir, std::vector<int32_t>{0})));
  EXPECT_EQ(to_string(split.kernels[1]), to_string(kernel_for_outputs(ir, std::vector<int32_t>{1, 2})));
}

}  // namespace
}  // namespace graft::codegen
