// NonMaxSuppression, RoiAlign, GridSample and the window ops on small cases
// whose answers are known in closed form, and NonMaxSuppression on thousands
// of boxes against its quadratic definition.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <random>

#include "support/graph_runner.h"

using namespace graft;
using namespace graft::ir;
using graft::testing::expect_close;
using graft::testing::random_tensor;
using graft::testing::run_graph;

namespace {

// One node fed by graph inputs (one per tensor), opset `opset`.
std::unique_ptr<Graph> single_node(const std::string& op, const std::vector<Tensor>& inputs, int opset,
                                   const std::function<void(Node*)>& set_attrs) {
  auto g = std::make_unique<Graph>();
  g->opset_imports[""] = opset;
  std::vector<Value> values;
  for (size_t i = 0; i < inputs.size(); ++i)
    values.push_back(
        g->add_input("in" + std::to_string(i), ValueType::of(inputs[i].dtype(), inputs[i].shape()))->output(0));
  Node* n = g->add_node(op, values, 1, "node");
  set_attrs(n);
  g->add_output(n->output(0), "y");
  return g;
}

}  // namespace

TEST(NonMaxSuppression, SuppressesOverlapsPerClass) {
  Tensor boxes = Tensor::from_vector<float>(
      {0, 0, 1, 1, 0, 0.1f, 1, 1.1f, 0, -0.1f, 1, 0.9f, 0, 10, 1, 11, 0, 10.1f, 1, 11.1f, 0, 100, 1, 101}, {1, 6, 4});
  Tensor scores =
      Tensor::from_vector<float>({0.9f, 0.75f, 0.6f, 0.95f, 0.5f, 0.3f, 0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f}, {1, 2, 6});
  Tensor max_boxes = Tensor::from_vector<int64_t>({3}, {1});
  Tensor iou = Tensor::from_vector<float>({0.5f}, {1});
  Tensor score_threshold = Tensor::from_vector<float>({0.35f}, {1});
  auto g = single_node("NonMaxSuppression", {boxes, scores, max_boxes, iou, score_threshold}, 11, [](Node*) {});
  Tensor y = run_graph(*g, {boxes, scores, max_boxes, iou, score_threshold})[0];
  // Class 0: box 3 (0.95), box 0 (0.9), then 1 and 2 overlap 0, 4 overlaps 3, 5 is below... no: 0.3 < 0.35.
  // Class 1: box 5 (0.6), box 4 (0.5) overlaps nothing selected (box 5 is far), box 3 (0.4) overlaps box 4.
  EXPECT_EQ(y.shape(), (Shape{4, 3}));
  std::vector<int64_t> want = {0, 0, 3, 0, 0, 0, 0, 1, 5, 0, 1, 4};
  for (int64_t i = 0; i < y.numel() && i < 12; ++i) EXPECT_EQ(y.data<int64_t>()[i], want[static_cast<size_t>(i)]) << i;
}

TEST(NonMaxSuppression, CenterPointBoxes) {
  // The same three boxes as corners [y1,x1,y2,x2] and as centers [xc,yc,w,h].
  Tensor boxes = Tensor::from_vector<float>({0.5f, 0.5f, 1, 1, 0.5f, 0.6f, 1, 1, 0.5f, 10.5f, 1, 1}, {1, 3, 4});
  Tensor scores = Tensor::from_vector<float>({0.9f, 0.8f, 0.7f}, {1, 1, 3});
  Tensor max_boxes = Tensor::scalar<int64_t>(10);
  Tensor iou = Tensor::scalar<float>(0.5f);
  auto g = single_node("NonMaxSuppression", {boxes, scores, max_boxes, iou}, 11,
                       [](Node* n) { n->attributes.set("center_point_box", int64_t{1}); });
  Tensor y = run_graph(*g, {boxes, scores, max_boxes, iou})[0];
  ASSERT_EQ(y.shape(), (Shape{2, 3}));
  EXPECT_EQ(y.data<int64_t>()[2], 0);
  EXPECT_EQ(y.data<int64_t>()[5], 2);
}

