// The interpolation taps of Resize and Upsample (graft/ops/resize_taps.h):
// the attributes read once for the reference kernel and the device kernels,
// and the points and weights of every output coordinate along an axis.
#include "graft/ops/resize_taps.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace graft::ops {
namespace {

double cubic_coefficient(double x, double a) {
  x = std::abs(x);
  if (x <= 1) return ((a + 2) * x - (a + 3)) * x * x + 1;
  if (x < 2) return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
  return 0;
}

// Input coordinate of output coordinate x (the reference's formulas).
double original_coordinate(const ResizeSettings& s, double x, double scale, int64_t in, int64_t out, double roi_start,
                           double roi_end) {
  const double in_w = static_cast<double>(in);
  const double out_w = scale * in_w;
  switch (s.coordinate) {
    case ResizeCoordinate::half_pixel:
      return (x + 0.5) / scale - 0.5;
    case ResizeCoordinate::half_pixel_symmetric: {
      const double adjustment = static_cast<double>(out) / out_w;
      const double offset = in_w / 2 * (1 - adjustment);
      return offset + (x + 0.5) / scale - 0.5;
    }
    case ResizeCoordinate::pytorch_half_pixel:
      return out_w == 1 ? -0.5 : (x + 0.5) / scale - 0.5;
    case ResizeCoordinate::align_corners:
      return out_w == 1 ? 0.0 : x * (in_w - 1) / (out_w - 1);
    case ResizeCoordinate::asymmetric:
      return x / scale;
    case ResizeCoordinate::tf_half_pixel_for_nn:
      return (x + 0.5) / scale;
    case ResizeCoordinate::tf_crop_and_resize: {
      const double x_ori =
          out_w == 1 ? (roi_end - roi_start) * (in_w - 1) / 2 : x * (roi_end - roi_start) * (in_w - 1) / (out_w - 1);
      return x_ori + roi_start * (in_w - 1);
    }
  }
  return x;
}

// Coefficients for `ratio` in (0, 1]; `start` receives the offset of the
// first point from x_int.
std::vector<double> coefficients(const ResizeSettings& s, double ratio, double scale, bool upsampling, int64_t* start) {
  switch (s.mode) {
    case ResizeMode::nearest: {
      *start = 0;
      if (ratio == 1) return {0, 1};
      switch (s.nearest) {
        case ResizeNearest::round_prefer_floor:
          return {ratio <= 0.5 ? 1.0 : 0.0, ratio > 0.5 ? 1.0 : 0.0};
        case ResizeNearest::round_prefer_ceil:
          return {ratio < 0.5 ? 1.0 : 0.0, ratio >= 0.5 ? 1.0 : 0.0};
        case ResizeNearest::floor:
          return {1, 0};
        case ResizeNearest::ceil:
          return {0, 1};
        case ResizeNearest::simple:
          return upsampling ? std::vector<double>{1, 0} : std::vector<double>{0, 1};
      }
      return {1, 0};
    }
    case ResizeMode::linear: {
      if (!s.antialias || scale >= 1) {
        *start = 0;
        return {1 - ratio, ratio};
      }
      const int64_t first = static_cast<int64_t>(std::floor(-1 / scale) + 1);
      const int64_t footprint = 2 - 2 * first;
      std::vector<double> c;
      double sum = 0;
      for (int64_t i = first; i < first + footprint; ++i) {
        c.push_back(std::clamp(1 - std::abs((static_cast<double>(i) - ratio) * scale), 0.0, 1.0));
        sum += c.back();
      }
      for (double& v : c) v /= sum;
      *start = first;
      return c;
    }
    case ResizeMode::cubic: {
      const double a = s.cubic_a;
      if (!s.antialias || scale >= 1) {
        *start = -1;
        return {cubic_coefficient(ratio + 1, a), cubic_coefficient(ratio, a), cubic_coefficient(1 - ratio, a),
                cubic_coefficient(2 - ratio, a)};
      }
      const int64_t first = static_cast<int64_t>(std::floor(-2 / scale) + 1);
      const int64_t last = 2 - first;
      std::vector<double> c;
      double sum = 0;
      for (int64_t i = first; i < last; ++i) {
        c.push_back(cubic_coefficient(scale * (static_cast<double>(i) - ratio), a));
        sum += c.back();
      }
      for (double& v : c) v /= sum;
      *start = first;
      return c;
    }
  }
  return {};
}

}  // namespace

