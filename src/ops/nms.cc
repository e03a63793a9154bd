// NonMaxSuppression (ONNX): greedy per-(batch, class) selection of boxes.
//
// For every batch and class, boxes whose score is above score_threshold are
// visited by decreasing score (ties by lower box index); a box is selected
// unless its intersection-over-union with an already selected box of the
// same batch and class exceeds iou_threshold, until
// max_output_boxes_per_class are selected. The output lists
// [batch, class, box] triples in batch, class, selection order. Boxes are
// [y1, x1, y2, x2] with any two opposite corners (center_point_box 0) or
// [x_center, y_center, width, height] (center_point_box 1).
#include <algorithm>
#include <array>
#include <numeric>
#include <vector>

#include "graft/ops/infer_util.h"
#include "graft/ops/op_context.h"

namespace graft::ops {
namespace {

struct Box {
  float y_min, x_min, y_max, x_max;
};

Box read_box(const float* b, bool center_point) {
  if (center_point) {
    const float half_w = b[2] / 2, half_h = b[3] / 2;
    return Box{b[1] - half_h, b[0] - half_w, b[1] + half_h, b[0] + half_w};
  }
  return Box{std::min(b[0], b[2]), std::min(b[1], b[3]), std::max(b[0], b[2]), std::max(b[1], b[3])};
}

bool suppresses(const Box& a, const Box& b, float iou_threshold) {
  const float inter_w = std::min(a.x_max, b.x_max) - std::max(a.x_min, b.x_min);
  const float inter_h = std::min(a.y_max, b.y_max) - std::max(a.y_min, b.y_min);
  if (inter_w <= 0 || inter_h <= 0) return false;
  const float area_a = (a.x_max - a.x_min) * (a.y_max - a.y_min);
  const float area_b = (b.x_max - b.x_min) * (b.y_max - b.y_min);
  if (area_a <= 0 || area_b <= 0) return false;
  const float intersection = inter_w * inter_h;
  return intersection / (area_a + area_b - intersection) > iou_threshold;
}

void nms_infer(InferContext& ctx) {
  ctx.set_output(0, ir::ValueType{DType::int64, true, {ir::Dim{}, ir::Dim::known(3)}});
}

// An optional scalar (or 1-element) input, `fallback` when absent.
double optional_scalar(const KernelContext& ctx, size_t index, const char* name, double fallback) {
  if (!ctx.has_input(index)) return fallback;
  const Tensor& t = ctx.input(index);
  if (t.numel() == 0) return fallback;
  if (t.numel() != 1) ctx.fail("input ", name, " is ", t.type_string(), ", expected a scalar");
  return t.value_as_double(0);
}

void nms_kernel(KernelContext& ctx) {
  const Tensor& boxes_in = ctx.input(0);
  const Tensor& scores_in = ctx.input(1);
  if (boxes_in.rank() != 3 || boxes_in.dim(2) != 4 || !dtype_is_float(boxes_in.dtype()))
    ctx.fail("input boxes is ", boxes_in.type_string(), ", expected float[batches, boxes, 4]");
  const int64_t batches = boxes_in.dim(0), count = boxes_in.dim(1);
  if (scores_in.rank() != 3 || scores_in.dim(0) != batches || scores_in.dim(2) != count ||
      !dtype_is_float(scores_in.dtype()))
    ctx.fail("input scores is ", scores_in.type_string(), ", expected float[", batches, ", classes, ", count, "]");
  const int64_t classes = scores_in.dim(1);
  int64_t max_per_class = 0;
  if (ctx.has_input(2) && ctx.input(2).numel() > 0) {
    const Tensor& t = ctx.input(2);
    if (t.numel() != 1 || !dtype_is_integer(t.dtype()))
      ctx.fail("input max_output_boxes_per_class is ", t.type_string(), ", expected an int64 scalar");
    max_per_class = t.value_as_int64(0);
  }
  const float iou_threshold = static_cast<float>(optional_scalar(ctx, 3, "iou_threshold", 0.0));
  const bool has_score_threshold = ctx.has_input(4) && ctx.input(4).numel() > 0;
  const float score_threshold = static_cast<float>(optional_scalar(ctx, 4, "score_threshold", 0.0));
  const bool center_point = ctx.attrs().get_int("center_point_box", 0) != 0;
  std::vector<float> boxes(static_cast<size_t>(boxes_in.numel())), scores(static_cast<size_t>(scores_in.numel()));
  for (int64_t i = 0; i < boxes_in.numel(); ++i)
    boxes[static_cast<size_t>(i)] = static_cast<float>(boxes_in.value_as_double(i));
  for (int64_t i = 0; i < scores_in.numel(); ++i)
    scores[static_cast<size_t>(i)] = static_cast<float>(scores_in.value_as_double(i));

  std::vector<std::array<int64_t, 3>> selected;
  std::vector<int64_t> order;
  std::vector<Box> kept;
  for (int64_t b = 0; b < batches && max_per_class > 0; ++b) {
    for (int64_t c = 0; c < classes; ++c) {
      const float* class_scores = scores.data() + (b * classes + c) * count;
      order.clear();
      for (int64_t i = 0; i < count; ++i)
        if (!has_score_threshold || class_scores[i] > score_threshold) order.push_back(i);
      std::stable_sort(order.begin(), order.end(),
                       [&](int64_t l, int64_t r) { return class_scores[l] > class_scores[r]; });
      kept.clear();
      for (int64_t i : order) {
        if (static_cast<int64_t>(kept.size()) >= max_per_class) break;
        const Box box = read_box(boxes.data() + (b * count + i) * 4, center_point);
        bool suppressed = false;
        for (const Box& k : kept)
          if (suppresses(k, box, iou_threshold)) {
            suppressed = true;
            break;
          }
        if (suppressed) continue;
        kept.push_back(box);
        selected.push_back({b, c, i});
      }
    }
  }
  Tensor& y = ctx.allocate_output(0, DType::int64, {static_cast<int64_t>(selected.size()), 3});
  int64_t* out = y.data<int64_t>();
  for (size_t i = 0; i < selected.size(); ++i)
    for (size_t k = 0; k < 3; ++k) out[i * 3 + k] = selected[i][k];
}

}  // namespace

GRAFT_REGISTER_OP("", "NonMaxSuppression", nms_infer, nms_kernel);

}  // namespace graft::ops
