// MaxPool (with Indices), AveragePool, LpPool, the global pools and MaxUnpool
// against naive loops written here, over random configurations.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <limits>
#include <random>

#include "support/graph_runner.h"

using namespace graft;
using namespace graft::ir;
using graft::testing::expect_close;
using graft::testing::random_tensor;
using graft::testing::run_graph;

namespace {

struct PoolCase {
  std::string op = "MaxPool";
  int64_t batch = 1, channels = 1;
  Shape input, kernel, strides, dilations, pads;
  std::string auto_pad = "NOTSET";
  bool ceil_mode = false, count_include_pad = false;
  int64_t storage_order = 0, p = 2;
};

struct PoolResult {
  Tensor values, indices;
};

PoolResult naive_pool(const PoolCase& c, const Tensor& x) {
  size_t r = c.input.size();
  Shape out(r), pad_begin(r), pad_end(r);
  for (size_t d = 0; d < r; ++d) {
    int64_t window = (c.kernel[d] - 1) * c.dilations[d] + 1;
    if (c.auto_pad == "NOTSET") {
      pad_begin[d] = c.pads[d];
      pad_end[d] = c.pads[d + r];
      double span = static_cast<double>(c.input[d] + pad_begin[d] + pad_end[d] - window) / c.strides[d];
      out[d] = static_cast<int64_t>(c.ceil_mode ? std::ceil(span) : std::floor(span)) + 1;
      if (c.ceil_mode && (out[d] - 1) * c.strides[d] >= c.input[d] + pad_begin[d]) --out[d];
    } else if (c.auto_pad == "VALID") {
      out[d] = (c.input[d] - window) / c.strides[d] + 1;
    } else {
      out[d] = (c.input[d] + c.strides[d] - 1) / c.strides[d];
      int64_t total = std::max<int64_t>(0, (out[d] - 1) * c.strides[d] + window - c.input[d]);
      pad_begin[d] = c.auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      pad_end[d] = total - pad_begin[d];
    }
  }
  Shape y_shape = {c.batch, c.channels};
  y_shape.insert(y_shape.end(), out.begin(), out.end());
  PoolResult result{Tensor(DType::float32, y_shape), Tensor(DType::int64, y_shape)};
  int64_t out_size = shape_numel(out), in_size = shape_numel(c.input), k_size = shape_numel(c.kernel);
  for (int64_t plane = 0; plane < c.batch * c.channels; ++plane)
    for (int64_t o = 0; o < out_size; ++o) {
      Shape oi(r);
      for (int64_t rem = o, d = static_cast<int64_t>(r) - 1; d >= 0; --d) {
        oi[d] = rem % out[d];
        rem /= out[d];
      }
      double best = -std::numeric_limits<double>::infinity(), sum = 0;
      int64_t best_index = -1, count_valid = 0, count_padded = 0;
      for (int64_t k = 0; k < k_size; ++k) {
        Shape ii(r);
        bool inside = true, inside_padded = true;
        for (int64_t rem = k, d = static_cast<int64_t>(r) - 1; d >= 0; --d) {
          int64_t kd = rem % c.kernel[d];
          rem /= c.kernel[d];
          ii[d] = oi[d] * c.strides[d] - pad_begin[d] + kd * c.dilations[d];
          if (ii[d] < 0 || ii[d] >= c.input[d]) inside = false;
          if (ii[d] < -pad_begin[d] || ii[d] >= c.input[d] + pad_end[d]) inside_padded = false;
        }
        if (inside_padded) ++count_padded;
        if (!inside) continue;
        ++count_valid;
        int64_t row_major = 0, column_major = 0, scale = 1;
        for (size_t d = 0; d < r; ++d) row_major = row_major * c.input[d] + ii[d];
        for (size_t d = 0; d < r; ++d) {
          column_major += ii[d] * scale;
          scale *= c.input[d];
        }
        double v = x.data<float>()[plane * in_size + row_major];
        if (v > best) {
          best = v;
          best_index = plane * in_size + (c.storage_order ? column_major : row_major);
        }
        sum += c.op == "LpPool" ? std::pow(std::abs(v), static_cast<double>(c.p)) : v;
      }
      double value = best;
      if (c.op == "AveragePool") value = sum / static_cast<double>(c.count_include_pad ? count_padded : count_valid);
      if (c.op == "LpPool") value = std::pow(sum, 1.0 / static_cast<double>(c.p));
      result.values.data<float>()[plane * out_size + o] = static_cast<float>(value);
      result.indices.data<int64_t>()[plane * out_size + o] = best_index;
    }
  return result;
}

std::vector<Tensor> run_pool(const PoolCase& c, const Tensor& x, int outputs) {
  auto g = std::make_unique<Graph>();
  g->opset_imports[""] = 19;
  Node* in = g->add_input("x", ValueType::of(DType::float32, x.shape()));
  Node* pool = g->add_node(c.op, {in->output(0)}, outputs, "pool");
  pool->attributes.set("kernel_shape", c.kernel);
  pool->attributes.set("strides", c.strides);
  pool->attributes.set("dilations", c.dilations);
  if (c.auto_pad == "NOTSET")
    pool->attributes.set("pads", c.pads);
  else
    pool->attributes.set("auto_pad", c.auto_pad);
  pool->attributes.set("ceil_mode", int64_t{c.ceil_mode});
  if (c.op == "AveragePool") pool->attributes.set("count_include_pad", int64_t{c.count_include_pad});
  if (c.op == "MaxPool") pool->attributes.set("storage_order", c.storage_order);
  if (c.op == "LpPool") pool->attributes.set("p", c.p);
  for (int i = 0; i < outputs; ++i) g->add_output(pool->output(i), "y" + std::to_string(i));
  return run_graph(*g, {x});
}

// The pool's values (and MaxPool's indices) against naive_pool's.
void expect_matches_naive_pool(const PoolCase& c, const Tensor& x) {
  PoolResult want = naive_pool(c, x);
  int outputs = c.op == "MaxPool" ? 2 : 1;
  auto got = run_pool(c, x, outputs);
  expect_close(got[0], want.values, 1e-5, 1e-5);
  if (outputs == 2) expect_close(got[1], want.indices, 0, 0);
}

}  // namespace

