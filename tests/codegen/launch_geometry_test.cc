// launch_geometry: the collapsed iteration space gives every operand, at
// every flat index, the element offset that numpy broadcasting gives; and
// plan_device_launch, the GPU launches' checks and choice of index mode.
#include <gtest/gtest.h>

#include <mutex>
#include <random>

#include "graft/backend/buffer_pool.h"
#include "graft/codegen/interpreter.h"
#include "graft/codegen/kernel_runner.h"
#include "graft/core/parallel.h"
#include "graft/codegen/op_expressions.h"
#include "graft/ops/type_inference.h"

namespace graft::codegen {
namespace {

/// Offset of the element of a dense tensor of `shape` read at multi-index
/// `at` of `domain` (right-aligned, broadcast along extent-1 dimensions).
int64_t broadcast_offset(const Shape& shape, const Shape& domain, const std::vector<int64_t>& at) {
  int64_t offset = 0, stride = 1;
  for (size_t j = 0; j < shape.size(); ++j) {
    size_t s = shape.size() - 1 - j, d = domain.size() - 1 - j;
    if (shape[s] != 1) offset += at[d] * stride;
    stride *= shape[s];
  }
  return offset;
}

TEST(LaunchGeometry, CollapsedOffsetsAreBroadcastOffsets) {
  std::mt19937_64 rng(11);
  int dense = 0, merged = 0;
  for (int trial = 0; trial < 400; ++trial) {
    // a + b, with random broadcasting: the kernel of one Add.
    size_t rank = rng() % 6;
    Shape base(rank);
    for (int64_t& d : base) d = 1 + static_cast<int64_t>(rng() % 4);
    auto operand_shape = [&] {
      Shape s;
      for (size_t d = rng() % (rank + 1); d < rank; ++d) s.push_back(rng() % 3 == 0 ? 1 : base[d]);
      return s;
    };
    Shape a = operand_shape(), b = operand_shape();
    ir::Graph g;
    g.opset_imports[""] = 17;
    ir::Value x = g.add_input("a", ir::ValueType::of(DType::float32, a))->output(0);
    ir::Value y = g.add_input("b", ir::ValueType::of(DType::float32, b))->output(0);
    g.add_output(g.add_node("Add", {x, y})->output(0), "c");
    ops::infer_types(g);
    ir::KernelIR ir = lower_body(g).ir;
    std::vector<Shape> in = {a, b};
    std::vector<Shape> out = kernel_output_shapes(ir, in);
    LaunchGeometry geometry = launch_geometry(ir, in, out);
    const Shape& domain = out[0];
    ASSERT_EQ(geometry.num_elements(), shape_numel(domain));
    ASSERT_LE(geometry.extents.size(), std::max<size_t>(domain.size(), 1));
    dense += geometry.dense();
    merged += geometry.extents.size() < domain.size();
    std::vector<Shape> shapes = {a, b, domain};
    for (int64_t flat = 0; flat < shape_numel(domain); ++flat) {
      std::vector<int64_t> at(domain.size());
      for (int64_t rest = flat, d = static_cast<int64_t>(domain.size()) - 1; d >= 0; --d) {
        at[static_cast<size_t>(d)] = rest % domain[static_cast<size_t>(d)];
        rest /= domain[static_cast<size_t>(d)];
      }
      for (size_t k = 0; k < shapes.size(); ++k) {
        int64_t offset = 0;  // as the kernels compute it from the collapsed geometry
        for (int64_t rest = flat, d = static_cast<int64_t>(geometry.extents.size()) - 1; d >= 0; --d) {
          offset += rest % geometry.extents[static_cast<size_t>(d)] * geometry.strides[k][static_cast<size_t>(d)];
          rest /= geometry.extents[static_cast<size_t>(d)];
        }
        if (geometry.dense()) {
          EXPECT_EQ(offset, flat);
        }
        ASSERT_EQ(offset, broadcast_offset(shapes[k], domain, at))
            << "operand " << k << " of " << shape_to_string(a) << " + " << shape_to_string(b) << " at " << flat;
      }
    }
  }
  EXPECT_GT(dense, 20);   // equal shapes (and [1, n] against [n]) are one dense dimension
  EXPECT_GT(merged, 50);  // and dimensions merge
}

TEST(LaunchGeometry, UnreadInputsGetNoStrides) {
  // y = tanh(x0): input 1 is not read and may have any shape, even a larger rank.
  ir::KernelIR ir;
  ir.input_dtypes = {DType::float32, DType::float32};
  ir.outputs = {ir.add_op(ir::ExprOp::tanh, DType::float32, ir.add_input(0, DType::float32))};
  std::vector<Shape> in = {{4, 5}, {2, 3, 7, 9}};
  LaunchGeometry geometry = launch_geometry(ir, in, kernel_output_shapes(ir, in));
  EXPECT_FALSE(geometry.read[1]);
  EXPECT_EQ(geometry.extents, std::vector<int64_t>{20});
  EXPECT_EQ(geometry.strides[1], std::vector<int64_t>{0});
  EXPECT_TRUE(geometry.dense());
}

/// Records every run run_kernel asks of it, then runs it on the interpreter.
class RecordingRunner final : public KernelRunner {
 public:
  explicit RecordingRunner(const ir::KernelIR& ir) : interpreter_(ir) {}
  struct Run {
    int64_t n;
    std::vector<int64_t> strides;  // empty: run_contiguous
  };
  void run_contiguous(int64_t n, void* const* ptrs) const override {
    record({n, {}});
    interpreter_.run_contiguous(n, ptrs);
  }
  void run_strided(int64_t n, void* const* ptrs, const int64_t* strides) const override {
    record({n, std::vector<int64_t>(strides, strides + operands_)});
    interpreter_.run_strided(n, ptrs, strides);
  }
  const char* kind() const override { return "recording"; }
  std::vector<Run> runs() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return runs_;
  }
  size_t operands_ = 0;

