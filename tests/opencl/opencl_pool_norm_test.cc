// The OpenCL backend's pooling, Softmax, normalization and reduction kernels
// (backends/opencl/opencl_pool.cc, opencl_softmax.cc, opencl_norm.cc,
// opencl_reduce.cc) against the reference kernels: one-node graphs, each run
// by opencl::run_node_for_test and by the reference backend, compared
// element by element. Plus the cases the kernels refuse, with a reason.
#include <gtest/gtest.h>

#include <cmath>
#include <initializer_list>
#include <optional>
#include <random>

#include "opencl_test_util.h"

namespace graft::testing {
namespace {

using Attr = std::pair<const char*, ir::AttributeValue>;
using Ints = std::vector<int64_t>;

/// A one-node graph under construction: graph inputs with their values,
/// constants, the node, its outputs.
class NodeCase {
 public:
  explicit NodeCase(int opset) : graph_(std::make_unique<ir::Graph>()) { graph_->opset_imports[""] = opset; }

  /// A graph input with a value from `fill` (uniform [lo, hi) by default).
  ir::Value input(const Shape& shape, double lo = -1, double hi = 1, DType dtype = DType::float32) {
    Tensor t(dtype, shape);
    std::mt19937_64 rng(1234 + 17 * inputs_.size());
    std::uniform_real_distribution<double> dist(lo, hi);
    for (int64_t i = 0; i < t.numel(); ++i) {
      if (dtype == DType::float32)
        t.data<float>()[i] = static_cast<float>(dist(rng));
      else
        t.data<double>()[i] = dist(rng);
    }
    return input_value(t);
  }
  /// A graph input holding `t`.
  ir::Value input_value(const Tensor& t) {
    inputs_.push_back(t);
    std::string name = "x" + std::to_string(inputs_.size());
    return graph_->add_input(name, ir::ValueType::of(t.dtype(), t.shape()))->output(0);
  }
  /// A Constant node holding `t`.
  ir::Value constant(const Tensor& t) {
    return graph_->add_constant("c" + std::to_string(graph_->num_nodes()), t)->output(0);
  }
  /// The node (its outputs become the graph's), with types inferred.
  ir::Node& node(const std::string& op, const std::vector<ir::Value>& inputs, std::initializer_list<Attr> attrs = {},
                 int outputs = 1) {
    ir::Node* n = graph_->add_node(op, inputs, outputs, "op");
    for (const auto& [k, v] : attrs) n->attributes.set(k, v);
    for (int o = 0; o < outputs; ++o) graph_->add_output(n->output(o), "y" + std::to_string(o));
    ops::infer_types(*graph_);
    return *n;
  }
  /// Expects the OpenCL kernel to match the reference kernels.
  void check(double rtol = 1e-5, double atol = 1e-5) const {
    SCOPED_TRACE(compute_node(*graph_).describe());
    expect_opencl_matches_reference(*graph_, inputs_, rtol, atol);
  }
  const ir::Graph& graph() const { return *graph_; }

