// ConvInteger and QLinearConv against naive integer loops written here.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "support/graph_runner.h"

using namespace graft;
using namespace graft::ir;
using graft::testing::run_graph;

namespace {

template <typename T>
Tensor random_int(const Shape& shape, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> dist(std::numeric_limits<T>::min(), std::numeric_limits<T>::max());
  Tensor t(dtype_v<T>, shape);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<T>()[i] = static_cast<T>(dist(rng));
  return t;
}

// 2-D conv, stride 2, pads 1, group 2: sums of (x - xz) * (w - wz[m]).
std::vector<int64_t> naive_sums(const Tensor& x, int64_t xz, const Tensor& w, const std::vector<int64_t>& wz,
                                Shape& out_shape) {
  const int64_t N = x.dim(0), C = x.dim(1), H = x.dim(2), W = x.dim(3), M = w.dim(0), K = w.dim(2), G = 2;
  const int64_t OH = (H + 2 - K) / 2 + 1, OW = (W + 2 - K) / 2 + 1, cg = C / G, mg = M / G;
  out_shape = {N, M, OH, OW};
  std::vector<int64_t> sums;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          int64_t acc = 0;
          for (int64_t c = 0; c < cg; ++c)
            for (int64_t kh = 0; kh < K; ++kh)
              for (int64_t kw = 0; kw < K; ++kw) {
                int64_t ih = oh * 2 - 1 + kh, iw = ow * 2 - 1 + kw;
                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                int64_t xv = x.value_as_int64(((n * C + (m / mg) * cg + c) * H + ih) * W + iw) - xz;
                int64_t wv = w.value_as_int64(((m * cg + c) * K + kh) * K + kw) - wz[m];
                acc += xv * wv;
              }
          sums.push_back(acc);
        }
  return sums;
}

void set_conv_attrs(Node* n) {
  n->attributes.set("strides", std::vector<int64_t>{2, 2});
  n->attributes.set("pads", std::vector<int64_t>{1, 1, 1, 1});
  n->attributes.set("group", int64_t{2});
}

}  // namespace

TEST(ConvInteger, MatchesNaiveSums) {
  Tensor x = random_int<uint8_t>({2, 4, 5, 6}, 1);
  Tensor w = random_int<int8_t>({4, 2, 3, 3}, 2);
  Tensor xz = Tensor::scalar<uint8_t>(131);
  Tensor wz = Tensor::from_vector<int8_t>({-3, 0, 7, 2}, {4});
  auto g = std::make_unique<Graph>();
  g->opset_imports[""] = 10;
  std::vector<Value> in;
  for (auto [name, t] : {std::pair{"x", &x}, {"w", &w}, {"xz", &xz}, {"wz", &wz}})
    in.push_back(g->add_input(name, ValueType::of(t->dtype(), t->shape()))->output(0));
  Node* n = g->add_node("ConvInteger", in, 1, "conv");
  set_conv_attrs(n);
  g->add_output(n->output(0), "y");
  Tensor y = run_graph(*g, {x, w, xz, wz})[0];
  Shape shape;
  auto want = naive_sums(x, 131, w, {-3, 0, 7, 2}, shape);
  ASSERT_EQ(y.dtype(), DType::int32);
  ASSERT_EQ(y.shape(), shape);
  for (int64_t i = 0; i < y.numel(); ++i) ASSERT_EQ(y.data<int32_t>()[i], want[static_cast<size_t>(i)]) << i;
}

TEST(ConvInteger, AProblemLargerThanTheScratchRunsInPixelChunks) {
  // 16,900 output pixels x 144 taps per group: more than one chunk of the
  // 2^21-element scratch, so the chunk boundaries are checked too.
  Tensor x = random_int<uint8_t>({1, 32, 260, 260}, 5);
  Tensor w = random_int<int8_t>({4, 16, 3, 3}, 6);
  Tensor xz = Tensor::scalar<uint8_t>(7);
  auto g = std::make_unique<Graph>();
  g->opset_imports[""] = 10;
  std::vector<Value> in;
  for (auto [name, t] : {std::pair{"x", &x}, {"w", &w}, {"xz", &xz}})
    in.push_back(g->add_input(name, ValueType::of(t->dtype(), t->shape()))->output(0));
  Node* n = g->add_node("ConvInteger", in, 1, "conv");
  set_conv_attrs(n);
  g->add_output(n->output(0), "y");
  Tensor y = run_graph(*g, {x, w, xz})[0];
  Shape shape;
  auto want = naive_sums(x, 7, w, {0, 0, 0, 0}, shape);
  ASSERT_EQ(y.shape(), shape);
  for (int64_t i = 0; i < y.numel(); ++i) ASSERT_EQ(y.data<int32_t>()[i], want[static_cast<size_t>(i)]) << i;
}

TEST(QLinearConv, MatchesRequantizedNaiveSums) {
  Tensor x = random_int<int8_t>({1, 4, 6, 5}, 3);
  Tensor w = random_int<int8_t>({4, 2, 3, 3}, 4);
  Tensor xs = Tensor::scalar<float>(0.02f), xz = Tensor::scalar<int8_t>(-5);
  Tensor ws = Tensor::from_vector<float>({0.01f, 0.02f, 0.005f, 0.03f}, {4});
  Tensor wz = Tensor::from_vector<int8_t>({0, 0, 0, 0}, {4});
  Tensor ys = Tensor::scalar<float>(0.5f), yz = Tensor::scalar<uint8_t>(100);
  Tensor b = Tensor::from_vector<int32_t>({100, -2000, 0, 50}, {4});
  std::vector<Tensor*> all = {&x, &xs, &xz, &w, &ws, &wz, &ys, &yz, &b};
  auto g = std::make_unique<Graph>();
  g->opset_imports[""] = 10;
  std::vector<Value> in;
  std::vector<Tensor> feeds;
  for (size_t i = 0; i < all.size(); ++i) {
    in.push_back(g->add_input("in" + std::to_string(i), ValueType::of(all[i]->dtype(), all[i]->shape()))->output(0));
    feeds.push_back(*all[i]);
  }
  Node* n = g->add_node("QLinearConv", in, 1, "qconv");
  set_conv_attrs(n);
  g->add_output(n->output(0), "y");
  Tensor y = run_graph(*g, feeds)[0];
  Shape shape;
  auto sums = naive_sums(x, -5, w, {0, 0, 0, 0}, shape);
  ASSERT_EQ(y.dtype(), DType::uint8);
  ASSERT_EQ(y.shape(), shape);
  const int64_t pixels = shape[2] * shape[3];
  for (int64_t i = 0; i < y.numel(); ++i) {
    int64_t m = (i / pixels) % 4;
    float real =
        static_cast<float>(sums[static_cast<size_t>(i)] + b.data<int32_t>()[m]) * (0.02f * ws.data<float>()[m] / 0.5f);
    int64_t want = std::clamp<int64_t>(static_cast<int64_t>(std::nearbyint(real)) + 100, 0, 255);
    ASSERT_NEAR(y.data<uint8_t>()[i], want, 1) << i;
  }
}
