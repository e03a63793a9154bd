// A value cut by Slices along one axis (BERT's fused QKV projection split
// into three) gets one contribution per Slice: the slice's gradient padded
// with zeros back to the value's shape. Summing them writes and reads every
// padded copy (three [tokens, 3 x hidden] tensors per layer, two thirds
// zeros); when the unpadded ranges tile the axis, the sum is the Concat of
// the unpadded gradients. The check: every contribution is a backward Pad
// in constant mode with constant pads and no fill value, padding one axis
// only (the same for all), and the ranges [low, extent - high), sorted by
// low, follow each other from 0 to the extent.
#include "join_slice_gradients.h"

#include <algorithm>
#include <optional>

namespace graft::autodiff {
namespace {

struct PaddedRange {
  ir::Value unpadded;
  int64_t axis = -1;
  int64_t low = 0, high = 0;
};

std::optional<PaddedRange> padded_range(const ir::Value& v) {
  const ir::Node& pad = *v.node;
  if (pad.op() != ir::OpId::Pad || !pad.is_backward || pad.inputs.size() != 2 || !pad.inputs[1]) return std::nullopt;
  if (pad.attributes.get_string("mode", "constant") != "constant") return std::nullopt;
  const ir::Node& pads_node = *pad.inputs[1].node;
  if (pads_node.op() != ir::OpId::Constant || pads_node.constant_value.dtype() != DType::int64) return std::nullopt;
  const Tensor& pads = pads_node.constant_value;
  const int64_t rank = pads.numel() / 2;
  PaddedRange r{pad.inputs[0], -1, 0, 0};
  for (int64_t d = 0; d < rank; ++d) {
    const int64_t low = pads.data<int64_t>()[d], high = pads.data<int64_t>()[d + rank];
    if (low < 0 || high < 0) return std::nullopt;
    if (low == 0 && high == 0) continue;
    if (r.axis >= 0) return std::nullopt;  // padded along two axes
    r = PaddedRange{pad.inputs[0], d, low, high};
  }
  return r;
}

}  // namespace

ir::Value join_slice_gradients(ops::GradientContext& ctx, const std::vector<ir::Value>& contributions) {
  if (contributions.size() < 2) return {};
  std::vector<PaddedRange> ranges;
  for (const ir::Value& v : contributions) {
    std::optional<PaddedRange> r = padded_range(v);
    if (!r || r->axis < 0 || (!ranges.empty() && r->axis != ranges.front().axis)) return {};
    ranges.push_back(*r);
  }
  std::sort(ranges.begin(), ranges.end(), [](const PaddedRange& a, const PaddedRange& b) { return a.low < b.low; });
  const std::vector<int64_t> dims = ctx.known_dims(ranges.front().unpadded);
  const int64_t axis = ranges.front().axis;
  if (static_cast<size_t>(axis) >= dims.size()) return {};
  const int64_t extent = ranges.front().low + dims[static_cast<size_t>(axis)] + ranges.front().high;
  int64_t next = 0;
  std::vector<ir::Value> pieces;
  for (const PaddedRange& r : ranges) {
    const std::vector<int64_t> piece = ctx.known_dims(r.unpadded);
    if (r.low != next || piece.size() != dims.size()) return {};
    next = r.low + piece[static_cast<size_t>(axis)];
    if (next + r.high != extent) return {};
    pieces.push_back(r.unpadded);
  }
  if (next != extent) return {};
  return ctx.add(ir::OpId::Concat, pieces, {{"axis", axis}});
}

}  // namespace graft::autodiff