 private:
  std::unique_ptr<ir::Graph> graph_;
  std::vector<Tensor> inputs_;
};

// ---- pools --------------------------------------------------------------------

void check_pool(const std::string& op, const Shape& shape, std::initializer_list<Attr> attrs) {
  NodeCase c(18);
  ir::Value x = c.input(shape);
  c.node(op, {x}, attrs);
  c.check();
}

TEST(OpenClPool, MaxPool3x3Stride2Pad1ResnetStem) {
  GRAFT_REQUIRE_OPENCL();
  check_pool("MaxPool", {2, 4, 16, 16},
             {{"kernel_shape", Ints{3, 3}}, {"strides", Ints{2, 2}}, {"pads", Ints{1, 1, 1, 1}}});
}

TEST(OpenClPool, MaxPool2x2Stride2) {
  GRAFT_REQUIRE_OPENCL();
  check_pool("MaxPool", {1, 3, 8, 10}, {{"kernel_shape", Ints{2, 2}}, {"strides", Ints{2, 2}}});
}

TEST(OpenClPool, MaxPoolCeilModeAndAsymmetricPads) {
  GRAFT_REQUIRE_OPENCL();
  check_pool("MaxPool", {1, 2, 8, 8},
             {{"kernel_shape", Ints{3, 3}}, {"strides", Ints{2, 2}}, {"ceil_mode", int64_t{1}}});
  check_pool(
      "MaxPool", {1, 2, 9, 7},
      {{"kernel_shape", Ints{3, 2}}, {"strides", Ints{2, 3}}, {"pads", Ints{0, 1, 2, 0}}, {"ceil_mode", int64_t{1}}});
}

TEST(OpenClPool, MaxPoolDilationsAndAutoPad) {
  GRAFT_REQUIRE_OPENCL();
  check_pool("MaxPool", {1, 2, 10, 11},
             {{"kernel_shape", Ints{3, 3}}, {"dilations", Ints{2, 2}}, {"pads", Ints{1, 1, 1, 1}}});
  check_pool("MaxPool", {1, 2, 9, 9},
             {{"kernel_shape", Ints{3, 3}}, {"strides", Ints{2, 2}}, {"auto_pad", std::string("SAME_UPPER")}});
  check_pool("MaxPool", {1, 2, 9, 9},
             {{"kernel_shape", Ints{2, 2}}, {"strides", Ints{2, 2}}, {"auto_pad", std::string("SAME_LOWER")}});
  check_pool("MaxPool", {2, 3, 13}, {{"kernel_shape", Ints{3}}, {"strides", Ints{2}}});  // 1-D
}

TEST(OpenClPool, ThreeDimensionalDilatedAndStorageOrder) {
  GRAFT_REQUIRE_OPENCL();
  check_pool("MaxPool", {1, 2, 5, 6, 7}, {{"kernel_shape", Ints{2, 3, 2}}, {"strides", Ints{1, 2, 2}}});
  check_pool("AveragePool", {1, 2, 5, 6, 7},
             {{"kernel_shape", Ints{3, 3, 3}}, {"pads", Ints{1, 1, 1, 1, 1, 1}}, {"count_include_pad", int64_t{1}}});
  // AveragePool has dilations from opset 19.
  NodeCase c(19);
  ir::Value x = c.input({1, 2, 9, 9});
  c.node("AveragePool", {x}, {{"kernel_shape", Ints{2, 2}}, {"dilations", Ints{2, 2}}, {"pads", Ints{1, 1, 1, 1}}});
  c.check();
  // storage_order only orders MaxPool's Indices: without that output, Y is the same.
  check_pool("MaxPool", {1, 2, 6, 6}, {{"kernel_shape", Ints{2, 2}}, {"storage_order", int64_t{1}}});
}

TEST(OpenClPool, AveragePoolWithAndWithoutCountIncludePad) {
  GRAFT_REQUIRE_OPENCL();
  for (int64_t include : {0, 1}) {
    SCOPED_TRACE("count_include_pad " + std::to_string(include));
    check_pool("AveragePool", {2, 3, 9, 9},
               {{"kernel_shape", Ints{3, 3}},
                {"strides", Ints{2, 2}},
                {"pads", Ints{1, 1, 1, 1}},
                {"count_include_pad", include}});
    // ceil_mode: the taps past the padding never count.
    check_pool("AveragePool", {1, 2, 8, 8},
               {{"kernel_shape", Ints{3, 3}},
                {"strides", Ints{2, 2}},
                {"pads", Ints{1, 0, 1, 0}},
                {"ceil_mode", int64_t{1}},
                {"count_include_pad", include}});
  }
  check_pool("AveragePool", {1, 2, 6, 7}, {{"kernel_shape", Ints{2, 2}}});
}

TEST(OpenClPool, GlobalAverageAndMaxPool) {
  GRAFT_REQUIRE_OPENCL();
  check_pool("GlobalAveragePool", {2, 8, 7, 7}, {});
  check_pool("GlobalMaxPool", {2, 8, 5, 6}, {});
  check_pool("GlobalAveragePool", {3, 5, 11}, {});
  // few planes of 256 elements or more: one work-group per plane (opencl_row_launch.h)
  check_pool("GlobalAveragePool", {1, 3, 20, 20}, {});
  check_pool("GlobalMaxPool", {1, 3, 17, 19}, {});
}

// ---- Softmax --------------------------------------------------------------------

void check_softmax(int opset, const Shape& shape, std::initializer_list<Attr> attrs, double scale = 1) {
  for (const char* op : {"Softmax", "LogSoftmax"}) {
    SCOPED_TRACE(op);
    NodeCase c(opset);
    ir::Value x = c.input(shape, -scale, scale);
    c.node(op, {x}, attrs);
    c.check();
  }
}

TEST(OpenClSoftmax, LastAxis) {
  GRAFT_REQUIRE_OPENCL();
  check_softmax(13, {4, 8, 33}, {});
  check_softmax(13, {3, 17}, {{"axis", int64_t{-1}}}, 60);  // large logits: the max subtraction keeps them finite
}

TEST(OpenClSoftmax, Axis1Opset13) {
  GRAFT_REQUIRE_OPENCL();
  check_softmax(13, {2, 5, 7, 3}, {{"axis", int64_t{1}}});
  check_softmax(13, {2, 5, 7, 3}, {{"axis", int64_t{0}}});
}

TEST(OpenClSoftmax, Opset11FlattensAtTheAxis) {
  GRAFT_REQUIRE_OPENCL();
  check_softmax(11, {2, 5, 7, 3}, {});  // default axis 1: rows of 5 * 7 * 3
  check_softmax(11, {2, 5, 7, 3}, {{"axis", int64_t{2}}});
  check_softmax(11, {6, 9}, {{"axis", int64_t{-1}}});
}

// Few long rows run one work-group per row on any device (opencl_row_launch.h: at most 3 here).
TEST(OpenClSoftmax, LongRowsOneWorkGroupPerRow) {
  GRAFT_REQUIRE_OPENCL();
  check_softmax(13, {3, 1000}, {}, 20);
  check_softmax(11, {2, 5, 7, 9}, {});                     // rows of 315
  check_softmax(13, {2, 300, 3}, {{"axis", int64_t{1}}});  // strided: still one work-item per vector
}

// ---- normalizations ---------------------------------------------------------------

TEST(OpenClNorm, LayerNormalizationLastAxisBert) {
  GRAFT_REQUIRE_OPENCL();
  NodeCase c(17);
  ir::Value x = c.input({2, 8, 32}, -3, 3);
  ir::Value scale = c.input({32});
  ir::Value bias = c.input({32});
  c.node("LayerNormalization", {x, scale, bias}, {{"axis", int64_t{-1}}, {"epsilon", 1e-12f}});
  c.check();
}

TEST(OpenClNorm, LayerNormalizationWithoutBias) {
  GRAFT_REQUIRE_OPENCL();
  {
    NodeCase c(17);
    ir::Value x = c.input({2, 4, 6});
    ir::Value scale = c.input({4, 6});
    c.node("LayerNormalization", {x, scale}, {{"axis", int64_t{1}}});
    c.check();
  }
  {  // an absent B in the middle of the inputs' list, a single-value Scale
    NodeCase c(17);
    ir::Value x = c.input({3, 10});
    ir::Value scale = c.input({1});
    c.node("LayerNormalization", {x, scale, ir::Value{}}, {});
    c.check();
  }
}

// Few long rows and planes (at most 3) run one work-group each on any device (opencl_row_launch.h).
TEST(OpenClNorm, LongRowsAndPlanesOneWorkGroupEach) {
  GRAFT_REQUIRE_OPENCL();
  {
    NodeCase c(17);
    ir::Value x = c.input({1, 3, 384}, -3, 3);
    ir::Value scale = c.input({384});
    ir::Value bias = c.input({384});
    c.node("LayerNormalization", {x, scale, bias}, {{"epsilon", 1e-12f}});
    c.check();
  }
  {
    NodeCase c(17);
    ir::Value x = c.input({2, 3, 100});
    ir::Value scale = c.input({3, 100});
    c.node("LayerNormalization", {x, scale}, {{"axis", int64_t{1}}});
    c.check();
  }
  {
    NodeCase c(17);
    ir::Value x = c.input({1, 3, 20, 21}, -2, 2);
    ir::Value scale = c.input({3});
    ir::Value bias = c.input({3});
    c.node("InstanceNormalization", {x, scale, bias}, {});
    c.check();
  }
}

TEST(OpenClNorm, BatchNormalizationInference) {
  GRAFT_REQUIRE_OPENCL();
  for (int opset : {9, 15}) {
    NodeCase c(opset);
    ir::Value x = c.input({2, 3, 5, 5}, -2, 2);
    ir::Value scale = c.input({3});
    ir::Value bias = c.input({3});
    ir::Value mean = c.input({3});
    ir::Value var = c.input({3}, 0.1, 2);
    c.node("BatchNormalization", {x, scale, bias, mean, var}, {{"epsilon", 1e-3f}});
    c.check();
  }
}

TEST(OpenClNorm, BatchNormalizationOpset7NotSpatial) {
  GRAFT_REQUIRE_OPENCL();
  NodeCase c(7);  // spatial = 0: every (C, D1) position has its own statistics
  ir::Value x = c.input({2, 3, 4}, -2, 2);
  ir::Value scale = c.input({3, 4});
  ir::Value bias = c.input({3, 4});
  ir::Value mean = c.input({3, 4});
  ir::Value var = c.input({3, 4}, 0.1, 2);
  c.node("BatchNormalization", {x, scale, bias, mean, var}, {{"spatial", int64_t{0}}});
  c.check();
}

TEST(OpenClNorm, InstanceNormalization) {
  GRAFT_REQUIRE_OPENCL();
  NodeCase c(17);
  ir::Value x = c.input({2, 3, 6, 7}, -2, 2);
  ir::Value scale = c.input({3});
  ir::Value bias = c.input({3});
  c.node("InstanceNormalization", {x, scale, bias}, {{"epsilon", 1e-4f}});
  c.check();
}

// ---- reductions ---------------------------------------------------------------------

const char* const kReductions[] = {"ReduceMean", "ReduceSum",       "ReduceMax", "ReduceMin",      "ReduceProd",
                                   "ReduceL2",   "ReduceSumSquare", "ReduceL1",  "ReduceLogSumExp"};

/// Axes as the attribute (opset 13; ReduceSum at 11, before its axes input) or as a Constant input (opset 18).
void check_reduce(const std::string& op, bool axes_as_input, const std::optional<Ints>& axes, int64_t keepdims,
                  const Shape& shape = {3, 4, 5}, int64_t noop = 0, double atol = 1e-5) {
  SCOPED_TRACE(op + (axes_as_input ? " axes input" : " axes attribute"));
  NodeCase c(axes_as_input ? 18 : op == "ReduceSum" ? 11 : 13);
  ir::Value x = c.input(shape);
  std::vector<ir::Value> inputs = {x};
  if (axes_as_input) {
    if (axes) inputs.push_back(c.constant(Tensor::from_vector<int64_t>(*axes, {static_cast<int64_t>(axes->size())})));
    c.node(op, inputs, {{"keepdims", keepdims}, {"noop_with_empty_axes", noop}});
  } else if (axes) {
    c.node(op, inputs, {{"keepdims", keepdims}, {"axes", *axes}});
  } else {
    c.node(op, inputs, {{"keepdims", keepdims}});
  }
  c.check(1e-5, atol);
}

TEST(OpenClReduce, EveryReductionOverEveryAxesPattern) {
  GRAFT_REQUIRE_OPENCL();
  for (const char* op : kReductions) {
    for (bool as_input : {false, true}) {
      check_reduce(op, as_input, Ints{1}, 1);     // a middle axis
      check_reduce(op, as_input, Ints{-1}, 0);    // the last axis
      check_reduce(op, as_input, Ints{0, 2}, 1);  // several axes, not neighbours
      check_reduce(op, as_input, Ints{0, 2}, 0);
      check_reduce(op, as_input, std::nullopt, 0);  // all axes
      check_reduce(op, as_input, std::nullopt, 1);
      check_reduce(op, as_input, Ints{1, 3}, 0, {2, 3, 1, 4, 3});  // an extent of 1 between reduced axes
    }
  }
}

TEST(OpenClReduce, EmptyAxesInput) {
  GRAFT_REQUIRE_OPENCL();
  for (const char* op : {"ReduceSum", "ReduceMean", "ReduceL2", "ReduceSumSquare"}) {
    check_reduce(op, true, Ints{}, 1);                // reduces every axis
    check_reduce(op, true, Ints{}, 1, {3, 4, 5}, 1);  // noop_with_empty_axes: each element alone
  }
}

TEST(OpenClReduce, LargerReductions) {
  GRAFT_REQUIRE_OPENCL();
  check_reduce("ReduceMean", false, Ints{2, 3}, 1, {2, 16, 14, 14});  // a pooling head
  check_reduce("ReduceMax", true, Ints{0, 1}, 0, {7, 9, 33});
  check_reduce("ReduceSumSquare", false, Ints{-1}, 1, {4, 8, 64});  // an RMSNorm's statistics
  // few outputs of 256 elements or more: one work-group per output (opencl_row_launch.h)
  for (const char* op : kReductions) {
    check_reduce(op, false, Ints{-1}, 0, {3, 300});
    check_reduce(op, true, std::nullopt, 1, {7, 9, 33});
    check_reduce(op, false, Ints{0, 2}, 1, {20, 3, 30});
    // Few outputs of 16384 elements or more: each split over several work-groups, then combined.
    // Sums of 20000-30000 values in [-1, 1] differ by float rounding: the reference's sum of the
    // first case is off the double-precision sum by 1.5e-4, the split kernel's by 7e-6.
    check_reduce(op, true, std::nullopt, 0, {4, 150, 50}, 0, 1e-3);
    check_reduce(op, false, Ints{0, 2}, 1, {100, 2, 200}, 0, 1e-3);
  }
}

void check_arg(const std::string& op, const Tensor& x, std::initializer_list<Attr> attrs) {
  SCOPED_TRACE(op);
  NodeCase c(13);
  ir::Value v = c.input_value(x);
  c.node(op, {v}, attrs);
  c.check(0, 0);
}

TEST(OpenClReduce, ArgMaxArgMin) {
  GRAFT_REQUIRE_OPENCL();
  Tensor x(DType::float32, {3, 6, 5});
  Tensor ties(DType::float32, {3, 6, 5});
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<float> dist(-1, 1);
  for (int64_t i = 0; i < x.numel(); ++i) {
    x.data<float>()[i] = dist(rng);
    ties.data<float>()[i] = std::floor(dist(rng) * 2);  // four values: many ties
  }
  // Long contiguous lanes, few of them: one work-group per lane (opencl_row_launch.h).
  Tensor wide(DType::float32, {2, 700}), wide_ties(DType::float32, {2, 700});
  for (int64_t i = 0; i < wide.numel(); ++i) {
    wide.data<float>()[i] = dist(rng);
    wide_ties.data<float>()[i] = std::floor(dist(rng) * 2);
  }
  for (const char* op : {"ArgMax", "ArgMin"}) {
    check_arg(op, wide, {{"axis", int64_t{-1}}});
    check_arg(op, wide_ties, {{"axis", int64_t{1}}});
    check_arg(op, wide_ties, {{"axis", int64_t{1}}, {"select_last_index", int64_t{1}}, {"keepdims", int64_t{0}}});
  }
  for (const char* op : {"ArgMax", "ArgMin"}) {
    check_arg(op, x, {});
    check_arg(op, x, {{"axis", int64_t{1}}, {"keepdims", int64_t{1}}});
    check_arg(op, x, {{"axis", int64_t{-1}}, {"keepdims", int64_t{0}}});
    check_arg(op, ties, {{"axis", int64_t{1}}});
    check_arg(op, ties, {{"axis", int64_t{1}}, {"select_last_index", int64_t{1}}});
    check_arg(op, ties, {{"axis", int64_t{2}}, {"select_last_index", int64_t{1}}, {"keepdims", int64_t{0}}});
  }
}

TEST(OpenClReduce, NaNAndEmptyReductions) {
  GRAFT_REQUIRE_OPENCL();
  const float nan = std::nanf("");
  Tensor x(DType::float32, {3, 4, 5});
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<float> dist(-1, 1);
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = dist(rng);
  x.data<float>()[7] = nan;  // lane (0, 1, 2)
  x.data<float>()[44] = nan;
  Tensor wide(DType::float32, {3, 400});
  for (int64_t i = 0; i < wide.numel(); ++i) wide.data<float>()[i] = dist(rng);
  wide.data<float>()[517] = nan;  // row 1, in a work-group reduction
  for (const char* op : {"ReduceMax", "ReduceMin", "ReduceSum", "ReduceLogSumExp"}) {
    for (const Ints& axes : {Ints{1}, Ints{2}, Ints{0, 2}}) {
      SCOPED_TRACE(op);
      NodeCase c(13);
      ir::Value v = c.input_value(x);
      c.node(op, {v}, {{"axes", axes}});
      c.check();
    }
    NodeCase c(13);
    ir::Value v = c.input_value(wide);
    c.node(op, {v}, {{"axes", Ints{1}}});
    c.check();
  }
  for (const char* op : {"ArgMax", "ArgMin"}) {
    for (int64_t axis : {0, 1, 2}) {
      NodeCase c(13);
      ir::Value v = c.input_value(x);
      c.node(op, {v}, {{"axis", axis}});
      c.check(0, 0);
    }
    // a work-group lane with several NaNs: the first, or the last with select_last_index
    Tensor lanes = wide.clone();
    lanes.data<float>()[400 + 130] = nan;
    lanes.data<float>()[400 + 250] = nan;
    lanes.data<float>()[400 + 390] = nan;
    for (int64_t last : {0, 1}) {
      NodeCase c(13);
      ir::Value v = c.input_value(lanes);
      c.node(op, {v}, {{"axis", int64_t{1}}, {"select_last_index", last}});
      c.check(0, 0);
    }
  }
  for (const char* op : {"MaxPool", "GlobalMaxPool"}) {  // a NaN tap never wins a max pool (std::max)
    NodeCase c(13);
    ir::Value v = c.input_value(x.reshaped({1, 3, 4, 5}));
    if (std::string(op) == "MaxPool")
      c.node(op, {v}, {{"kernel_shape", Ints{2, 2}}});
    else
      c.node(op, {v});
    c.check();
  }
  // Split reductions (one output of 20000 elements: two work-groups, then the final kernel): the
  // extreme value and a NaN sit in the last slice.
  Tensor split(DType::float32, {1, 20000});
  for (int64_t i = 0; i < split.numel(); ++i) split.data<float>()[i] = dist(rng);
  split.data<float>()[19990] = 5.0f;
  split.data<float>()[19995] = -5.0f;
  Tensor split_nan = split.clone();
  split_nan.data<float>()[19999] = nan;
  for (const char* op : {"ReduceMax", "ReduceMin", "ReduceLogSumExp"})
    for (const Tensor* t : {&split, &split_nan}) {
      SCOPED_TRACE(op);
      NodeCase c(13);
      ir::Value v = c.input_value(*t);
      c.node(op, {v}, {{"keepdims", int64_t{0}}});
      c.check();
    }
  // Reductions over an axis of extent 0: the op's identity (Mean of nothing is NaN).
  for (const char* op : {"ReduceSum", "ReduceMean", "ReduceProd", "ReduceL2", "ReduceSumSquare"}) {
    SCOPED_TRACE(op);
    NodeCase c(13);
    ir::Value v = c.input({3, 0, 4});
    c.node(op, {v}, {{"axes", Ints{1}}});
    c.check();
  }
}

// ---- refusals --------------------------------------------------------------------------

TEST(OpenClReduce, UnsupportedCasesAreRefusedWithAReason) {
  GRAFT_REQUIRE_OPENCL();
  {
    NodeCase c(13);
    ir::Value x = c.input({2, 3}, -1, 1, DType::float64);
    const ir::Node& n = c.node("Softmax", {x});
    EXPECT_NE(opencl::kernel_support(n).find("float64"), std::string::npos) << opencl::kernel_support(n);
  }
  {
    NodeCase c(17);
    ir::Value x = c.input({2, 8, 32});
    ir::Value scale = c.input({32});
    const ir::Node& n = c.node("LayerNormalization", {x, scale}, {}, 3);
    EXPECT_NE(opencl::kernel_support(n), "");
  }
  {
    NodeCase c(13);
    ir::Value x = c.input({1, 1, 4, 4});
    const ir::Node& n = c.node("MaxPool", {x}, {{"kernel_shape", Ints{2, 2}}}, 2);
    EXPECT_NE(opencl::kernel_support(n).find("Indices"), std::string::npos) << opencl::kernel_support(n);
  }
  {
    NodeCase c(15);
    ir::Value x = c.input({2, 3, 4});
    std::vector<ir::Value> params;
    for (int i = 0; i < 4; ++i) params.push_back(c.input({3}, 0.5, 1));
    const ir::Node& n = c.node("BatchNormalization", {x, params[0], params[1], params[2], params[3]},
                               {{"training_mode", int64_t{1}}}, 3);
    EXPECT_NE(opencl::kernel_support(n), "");
  }
  {  // axes from a graph input, not a constant (its output shape is not known either)
    NodeCase c(18);
    ir::Value x = c.input({2, 3, 4});
    ir::Value axes = c.input_value(Tensor::from_vector<int64_t>({1}, {1}));
    const ir::Node& n = c.node("ReduceSum", {x, axes});
    EXPECT_NE(opencl::kernel_support(n), "");
  }
  {  // attributes made malformed after inference: the reason, not a throw
    NodeCase c(13);
    ir::Value x = c.input({2, 3});
    ir::Node& n = c.node("Softmax", {x});
    n.attributes.set("axis", int64_t{5});
    EXPECT_NE(opencl::kernel_support(n).find("axis"), std::string::npos) << opencl::kernel_support(n);
    NodeCase d(13);
    ir::Value y = d.input({1, 1, 4, 4});
    ir::Node& pool = d.node("MaxPool", {y}, {{"kernel_shape", Ints{2, 2}}});
    pool.attributes.set("auto_pad", std::string("BOGUS"));
    EXPECT_NE(opencl::kernel_support(pool).find("auto_pad"), std::string::npos) << opencl::kernel_support(pool);
  }
  {
    NodeCase c(13);
    ir::Value x = c.input({2, 3, 4}, -1, 1, DType::float64);
    const ir::Node& n = c.node("ReduceMean", {x}, {{"axes", Ints{1}}});
    EXPECT_NE(opencl::kernel_support(n).find("float64"), std::string::npos) << opencl::kernel_support(n);
  }
}

}  // namespace
}  // namespace graft::testing