namespace {

// NonMaxSuppression by its definition: every candidate compared with every
// box selected before it. Boxes are corners [y1, x1, y2, x2].
std::vector<int64_t> quadratic_nms(const std::vector<float>& boxes, const std::vector<float>& scores, int64_t batches,
                                   int64_t classes, int64_t count, int64_t max_per_class, float iou_threshold,
                                   float score_threshold) {
  struct Corners {
    float y1, x1, y2, x2;
  };
  auto corners = [&](int64_t b, int64_t i) {
    const float* p = boxes.data() + (b * count + i) * 4;
    return Corners{std::min(p[0], p[2]), std::min(p[1], p[3]), std::max(p[0], p[2]), std::max(p[1], p[3])};
  };
  auto iou_above = [&](const Corners& a, const Corners& c) {
    const float w = std::min(a.x2, c.x2) - std::max(a.x1, c.x1);
    const float h = std::min(a.y2, c.y2) - std::max(a.y1, c.y1);
    if (w <= 0 || h <= 0) return false;
    const float area_a = (a.x2 - a.x1) * (a.y2 - a.y1), area_c = (c.x2 - c.x1) * (c.y2 - c.y1);
    if (area_a <= 0 || area_c <= 0) return false;
    const float inter = w * h;
    return inter / (area_a + area_c - inter) > iou_threshold;
  };
  std::vector<int64_t> out;
  for (int64_t b = 0; b < batches; ++b)
    for (int64_t c = 0; c < classes; ++c) {
      const float* s = scores.data() + (b * classes + c) * count;
      std::vector<int64_t> order;
      for (int64_t i = 0; i < count; ++i)
        if (s[i] > score_threshold) order.push_back(i);
      std::stable_sort(order.begin(), order.end(), [&](int64_t l, int64_t r) { return s[l] > s[r]; });
      std::vector<Corners> kept;
      for (int64_t i : order) {
        if (static_cast<int64_t>(kept.size()) >= max_per_class) break;
        const Corners box = corners(b, i);
        bool suppressed = false;
        for (const Corners& k : kept) suppressed = suppressed || iou_above(k, box);
        if (suppressed) continue;
        kept.push_back(box);
        out.insert(out.end(), {b, c, i});
      }
    }
  return out;
}

}  // namespace

TEST(NonMaxSuppression, ThousandsOfBoxesMatchTheDefinition) {
  // Like torchvision's batched NMS: each group of boxes offset into a region of
  // its own, so that most candidates are selected; plus boxes wider than
  // their region, zero-area boxes, flipped corners, NaN corners and tied scores.
  const int64_t batches = 2, classes = 2, count = 1500;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> unit(0.0f, 1.0f);
  std::vector<float> boxes(static_cast<size_t>(batches * count * 4)), scores(static_cast<size_t>(batches * classes * count));
  for (int64_t b = 0; b < batches; ++b)
    for (int64_t i = 0; i < count; ++i) {
      float* p = boxes.data() + (b * count + i) * 4;
      const float region = static_cast<float>(i % 40) * 101.0f;
      const float y = region + 90 * unit(rng), x = region + 90 * unit(rng);
      float h = 1 + 20 * unit(rng), w = 1 + 20 * unit(rng);
      if (i % 97 == 0) w = 3000 * unit(rng);  // spans many regions
      if (i % 89 == 0) h = 0;                 // empty
      p[0] = y, p[1] = x, p[2] = y + h, p[3] = x + w;
      if (i % 13 == 0) std::swap(p[1], p[3]);  // flipped corners
      if (i % 211 == 0) p[1] = std::numeric_limits<float>::quiet_NaN();
    }
  for (float& s : scores) s = std::round(unit(rng) * 200) / 200;  // many ties
  const Tensor boxes_t = Tensor::from_vector<float>(boxes, {batches, count, 4});
  const Tensor scores_t = Tensor::from_vector<float>(scores, {batches, classes, count});
  for (float iou : {0.0f, 0.3f, 0.7f})
    for (int64_t max_per_class : {int64_t{7}, int64_t{100000}}) {
      const float score_threshold = 0.1f;
      std::vector<Tensor> inputs = {boxes_t, scores_t, Tensor::from_vector<int64_t>({max_per_class}, {1}),
                                    Tensor::from_vector<float>({iou}, {1}),
                                    Tensor::from_vector<float>({score_threshold}, {1})};
      auto g = single_node("NonMaxSuppression", inputs, 11, [](Node*) {});
      Tensor y = run_graph(*g, inputs)[0];
      std::vector<int64_t> want =
          quadratic_nms(boxes, scores, batches, classes, count, max_per_class, iou, score_threshold);
      ASSERT_EQ(y.numel(), static_cast<int64_t>(want.size())) << "iou " << iou << ", max " << max_per_class;
      EXPECT_TRUE(std::equal(want.begin(), want.end(), y.data<int64_t>())) << "iou " << iou << ", max " << max_per_class;
      if (max_per_class > count) {
        EXPECT_GT(want.size(), 1000u) << "most candidates should be selected";
      }
    }
}

