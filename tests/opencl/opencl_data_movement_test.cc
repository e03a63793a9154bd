// The OpenCL backend's data-movement kernels (Reshape/Flatten/Squeeze/
// Unsqueeze views, Transpose, Concat, Split, Slice, Pad, Gather, Expand, Tile,
// Resize, Upsample) against the reference kernels: one-node graphs whose
// attribute-like inputs (shapes, starts, pads, scales) are Constant nodes,
// in float32 and int64 (plus bool and float16 cases), compared exactly
// (linear Resize within 1e-5), and the refusals kernel_support reports.
#include <gtest/gtest.h>

#include <cstring>
#include <limits>

#include "graft/core/dtype.h"
#include "opencl_test_util.h"

namespace graft::testing {
namespace {

/// Deterministic data of any dtype the tests use.
Tensor data_of(DType dtype, const Shape& shape, uint64_t seed = 1) {
  if (dtype == DType::float32) return random_tensor(shape, seed);
  Tensor t(dtype, shape);
  for (int64_t i = 0; i < t.numel(); ++i) {
    const int64_t v = static_cast<int64_t>((static_cast<uint64_t>(i) * 2654435761u + seed * 97) % 2001) - 1000;
    switch (dtype) {
      case DType::int64:
        t.data<int64_t>()[i] = v * 1000003;
        break;
      case DType::int32:
        t.data<int32_t>()[i] = static_cast<int32_t>(v);
        break;
      case DType::boolean:
        t.data<bool>()[i] = v % 3 == 0;
        break;
      case DType::float16: {
        uint16_t bits = static_cast<uint16_t>((v + 1000) * 13 % 30000);  // finite, no NaN
        std::memcpy(static_cast<char*>(t.raw_data()) + 2 * i, &bits, 2);
        break;
      }
      default:
        ADD_FAILURE() << "no test data for " << dtype_name(dtype);
    }
  }
  return t;
}

Tensor ints(std::vector<int64_t> values) {
  const int64_t n = static_cast<int64_t>(values.size());
  return Tensor::from_vector<int64_t>(values, {n});
}

Tensor floats(std::vector<float> values) {
  const int64_t n = static_cast<int64_t>(values.size());
  return Tensor::from_vector<float>(values, {n});
}

/// A graph of one compute node, its graph inputs and its constant inputs.
struct OneNode {
  std::unique_ptr<ir::Graph> graph = std::make_unique<ir::Graph>();
  std::vector<Tensor> inputs;
  ir::Node* node = nullptr;
  int opset;
  int count = 0;

  explicit OneNode(int opset_ = 17) : opset(opset_) { graph->opset_imports[""] = opset; }

