// Int8 convolutions (backends/dnnl/dnnl_int8.cc): quantization-aware (QDQ)
// graphs, made as ONNX Runtime's quantize_static makes them (uint8
// activations, int8 weights per output channel, DequantizeLinear on the
// weight initializers), go through the default passes and compile on dnnl;
// every output is checked against the reference kernels on the original
// graph (QuantizeLinear, DequantizeLinear, Conv in float32): within one
// quantization step of the output, and rarely a step away.
#include "../../backends/dnnl/dnnl_int8.h"

#include <optional>
#include <random>
#include <sstream>

#include "dnnl_test_util.h"
#include "graft/passes/pass.h"

namespace graft::testing {
namespace {

// How many int8 products to expect of `count` candidates: none without VNNI
// (dnnl_int8.h: AVX2's 16-bit pair sums would saturate), where they stay float32.
int expected_int8(int count) { return dnnl_backend::int8_runs_without_saturation() ? count : 0; }

struct ConvCase {
  int64_t channels = 8, out_channels = 16, size = 12, kernel = 3, stride = 1, pad = 1, group = 1;
  uint8_t input_zero_point = 0;
  bool bias = true;
  bool relu = true;
};

// `count` int8 values drawn uniformly from [-127, 127] (the symmetric range
// quantize_static gives weights).
std::vector<int8_t> random_int8(int64_t count, uint64_t seed) {
  std::vector<int8_t> values(static_cast<size_t>(count));
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> value(-127, 127);
  for (int8_t& v : values) v = static_cast<int8_t>(value(rng));
  return values;
}

// A clone of `graph` through the default passes (which fold or expand the
// quantization pairs), as a Session would hand it to dnnl: with
// `keep_int8_weights`, the weights' DequantizeLinear stays (as the compiler
// asks where dnnl runs int8 products), else it is folded to float32.
std::unique_ptr<ir::Graph> through_default_passes(const ir::Graph& graph, bool keep_int8_weights = false) {
  std::unique_ptr<ir::Graph> lowered = graph.clone();
  passes::PassContext ctx;
  ctx.keep_quantized_weights = keep_int8_weights;
  passes::run_pipeline(lowered, passes::default_pipeline(), ctx);
  return lowered;
}

class QdqGraph {
 public:
  QdqGraph() : g_(new_graph()) {}

  ir::Value input(const std::string& name, const Shape& shape) {
    return g_->add_input(name, ir::ValueType::of(DType::float32, shape))->output(0);
  }

  // QuantizeLinear -> DequantizeLinear to uint8 with scale `scale` and zero point `zero_point`.
  ir::Value fake_quantize(ir::Value v, float scale, uint8_t zero_point, const std::string& name) {
    ir::Value s = constant(name + ".scale", Tensor::scalar<float>(scale));
    ir::Value z = constant(name + ".zero_point", Tensor::scalar<uint8_t>(zero_point));
    ir::Value q = g_->add_node("QuantizeLinear", {v, s, z}, 1, name + ".q")->output(0);
    return g_->add_node("DequantizeLinear", {q, s, z}, 1, name + ".dq")->output(0);
  }

  ir::Value constant(const std::string& name, Tensor value) {
    return g_->add_constant(name, std::move(value))->output(0);
  }

  // DequantizeLinear of the int8 constant `name` (`values` of `shape`) by
  // `scale` (one, or one per slice along `axis`), with a zero point of zeros
  // as an input when `zero_point_input` (as quantize_static writes a
  // convolution's).
  ir::Value dequantized_int8(const std::string& name, const std::vector<int8_t>& values, const Shape& shape,
                             Tensor scale, std::optional<int64_t> axis = std::nullopt, bool zero_point_input = false) {
    std::vector<ir::Value> inputs = {constant(name, Tensor::from_vector<int8_t>(values, shape))};
    const Shape scale_shape = scale.shape();
    inputs.push_back(constant(name + ".scale", std::move(scale)));
    if (zero_point_input) {
      const int64_t count = shape_numel(scale_shape);
      inputs.push_back(
          constant(name + ".zero_point",
                   Tensor::from_vector<int8_t>(std::vector<int8_t>(static_cast<size_t>(count), 0), scale_shape)));
    }
    ir::Node* dq = g_->add_node("DequantizeLinear", inputs, 1, name + ".dq");
    if (axis) dq->attributes.set("axis", *axis);
    return dq->output(0);
  }

  // A Conv of `x` with int8 weights (symmetric per output channel: each
  // channel's largest magnitude is 127) behind a DequantizeLinear on axis 0.
  ir::Value conv(ir::Value x, const ConvCase& c, const std::string& name, uint64_t seed) {
    const int64_t per_channel = c.channels / c.group * c.kernel * c.kernel;
    std::vector<int8_t> q = random_int8(c.out_channels * per_channel, seed);
    std::vector<float> scales(c.out_channels);
    for (int64_t o = 0; o < c.out_channels; ++o) {
      q[o * per_channel + o % per_channel] = o % 2 ? 127 : -127;
      scales[o] = 0.002f * static_cast<float>(1 + o % 5);
    }
    std::vector<ir::Value> inputs = {
        x, dequantized_int8(name + ".w", q, {c.out_channels, c.channels / c.group, c.kernel, c.kernel},
                            Tensor::from_vector<float>(scales, {c.out_channels}), 0, true)};
    if (c.bias) inputs.push_back(constant(name + ".b", random_tensor({c.out_channels}, seed + 1)));
    ir::Node* conv = g_->add_node("Conv", inputs, 1, name);
    conv->attributes.set("pads", std::vector<int64_t>(4, c.pad));
    conv->attributes.set("strides", std::vector<int64_t>{c.stride, c.stride});
    conv->attributes.set("group", c.group);
    ir::Value y = conv->output(0);
    if (c.relu) y = g_->add_node("Relu", {y}, 1, name + ".relu")->output(0);
    return y;
  }

  ir::Value add(ir::Value a, ir::Value b, const std::string& name) {
    return g_->add_node("Add", {a, b}, 1, name)->output(0);
  }

  void output(ir::Value v, const std::string& name) { g_->add_output(v, name); }

  ir::Graph& graph() { return *g_; }