 private:
  void record(Run run) const {
    std::lock_guard<std::mutex> lock(mutex_);
    runs_.push_back(std::move(run));
  }
  Interpreter interpreter_;
  mutable std::mutex mutex_;
  mutable std::vector<Run> runs_;
};

TEST(LaunchGeometry, ScalarInputsLeaveASpaceDenseAndSplitOverThreads) {
  // w' = w - g * lr, lr a scalar (an optimizer's step): one dense dimension
  // but for lr, which run_kernel must cut into chunks over the threads
  // (not one row on one thread), each chunk one run at strides 1 and 0,
  // and compute what the plain interpreter computes.
  ir::KernelIR ir;
  ir.input_dtypes = {DType::float32, DType::float32, DType::float32};
  int32_t w = ir.add_input(0, DType::float32), g = ir.add_input(1, DType::float32);
  int32_t lr = ir.add_input(2, DType::float32);
  ir.outputs = {ir.add_op(ir::ExprOp::sub, DType::float32, w, ir.add_op(ir::ExprOp::mul, DType::float32, g, lr))};
  const int64_t n = 100003;
  std::vector<Tensor> inputs = {Tensor(DType::float32, {n}), Tensor(DType::float32, {n}), Tensor::scalar<float>(0.5f)};
  for (int64_t i = 0; i < n; ++i) {
    inputs[0].data<float>()[i] = static_cast<float>(i % 97);
    inputs[1].data<float>()[i] = static_cast<float>(i % 13) - 6.0f;
  }
  std::vector<Shape> shapes = {{n}, {n}, {}};
  LaunchGeometry geometry = launch_geometry(ir, shapes, kernel_output_shapes(ir, shapes));
  EXPECT_FALSE(geometry.dense());
  EXPECT_TRUE(geometry.dense_apart_from_broadcast_inputs());

  RecordingRunner runner(ir);
  runner.operands_ = 4;
  backend::BufferPool pool;
  ScopedNumThreads threads(2);
  std::vector<Tensor> got = run_kernel(ir, runner, inputs, pool);
  std::vector<RecordingRunner::Run> runs = runner.runs();
  ASSERT_GE(runs.size(), 2u);  // chunks, so that both threads take a share
  int64_t covered = 0;
  for (const RecordingRunner::Run& run : runs) {
    ASSERT_EQ(run.strides, (std::vector<int64_t>{1, 1, 0, 1}));
    covered += run.n;
  }
  EXPECT_EQ(covered, n);
  for (int64_t i = 0; i < n; ++i)
    ASSERT_EQ(got[0].data<float>()[i], inputs[0].data<float>()[i] - inputs[1].data<float>()[i] * 0.5f) << i;

  // A broadcast along a dimension of a larger input is not this case.
  std::vector<Shape> rows = {{4, n}, {4, n}, {4, 1}};
  EXPECT_FALSE(launch_geometry(ir, rows, kernel_output_shapes(ir, rows)).dense_apart_from_broadcast_inputs());
}

TEST(LaunchGeometry, DeviceLaunchPlansPickTheIndexModeAndRefuseWhatDoesNotFit) {
  // y = x0 + x1. Plans need shapes only: no tensor of 2^32 elements is made.
  ir::KernelIR ir;
  ir.input_dtypes = {DType::float32, DType::float32};
  ir.outputs = {
      ir.add_op(ir::ExprOp::add, DType::float32, ir.add_input(0, DType::float32), ir.add_input(1, DType::float32))};
  auto plan = [&](std::vector<Shape> in, bool wide = false) {
    return plan_device_launch(ir, in, kernel_output_shapes(ir, in), wide, "test kernel");
  };
  EXPECT_EQ(plan({{4, 5}, {4, 5}}).mode, DeviceIndexMode::dense);
  EXPECT_EQ(plan({{4, 5}, {4, 5}}, true).mode, DeviceIndexMode::dense);  // no coordinates to compute
  EXPECT_EQ(plan({{4, 5}, {5}}).mode, DeviceIndexMode::narrow);
  EXPECT_EQ(plan({{4, 5}, {5}}, true).mode, DeviceIndexMode::wide);
  // 2^31 - 1 elements still take 32 bits; 2^31 do not.
  EXPECT_EQ(plan({{int64_t{0x7fffffff}}, {1}}).mode, DeviceIndexMode::narrow);
  EXPECT_EQ(plan({{31, 69273666}, {69273666}}).mode, DeviceIndexMode::narrow);  // 2^31 - 2
  EXPECT_EQ(plan({{int64_t{1} << 31}, {1}}).mode, DeviceIndexMode::wide);
  EXPECT_EQ(plan({{int64_t{1} << 20, 2048}, {2048}}).mode, DeviceIndexMode::wide);
  EXPECT_EQ(plan({{int64_t{1} << 20, 2048}, {int64_t{1} << 20, 2048}}).mode, DeviceIndexMode::dense);
  auto error_of = [&](std::vector<Shape> in, std::vector<Shape> out) -> std::string {
    try {
      plan_device_launch(ir, in, out, false, "test kernel");
    } catch (const Error& e) {
      return e.what();
    }
    return "no error";
  };
  EXPECT_NE(error_of({{4, 5}}, {{4, 5}}).find("test kernel: 1 inputs and 1 outputs given"), std::string::npos);
  EXPECT_NE(error_of({{4, 5}, {5}}, {{5}}).find("test kernel: output 0 has shape [5], the inputs give [4,5]"),
            std::string::npos);
  EXPECT_NE(error_of({{4, 5}, {4}}, {{4, 5}}).find("broadcast"), std::string::npos);
}

}  // namespace
}  // namespace graft::codegen
