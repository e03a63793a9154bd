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
#include <cmath>
#include <cstdint>
#include <limits>
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

// Whether the selected box `a` suppresses the candidate `b` (areas given):
// their intersection over union exceeds the threshold. Boxes that do not
// intersect, and empty boxes, never suppress.
bool suppresses(const Box& a, float area_a, const Box& b, float area_b, float iou_threshold) {
  const float inter_w = std::min(a.x_max, b.x_max) - std::max(a.x_min, b.x_min);
  const float inter_h = std::min(a.y_max, b.y_max) - std::max(a.y_min, b.y_min);
  if (inter_w <= 0 || inter_h <= 0) return false;
  if (area_a <= 0 || area_b <= 0) return false;
  const float intersection = inter_w * inter_h;
  return intersection / (area_a + area_b - intersection) > iou_threshold;
}

float area_of(const Box& b) { return (b.x_max - b.x_min) * (b.y_max - b.y_min); }

/// The boxes selected so far for one (batch, class), indexed by a uniform
/// grid over x so that a candidate is compared only with selected boxes whose
/// x extent can overlap its own. A box can only suppress a box it
/// intersects, so the answer is that of comparing with every selected box;
/// the grid matters when thousands are selected (torchvision's batched NMS
/// offsets each class's boxes into a region of its own and selects in one
/// NonMaxSuppression call, so nearly every candidate is kept).
class SelectedBoxes {
 public:
  /// `candidates`: the boxes that may be selected, which set the grid.
  void reset(const std::vector<Box>& candidates) {
    boxes_.clear();
    areas_.clear();
    wide_.clear();
    entries_.clear();
    cells_ = 0;
    if (candidates.size() < kMinCandidatesForGrid) return;
    float lo = std::numeric_limits<float>::infinity(), hi = -lo;
    widths_.clear();
    for (const Box& b : candidates) {
      if (!std::isfinite(b.x_min) || !std::isfinite(b.x_max)) continue;
      lo = std::min(lo, b.x_min);
      hi = std::max(hi, b.x_max);
      widths_.push_back(b.x_max - b.x_min);
    }
    if (widths_.empty() || !(hi > lo)) return;
    // Cells about as wide as a typical box: most boxes then span one or two.
    auto middle = widths_.begin() + static_cast<std::ptrdiff_t>(widths_.size() / 2);
    std::nth_element(widths_.begin(), middle, widths_.end());
    const double span = static_cast<double>(hi) - static_cast<double>(lo);
    const double max_cells = std::min<double>(kMaxCells, 4.0 * static_cast<double>(candidates.size()));
    const double cells = std::clamp(span / std::max<double>(*middle, span / max_cells), 1.0, max_cells);
    cells_ = static_cast<int64_t>(cells);
    lo_ = lo;
    scale_ = static_cast<double>(cells_) / span;
    heads_.assign(static_cast<size_t>(cells_), kEnd);
  }

  size_t size() const { return boxes_.size(); }

  bool suppress(const Box& candidate, float iou_threshold) const {
    const float area = area_of(candidate);
    int64_t first = 0, last = 0;
    if (cells_ == 0 || !cell_span(candidate, &first, &last) || last - first >= kMaxSpan) {
      for (size_t k = 0; k < boxes_.size(); ++k)
        if (suppresses(boxes_[k], areas_[k], candidate, area, iou_threshold)) return true;
      return false;
    }
    for (uint32_t k : wide_)
      if (suppresses(boxes_[k], areas_[k], candidate, area, iou_threshold)) return true;
    for (int64_t cell = first; cell <= last; ++cell)
      for (uint32_t e = heads_[static_cast<size_t>(cell)]; e != kEnd; e = entries_[e].next) {
        const uint32_t k = entries_[e].box;
        if (suppresses(boxes_[k], areas_[k], candidate, area, iou_threshold)) return true;
      }
    return false;
  }

  void add(const Box& box) {
    const auto k = static_cast<uint32_t>(boxes_.size());
    boxes_.push_back(box);
    areas_.push_back(area_of(box));
    if (cells_ == 0) return;
    int64_t first = 0, last = 0;
    if (!cell_span(box, &first, &last) || last - first >= kMaxSpan) {
      wide_.push_back(k);
      return;
    }
    for (int64_t cell = first; cell <= last; ++cell) {
      entries_.push_back(Entry{k, heads_[static_cast<size_t>(cell)]});
      heads_[static_cast<size_t>(cell)] = static_cast<uint32_t>(entries_.size() - 1);
    }
  }

 private:
  static constexpr size_t kMinCandidatesForGrid = 64;
  static constexpr double kMaxCells = 1 << 16;
  static constexpr int64_t kMaxSpan = 8;  // boxes over more cells are checked always
  static constexpr uint32_t kEnd = UINT32_MAX;
  struct Entry {
    uint32_t box;
    uint32_t next;
  };

  // The cells [first, last] that the box's x extent covers; false for a box
  // with a non-finite x, which is compared with every box. The map from x to
  // cell is monotonic, so boxes whose x extents overlap share a cell.
  bool cell_span(const Box& b, int64_t* first, int64_t* last) const {
    if (!std::isfinite(b.x_min) || !std::isfinite(b.x_max)) return false;
    auto cell = [&](float x) {
      const double c = std::floor((static_cast<double>(x) - lo_) * scale_);
      return static_cast<int64_t>(std::clamp(c, 0.0, static_cast<double>(cells_ - 1)));
    };
    *first = cell(b.x_min);
    *last = cell(b.x_max);
    return true;
  }

  std::vector<Box> boxes_;
  std::vector<float> areas_;
  std::vector<uint32_t> wide_;
  std::vector<uint32_t> heads_;
  std::vector<Entry> entries_;
  std::vector<float> widths_;
  int64_t cells_ = 0;
  double lo_ = 0, scale_ = 0;
};

// The tensor as float32 values (a copy only for other float dtypes).
const float* as_floats(const Tensor& t, std::vector<float>& storage) {
  if (t.dtype() == DType::float32) return t.data<float>();
  storage.resize(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) storage[static_cast<size_t>(i)] = static_cast<float>(t.value_as_double(i));
  return storage.data();
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
  std::vector<float> box_storage, score_storage;
  const float* boxes = as_floats(boxes_in, box_storage);
  const float* scores = as_floats(scores_in, score_storage);

  std::vector<std::array<int64_t, 3>> selected;
  std::vector<int64_t> order;
  std::vector<Box> candidates;
  SelectedBoxes kept;
  for (int64_t b = 0; b < batches && max_per_class > 0; ++b) {
    for (int64_t c = 0; c < classes; ++c) {
      const float* class_scores = scores + (b * classes + c) * count;
      order.clear();
      for (int64_t i = 0; i < count; ++i)
        if (!has_score_threshold || class_scores[i] > score_threshold) order.push_back(i);
      std::stable_sort(order.begin(), order.end(),
                       [&](int64_t l, int64_t r) { return class_scores[l] > class_scores[r]; });
      candidates.clear();
      for (int64_t i : order) candidates.push_back(read_box(boxes + (b * count + i) * 4, center_point));
      kept.reset(candidates);
      for (size_t k = 0; k < order.size(); ++k) {
        if (static_cast<int64_t>(kept.size()) >= max_per_class) break;
        if (kept.suppress(candidates[k], iou_threshold)) continue;
        kept.add(candidates[k]);
        selected.push_back({b, c, order[k]});
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