ResizeTaps compute_resize_taps(const ResizeSettings& s, int64_t in, int64_t out, double scale, double roi_start, double roi_end) {
  ResizeTaps taps;
  taps.outside.assign(static_cast<size_t>(out), false);
  std::vector<std::vector<std::pair<int64_t, double>>> per_output(static_cast<size_t>(out));
  for (int64_t o = 0; o < out; ++o) {
    const double x = original_coordinate(s, static_cast<double>(o), scale, in, out, roi_start, roi_end);
    auto& list = per_output[static_cast<size_t>(o)];
    if (s.coordinate == ResizeCoordinate::tf_crop_and_resize && (x < 0 || x > static_cast<double>(in - 1))) {
      taps.outside[static_cast<size_t>(o)] = true;
      continue;
    }
    const double x_floor = std::floor(x);
    const int64_t x_int = static_cast<int64_t>(x_floor) - (x == x_floor ? 1 : 0);
    const double ratio = x == x_floor ? 1.0 : x - x_floor;
    int64_t start = 0;
    std::vector<double> c = coefficients(s, ratio, scale, scale >= 1, &start);
    if (s.exclude_outside) {
      double sum = 0;
      for (size_t t = 0; t < c.size(); ++t) {
        const int64_t p = x_int + start + static_cast<int64_t>(t);
        if (p < 0 || p >= in) c[t] = 0;
        sum += c[t];
      }
      if (sum != 0)
        for (double& v : c) v /= sum;
    }
    for (size_t t = 0; t < c.size(); ++t) {
      if (c[t] == 0) continue;
      const int64_t p = std::clamp<int64_t>(x_int + start + static_cast<int64_t>(t), 0, in - 1);
      list.emplace_back(p, c[t]);
    }
    if (list.empty()) list.emplace_back(std::clamp<int64_t>(x_int + 1, 0, in - 1), 0.0);
  }
  size_t n = 1;
  for (const auto& list : per_output) n = std::max(n, list.size());
  taps.n = static_cast<int64_t>(n);
  taps.index.assign(static_cast<size_t>(out) * n, 0);
  taps.weight.assign(static_cast<size_t>(out) * n, 0.0);
  taps.identity = n == 1 && in == out;
  for (int64_t o = 0; o < out; ++o) {
    const auto& list = per_output[static_cast<size_t>(o)];
    for (size_t t = 0; t < list.size(); ++t) {
      taps.index[static_cast<size_t>(o) * n + t] = list[t].first;
      taps.weight[static_cast<size_t>(o) * n + t] = list[t].second;
    }
    if (taps.outside[static_cast<size_t>(o)] || list.size() != 1 || list[0].first != o || list[0].second != 1.0)
      taps.identity = false;
  }
  return taps;
}

std::string read_resize_settings(const ir::Attributes& a, int opset, bool upsample, ResizeSettings* settings) {
  ResizeSettings& s = *settings;
  s = ResizeSettings{};
  s.upsample = upsample;
  const std::string mode = a.get_string("mode", "nearest");
  if (mode == "nearest")
    s.mode = ResizeMode::nearest;
  else if (mode == "linear" || mode == "bilinear" || mode == "trilinear")
    s.mode = ResizeMode::linear;
  else if (mode == "cubic" && !upsample && opset >= 11)
    s.mode = ResizeMode::cubic;
  else
    return "mode '" + mode + "' is not supported at opset " + std::to_string(opset);
  if (upsample || opset < 11) {
    // Upsample and Resize-10: asymmetric coordinates; nearest rounds down
    // when upsampling and up when downsampling (as ONNX Runtime does).
    s.coordinate = ResizeCoordinate::asymmetric;
    s.nearest = ResizeNearest::simple;
    return {};
  }
  const std::string coordinate = a.get_string("coordinate_transformation_mode", "half_pixel");
  if (coordinate == "half_pixel")
    s.coordinate = ResizeCoordinate::half_pixel;
  else if (coordinate == "half_pixel_symmetric" && opset >= 19)
    s.coordinate = ResizeCoordinate::half_pixel_symmetric;
  else if (coordinate == "pytorch_half_pixel")
    s.coordinate = ResizeCoordinate::pytorch_half_pixel;
  else if (coordinate == "align_corners")
    s.coordinate = ResizeCoordinate::align_corners;
  else if (coordinate == "asymmetric")
    s.coordinate = ResizeCoordinate::asymmetric;
  else if (coordinate == "tf_half_pixel_for_nn" && opset < 13)
    s.coordinate = ResizeCoordinate::tf_half_pixel_for_nn;
  else if (coordinate == "tf_crop_and_resize")
    s.coordinate = ResizeCoordinate::tf_crop_and_resize;
  else
    return "coordinate_transformation_mode '" + coordinate + "' is not valid at opset " + std::to_string(opset);
  const std::string nearest = a.get_string("nearest_mode", "round_prefer_floor");
  if (nearest == "round_prefer_floor")
    s.nearest = ResizeNearest::round_prefer_floor;
  else if (nearest == "round_prefer_ceil")
    s.nearest = ResizeNearest::round_prefer_ceil;
  else if (nearest == "floor")
    s.nearest = ResizeNearest::floor;
  else if (nearest == "ceil")
    s.nearest = ResizeNearest::ceil;
  else
    return "nearest_mode '" + nearest + "' is not valid";
  s.cubic_a = a.get_float("cubic_coeff_a", -0.75f);
  s.exclude_outside = a.get_int("exclude_outside", 0) != 0;
  s.extrapolation = a.get_float("extrapolation_value", 0.0f);
  if (opset >= 18) {
    s.antialias = a.get_int("antialias", 0) != 0;
    const std::string policy = a.get_string("keep_aspect_ratio_policy", "stretch");
    if (policy == "stretch")
      s.policy = ResizeAspectPolicy::stretch;
    else if (policy == "not_larger")
      s.policy = ResizeAspectPolicy::not_larger;
    else if (policy == "not_smaller")
      s.policy = ResizeAspectPolicy::not_smaller;
    else
      return "keep_aspect_ratio_policy '" + policy + "' is not valid";
    s.axes = a.get_ints("axes", {});
  }
  return {};
}

}  // namespace graft::ops