TEST(Pool, RandomConfigurations) {
  std::mt19937 rng(99);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  const char* ops[] = {"MaxPool", "AveragePool", "LpPool"};
  const char* modes[] = {"NOTSET", "NOTSET", "NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER"};
  for (int iter = 0; iter < 150; ++iter) {
    PoolCase c;
    c.op = ops[iter % 3];
    size_t rank = static_cast<size_t>(pick(1, 3));
    c.batch = pick(1, 2);
    c.channels = pick(1, 3);
    c.auto_pad = modes[pick(0, 5)];
    c.ceil_mode = c.auto_pad == "NOTSET" && pick(0, 1) == 1;
    c.count_include_pad = pick(0, 1) == 1;
    c.storage_order = pick(0, 1);
    c.p = pick(1, 3);
    for (size_t d = 0; d < rank; ++d) {
      c.kernel.push_back(pick(1, 3));
      c.strides.push_back(pick(1, 3));
      c.dilations.push_back(pick(1, 2));
      c.input.push_back((c.kernel[d] - 1) * c.dilations[d] + 1 + pick(0, rank == 3 ? 3 : 6));
    }
    c.pads.assign(2 * rank, 0);
    for (size_t d = 0; d < 2 * rank; ++d) c.pads[d] = pick(0, static_cast<int>(c.kernel[d % rank] - 1));
    Shape xs = {c.batch, c.channels};
    xs.insert(xs.end(), c.input.begin(), c.input.end());
    Tensor x = random_tensor(xs, static_cast<uint64_t>(iter));
    SCOPED_TRACE("iteration " + std::to_string(iter) + " " + c.op + " " + c.auto_pad);
    expect_matches_naive_pool(c, x);
  }
}