TEST(RoiAlign, AveragesALinearImageAtBinCenters) {
  // f(y, x) = 10 y + x is linear, so the average of the symmetric sample grid of a bin is f at its center.
  Tensor x(DType::float32, {1, 2, 8, 8});
  for (int64_t c = 0; c < 2; ++c)
    for (int64_t i = 0; i < 64; ++i) x.data<float>()[c * 64 + i] = static_cast<float>(10 * (i / 8) + i % 8 + 100 * c);
  Tensor rois = Tensor::from_vector<float>({1.5f, 1.5f, 5.5f, 5.5f, 3.0f, 2.0f, 7.0f, 4.0f}, {2, 4});
  Tensor indices = Tensor::from_vector<int64_t>({0, 0}, {2});
  for (int opset : {16, 10}) {
    auto g = single_node("RoiAlign", {x, rois, indices}, opset, [](Node* n) {
      n->attributes.set("output_height", int64_t{2});
      n->attributes.set("output_width", int64_t{2});
      n->attributes.set("sampling_ratio", int64_t{2});
    });
    Tensor y = run_graph(*g, {x, rois, indices})[0];
    ASSERT_EQ(y.shape(), (Shape{2, 2, 2, 2}));
    const double shift = opset >= 16 ? 0.5 : 0.0;  // half_pixel from opset 16
    for (int64_t r = 0; r < 2; ++r)
      for (int64_t c = 0; c < 2; ++c)
        for (int64_t ph = 0; ph < 2; ++ph)
          for (int64_t pw = 0; pw < 2; ++pw) {
            const float* roi = rois.data<float>() + r * 4;
            double y0 = roi[1] - shift, x0 = roi[0] - shift;
            double bin_h = (roi[3] - roi[1]) / 2.0, bin_w = (roi[2] - roi[0]) / 2.0;
            double cy = y0 + (ph + 0.5) * bin_h, cx = x0 + (pw + 0.5) * bin_w;
            double want = 10 * cy + cx + 100 * c;
            EXPECT_NEAR(y.data<float>()[((r * 2 + c) * 2 + ph) * 2 + pw], want, 1e-4) << opset;
          }
  }
}

TEST(GridSample, IdentityGridReproducesInput) {
  const int64_t H = 4, W = 5;
  Tensor x = random_tensor({2, 3, H, W}, 3);
  Tensor grid(DType::float32, {2, H, W, 2});
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t i = 0; i < H; ++i)
      for (int64_t j = 0; j < W; ++j) {
        grid.data<float>()[((n * H + i) * W + j) * 2] = -1 + 2 * static_cast<float>(j) / (W - 1);
        grid.data<float>()[((n * H + i) * W + j) * 2 + 1] = -1 + 2 * static_cast<float>(i) / (H - 1);
      }
  for (std::string mode : {"bilinear", "nearest", "bicubic"}) {
    auto g = single_node("GridSample", {x, grid}, 16, [&](Node* n) {
      n->attributes.set("mode", mode);
      n->attributes.set("align_corners", int64_t{1});
    });
    SCOPED_TRACE(mode);
    expect_close(run_graph(*g, {x, grid})[0], x, 1e-5, 1e-5);
  }
}

// The float32 2-D bilinear zeros-padding path (a specialization) gives the
// bits of the general one, which a float64 grid takes: locations inside,
// outside, on the border and NaN, with and without align_corners.
TEST(GridSample, BilinearFastPathMatchesTheGeneralOne) {
  Tensor x = random_tensor({2, 3, 5, 7}, 11);
  const Shape grid_shape = {2, 4, 6, 2};
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> location(-1.4f, 1.4f);
  std::vector<float> g(static_cast<size_t>(shape_numel(grid_shape)));
  for (float& v : g) v = location(rng);
  g[5] = -1.0f;
  g[6] = 1.0f;
  g[9] = std::numeric_limits<float>::quiet_NaN();
  Tensor grid32 = Tensor::from_vector<float>(g, grid_shape);
  Tensor grid64(DType::float64, grid_shape);
  for (size_t i = 0; i < g.size(); ++i) grid64.data<double>()[i] = g[i];
  for (int64_t align : {0, 1}) {
    auto set = [align](Node* n) { n->attributes.set("align_corners", align); };
    Tensor fast = run_graph(*single_node("GridSample", {x, grid32}, 16, set), {x, grid32})[0];
    Tensor general = run_graph(*single_node("GridSample", {x, grid64}, 16, set), {x, grid64})[0];
    ASSERT_EQ(fast.shape(), general.shape());
    for (int64_t i = 0; i < fast.numel(); ++i)
      ASSERT_EQ(fast.data<float>()[i], general.data<float>()[i]) << "align_corners " << align << ", at " << i;
  }
}