 private:
  std::unique_ptr<ir::Graph> g_;
};

// Runs `graph` through the default passes and on dnnl, and the original on
// the reference kernels; expects output 0 within one step `step` of the
// reference's everywhere and a step away at under 1% of its values.
// Returns the dnnl module's statistics.
dnnl_backend::DnnlModuleStats expect_within_one_step(ir::Graph& graph, const std::vector<Tensor>& inputs, float step,
                                                     bool keep_int8_weights = false) {
  ops::infer_types(graph);
  std::vector<Tensor> want = run_graph(graph, inputs);
  auto module = compile_dnnl(*through_default_passes(graph, keep_int8_weights));
  std::vector<Tensor> got = run_module(*module, inputs);
  EXPECT_EQ(got.size(), want.size());
  if (got.empty() || want.empty() || got[0].shape() != want[0].shape()) {
    ADD_FAILURE() << "no comparable output";
    return dnnl_backend::dnnl_module_stats(*module);
  }
  int64_t differing = 0;
  for (int64_t i = 0; i < got[0].numel(); ++i) {
    const float d = std::abs(got[0].data<float>()[i] - want[0].data<float>()[i]);
    EXPECT_LE(d, step * 1.001f) << "at " << i << ": " << got[0].data<float>()[i] << " vs " << want[0].data<float>()[i];
    if (d > step * 1.001f) break;
    differing += d > 0;
  }
  EXPECT_LE(differing, std::max<int64_t>(1, got[0].numel() / 100)) << "more than 1% of the values a step away";
  return dnnl_backend::dnnl_module_stats(*module);
}

dnnl_backend::DnnlModuleStats check_conv(const ConvCase& c, uint64_t seed) {
  QdqGraph q;
  ir::Value x = q.input("x", {1, c.channels, c.size, c.size});
  ir::Value h = q.fake_quantize(x, 0.01f, c.input_zero_point, "in");
  ir::Value y = q.conv(h, c, "conv", seed);
  const float out_step = 0.02f;
  q.output(q.fake_quantize(y, out_step, c.relu ? 0 : 128, "out"), "y");
  return expect_within_one_step(q.graph(), {random_tensor({1, c.channels, c.size, c.size}, seed + 7)}, out_step);
}

TEST(DnnlInt8, FakeQuantizedConvolutionRunsInInt8) {
  dnnl_backend::DnnlModuleStats stats = check_conv(ConvCase{}, 1);
  EXPECT_EQ(stats.int8_convolutions, expected_int8(1));
  EXPECT_EQ(stats.reference_primitives, 0);
}

TEST(DnnlInt8, ZeroPointAndPaddingStride) {
  ConvCase c;
  c.input_zero_point = 100;  // padding is the zero point, not uint8 zero
  c.stride = 2;
  c.relu = false;
  EXPECT_EQ(check_conv(c, 2).int8_convolutions, expected_int8(1));
}

TEST(DnnlInt8, DepthwiseAndPointwise) {
  ConvCase depthwise;
  depthwise.channels = depthwise.out_channels = depthwise.group = 32;
  EXPECT_EQ(check_conv(depthwise, 3).int8_convolutions, expected_int8(1));
  ConvCase pointwise;
  pointwise.kernel = 1;
  pointwise.pad = 0;
  pointwise.bias = false;
  EXPECT_EQ(check_conv(pointwise, 4).int8_convolutions, expected_int8(1));
}

// Two convolutions read one fake quantization (a downsampling block): it is
// quantized once; a third reads a value an Add reads too: its fake
// quantization runs in float32 for the Add, and the convolution still
// computes in int8.
TEST(DnnlInt8, SharedAndFloatReadSources) {
  QdqGraph q;
  ConvCase c;
  ir::Value x = q.input("x", {1, 8, 12, 12});
  ir::Value h = q.fake_quantize(x, 0.01f, 128, "in");
  ir::Value a = q.fake_quantize(q.conv(h, c, "a", 11), 0.02f, 0, "a.out");
  ir::Value b = q.fake_quantize(q.conv(h, c, "b", 12), 0.02f, 0, "b.out");
  ConvCase c2 = c;
  c2.channels = 16;
  c2.relu = false;
  ir::Value sum = q.fake_quantize(q.add(q.conv(a, c2, "c", 13), b, "sum"), 0.05f, 128, "sum.out");
  q.output(sum, "y");
  dnnl_backend::DnnlModuleStats stats = expect_within_one_step(q.graph(), {random_tensor({1, 8, 12, 12}, 9)}, 0.05f);
  EXPECT_EQ(stats.int8_convolutions, expected_int8(3));
}

// A residual block: the fake-quantized input is read by an int8
// convolution and by the Add; the Add reads it dequantized from the uint8
// form the convolution reads.
TEST(DnnlInt8, FloatReadersOfAQuantizedSourceGetItDequantized) {
  QdqGraph q;
  ConvCase c;
  c.out_channels = 8;
  c.relu = false;
  ir::Value x = q.input("x", {1, 8, 12, 12});
  ir::Value h = q.fake_quantize(x, 0.01f, 128, "in");
  ir::Value y = q.fake_quantize(q.conv(h, c, "conv", 31), 0.02f, 120, "conv.out");
  q.output(q.fake_quantize(q.add(y, h, "sum"), 0.03f, 128, "sum.out"), "y");
  dnnl_backend::DnnlModuleStats stats = expect_within_one_step(q.graph(), {random_tensor({1, 8, 12, 12}, 32)}, 0.03f);
  EXPECT_EQ(stats.int8_convolutions, expected_int8(1));
}

// x [1, 16, 32] -> QDQ -> MatMul by int8 [32, 24] (per column, or per
// tensor) -> Add bias -> QDQ: an int8 matmul of the rows.
TEST(DnnlInt8, FakeQuantizedMatMulRunsInInt8) {
  for (bool per_column : {true, false}) {
    QdqGraph q;
    ir::Value h = q.fake_quantize(q.input("x", {1, 16, 32}), 0.01f, 120, "in");
    std::vector<int8_t> w = random_int8(32 * 24, 21);
    for (int c = 0; c < 24; ++c) w[(c % 32) * 24 + c] = c % 2 ? 127 : -127;  // each column reaches 127
    std::vector<float> scales(per_column ? 24 : 1);
    for (size_t c = 0; c < scales.size(); ++c) scales[c] = 0.003f * static_cast<float>(1 + c % 4);
    Tensor scale = per_column ? Tensor::from_vector<float>(scales, {24}) : Tensor::scalar<float>(scales[0]);
    ir::Value y = q.graph().add_node("MatMul", {h, q.dequantized_int8("w", w, {32, 24}, scale, 1)}, 1, "mm")->output(0);
    y = q.add(y, q.constant("bias", random_tensor({24}, 4)), "bias");
    q.output(q.fake_quantize(y, 0.02f, 128, "out"), "y");
    dnnl_backend::DnnlModuleStats stats = expect_within_one_step(q.graph(), {random_tensor({1, 16, 32}, 8)}, 0.02f);
    EXPECT_EQ(stats.int8_matmuls, expected_int8(1)) << (per_column ? "per column" : "per tensor");
  }
}

// squeezenet's fire module and pool in a QDQ export: two convolutions
// quantized with their own scales, a Concat of the pair's outputs
// quantized again (the larger scale), a MaxPool between fake quantizations
// of one scale, and a convolution after. The Concat and the MaxPool run on
// uint8 (the input of the smaller scale requantized), with no dequantize /
// quantize pair around them, and every convolution writes uint8.
TEST(DnnlInt8, PoolAndConcatBetweenFakeQuantizationsRunOnUint8) {
  QdqGraph q;
  ConvCase c;
  c.out_channels = 16;
  c.bias = true;
  ir::Value x = q.input("x", {1, 8, 12, 12});
  ir::Value h = q.fake_quantize(x, 0.01f, 128, "in");
  // Scales that are no simple ratios of each other (a calibration's never
  // are): b's requantization then rounds ties as rarely as in a real model.
  ir::Value a = q.fake_quantize(q.conv(h, c, "a", 71), 0.0413f, 0, "a.out");
  ir::Value b = q.fake_quantize(q.conv(h, c, "b", 72), 0.0297f, 0, "b.out");
  ir::Node* concat = q.graph().add_node("Concat", {a, b}, 1, "concat");
  concat->attributes.set("axis", int64_t{1});
  ir::Value joined = q.fake_quantize(concat->output(0), 0.0413f, 0, "concat.out");
  ir::Node* pool = q.graph().add_node("MaxPool", {joined}, 1, "pool");
  pool->attributes.set("kernel_shape", std::vector<int64_t>{3, 3});
  pool->attributes.set("strides", std::vector<int64_t>{2, 2});
  pool->attributes.set("ceil_mode", int64_t{1});
  ir::Value pooled = q.fake_quantize(pool->output(0), 0.0413f, 0, "pool.out");
  ConvCase last = c;
  last.channels = 32;
  last.relu = false;
  q.output(q.fake_quantize(q.conv(pooled, last, "c", 73), 0.05f, 128, "c.out"), "y");
  dnnl_backend::DnnlModuleStats stats = expect_within_one_step(q.graph(), {random_tensor({1, 8, 12, 12}, 74)}, 0.05f);
  EXPECT_EQ(stats.int8_convolutions, expected_int8(3));
  EXPECT_EQ(stats.uint8_concats, expected_int8(1));
  EXPECT_EQ(stats.uint8_pools, expected_int8(1));
  if (dnnl_backend::int8_runs_without_saturation()) {
    // The two convolutions requantize, b's output is requantized to the
    // concat's scale, the last quantizes nothing: input quantization, 3
    // convolutions, 1 requantization, concat, pool, output reorder at most.
    EXPECT_LE(stats.primitives, 8);
  }
}

// A ResNet block in a QDQ export: conv -> QDQ -> conv -> QDQ, plus the
// block's fake-quantized input, -> Add -> QDQ (the Relu after the Add
// removed, as quantize_static removes it) -> conv. The Add runs on the two
// uint8 forms (one binary primitive with scales, into the uint8 form of its
// result): the block is int8 from end to end.
TEST(DnnlInt8, ResidualAddOfFakeQuantizedValuesRunsOnUint8) {
  QdqGraph q;
  ConvCase c;
  c.out_channels = 8;
  ir::Value x = q.input("x", {1, 8, 12, 12});
  ir::Value block_in = q.fake_quantize(x, 0.0117f, 0, "in");
  ir::Value h = q.fake_quantize(q.conv(block_in, c, "conv1", 111), 0.0431f, 0, "conv1.out");
  ConvCase second = c;
  second.relu = false;
  ir::Value y = q.fake_quantize(q.conv(h, second, "conv2", 112), 0.0523f, 131, "conv2.out");
  ir::Value sum = q.fake_quantize(q.add(y, block_in, "sum"), 0.0389f, 0, "sum.out");
  q.output(q.fake_quantize(q.conv(sum, second, "conv3", 113), 0.0617f, 120, "conv3.out"), "y");
  dnnl_backend::DnnlModuleStats stats =
      expect_within_one_step(q.graph(), {random_tensor({1, 8, 12, 12}, 114)}, 0.0617f);
  EXPECT_EQ(stats.int8_convolutions, expected_int8(3));
  EXPECT_EQ(stats.uint8_adds, expected_int8(1));
}

// A MaxPool whose result a float32 op reads too keeps its float32 form
// (only a fake quantization's reader gets a uint8 node).
TEST(DnnlInt8, PoolReadByFloatOpsStaysFloat) {
  QdqGraph q;
  ConvCase c;
  ir::Value x = q.input("x", {1, 8, 12, 12});
  ir::Value a = q.fake_quantize(q.conv(q.fake_quantize(x, 0.01f, 128, "in"), c, "a", 81), 0.04f, 0, "a.out");
  ir::Node* pool = q.graph().add_node("MaxPool", {a}, 1, "pool");
  pool->attributes.set("kernel_shape", std::vector<int64_t>{2, 2});
  pool->attributes.set("strides", std::vector<int64_t>{2, 2});
  ir::Value pooled = pool->output(0);
  ir::Value quantized = q.fake_quantize(pooled, 0.04f, 0, "pool.out");
  q.output(q.add(quantized, pooled, "sum"), "y");
  dnnl_backend::DnnlModuleStats stats = expect_within_one_step(q.graph(), {random_tensor({1, 8, 12, 12}, 82)}, 0.04f);
  EXPECT_EQ(stats.uint8_pools, 0);
  EXPECT_EQ(stats.int8_convolutions, expected_int8(1));
}

// A Gemm (transB, the bias C), as PyTorch exports an attention block's
// output projection: int8 weights [N, K] per tensor, run as an int8 matmul
// with C added in its post-ops.
TEST(DnnlInt8, FakeQuantizedGemmRunsInInt8) {
  QdqGraph q;
  ir::Value x = q.input("x", {16, 32});
  std::vector<int8_t> w = random_int8(24 * 32, 91);
  w[5] = 127;
  ir::Value dq = q.dequantized_int8("w", w, {24, 32}, Tensor::scalar<float>(0.004f));
  ir::Node* gemm = q.graph().add_node(
      "Gemm", {q.fake_quantize(x, 0.01f, 120, "in"), dq, q.constant("c", random_tensor({24}, 92))}, 1, "gemm");
  gemm->attributes.set("transB", int64_t{1});
  q.output(q.fake_quantize(gemm->output(0), 0.02f, 128, "out"), "y");
  dnnl_backend::DnnlModuleStats stats = expect_within_one_step(q.graph(), {random_tensor({16, 32}, 93)}, 0.02f);
  EXPECT_EQ(stats.int8_matmuls, expected_int8(1));
}

// A BERT feed-forward block in a QDQ export: MatMul -> QDQ -> bias Add ->
// Gelu -> QDQ -> MatMul -> QDQ -> bias Add -> QDQ -> residual Add -> QDQ ->
// LayerNormalization. The fake quantizations put more than the pointwise
// chain bound (8) between compute; where they fold (int8 runs) the
// partitioner does not count them, so the block is one dnnl subgraph with
// both products in int8; a fake
// quantization that repeats the one of the value it moves (a Transpose)
// changes nothing.
TEST(DnnlInt8, QdqEncoderBlockIsOneDnnlSubgraph) {
  QdqGraph q;
  ir::Graph& g = q.graph();
  auto int8_weight = [&](int64_t k, int64_t n, uint64_t seed, const std::string& name) {
    std::vector<int8_t> w = random_int8(k * n, seed);
    w[0] = 127;
    return q.dequantized_int8(name, w, {k, n}, Tensor::scalar<float>(0.01f));
  };
  auto transposed = [&](ir::Value v, const std::string& name) {
    ir::Node* t = g.add_node("Transpose", {v}, 1, name);
    t->attributes.set("perm", std::vector<int64_t>{1, 0, 2});
    return t->output(0);
  };
  // Scales that are no simple ratios of each other (a calibration's never
  // are): a requantization's ties then are as rare as in a real model.
  ir::Value residual = q.fake_quantize(q.input("x", {1, 16, 32}), 0.0213f, 128, "in");
  ir::Value h = q.fake_quantize(transposed(residual, "t"), 0.0213f, 128, "t.out");  // [16, 1, 32]
  ir::Value y = g.add_node("MatMul", {h, int8_weight(32, 64, 101, "w1")}, 1, "mm1")->output(0);
  y = q.add(q.constant("b1", random_tensor({64}, 102)), q.fake_quantize(y, 0.0517f, 128, "mm1.out"), "bias1");
  y = g.add_node("Gelu", {y}, 1, "gelu")->output(0);
  y = q.fake_quantize(y, 0.0291f, 10, "gelu.out");
  y = g.add_node("MatMul", {y, int8_weight(64, 32, 103, "w2")}, 1, "mm2")->output(0);
  y = q.add(q.constant("b2", random_tensor({32}, 104)), q.fake_quantize(y, 0.0533f, 128, "mm2.out"), "bias2");
  y = q.fake_quantize(y, 0.0547f, 128, "bias2.out");
  // Moved back and quantized the same way again: an identity.
  y = q.fake_quantize(transposed(y, "back"), 0.0547f, 128, "back.out");
  y = q.add(y, residual, "residual");
  y = q.fake_quantize(y, 0.0611f, 128, "residual.out");
  ir::Node* norm = g.add_node(
      "LayerNormalization",
      {y, q.constant("gamma", random_tensor({32}, 105)), q.constant("beta", random_tensor({32}, 106))}, 1, "norm");
  norm->attributes.set("axis", int64_t{-1});
  q.output(q.fake_quantize(norm->output(0), 0.05f, 128, "norm.out"), "y");

  runtime::Session session(g.clone(), dnnl_session_options());
  auto counts = session.partition_report().nodes_per_backend();
  if (dnnl_backend::int8_runs_without_saturation()) {  // else float arithmetic, which `fuse` takes between products
    EXPECT_EQ(counts["fuse"], 0u) << session.partition_report().to_text();
    EXPECT_EQ(counts["ref"], 0u) << session.partition_report().to_text();
  }
  dnnl_backend::DnnlModuleStats stats = expect_within_one_step(g, {random_tensor({1, 16, 32}, 107)}, 0.05f);
  EXPECT_EQ(stats.int8_matmuls, expected_int8(2));
  // Both products requantize: the first writes the uint8 form of the
  // Gelu's fake quantization, after its bias, the Gelu and a fake
  // quantization before them (a linear post-op already in its chain); the
  // second that of the bias Add's, which a dequantize reorder reads (the
  // residual Add's operand), instead of a float result quantized by a reorder.
  EXPECT_EQ(stats.requantizing_products, expected_int8(2));
}

// An int8 module saved and loaded (an artifact) runs the same: the float
// weights it reads for their scales are kept (not superseded), the s8 form
// is stored converted.
TEST(DnnlInt8, SavedModuleKeepsTheWeightsItReadsForScales) {
  QdqGraph q;
  ConvCase c;
  ir::Value x = q.input("x", {1, c.channels, c.size, c.size});
  q.output(q.fake_quantize(q.conv(q.fake_quantize(x, 0.01f, 0, "in"), c, "conv", 41), 0.02f, 0, "out"), "y");
  ops::infer_types(q.graph());
  std::unique_ptr<ir::Graph> lowered = through_default_passes(q.graph());
  auto module = compile_dnnl(*lowered);
  std::stringstream saved;
  module->save(saved);
  std::vector<Tensor> converted = module->saved_tensors();
  if (dnnl_backend::int8_runs_without_saturation()) {  // else a float32 convolution, which supersedes them
    for (const Tensor& t : module->superseded_constants())
      EXPECT_NE(t.shape(), (Shape{c.out_channels, c.channels, c.kernel, c.kernel})) << "int8 weights are kept";
  }
  std::stringstream in(saved.str());
  auto loaded = backend::load_module("dnnl", in, *lowered, converted);
  std::vector<Tensor> inputs = {random_tensor({1, c.channels, c.size, c.size}, 42)};
  expect_close(run_module(*loaded, inputs)[0], run_module(*module, inputs)[0], 0, 0);
  EXPECT_EQ(dnnl_backend::dnnl_module_stats(*loaded).int8_convolutions, expected_int8(1));
}

// The partitioner gives dnnl the fake quantization of a graph input together
// with the convolution it feeds (an image model's first), rather than to
// `fuse`: the convolution then runs in int8 on the input quantized once.
TEST(DnnlInt8, GraphInputQuantizationGoesToDnnlWithItsConvolution) {
  QdqGraph q;
  ConvCase c;
  ir::Value x = q.input("x", {1, c.channels, c.size, c.size});
  q.output(q.fake_quantize(q.conv(q.fake_quantize(x, 0.01f, 128, "in"), c, "conv", 51), 0.02f, 0, "out"), "y");
  runtime::Session session(q.graph().clone(), dnnl_session_options());
  auto counts = session.partition_report().nodes_per_backend();
  EXPECT_EQ(counts["fuse"], 0u) << session.partition_report().to_text();
  EXPECT_EQ(counts["ref"], 0u) << session.partition_report().to_text();
  // The reference first: the session releases the bias it converted, whose
  // storage the graph's clone shares.
  std::vector<Tensor> inputs = {random_tensor({1, c.channels, c.size, c.size}, 52)};
  Tensor want = run_graph(q.graph(), inputs)[0];
  Tensor got = session.run(inputs)[0];
  ASSERT_EQ(got.shape(), want.shape());
  for (int64_t i = 0; i < got.numel(); ++i)
    ASSERT_LE(std::abs(got.data<float>()[i] - want.data<float>()[i]), 0.02f * 1.001f) << i;
}

// ONNX Runtime's QOperator format: QuantizeLinear -> QLinearConv (int8
// weights per channel, int32 bias) -> DequantizeLinear. lower-quantize-
// dequantize expands the QLinearConv into DequantizeLinear -> Conv ->
// QuantizeLinear, whose pairs then run as any QDQ model's: in int8 on dnnl,
// within one output step of the QLinearConv kernel.
TEST(DnnlInt8, QLinearConvRunsAsAnInt8Convolution) {
  QdqGraph q;
  ir::Value x = q.input("x", {1, 8, 10, 10});
  ir::Value x_scale = q.constant("x.s", Tensor::scalar<float>(0.01f));
  ir::Value x_zero = q.constant("x.z", Tensor::scalar<uint8_t>(128));
  ir::Value y_scale = q.constant("y.s", Tensor::scalar<float>(0.05f));
  ir::Value y_zero = q.constant("y.z", Tensor::scalar<uint8_t>(100));
  std::vector<int8_t> w = random_int8(16 * 8 * 9, 61);
  for (int o = 0; o < 16; ++o) w[o * 72] = 127;
  std::vector<float> scales(16);
  std::vector<int32_t> bias(16);
  for (int o = 0; o < 16; ++o) {
    scales[o] = 0.002f * static_cast<float>(1 + o % 3);
    bias[o] = (o - 8) * 300;
  }
  ir::Graph& g = q.graph();
  ir::Value xq = g.add_node("QuantizeLinear", {x, x_scale, x_zero}, 1, "xq")->output(0);
  ir::Node* conv = g.add_node("QLinearConv",
                              {xq, x_scale, x_zero, q.constant("w", Tensor::from_vector<int8_t>(w, {16, 8, 3, 3})),
                               q.constant("w.s", Tensor::from_vector<float>(scales, {16})),
                               q.constant("w.z", Tensor::from_vector<int8_t>(std::vector<int8_t>(16, 0), {16})),
                               y_scale, y_zero, q.constant("b", Tensor::from_vector<int32_t>(bias, {16}))},
                              1, "qconv");
  conv->attributes.set("pads", std::vector<int64_t>(4, 1));
  q.output(g.add_node("DequantizeLinear", {conv->output(0), y_scale, y_zero}, 1, "y")->output(0), "y");
  dnnl_backend::DnnlModuleStats stats = expect_within_one_step(g, {random_tensor({1, 8, 10, 10}, 62)}, 0.05f);
  EXPECT_EQ(stats.int8_convolutions, expected_int8(1));
  std::unique_ptr<ir::Graph> lowered = through_default_passes(g);
  for (const auto& node : lowered->nodes()) EXPECT_NE(node->op(), ir::OpId::QLinearConv) << "expanded";
}

// The weights' DequantizeLinear of graph `g` that read an int8 constant,
// and the float32 constants of extents `weight_shapes`.
struct WeightNodes {
  int dequantize_of_int8 = 0;
  int float_weights = 0;
};
WeightNodes weight_nodes(const ir::Graph& g, const std::vector<Shape>& weight_shapes) {
  WeightNodes found;
  for (const auto& node : g.nodes()) {
    if (node->op() == ir::OpId::DequantizeLinear && node->inputs[0].node->op() == ir::OpId::Constant &&
        node->inputs[0].node->constant_value.dtype() == DType::int8)
      ++found.dequantize_of_int8;
    if (node->op() == ir::OpId::Constant && node->constant_value.dtype() == DType::float32)
      for (const Shape& shape : weight_shapes) found.float_weights += node->constant_value.shape() == shape;
    if (node->subgraph) {
      WeightNodes inner = weight_nodes(*node->subgraph, weight_shapes);
      found.dequantize_of_int8 += inner.dequantize_of_int8;
      found.float_weights += inner.float_weights;
    }
  }
  return found;
}

// A convolution (int8 weights per channel, a zero point of zeros) and a
// Gemm (transB, per tensor) after it, both on fake-quantized sources with
// zero points, as quantize_static writes them.
std::unique_ptr<ir::Graph> conv_then_gemm(uint64_t seed) {
  QdqGraph q;
  ConvCase c;
  c.input_zero_point = 100;
  ir::Graph& g = q.graph();
  ir::Value x = q.input("x", {1, c.channels, c.size, c.size});
  ir::Value h = q.fake_quantize(q.conv(q.fake_quantize(x, 0.01f, 100, "in"), c, "conv", seed), 0.02f, 0, "conv.out");
  ir::Node* flat = g.add_node("Flatten", {h}, 1, "flat");
  const int64_t k = c.out_channels * c.size * c.size;
  std::vector<int8_t> w = random_int8(24 * k, seed + 1);
  w[3] = 127;
  ir::Node* gemm = g.add_node("Gemm",
                              {q.fake_quantize(flat->output(0), 0.02f, 120, "flat.out"),
                               q.dequantized_int8("fc", w, {24, k}, Tensor::scalar<float>(0.0007f), std::nullopt, true),
                               q.constant("fc.c", random_tensor({24}, seed + 2))},
                              1, "gemm");
  gemm->attributes.set("transB", int64_t{1});
  q.output(q.fake_quantize(gemm->output(0), 0.05f, 128, "fc.out"), "y");
  ops::infer_types(g);
  return g.clone();
}

const std::vector<Shape> kConvThenGemmWeights = {{16, 8, 3, 3}, {24, 16 * 12 * 12}};

// Where dnnl runs int8 products, the compiler has fold-constants keep the
// weights' DequantizeLinear: dnnl gets the int8 values and their scales as
// stored (no float32 copy, no scale search, no second quantization), and
// computes what it computes from the folded float32 weights, within one
// step of the reference kernels.
TEST(DnnlInt8, StoredInt8WeightsReachDnnlUnfolded) {
  std::unique_ptr<ir::Graph> g = conv_then_gemm(201);
  std::unique_ptr<ir::Graph> kept = through_default_passes(*g, true);
  WeightNodes nodes = weight_nodes(*kept, kConvThenGemmWeights);
  EXPECT_EQ(nodes.dequantize_of_int8, 2);
  EXPECT_EQ(nodes.float_weights, 0);
  std::vector<Tensor> inputs = {random_tensor({1, 8, 12, 12}, 202)};
  dnnl_backend::DnnlModuleStats stats = expect_within_one_step(*g, inputs, 0.05f, true);
  EXPECT_EQ(stats.int8_convolutions, expected_int8(1));
  EXPECT_EQ(stats.int8_matmuls, expected_int8(1));
  EXPECT_EQ(stats.reference_primitives, 0);
  // The folded path's module: the same values, a step apart at most (its
  // scales are found again from the float32 weights, to a float rounding).
  auto module = compile_dnnl(*kept);
  std::vector<Tensor> unfolded = run_module(*module, inputs);
  std::vector<Tensor> folded = run_module(*compile_dnnl(*through_default_passes(*g, false)), inputs);
  ASSERT_EQ(unfolded.size(), 1u);
  ASSERT_EQ(folded.size(), 1u);
  expect_close(unfolded[0], folded[0], 0, 0.05 * 1.001);
  // Saved and loaded (an artifact): the int8 values stored converted, the
  // scales read again from their constants; the same outputs.
  std::stringstream saved;
  module->save(saved);
  std::stringstream in(saved.str());
  auto loaded = backend::load_module("dnnl", in, *kept, module->saved_tensors());
  expect_close(run_module(*loaded, inputs)[0], unfolded[0], 0, 0);
  EXPECT_EQ(dnnl_backend::dnnl_module_stats(*loaded).int8_matmuls, expected_int8(1));
}

// Int8 weights as stored whose product cannot run in int8 (its source is
// no fake quantization): the convolution runs in float32 on the weights
// dequantized once when the module is built, as the folded graph computes.
TEST(DnnlInt8, StoredInt8WeightsOfAFloatProductAreDequantizedOnce) {
  QdqGraph q;
  ConvCase c;
  q.output(q.conv(q.input("x", {1, c.channels, c.size, c.size}), c, "conv", 221), "y");
  ops::infer_types(q.graph());
  std::unique_ptr<ir::Graph> kept = through_default_passes(q.graph(), true);
  EXPECT_EQ(weight_nodes(*kept, {{16, 8, 3, 3}}).dequantize_of_int8, 1);
  std::vector<Tensor> inputs = {random_tensor({1, c.channels, c.size, c.size}, 222)};
  auto module = compile_dnnl(*kept);
  EXPECT_EQ(dnnl_backend::dnnl_module_stats(*module).int8_convolutions, 0);
  expect_close(run_module(*module, inputs)[0], run_graph(q.graph(), inputs)[0], 1e-4, 1e-4);
}

// The whole Session: with dnnl first, the weights' DequantizeLinear go to
// dnnl with their products (nothing left to `ref`), and no float32 copy of
// the weights is made where int8 runs; with `ref` alone, or with the
// product pinned to `ref`, the compiler folds them as before and the
// reference kernels compute the same outputs as on the original graph.
TEST(DnnlInt8, SessionHandsInt8WeightsToDnnlAndFoldsThemForRef) {
  // A graph of its own for each session: a session releases the int8
  // values it converted, whose storage a clone shares.
  std::vector<Tensor> inputs = {random_tensor({1, 8, 12, 12}, 212)};
  std::vector<Tensor> want = run_graph(*conv_then_gemm(211), inputs);
  {
    runtime::Session session(conv_then_gemm(211), dnnl_session_options());
    auto counts = session.partition_report().nodes_per_backend();
    if (dnnl_backend::int8_runs_without_saturation())  // else float arithmetic, partitioned as any
      EXPECT_EQ(counts["ref"], 0u) << session.partition_report().to_text();
    WeightNodes nodes = weight_nodes(session.graph(), kConvThenGemmWeights);
    EXPECT_EQ(nodes.dequantize_of_int8, expected_int8(2));
    EXPECT_EQ(nodes.float_weights, 2 - expected_int8(2));
    Tensor got = session.run(inputs)[0];
    expect_close(got, want[0], 0, 0.05 * 1.001);
  }
  runtime::SessionOptions ref_only;
  ref_only.backends = {"ref"};
  runtime::SessionOptions conv_on_ref = dnnl_session_options();
  conv_on_ref.annotations.pinned["conv"] = "ref";
  conv_on_ref.annotations.pinned["gemm"] = "ref";
  for (const runtime::SessionOptions& options : {ref_only, conv_on_ref}) {
    runtime::Session session(conv_then_gemm(211), options);
    WeightNodes nodes = weight_nodes(session.graph(), kConvThenGemmWeights);
    EXPECT_EQ(nodes.dequantize_of_int8, 0) << "folded after partitioning\n" << session.partition_report().to_text();
    EXPECT_EQ(nodes.float_weights, 2);
    // The reference kernels alone compute exactly what they compute on the
    // original graph; with dnnl and fuse around the products, one step.
    const double step = options.backends.size() == 1 ? 0 : 0.05 * 1.001;
    expect_close(session.run(inputs)[0], want[0], 0, step);
  }
}

// Float weights that are not int8 values times a scale per channel keep the
// float32 convolution.
TEST(DnnlInt8, FloatWeightsStayFloat) {
  QdqGraph q;
  ir::Value h = q.fake_quantize(q.input("x", {1, 4, 8, 8}), 0.01f, 128, "in");
  q.output(q.graph().add_node("Conv", {h, q.constant("w", random_tensor({4, 4, 3, 3}, 3))}, 1, "conv")->output(0), "y");
  ops::infer_types(q.graph());
  auto module = compile_dnnl(*through_default_passes(q.graph()));
  EXPECT_EQ(dnnl_backend::dnnl_module_stats(*module).int8_convolutions, 0);
}

TEST(DnnlInt8, WeightScalesAreFoundOnlyForInt8Values) {
  Tensor w = Tensor::from_vector<float>({0.5f * 127, 0.5f * -3, 0.5f * 2, 0.25f * -128, 0.25f * 101, 0}, {2, 3});
  auto scales = dnnl_backend::int8_weight_scales(w);
  ASSERT_TRUE(scales.has_value());
  EXPECT_FLOAT_EQ((*scales)[0], 0.5f);
  EXPECT_FLOAT_EQ((*scales)[1], 0.25f);
  // Per column (a MatMul's [K, N]), and one scale for the whole tensor.
  Tensor columns = Tensor::from_vector<float>({0.5f * 127, 0.25f * 3, 0.5f * -7, 0.25f * -127}, {2, 2});
  auto column_scales = dnnl_backend::int8_weight_scales(columns, 1);
  ASSERT_TRUE(column_scales.has_value());
  EXPECT_FLOAT_EQ((*column_scales)[0], 0.5f);
  EXPECT_FLOAT_EQ((*column_scales)[1], 0.25f);
  Tensor whole = Tensor::from_vector<float>({0.5f * 127, 0.5f * 3, 0.5f * -7, 0.5f * 11}, {2, 2});
  auto whole_scales = dnnl_backend::int8_weight_scales(whole, 0);
  ASSERT_TRUE(whole_scales.has_value());
  EXPECT_FLOAT_EQ((*whole_scales)[0], 0.5f);
  EXPECT_FLOAT_EQ((*whole_scales)[1], 0.5f);
  EXPECT_FALSE(dnnl_backend::int8_weight_scales(random_tensor({4, 9}, 5)).has_value());
}

// int8_weight_scales as it was written first (one division of the index per
// value), kept here as the reference the faster walk must agree with.
std::optional<std::vector<float>> weight_scales_reference(const Tensor& weights, size_t axis) {
  const int64_t channels = weights.shape()[axis];
  int64_t inner = 1;
  for (size_t d = axis + 1; d < weights.shape().size(); ++d) inner *= weights.shape()[d];
  const float* w = weights.data<float>();
  const int64_t n = weights.numel();
  auto channel = [&](int64_t i) { return (i / inner) % channels; };
  std::vector<float> largest(channels, 0.0f);
  for (int64_t i = 0; i < n; ++i) largest[channel(i)] = std::max(largest[channel(i)], std::abs(w[i]));
  float overall = 0;
  for (float l : largest) {
    if (!std::isfinite(l)) return std::nullopt;
    overall = std::max(overall, l);
  }
  auto integral_with = [&](const std::vector<float>& scales) {
    for (int64_t i = 0; i < n; ++i) {
      const float q = w[i] / scales[channel(i)];
      if (!(std::abs(q - std::nearbyint(q)) <= 1e-3f && q >= -128.5f && q <= 127.5f)) return false;
    }
    return true;
  };
  for (float steps : {127.0f, 128.0f}) {
    std::vector<float> scales(channels, overall > 0 ? overall / steps : 1.0f);
    if (integral_with(scales)) return scales;
  }
  std::vector<float> scales(channels);
  std::vector<bool> integral(channels);
  for (float steps : {127.0f, 128.0f}) {
    for (int64_t c = 0; c < channels; ++c)
      if (!integral[c]) scales[c] = largest[c] > 0 ? largest[c] / steps : 1.0f;
    std::vector<bool> fits(channels, true);
    for (int64_t i = 0; i < n; ++i) {
      const int64_t c = channel(i);
      if (integral[c] || !fits[c]) continue;
      const float q = w[i] / scales[c];
      fits[c] = std::abs(q - std::nearbyint(q)) <= 1e-3f && q >= -128.5f && q <= 127.5f;
    }
    for (int64_t c = 0; c < channels; ++c) integral[c] = integral[c] || fits[c];
  }
  for (int64_t c = 0; c < channels; ++c)
    if (!integral[c]) return std::nullopt;
  return scales;
}

// Weights the size of a model's (many blocks of 16 values and a remainder):
// per output channel of a Conv, per column of a MatMul, per tensor; with
// channels whose largest value is -128 (scale over 128), an all-zero
// channel, one value off the grid, a NaN and an infinity.
TEST(DnnlInt8, WeightScalesAgreeWithTheReferenceWalk) {
  struct Case {
    Shape shape;
    size_t axis;
    bool per_tensor;
  };
  const Case cases[] = {{{64, 19, 3, 3}, 0, false}, {{301, 70}, 1, false}, {{301, 70}, 1, true},
                        {{70, 301}, 0, false},      {{5, 12, 7, 3}, 1, false}, {{64, 19, 3, 3}, 0, true}};
  for (const Case& c : cases) {
    const int64_t channels = c.shape[c.axis];
    int64_t inner = 1;
    for (size_t d = c.axis + 1; d < c.shape.size(); ++d) inner *= c.shape[d];
    Tensor base(DType::float32, c.shape);
    std::mt19937_64 rng(channels * 31 + inner);
    std::uniform_int_distribution<int> value(-127, 127);
    float* w = base.data<float>();
    auto scale_of = [&](int64_t ch) { return c.per_tensor ? 0.0071f : 0.0013f * static_cast<float>(1 + ch % 7); };
    for (int64_t i = 0; i < base.numel(); ++i) {
      const int64_t ch = (i / inner) % channels;
      w[i] = ch == 5 ? 0.0f : static_cast<float>(value(rng)) * scale_of(ch);  // channel 5: all zeros
    }
    // Each channel's first value reaches the grid's end: 127 steps, or -128
    // for channel 3 (its scale is then its largest magnitude over 128).
    for (int64_t ch = 0; ch < channels; ++ch)
      if (ch != 5) w[ch * inner] = (ch == 3 ? -128.0f : ch % 2 ? 127.0f : -127.0f) * scale_of(ch);
    auto same = [&](const Tensor& t, const std::string& what) {
      const auto got = dnnl_backend::int8_weight_scales(t, c.axis);
      const auto want = weight_scales_reference(t, c.axis);
      ASSERT_EQ(got.has_value(), want.has_value()) << what << " on " << shape_to_string(c.shape);
      if (got) EXPECT_EQ(*got, *want) << what << " on " << shape_to_string(c.shape);
    };
    same(base, "int8 values");
    Tensor off = base.clone();
    off.data<float>()[off.numel() - 3] += 0.37f * 0.0013f;  // not a multiple of its channel's step
    same(off, "one value off the grid");
    Tensor nan = base.clone();
    nan.data<float>()[off.numel() / 2] = std::nanf("");
    same(nan, "a NaN");
    Tensor inf = base.clone();
    inf.data<float>()[17] = std::numeric_limits<float>::infinity();
    same(inf, "an infinity");
  }
}

// The source zero point of an int8 MatMul (and of a Gemm by B transposed)
// enters as a bias of -z times the columns' int8 sums: the float32 result
// is s * s_w[c] * sum_k (u - z) q, as the integers give it, for zero
// points 0, 120 and 255.
TEST(DnnlInt8, ZeroPointOfAnInt8MatMulIsExact) {
  const int64_t rows = 24, k = 96, n = 83;  // n: vectors of 8 and a remainder
  for (bool gemm : {false, true})
    for (int zero_point : {0, 120, 255}) {
      auto g = new_graph();
      ir::Value x = g->add_input("x", ir::ValueType::of(DType::float32, {rows, k}))->output(0);
      const float s = 0.01f;
      ir::Value sv = g->add_constant("in.s", Tensor::scalar<float>(s))->output(0);
      ir::Value zv = g->add_constant("in.z", Tensor::scalar<uint8_t>(static_cast<uint8_t>(zero_point)))->output(0);
      ir::Value h = g->add_node("DequantizeLinear", {g->add_node("QuantizeLinear", {x, sv, zv}, 1, "q")->output(0), sv, zv},
                                1, "dq")
                        ->output(0);
      std::vector<int8_t> q(k * n);
      std::mt19937_64 rng(zero_point + 3);
      std::uniform_int_distribution<int> value(-127, 127);
      for (auto& v : q) v = static_cast<int8_t>(value(rng));
      for (int64_t c = 0; c < n; ++c) q[(c % k) * n + c] = c % 2 ? 127 : -127;
      std::vector<float> scales(n);
      for (int64_t c = 0; c < n; ++c) scales[c] = 0.003f * static_cast<float>(1 + c % 4);
      // Gemm reads B [N, K] with transB; the same values transposed.
      std::vector<int8_t> stored = q;
      if (gemm)
        for (int64_t r = 0; r < k; ++r)
          for (int64_t c = 0; c < n; ++c) stored[c * k + r] = q[r * n + c];
      ir::Value w = g->add_constant("w", Tensor::from_vector<int8_t>(stored, gemm ? Shape{n, k} : Shape{k, n}))->output(0);
      ir::Node* dq = g->add_node("DequantizeLinear", {w, g->add_constant("w.s", Tensor::from_vector<float>(scales, {n}))->output(0)},
                                 1, "w.dq");
      dq->attributes.set("axis", int64_t{gemm ? 0 : 1});
      ir::Node* mm = g->add_node(gemm ? "Gemm" : "MatMul", {h, dq->output(0)}, 1, "mm");
      if (gemm) mm->attributes.set("transB", int64_t{1});
      g->add_output(mm->output(0), "y");
      ops::infer_types(*g);
      passes::PassContext ctx;
      passes::run_pipeline(g, passes::default_pipeline(), ctx);
      auto module = compile_dnnl(*g);
      EXPECT_EQ(dnnl_backend::dnnl_module_stats(*module).int8_matmuls, expected_int8(1));
      Tensor input = random_tensor({rows, k}, 40 + zero_point);
      for (int64_t i = 0; i < input.numel(); ++i) input.data<float>()[i] *= 1.5f;  // some values saturate
      std::vector<Tensor> got = run_module(*module, {input});
      ASSERT_EQ(got.size(), 1u);
      // Exact up to the output's rounding where the product runs in int8;
      // where it cannot (no VNNI: the dequantized values multiply in float32),
      // up to float32 sums of k terms of either sign.
      const bool in_int8 = expected_int8(1) == 1;
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < n; ++c) {
          int64_t sum = 0, magnitude = 0;
          for (int64_t i = 0; i < k; ++i) {
            const float u = std::clamp(std::nearbyint(input.data<float>()[r * k + i] / s) + zero_point, 0.0f, 255.0f);
            const int64_t term = (static_cast<int64_t>(u) - zero_point) * q[i * n + c];
            sum += term;
            magnitude += std::abs(term);
          }
          const double scale = static_cast<double>(s * scales[c]);
          const double want = scale * static_cast<double>(sum);
          const double tolerance =
              in_int8 ? 1e-6 * std::abs(want) + 1e-6 : 1e-6 * std::abs(want) + 1e-6 * scale * static_cast<double>(magnitude);
          EXPECT_NEAR(got[0].data<float>()[r * n + c], want, tolerance)
              << (gemm ? "Gemm" : "MatMul") << " zero point " << zero_point << " at " << r << ", " << c;
        }
    }
}

}  // namespace
}  // namespace graft::testing