TEST(Pool, WindowsWiderThanTheInputMatchTheNaiveLoops) {
  // Kernels of 7 to 12 over inputs of 3 to 5, with SAME padding, strides and
  // dilations: most taps fall outside the input, which the kernel skips.
  std::mt19937 rng(7);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  const char* ops[] = {"MaxPool", "AveragePool", "LpPool"};
  const char* modes[] = {"SAME_UPPER", "SAME_LOWER", "NOTSET"};
  for (int iter = 0; iter < 30; ++iter) {
    PoolCase c;
    c.op = ops[iter % 3];
    c.auto_pad = modes[pick(0, 2)];
    c.channels = 2;
    c.count_include_pad = pick(0, 1) == 1;
    for (size_t d = 0; d < 2; ++d) {
      c.kernel.push_back(pick(7, 12));
      c.strides.push_back(pick(1, 2));
      c.dilations.push_back(c.op == "AveragePool" ? 1 : pick(1, 2));
      c.input.push_back(pick(3, 5));
    }
    // Explicit pads that let the window reach the input: at least kernel - input.
    c.pads.assign(4, 0);
    for (size_t d = 0; d < 4; ++d) c.pads[d] = c.kernel[d % 2] - 1;
    Shape xs = {c.batch, c.channels, c.input[0], c.input[1]};
    Tensor x = random_tensor(xs, static_cast<uint64_t>(100 + iter));
    SCOPED_TRACE("iteration " + std::to_string(iter) + " " + c.op + " " + c.auto_pad);
    expect_matches_naive_pool(c, x);
  }
}

TEST(Pool, AWindowOf2To32TapsCostsOnlyTheTapsInsideTheInput) {
  // kernel_shape [65536, 65535] with SAME_UPPER, just below the 2^32 taps
  // graft accepts (a fuzzer's input had 2^62 and hung in oneDNN): the kernel
  // visits the 20 taps inside the 5x4 plane, not 4.3 billion. Each window
  // covers the whole plane, so MaxPool gives its maximum and that index,
  // AveragePool its mean (padding not counted).
  const int64_t huge = int64_t{1} << 16;
  Tensor x = random_tensor({1, 2, 5, 4}, 3);
  for (const char* op : {"MaxPool", "AveragePool"}) {
    PoolCase c;
    c.op = op;
    c.channels = 2;
    c.input = {5, 4};
    c.kernel = {huge, huge - 1};
    c.strides = {1, 1};
    c.dilations = {1, 1};
    c.auto_pad = "SAME_UPPER";
    const auto start = std::chrono::steady_clock::now();
    auto got = run_pool(c, x, c.op == "MaxPool" ? 2 : 1);
    // Milliseconds; visiting every tap took tens of seconds (far from the bound).
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5)) << op;
    ASSERT_EQ(got[0].shape(), (Shape{1, 2, 5, 4})) << op;
    for (int64_t plane = 0; plane < 2; ++plane) {
      const float* v = x.data<float>() + plane * 20;
      float best = v[0], sum = 0;
      int64_t where = 0;
      for (int64_t i = 0; i < 20; ++i) {
        sum += v[i];
        if (v[i] > best) best = v[i], where = i;
      }
      for (int64_t i = 0; i < 20; ++i) {
        const float y = got[0].data<float>()[plane * 20 + i];
        if (c.op == "MaxPool") {
          EXPECT_EQ(y, best) << op << " plane " << plane << " output " << i;
          EXPECT_EQ(got[1].data<int64_t>()[plane * 20 + i], plane * 20 + where);
        } else {
          EXPECT_NEAR(y, sum / 20, 1e-5) << op << " plane " << plane << " output " << i;
        }
      }
    }
  }
}

TEST(Pool, MaxPoolInt8AndUint8) {
  for (DType dtype : {DType::int8, DType::uint8}) {
    auto g = std::make_unique<Graph>();
    g->opset_imports[""] = 12;
    Node* in = g->add_input("x", ValueType::of(dtype, {1, 1, 3, 3}));
    Node* pool = g->add_node("MaxPool", {in->output(0)}, 1, "pool");
    pool->attributes.set("kernel_shape", std::vector<int64_t>{2, 2});
    pool->attributes.set("pads", std::vector<int64_t>{0, 0, 1, 1});
    g->add_output(pool->output(0), "y");
    Tensor x(dtype, {1, 1, 3, 3});
    std::vector<int> values = {1, -5, 3, 120, 4, -7, 2, 9, 0};
    if (dtype == DType::uint8) values = {1, 200, 3, 120, 4, 255, 2, 9, 0};
    for (int i = 0; i < 9; ++i) {
      if (dtype == DType::int8)
        x.data<int8_t>()[i] = static_cast<int8_t>(values[i]);
      else
        x.data<uint8_t>()[i] = static_cast<uint8_t>(values[i]);
    }
    Tensor y = run_graph(*g, {x})[0];
    ASSERT_EQ(y.dtype(), dtype);
    ASSERT_EQ(y.shape(), (Shape{1, 1, 3, 3}));
    std::vector<int> want = {120, 4, 3, 120, 9, 0, 9, 9, 0};
    if (dtype == DType::uint8) want = {200, 255, 255, 120, 255, 255, 9, 9, 0};
    for (int i = 0; i < 9; ++i) EXPECT_EQ(y.value_as_int64(i), want[i]) << i;
  }
}