TEST(GridSample, PaddingModes) {
  // A 1x1x1x3 row [1, 2, 3] sampled at x = -3 (pixel -2: mirrored to pixel 2) and x = 0.5 (between 2 and 3).
  Tensor x = Tensor::from_vector<float>({1, 2, 3}, {1, 1, 1, 3});
  Tensor grid = Tensor::from_vector<float>({-3, 0, 0.5f, 0}, {1, 1, 2, 2});
  std::map<std::string, std::vector<float>> want = {
      {"zeros", {0, 2.5f}}, {"border", {1, 2.5f}}, {"reflection", {3, 2.5f}}};
  for (const auto& entry : want) {
    const std::string& padding = entry.first;  // (clang 14 cannot capture a structured binding)
    const std::vector<float>& values = entry.second;
    auto g = single_node("GridSample", {x, grid}, 16, [&](Node* n) {
      n->attributes.set("padding_mode", padding);
      n->attributes.set("align_corners", int64_t{1});
    });
    Tensor y = run_graph(*g, {x, grid})[0];
    ASSERT_EQ(y.shape(), (Shape{1, 1, 1, 2}));
    EXPECT_NEAR(y.data<float>()[0], values[0], 1e-5) << padding;
    EXPECT_NEAR(y.data<float>()[1], values[1], 1e-5) << padding;
  }
}

TEST(Window, MatchesFormulas) {
  const int64_t size = 10;
  for (std::string op : {"HannWindow", "HammingWindow", "BlackmanWindow"})
    for (int64_t periodic : {0, 1}) {
      Tensor n = Tensor::scalar<int64_t>(size);
      auto g = single_node(op, {n}, 17, [&](Node* node) {
        node->attributes.set("periodic", periodic);
        node->attributes.set("output_datatype", int64_t{11});  // double
      });
      Tensor y = run_graph(*g, {n})[0];
      ASSERT_EQ(y.dtype(), DType::float64);
      ASSERT_EQ(y.shape(), (Shape{size}));
      for (int64_t i = 0; i < size; ++i) {
        double x = 2 * std::numbers::pi * static_cast<double>(i) / static_cast<double>(periodic ? size : size - 1);
        double want = op == "HannWindow"      ? std::pow(std::sin(x / 2), 2)
                      : op == "HammingWindow" ? 25.0 / 46 - 21.0 / 46 * std::cos(x)
                                              : 0.42 - 0.5 * std::cos(x) + 0.08 * std::cos(2 * x);
        EXPECT_NEAR(y.data<double>()[i], want, 1e-12) << op << " " << i;
      }
    }
}

TEST(GridSample, VolumetricIdentityAndShift) {
  // opset 20: 3-D sampling; the identity grid reproduces the input, and a half-voxel shift along x averages
  // neighbours under linear interpolation.
  const int64_t D = 3, H = 4, W = 5;
  Tensor x = random_tensor({1, 2, D, H, W}, 8);
  for (double shift : {0.0, 0.5}) {
    Tensor grid(DType::float32, {1, D, H, W, 3});
    for (int64_t d = 0; d < D; ++d)
      for (int64_t i = 0; i < H; ++i)
        for (int64_t j = 0; j < W; ++j) {
          float* g = grid.data<float>() + ((d * H + i) * W + j) * 3;
          g[0] = static_cast<float>(-1 + 2 * (static_cast<double>(j) + shift) / (W - 1));
          g[1] = -1 + 2 * static_cast<float>(i) / (H - 1);
          g[2] = -1 + 2 * static_cast<float>(d) / (D - 1);
        }
    auto g = single_node("GridSample", {x, grid}, 20, [&](Node* n) {
      n->attributes.set("mode", std::string("linear"));
      n->attributes.set("padding_mode", std::string("border"));
      n->attributes.set("align_corners", int64_t{1});
    });
    Tensor want = x.clone();
    if (shift > 0)
      for (int64_t r = 0; r < 2 * D * H; ++r)
        for (int64_t j = 0; j < W; ++j) {
          const float* src = x.data<float>() + r * W;
          want.data<float>()[r * W + j] = j + 1 < W ? 0.5f * (src[j] + src[j + 1]) : src[j];
        }
    SCOPED_TRACE(shift);
    expect_close(run_graph(*g, {x, grid})[0], want, 1e-5, 1e-5);
  }
}