  ir::Value input(const Tensor& t) {
    inputs.push_back(t);
    return graph->add_input("x" + std::to_string(count++), ir::ValueType::of(t.dtype(), t.shape()))->output(0);
  }
  ir::Value constant(const Tensor& t) { return graph->add_constant("c" + std::to_string(count++), t)->output(0); }
  ir::Node* op(const std::string& op_type, const std::vector<ir::Value>& values, int outputs = 1) {
    node = graph->add_node(op_type, values, outputs, "op");
    node->opset_version = opset;
    for (int o = 0; o < outputs; ++o) graph->add_output(node->output(o), "y" + std::to_string(o));
    return node;
  }
  template <typename T>
  OneNode& attr(const std::string& name, T value) {
    node->attributes.set(name, value);
    return *this;
  }
  /// Infers types, expects the kernel to be supported and to match the reference.
  void check(double rtol = 0, double atol = 0) {
    ops::infer_types(*graph);
    ASSERT_EQ(opencl::kernel_support(*node), "") << node->describe();
    expect_opencl_matches_reference(*graph, inputs, rtol, atol);
  }
  /// Infers types and returns why the node is refused.
  std::string refusal() {
    ops::infer_types(*graph);
    return opencl::kernel_support(*node);
  }
};

const DType kDtypes[] = {DType::float32, DType::int64};

// ---- Reshape, Flatten, Squeeze, Unsqueeze (views) -----------------------------

TEST(OpenClReshape, ReshapeWithAConstantShape) {
  GRAFT_REQUIRE_OPENCL();
  for (DType dtype : {DType::float32, DType::int64, DType::boolean}) {
    SCOPED_TRACE(dtype_name(dtype));
    OneNode g;
    g.op("Reshape", {g.input(data_of(dtype, {2, 3, 4})), g.constant(ints({4, -1, 2}))});
    g.check();
  }
}

TEST(OpenClReshape, FlattenSqueezeUnsqueeze) {
  GRAFT_REQUIRE_OPENCL();
  for (DType dtype : kDtypes) {
    SCOPED_TRACE(dtype_name(dtype));
    {
      OneNode g;
      g.op("Flatten", {g.input(data_of(dtype, {2, 3, 4, 5}))});
      g.attr("axis", int64_t{2}).check();
    }
    {
      OneNode g(13);
      g.op("Squeeze", {g.input(data_of(dtype, {2, 1, 4, 1})), g.constant(ints({1, -1}))});
      g.check();
    }
    {
      OneNode g(13);
      g.op("Unsqueeze", {g.input(data_of(dtype, {2, 4})), g.constant(ints({0, 3}))});
      g.check();
    }
    {
      OneNode g(11);  // axes as an attribute
      g.op("Unsqueeze", {g.input(data_of(dtype, {3}))});
      g.attr("axes", std::vector<int64_t>{1}).check();
    }
  }
}

TEST(OpenClReshape, IsAViewOfTheInput) {
  GRAFT_REQUIRE_OPENCL();
  OneNode g;
  g.op("Reshape", {g.input(data_of(DType::float32, {6})), g.constant(ints({2, 3}))});
  ops::infer_types(*g.graph);
  opencl::KernelRequest request = opencl::make_kernel_request(*g.node);
  auto kernel = opencl::find_kernel(ir::OpId::Reshape)->factory(request);
  EXPECT_EQ(kernel->aliased_input(), 0);
}

// ---- Transpose ----------------------------------------------------------------

TEST(OpenClTranspose, RanksTwoToFive) {
  GRAFT_REQUIRE_OPENCL();
  struct Case {
    Shape shape;
    std::vector<int64_t> perm;
  };
  const Case cases[] = {
      {{5, 7}, {1, 0}},
      {{3, 4, 5}, {2, 0, 1}},
      {{3, 4, 5}, {0, 2, 1}},
      {{2, 8, 4, 16}, {0, 2, 1, 3}},  // the BERT head split
      {{2, 3, 4, 5}, {3, 1, 0, 2}},
      {{2, 3, 1, 4, 5}, {4, 2, 0, 3, 1}},
      {{2, 3, 4, 5, 6}, {0, 1, 2, 3, 4}},  // identity: a buffer copy
  };
  for (DType dtype : kDtypes)
    for (const Case& c : cases) {
      SCOPED_TRACE(std::string(dtype_name(dtype)) + " rank " + std::to_string(c.shape.size()));
      OneNode g;
      g.op("Transpose", {g.input(data_of(dtype, c.shape))});
      g.attr("perm", c.perm).check();
    }
}

TEST(OpenClTranspose, DefaultPermAndOtherElementSizes) {
  GRAFT_REQUIRE_OPENCL();
  for (DType dtype : {DType::float32, DType::boolean, DType::float16, DType::int32}) {
    SCOPED_TRACE(dtype_name(dtype));
    OneNode g;
    g.op("Transpose", {g.input(data_of(dtype, {3, 5, 7}))});  // no perm: reversed
    g.check();
  }
}

// ---- Concat and Split ---------------------------------------------------------

TEST(OpenClConcat, ThreeInputsOnAxisZeroOneAndLast) {
  GRAFT_REQUIRE_OPENCL();
  for (DType dtype : kDtypes)
    for (int64_t axis : {0, 1, -1}) {
      SCOPED_TRACE(std::string(dtype_name(dtype)) + " axis " + std::to_string(axis));
      Shape a{2, 3, 4}, b{2, 3, 4}, c{2, 3, 4};
      const size_t k = axis < 0 ? 2 : static_cast<size_t>(axis);
      b[k] = 1;
      c[k] = 5;
      OneNode g;
      g.op("Concat", {g.input(data_of(dtype, a, 1)), g.input(data_of(dtype, b, 2)), g.input(data_of(dtype, c, 3))});
      g.attr("axis", axis).check();
    }
}

TEST(OpenClConcat, BoolAndAConstantInput) {
  GRAFT_REQUIRE_OPENCL();
  OneNode g;
  g.op("Concat", {g.input(data_of(DType::boolean, {4, 2})), g.constant(data_of(DType::boolean, {4, 3}, 5))});
  g.attr("axis", int64_t{1}).check();
}

TEST(OpenClSplit, EqualUnevenAndNumOutputs) {
  GRAFT_REQUIRE_OPENCL();
  for (DType dtype : kDtypes) {
    SCOPED_TRACE(dtype_name(dtype));
    {
      OneNode g;  // equal, axis 0
      g.op("Split", {g.input(data_of(dtype, {6, 4}))}, 3);
      g.check();
    }
    {
      OneNode g(13);  // uneven by a constant split input, axis 1
      g.op("Split", {g.input(data_of(dtype, {2, 6, 3})), g.constant(ints({2, 3, 1}))}, 3);
      g.attr("axis", int64_t{1}).check();
    }
    {
      OneNode g(11);  // split attribute, last axis
      g.op("Split", {g.input(data_of(dtype, {3, 7}))}, 2);
      g.attr("axis", int64_t{-1}).attr("split", std::vector<int64_t>{4, 3}).check();
    }
    {
      OneNode g(18);  // num_outputs: chunks of 3, 3, 1
      g.op("Split", {g.input(data_of(dtype, {2, 7}))}, 3);
      g.attr("axis", int64_t{1}).attr("num_outputs", int64_t{3}).check();
    }
  }
}

// ---- Slice --------------------------------------------------------------------

TEST(OpenClSlice, NegativeIndicesStepsAndAxesSubsets) {
  GRAFT_REQUIRE_OPENCL();
  const int64_t big = std::numeric_limits<int64_t>::max();
  struct Case {
    std::vector<int64_t> starts, ends, axes, steps;
  };
  const Case cases[] = {
      {{1, 0}, {3, 4}, {}, {}},              // plain, leading axes
      {{-3}, {-1}, {2}, {}},                 // negative start/end on the last axis
      {{0, 1}, {big, 5}, {1, 2}, {2, 3}},    // steps, clamped end
      {{-1}, {-big}, {1}, {-1}},             // full reversal
      {{4, -2}, {0, 0}, {-1, 0}, {-2, -1}},  // negative steps on two axes
      {{-100}, {100}, {0}, {1}},             // clamping both ends
      {{2}, {1}, {1}, {1}},                  // empty result
  };
  for (DType dtype : kDtypes)
    for (size_t i = 0; i < std::size(cases); ++i) {
      const Case& c = cases[i];
      SCOPED_TRACE(std::string(dtype_name(dtype)) + " case " + std::to_string(i));
      OneNode g;
      std::vector<ir::Value> in{g.input(data_of(dtype, {3, 6, 7})), g.constant(ints(c.starts)),
                                g.constant(ints(c.ends))};
      if (!c.axes.empty() || !c.steps.empty()) in.push_back(c.axes.empty() ? ir::Value{} : g.constant(ints(c.axes)));
      if (!c.steps.empty()) in.push_back(g.constant(ints(c.steps)));
      g.op("Slice", in);
      g.check();
    }
}

TEST(OpenClSlice, AttributesBeforeOpsetTen) {
  GRAFT_REQUIRE_OPENCL();
  OneNode g(9);
  g.op("Slice", {g.input(data_of(DType::int64, {4, 5}))});
  g.attr("starts", std::vector<int64_t>{1, -3}).attr("ends", std::vector<int64_t>{3, 100}).check();
}

TEST(OpenClSlice, NonConstantStartsAreRefused) {
  GRAFT_REQUIRE_OPENCL();
  OneNode g;
  ir::Value x = g.input(data_of(DType::float32, {4, 5}));
  ir::Value starts = g.input(ints({1}));
  g.op("Slice", {x, starts, g.constant(ints({3})), g.constant(ints({0}))});
  // Inference cannot know the sliced extent: the node is refused either way.
  EXPECT_NE(g.refusal(), "");
  // With a concrete output type (as a plan with known shapes would have), the
  // Slice kernel itself says why.
  g.node->output_types[0] = ir::ValueType::of(DType::float32, {2, 5});
  std::string why = opencl::kernel_support(*g.node);
  EXPECT_NE(why.find("starts not constant"), std::string::npos) << why;
}

// ---- Pad ----------------------------------------------------------------------

TEST(OpenClPad, ConstantModeWithValueAndCropping) {
  GRAFT_REQUIRE_OPENCL();
  {
    OneNode g;
    g.op("Pad", {g.input(data_of(DType::float32, {2, 3, 4})), g.constant(ints({0, 1, 2, 1, 0, -1})),
                 g.constant(Tensor::scalar<float>(2.5f))});
    g.check();
  }
  {
    OneNode g;
    g.op("Pad", {g.input(data_of(DType::int64, {2, 3, 4})), g.constant(ints({1, 0, 0, 0, 2, 3})),
                 g.constant(Tensor::scalar<int64_t>(-7))});
    g.check();
  }
  {
    OneNode g;  // no constant_value: zeros
    g.op("Pad", {g.input(data_of(DType::boolean, {3, 3})), g.constant(ints({1, 1, 1, 1}))});
    g.check();
  }
  {
    OneNode g(2);  // attributes
    g.op("Pad", {g.input(data_of(DType::float32, {2, 3}))});
    g.attr("pads", std::vector<int64_t>{1, 2, 0, 1}).attr("value", 1.5f).check();
  }
  {
    OneNode g(2);  // the value attribute converted to int64
    g.op("Pad", {g.input(data_of(DType::int64, {2, 3}))});
    g.attr("pads", std::vector<int64_t>{0, 1, 1, 0}).attr("value", -3.0f).check();
  }
  {
    OneNode g(18);  // axes input
    g.op("Pad", {g.input(data_of(DType::int64, {2, 3, 4})), g.constant(ints({1, 2, 0, 1})),
                 g.constant(Tensor::scalar<int64_t>(3)), g.constant(ints({-1, 0}))});
    g.check();
  }
}

TEST(OpenClPad, ReflectEdgeAndWrap) {
  GRAFT_REQUIRE_OPENCL();
  for (DType dtype : kDtypes)
    for (const char* mode : {"reflect", "edge", "wrap"}) {
      SCOPED_TRACE(std::string(dtype_name(dtype)) + " " + mode);
      OneNode g(19);
      g.op("Pad", {g.input(data_of(dtype, {2, 4, 5})), g.constant(ints({0, 2, 3, 1, 3, 2}))});
      g.attr("mode", std::string(mode)).check();
    }
}

// ---- Gather, Expand, Tile -------------------------------------------------------

TEST(OpenClGather, EmbeddingOnAxisZero) {
  GRAFT_REQUIRE_OPENCL();
  Tensor indices = Tensor::from_vector<int64_t>({0, 5, 49, -1, 7, 7, 3, -50, 12, 13, 14, 15, 1, 2, 3, 4}, {2, 8});
  for (DType dtype : kDtypes) {
    SCOPED_TRACE(dtype_name(dtype));
    {
      OneNode g;  // indices as a graph input
      g.op("Gather", {g.input(data_of(dtype, {50, 16})), g.input(indices)});
      g.check();
    }
    {
      OneNode g;  // indices as a constant
      g.op("Gather", {g.input(data_of(dtype, {50, 16})), g.constant(indices)});
      g.check();
    }
  }
}

TEST(OpenClGather, OtherAxesAndInt32Indices) {
  GRAFT_REQUIRE_OPENCL();
  Tensor idx32 = Tensor::from_vector<int32_t>({2, -1, 0}, {3});
  for (DType dtype : {DType::float32, DType::int64, DType::boolean}) {
    SCOPED_TRACE(dtype_name(dtype));
    {
      OneNode g;
      g.op("Gather", {g.input(data_of(dtype, {3, 4, 5})), g.input(idx32)});
      g.attr("axis", int64_t{1}).check();
    }
    {
      OneNode g;
      g.op("Gather", {g.input(data_of(dtype, {3, 4, 5})), g.constant(Tensor::scalar<int64_t>(-2))});
      g.attr("axis", int64_t{-1}).check();
    }
  }
}

TEST(OpenClGather, ConstantIndexOutOfRangeIsRefused) {
  GRAFT_REQUIRE_OPENCL();
  OneNode g;
  g.op("Gather", {g.input(data_of(DType::float32, {4, 2})), g.constant(ints({4}))});
  std::string why;
  try {
    why = g.refusal();
  } catch (const std::exception&) {
    why = "inference refused it";  // the reference inference may already reject it
  }
  EXPECT_NE(why, "");
}

TEST(OpenClExpand, BroadcastsToAConstantShape) {
  GRAFT_REQUIRE_OPENCL();
  for (DType dtype : {DType::float32, DType::int64, DType::boolean}) {
    SCOPED_TRACE(dtype_name(dtype));
    {
      OneNode g;
      g.op("Expand", {g.input(data_of(dtype, {3, 1})), g.constant(ints({2, 3, 4}))});
      g.check();
    }
    {
      OneNode g;
      g.op("Expand", {g.input(data_of(dtype, {1, 4, 1, 2})), g.constant(ints({3, 1, 5, 1}))});
      g.check();
    }
  }
}

TEST(OpenClTile, RepeatsAlongEachAxis) {
  GRAFT_REQUIRE_OPENCL();
  for (DType dtype : kDtypes) {
    SCOPED_TRACE(dtype_name(dtype));
    {
      OneNode g;
      g.op("Tile", {g.input(data_of(dtype, {2, 3})), g.constant(ints({2, 3}))});
      g.check();
    }
    {
      OneNode g;
      g.op("Tile", {g.input(data_of(dtype, {2, 1, 3, 2})), g.constant(ints({1, 4, 2, 1}))});
      g.check();
    }
  }
}

// ---- Resize -----------------------------------------------------------------------

/// Resize-13+ of `x` by constant scales (empty: by constant sizes).
void resize_case(DType dtype, const Shape& shape, const std::vector<float>& scales, const std::vector<int64_t>& sizes,
                 const std::string& mode, const std::string& coordinate, const std::string& nearest, double tol,
                 int opset = 13) {
  SCOPED_TRACE(std::string(dtype_name(dtype)) + " " + mode + " " + coordinate + " " + nearest);
  OneNode g(opset);
  ir::Value x = g.input(data_of(dtype, shape));
  ir::Value s = scales.empty() ? ir::Value{} : g.constant(floats(scales));
  std::vector<ir::Value> in{x, ir::Value{}, s};
  if (!sizes.empty()) in.push_back(g.constant(ints(sizes)));
  g.op("Resize", in);
  g.attr("mode", mode).attr("coordinate_transformation_mode", coordinate);
  if (!nearest.empty()) g.attr("nearest_mode", nearest);
  g.check(tol, tol);
}

TEST(OpenClResize, NearestTimesTwo) {
  GRAFT_REQUIRE_OPENCL();
  for (DType dtype : {DType::float32, DType::int64, DType::int32, DType::float16})
    resize_case(dtype, {2, 3, 4, 5}, {1, 1, 2, 2}, {}, "nearest", "asymmetric", "floor", 0);
  resize_case(DType::float32, {1, 2, 4, 5}, {1, 1, 2, 2}, {}, "nearest", "half_pixel", "round_prefer_floor", 0);
}

TEST(OpenClResize, NearestModesAndSizes) {
  GRAFT_REQUIRE_OPENCL();
  for (const char* nearest : {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"}) {
    resize_case(DType::float32, {1, 2, 5, 7}, {1, 1, 1.5f, 0.6f}, {}, "nearest", "half_pixel", nearest, 0);
    resize_case(DType::int64, {1, 2, 5, 7}, {}, {1, 2, 8, 3}, "nearest", "align_corners", nearest, 0);
  }
  resize_case(DType::float32, {1, 2, 5, 7}, {}, {1, 2, 3, 11}, "nearest", "pytorch_half_pixel", "round_prefer_ceil", 0);
}

TEST(OpenClResize, LinearCoordinateModes) {
  GRAFT_REQUIRE_OPENCL();
  for (const char* coordinate : {"half_pixel", "align_corners", "asymmetric", "pytorch_half_pixel"}) {
    resize_case(DType::float32, {2, 3, 4, 5}, {1, 1, 2, 2}, {}, "linear", coordinate, "", 1e-5);
    resize_case(DType::float32, {1, 2, 7, 6}, {}, {1, 2, 3, 10}, "linear", coordinate, "", 1e-5);
  }
}

TEST(OpenClResize, UpsampleAndRefusals) {
  GRAFT_REQUIRE_OPENCL();
  {
    OneNode g(9);
    g.op("Upsample", {g.input(data_of(DType::int64, {1, 2, 3, 4})), g.constant(floats({1, 1, 2, 3}))});
    g.attr("mode", std::string("nearest")).check();
  }
  {
    OneNode g(13);  // cubic is refused
    g.op("Resize", {g.input(data_of(DType::float32, {1, 1, 4, 4})), ir::Value{}, g.constant(floats({1, 1, 2, 2}))});
    g.attr("mode", std::string("cubic"));
    EXPECT_NE(g.refusal(), "");
  }
  {
    OneNode g(13);  // bool (the reference refuses it too)
    g.op("Resize", {g.input(data_of(DType::boolean, {1, 1, 4, 4})), ir::Value{}, g.constant(floats({1, 1, 2, 2}))});
    EXPECT_NE(g.refusal(), "");
  }
  {
    OneNode g(13);  // resizing the channel axis is refused
    g.op("Resize", {g.input(data_of(DType::float32, {1, 2, 4, 4})), ir::Value{}, g.constant(floats({1, 2, 1, 1}))});
    EXPECT_NE(g.refusal(), "");
  }
}

TEST(OpenClTranspose, LargeAndRankSix) {
  GRAFT_REQUIRE_OPENCL();
  {
    OneNode g;
    g.op("Transpose", {g.input(data_of(DType::float32, {16, 128, 96}))});
    g.attr("perm", std::vector<int64_t>{2, 0, 1}).check();
  }
  {
    OneNode g;
    g.op("Transpose", {g.input(data_of(DType::int64, {2, 3, 2, 4, 3, 2}))});
    g.attr("perm", std::vector<int64_t>{5, 3, 1, 0, 2, 4}).check();
  }
}

TEST(OpenClConcat, EmptyInputsAndContiguousSlices) {
  GRAFT_REQUIRE_OPENCL();
  {
    OneNode g;  // a zero-extent input contributes nothing
    g.op("Concat", {g.input(data_of(DType::float32, {2, 0, 3})), g.input(data_of(DType::float32, {2, 2, 3}))});
    g.attr("axis", int64_t{1}).check();
  }
  {
    OneNode g;  // rows 1..3 of the input: one buffer copy at an offset
    g.op("Slice", {g.input(data_of(DType::int64, {5, 4})), g.constant(ints({1})), g.constant(ints({4}))});
    g.check();
  }
  {
    OneNode g;  // padding an empty tensor: every element is the value
    g.op("Pad", {g.input(data_of(DType::float32, {0, 3})), g.constant(ints({1, 0, 1, 0})),
                 g.constant(Tensor::scalar<float>(4.0f))});
    g.check();
  }
  {
    OneNode g;  // no indices
    g.op("Gather", {g.input(data_of(DType::float32, {5, 4})), g.input(Tensor(DType::int64, {0}))});
    g.check();
  }
}

TEST(OpenClResize, OlderOpsetsAndAxes) {
  GRAFT_REQUIRE_OPENCL();
  {
    OneNode g(7);  // Upsample-7: scales as an attribute
    g.op("Upsample", {g.input(data_of(DType::float32, {1, 2, 3, 4}))});
    g.attr("mode", std::string("linear")).attr("scales", std::vector<float>{1, 1, 2, 1.5f}).check(1e-5, 1e-5);
  }
  {
    OneNode g(10);  // Resize-10: scales as input 1, asymmetric, downsampling nearest
    g.op("Resize", {g.input(data_of(DType::int64, {1, 2, 6, 8})), g.constant(floats({1, 1, 0.5f, 0.75f}))});
    g.check();
  }
  {
    OneNode g(18);  // axes: sizes for the last two only
    g.op("Resize",
         {g.input(data_of(DType::float32, {2, 3, 4, 5})), ir::Value{}, ir::Value{}, g.constant(ints({7, 3}))});
    g.attr("mode", std::string("linear")).attr("axes", std::vector<int64_t>{2, 3}).check(1e-5, 1e-5);
  }
  {
    OneNode g(13);  // a 3-D input: resizes its last two axes
    g.op("Resize", {g.input(data_of(DType::float32, {3, 4, 5})), ir::Value{}, g.constant(floats({1, 2, 0.5f}))});
    g.attr("mode", std::string("linear")).check(1e-5, 1e-5);
  }
}

TEST(OpenClTranspose, SharesOneProgramWithEveryDataMovementOp) {
  GRAFT_REQUIRE_OPENCL();
  opencl::ClDevice& device = opencl::ClDevice::get(0);
  {
    OneNode g;
    g.op("Transpose", {g.input(data_of(DType::float32, {3, 4}))});
    g.check();
  }
  const uint64_t programs = device.programs();
  {
    OneNode g;
    g.op("Pad", {g.input(data_of(DType::int64, {3, 4})), g.constant(ints({1, 1, 1, 1}))});
    g.check();
  }
  {
    OneNode g;
    g.op("Gather", {g.input(data_of(DType::float32, {5, 4})), g.input(ints({1, -1}))});
    g.check();
  }
  {
    OneNode g;  // another shape: no new program either
    g.op("Transpose", {g.input(data_of(DType::int64, {2, 5, 3}))});
    g.check();
  }
  resize_case(DType::float32, {1, 1, 3, 3}, {1, 1, 2, 2}, {}, "linear", "half_pixel", "", 1e-5);
  EXPECT_EQ(device.programs(), programs);
}

}  // namespace
}  // namespace graft::testing