TEST(Pool, CeilModeWindowReachingPastThePaddedInput) {
  // A dilated window of 5 over 4 values with stride 2 and ceil_mode: ONNX's
  // ceil((4 - 5) / 2) + 1 = 1 output, the max of the taps inside (as ONNX
  // Runtime and PyTorch give; graft refused it). Past a stride it is an error.
  for (int64_t width : {4, 2}) {
    auto g = std::make_unique<Graph>();
    g->opset_imports[""] = 18;
    Node* in = g->add_input("x", ValueType::of(DType::float32, {1, 1, 1, width}));
    Node* pool = g->add_node("MaxPool", {in->output(0)}, 1, "pool");
    pool->attributes.set("kernel_shape", std::vector<int64_t>{1, 3});
    pool->attributes.set("strides", std::vector<int64_t>{1, 2});
    pool->attributes.set("dilations", std::vector<int64_t>{1, 2});
    pool->attributes.set("ceil_mode", int64_t{1});
    g->add_output(pool->output(0), "y");
    Tensor x = width == 4 ? Tensor::from_vector<float>({1, 7, 3, 9}, {1, 1, 1, 4}) : Tensor::from_vector<float>({1, 7}, {1, 1, 1, 2});
    if (width == 2) {
      EXPECT_THROW(run_graph(*g, {x}), Error);
      continue;
    }
    Tensor y = run_graph(*g, {x})[0];
    ASSERT_EQ(y.shape(), (Shape{1, 1, 1, 1}));
    EXPECT_EQ(y.data<float>()[0], 3.0f);  // taps at 0, 2 (and 4, past the end): max(1, 3)
  }
}

TEST(Pool, GlobalPools) {
  Tensor x = random_tensor({2, 3, 4, 5}, 11);
  for (std::string op : {"GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool"}) {
    auto g = std::make_unique<Graph>();
    g->opset_imports[""] = 13;
    Node* in = g->add_input(
        "x", ValueType{DType::float32, true, {Dim::symbolic("N"), Dim::known(3), Dim::known(4), Dim::known(5)}});
    Node* pool = g->add_node(op, {in->output(0)}, 1, "pool");
    if (op == "GlobalLpPool") pool->attributes.set("p", int64_t{3});
    g->add_output(pool->output(0), "y");
    Tensor want(DType::float32, {2, 3, 1, 1});
    for (int64_t plane = 0; plane < 6; ++plane) {
      double sum = 0, best = -1e30;
      for (int64_t i = 0; i < 20; ++i) {
        double v = x.data<float>()[plane * 20 + i];
        sum += op == "GlobalLpPool" ? std::pow(std::abs(v), 3.0) : v;
        best = std::max(best, v);
      }
      double value = op == "GlobalAveragePool" ? sum / 20 : op == "GlobalMaxPool" ? best : std::cbrt(sum);
      want.data<float>()[plane] = static_cast<float>(value);
    }
    SCOPED_TRACE(op);
    expect_close(run_graph(*g, {x})[0], want, 1e-5, 1e-6);
  }
}

TEST(Pool, MaxUnpoolInvertsMaxPool) {
  auto g = std::make_unique<Graph>();
  g->opset_imports[""] = 11;
  Node* in = g->add_input("x", ValueType::of(DType::float32, {1, 2, 4, 6}));
  Node* pool = g->add_node("MaxPool", {in->output(0)}, 2, "pool");
  pool->attributes.set("kernel_shape", std::vector<int64_t>{2, 2});
  pool->attributes.set("strides", std::vector<int64_t>{2, 2});
  Node* unpool = g->add_node("MaxUnpool", {pool->output(0), pool->output(1)}, 1, "unpool");
  unpool->attributes.set("kernel_shape", std::vector<int64_t>{2, 2});
  unpool->attributes.set("strides", std::vector<int64_t>{2, 2});
  g->add_output(unpool->output(0), "y");
  Tensor x = random_tensor({1, 2, 4, 6}, 5);
  Tensor y = run_graph(*g, {x})[0];
  ASSERT_EQ(y.shape(), x.shape());
  // Each 2x2 block keeps its maximum in place and zeroes the rest.
  for (int64_t c = 0; c < 2; ++c)
    for (int64_t bh = 0; bh < 2; ++bh)
      for (int64_t bw = 0; bw < 3; ++bw) {
        float best = -2;
        int64_t at = -1;
        for (int64_t i = 0; i < 4; ++i) {
          int64_t offset = c * 24 + (bh * 2 + i / 2) * 6 + bw * 2 + i % 2;
          if (x.data<float>()[offset] > best) {
            best = x.data<float>()[offset];
            at = offset;
          }
        }
        for (int64_t i = 0; i < 4; ++i) {
          int64_t offset = c * 24 + (bh * 2 + i / 2) * 6 + bw * 2 + i % 2;
          EXPECT_EQ(y.data<float>()[offset], offset == at ? best : 0.0f);
        }
      }
}

TEST(Pool, MaxUnpoolRejectsOutOfRangeIndices) {
  auto g = std::make_unique<Graph>();
  g->opset_imports[""] = 11;
  Node* x = g->add_input("x", ValueType::of(DType::float32, {1, 1, 2, 2}));
  Node* i = g->add_input("i", ValueType::of(DType::int64, {1, 1, 2, 2}));
  Node* unpool = g->add_node("MaxUnpool", {x->output(0), i->output(0)}, 1, "unpool");
  unpool->attributes.set("kernel_shape", std::vector<int64_t>{2, 2});
  unpool->attributes.set("strides", std::vector<int64_t>{2, 2});
  g->add_output(unpool->output(0), "y");
  Tensor bad = Tensor::from_vector<int64_t>({0, 5, 16, 3}, {1, 1, 2, 2});
  EXPECT_THROW(run_graph(*g, {random_tensor({1, 1, 2, 2}, 1), bad}), Error);
}

TEST(Pool, MaxUnpoolWithLargerOutputShape) {
  // Indices address the unpooled 1x1x4x4 tensor; a 1x1x5x5 output keeps it in its leading corner.
  auto g = std::make_unique<Graph>();
  g->opset_imports[""] = 11;
  Node* x = g->add_input("x", ValueType::of(DType::float32, {1, 1, 2, 2}));
  Node* i = g->add_input("i", ValueType::of(DType::int64, {1, 1, 2, 2}));
  Node* shape = g->add_input("shape", ValueType::of(DType::int64, {4}));
  Node* unpool = g->add_node("MaxUnpool", {x->output(0), i->output(0), shape->output(0)}, 1, "unpool");
  unpool->attributes.set("kernel_shape", std::vector<int64_t>{2, 2});
  unpool->attributes.set("strides", std::vector<int64_t>{2, 2});
  g->add_output(unpool->output(0), "y");
  Tensor values = Tensor::from_vector<float>({5, 6, 7, 8}, {1, 1, 2, 2});
  Tensor indices = Tensor::from_vector<int64_t>({5, 7, 13, 15}, {1, 1, 2, 2});
  Tensor y = run_graph(*g, {values, indices, Tensor::from_vector<int64_t>({1, 1, 5, 5}, {4})})[0];
  ASSERT_EQ(y.shape(), (Shape{1, 1, 5, 5}));
  for (int64_t k = 0; k < 25; ++k) {
    float want = k == 6 ? 5 : k == 8 ? 6 : k == 16 ? 7 : k == 18 ? 8 : 0;
    EXPECT_EQ(y.data<float>()[k], want) << k;
  }
}
