// Resize (opsets 10-19) and Upsample (7-9): interpolation of an N-d tensor to
// a new size, following the ONNX reference implementation exactly.
//
// Output sizes come from `sizes` (optionally with keep_aspect_ratio_policy,
// opset 18) or from `scales` (floor(in * scale)); opset 18's `axes` restricts
// both to some dimensions. Along each dimension, every output coordinate x is
// mapped back to an input coordinate x_original by the
// coordinate_transformation_mode, using the scale and, like the reference,
// output_width = scale * input_width (a real number when scales are given).
//
// Interpolation is separable. With x_int = floor(x_original) (x_original - 1
// when it is an integer) and ratio = x_original - x_int in (0, 1], a mode
// yields n coefficients for the input points x_int + start .. x_int + start
// + n - 1: nearest (n = 2, one of them 1 by nearest_mode), linear (n = 2:
// 1 - ratio, ratio), cubic (n = 4, Keys kernel with cubic_coeff_a), and the
// antialiased linear/cubic filters that widen by 1/scale when downscaling.
// Points outside the input take the border value (edge padding), or get
// weight 0 with exclude_outside (the rest renormalized). tf_crop_and_resize
// returns extrapolation_value where x_original falls outside the input.
//
// The kernel precomputes these taps per dimension, then computes each output
// row as the weighted sum over the tap product of the outer dimensions and
// the innermost dimension; dimensions whose taps are a single weight-1 point
// (batch and channel, typically) cost nothing extra.
#include <algorithm>
#include <cmath>
#include <limits>

#include "data_movement.h"
#include "graft/core/parallel.h"
#include "graft/ops/infer_util.h"

namespace graft::ops {
namespace {

enum class Mode { nearest, linear, cubic };
enum class CoordinateMode {
  half_pixel,
  half_pixel_symmetric,
  pytorch_half_pixel,
  align_corners,
  asymmetric,
  tf_half_pixel_for_nn,
  tf_crop_and_resize,
};
enum class NearestMode { round_prefer_floor, round_prefer_ceil, floor, ceil, simple };
enum class AspectPolicy { stretch, not_larger, not_smaller };

struct Settings {
  Mode mode = Mode::nearest;
  CoordinateMode coordinate = CoordinateMode::half_pixel;
  NearestMode nearest = NearestMode::round_prefer_floor;
  double cubic_a = -0.75;
  bool exclude_outside = false;
  double extrapolation = 0;
  bool antialias = false;
  AspectPolicy policy = AspectPolicy::stretch;
  std::vector<int64_t> axes;  // opset 18; empty = all
  bool upsample = false;      // the Upsample op
};

template <typename Context>
Settings read_settings(const Context& ctx, bool upsample) {
  Settings s;
  s.upsample = upsample;
  const ir::Attributes& a = ctx.attrs();
  const std::string mode = a.get_string("mode", "nearest");
  if (mode == "nearest")
    s.mode = Mode::nearest;
  else if (mode == "linear" || mode == "bilinear" || mode == "trilinear")
    s.mode = Mode::linear;
  else if (mode == "cubic" && !upsample && ctx.opset() >= 11)
    s.mode = Mode::cubic;
  else
    ctx.fail("mode '", mode, "' is not supported at opset ", ctx.opset());
  if (upsample || ctx.opset() < 11) {
    // Upsample and Resize-10: asymmetric coordinates; nearest rounds down
    // when upsampling and up when downsampling (as ONNX Runtime does).
    s.coordinate = CoordinateMode::asymmetric;
    s.nearest = NearestMode::simple;
    return s;
  }
  const std::string coordinate = a.get_string("coordinate_transformation_mode", "half_pixel");
  if (coordinate == "half_pixel")
    s.coordinate = CoordinateMode::half_pixel;
  else if (coordinate == "half_pixel_symmetric" && ctx.opset() >= 19)
    s.coordinate = CoordinateMode::half_pixel_symmetric;
  else if (coordinate == "pytorch_half_pixel")
    s.coordinate = CoordinateMode::pytorch_half_pixel;
  else if (coordinate == "align_corners")
    s.coordinate = CoordinateMode::align_corners;
  else if (coordinate == "asymmetric")
    s.coordinate = CoordinateMode::asymmetric;
  else if (coordinate == "tf_half_pixel_for_nn" && ctx.opset() < 13)
    s.coordinate = CoordinateMode::tf_half_pixel_for_nn;
  else if (coordinate == "tf_crop_and_resize")
    s.coordinate = CoordinateMode::tf_crop_and_resize;
  else
    ctx.fail("coordinate_transformation_mode '", coordinate, "' is not valid at opset ", ctx.opset());
  const std::string nearest = a.get_string("nearest_mode", "round_prefer_floor");
  if (nearest == "round_prefer_floor")
    s.nearest = NearestMode::round_prefer_floor;
  else if (nearest == "round_prefer_ceil")
    s.nearest = NearestMode::round_prefer_ceil;
  else if (nearest == "floor")
    s.nearest = NearestMode::floor;
  else if (nearest == "ceil")
    s.nearest = NearestMode::ceil;
  else
    ctx.fail("nearest_mode '", nearest, "' is not valid");
  s.cubic_a = a.get_float("cubic_coeff_a", -0.75f);
  s.exclude_outside = a.get_int("exclude_outside", 0) != 0;
  s.extrapolation = a.get_float("extrapolation_value", 0.0f);
  if (ctx.opset() >= 18) {
    s.antialias = a.get_int("antialias", 0) != 0;
    const std::string policy = a.get_string("keep_aspect_ratio_policy", "stretch");
    if (policy == "stretch")
      s.policy = AspectPolicy::stretch;
    else if (policy == "not_larger")
      s.policy = AspectPolicy::not_larger;
    else if (policy == "not_smaller")
      s.policy = AspectPolicy::not_smaller;
    else
      ctx.fail("keep_aspect_ratio_policy '", policy, "' is not valid");
    s.axes = a.get_ints("axes", {});
  }
  return s;
}

// Input positions of roi, scales and sizes (-1: none) for the op and opset.
struct InputLayout {
  int roi = -1, scales = -1, sizes = -1;
  bool scales_attribute = false;  // Upsample 7-8
};

InputLayout input_layout(bool upsample, int opset) {
  if (upsample) return opset < 9 ? InputLayout{-1, -1, -1, true} : InputLayout{-1, 1, -1, false};
  if (opset < 11) return InputLayout{-1, 1, -1, false};
  return InputLayout{1, 2, 3, false};
}

// Output sizes and per-dimension scales for input shape `in`; `scales` and
// `sizes` as given (either may be empty).
struct Geometry {
  Shape out;
  std::vector<double> scale;
};

template <typename Context>
Geometry compute_geometry(const Context& ctx, const Settings& s, const Shape& in, const std::vector<double>& scales,
                          const std::vector<int64_t>& sizes) {
  const int64_t rank = static_cast<int64_t>(in.size());
  std::vector<int64_t> axes = s.axes;
  if (axes.empty())
    for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
  axes = checked_axes(ctx, axes, rank);
  Geometry g{in, std::vector<double>(in.size(), 1.0)};
  if (!sizes.empty() && !scales.empty()) ctx.fail("only one of scales and sizes may be given");
  if (!sizes.empty()) {
    if (sizes.size() != axes.size()) ctx.fail("sizes has ", sizes.size(), " entries, expected ", axes.size());
    for (int64_t v : sizes)
      if (v < 0) ctx.fail("sizes has a negative entry ", v);
    if (s.policy == AspectPolicy::stretch) {
      for (size_t i = 0; i < axes.size(); ++i) {
        const size_t d = static_cast<size_t>(axes[i]);
        g.out[d] = sizes[i];
        if (in[d] == 0) ctx.fail("cannot resize an empty dimension ", d);
        g.scale[d] = static_cast<double>(sizes[i]) / static_cast<double>(in[d]);
      }
    } else {
      double common = s.policy == AspectPolicy::not_larger ? std::numeric_limits<double>::infinity() : 0.0;
      for (size_t i = 0; i < axes.size(); ++i) {
        const size_t d = static_cast<size_t>(axes[i]);
        if (in[d] == 0) ctx.fail("cannot resize an empty dimension ", d);
        const double r = static_cast<double>(sizes[i]) / static_cast<double>(in[d]);
        common = s.policy == AspectPolicy::not_larger ? std::min(common, r) : std::max(common, r);
      }
      for (int64_t a : axes) {
        const size_t d = static_cast<size_t>(a);
        g.scale[d] = common;
        g.out[d] = static_cast<int64_t>(std::nearbyint(common * static_cast<double>(in[d])));
      }
    }
  } else {
    if (scales.size() != axes.size()) ctx.fail("scales has ", scales.size(), " entries, expected ", axes.size());
    for (size_t i = 0; i < axes.size(); ++i) {
      const size_t d = static_cast<size_t>(axes[i]);
      if (!(scales[i] > 0) || !std::isfinite(scales[i])) ctx.fail("scales must be positive, got ", scales[i]);
      const double out = std::floor(scales[i] * static_cast<double>(in[d]));
      if (out > static_cast<double>(int64_t{1} << 40)) ctx.fail("scale ", scales[i], " gives too large an output");
      g.scale[d] = scales[i];
      g.out[d] = static_cast<int64_t>(out);
    }
  }
  return g;
}

// ---- inference --------------------------------------------------------------

void resize_infer_common(InferContext& ctx, bool upsample) {
  const ir::ValueType& x = ctx.input_type(0);
  const Settings s = read_settings(ctx, upsample);
  if (!x.has_rank) {
    set_output_dtype_only(ctx, 0, x.dtype);
    return;
  }
  const InputLayout layout = input_layout(upsample, ctx.opset());
  std::optional<std::vector<double>> scales = std::vector<double>{};
  std::optional<std::vector<int64_t>> sizes = std::vector<int64_t>{};
  if (layout.scales_attribute) {
    std::vector<float> f = ctx.attrs().get_floats("scales", {});
    scales = std::vector<double>(f.begin(), f.end());
  } else if (ctx.has_input(static_cast<size_t>(layout.scales)) &&
             known_length(ctx, static_cast<size_t>(layout.scales)) != 0) {
    scales = constant_input_doubles(ctx, static_cast<size_t>(layout.scales));
  }
  if (layout.sizes >= 0 && ctx.has_input(static_cast<size_t>(layout.sizes)) &&
      known_length(ctx, static_cast<size_t>(layout.sizes)) != 0)
    sizes = constant_input_ints(ctx, static_cast<size_t>(layout.sizes));
  std::vector<ir::Dim> dims = unknown_dims(x.dims.size());
  if (scales && sizes && (!scales->empty() || !sizes->empty())) {
    const int64_t rank = static_cast<int64_t>(x.dims.size());
    std::vector<int64_t> axes = s.axes;
    if (axes.empty())
      for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
    axes = checked_axes(ctx, axes, rank);
    std::vector<bool> resized(x.dims.size(), false);
    for (int64_t a : axes) resized[static_cast<size_t>(a)] = true;
    Shape in;  // unknown extents as 1: only the dims they do not affect are kept
    bool axes_known = true;
    for (size_t d = 0; d < x.dims.size(); ++d) {
      in.push_back(x.dims[d].is_known() ? x.dims[d].value : 1);
      if (resized[d] && !x.dims[d].is_known()) axes_known = false;
    }
    const bool per_axis = sizes->empty() || s.policy == AspectPolicy::stretch;
    if (per_axis || axes_known) {
      Geometry g = compute_geometry(ctx, s, in, *scales, *sizes);
      for (size_t d = 0; d < x.dims.size(); ++d) {
        if (!resized[d])
          dims[d] = x.dims[d];
        else if (x.dims[d].is_known() || !sizes->empty())
          dims[d] = ir::Dim::known(g.out[d]);
        else if (g.scale[d] == 1.0)
          dims[d] = x.dims[d];
      }
    } else {
      for (size_t d = 0; d < x.dims.size(); ++d)
        if (!resized[d]) dims[d] = x.dims[d];
    }
  }
  ctx.set_output(0, ranked_type(x.dtype, std::move(dims)));
}

void resize_infer(InferContext& ctx) { resize_infer_common(ctx, false); }
void upsample_infer(InferContext& ctx) { resize_infer_common(ctx, true); }

// ---- taps -------------------------------------------------------------------

// Interpolation taps of one dimension: for output coordinate o, the points
// index[o * n + t] with weight[o * n + t]; outside[o] marks extrapolation.
struct Taps {
  int64_t n = 1;
  std::vector<int64_t> index;
  std::vector<double> weight;
  std::vector<bool> outside;
  bool identity = false;  // every output reads the same input coordinate, weight 1
};

double cubic_coefficient(double x, double a) {
  x = std::abs(x);
  if (x <= 1) return ((a + 2) * x - (a + 3)) * x * x + 1;
  if (x < 2) return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
  return 0;
}

// Input coordinate of output coordinate x (the reference's formulas).
double original_coordinate(const Settings& s, double x, double scale, int64_t in, int64_t out, double roi_start,
                           double roi_end) {
  const double in_w = static_cast<double>(in);
  const double out_w = scale * in_w;
  switch (s.coordinate) {
    case CoordinateMode::half_pixel:
      return (x + 0.5) / scale - 0.5;
    case CoordinateMode::half_pixel_symmetric: {
      const double adjustment = static_cast<double>(out) / out_w;
      const double offset = in_w / 2 * (1 - adjustment);
      return offset + (x + 0.5) / scale - 0.5;
    }
    case CoordinateMode::pytorch_half_pixel:
      return out_w == 1 ? -0.5 : (x + 0.5) / scale - 0.5;
    case CoordinateMode::align_corners:
      return out_w == 1 ? 0.0 : x * (in_w - 1) / (out_w - 1);
    case CoordinateMode::asymmetric:
      return x / scale;
    case CoordinateMode::tf_half_pixel_for_nn:
      return (x + 0.5) / scale;
    case CoordinateMode::tf_crop_and_resize: {
      const double x_ori =
          out_w == 1 ? (roi_end - roi_start) * (in_w - 1) / 2 : x * (roi_end - roi_start) * (in_w - 1) / (out_w - 1);
      return x_ori + roi_start * (in_w - 1);
    }
  }
  return x;
}

// Coefficients for `ratio` in (0, 1]; `start` receives the offset of the
// first point from x_int.
std::vector<double> coefficients(const Settings& s, double ratio, double scale, bool upsampling, int64_t* start) {
  switch (s.mode) {
    case Mode::nearest: {
      *start = 0;
      if (ratio == 1) return {0, 1};
      switch (s.nearest) {
        case NearestMode::round_prefer_floor:
          return {ratio <= 0.5 ? 1.0 : 0.0, ratio > 0.5 ? 1.0 : 0.0};
        case NearestMode::round_prefer_ceil:
          return {ratio < 0.5 ? 1.0 : 0.0, ratio >= 0.5 ? 1.0 : 0.0};
        case NearestMode::floor:
          return {1, 0};
        case NearestMode::ceil:
          return {0, 1};
        case NearestMode::simple:
          return upsampling ? std::vector<double>{1, 0} : std::vector<double>{0, 1};
      }
      return {1, 0};
    }
    case Mode::linear: {
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
    case Mode::cubic: {
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

Taps compute_taps(const Settings& s, int64_t in, int64_t out, double scale, double roi_start, double roi_end) {
  Taps taps;
  taps.outside.assign(static_cast<size_t>(out), false);
  std::vector<std::vector<std::pair<int64_t, double>>> per_output(static_cast<size_t>(out));
  for (int64_t o = 0; o < out; ++o) {
    const double x = original_coordinate(s, static_cast<double>(o), scale, in, out, roi_start, roi_end);
    auto& list = per_output[static_cast<size_t>(o)];
    if (s.coordinate == CoordinateMode::tf_crop_and_resize && (x < 0 || x > static_cast<double>(in - 1))) {
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

// ---- kernel -----------------------------------------------------------------

template <typename T>
T to_output(double v) {
  if constexpr (std::is_integral_v<T>) {
    v = std::nearbyint(v);
    v = std::clamp(v, static_cast<double>(std::numeric_limits<T>::lowest()),
                   static_cast<double>(std::numeric_limits<T>::max()));
    return static_cast<T>(v);
  } else {
    return static_cast<T>(static_cast<compute_t<T>>(v));
  }
}

template <typename T>
void interpolate(const Tensor& x, Tensor& y, const std::vector<Taps>& taps, double extrapolation) {
  using C = compute_t<T>;
  const Shape& in_shape = x.shape();
  const Shape& out_shape = y.shape();
  const size_t rank = in_shape.size();
  const std::vector<int64_t> strides = shape_strides(in_shape);
  const T* in = x.data<T>();
  T* out = y.data<T>();
  const int64_t total = y.numel();
  if (total == 0) return;
  const int64_t row = out_shape[rank - 1], rows = total / row;
  const Taps& last = taps[rank - 1];
  parallel_for(rows, std::max<int64_t>(1, 2048 / row), [&](int64_t begin, int64_t end) {
    std::vector<std::pair<int64_t, double>> combos, next;
    std::vector<int64_t> coordinate(rank, 0);
    for (int64_t r = begin; r < end; ++r) {
      // Taps of the outer dims combined: (input offset, weight) pairs.
      combos.assign(1, {0, 1.0});
      bool outside = false;
      int64_t rem = r;
      for (size_t d = rank - 1; d-- > 0;) {
        coordinate[d] = rem % out_shape[d];
        rem /= out_shape[d];
      }
      for (size_t d = 0; d + 1 < rank && !outside; ++d) {
        const Taps& t = taps[d];
        const size_t o = static_cast<size_t>(coordinate[d]);
        if (t.outside[o]) {
          outside = true;
          break;
        }
        next.clear();
        for (const auto& [offset, weight] : combos)
          for (int64_t k = 0; k < t.n; ++k) {
            const double w = t.weight[o * static_cast<size_t>(t.n) + static_cast<size_t>(k)];
            if (w == 0 && t.n > 1) continue;
            next.emplace_back(offset + t.index[o * static_cast<size_t>(t.n) + static_cast<size_t>(k)] * strides[d],
                              weight * w);
          }
        combos.swap(next);
      }
      T* o = out + r * row;
      if (outside) {
        std::fill(o, o + row, to_output<T>(extrapolation));
        continue;
      }
      if (last.identity && combos.size() == 1 && combos[0].second == 1.0) {
        const T* s = in + combos[0].first;
        std::copy(s, s + row, o);
        continue;
      }
      for (int64_t c = 0; c < row; ++c) {
        if (last.outside[static_cast<size_t>(c)]) {
          o[c] = to_output<T>(extrapolation);
          continue;
        }
        double sum = 0;
        for (const auto& [offset, weight] : combos) {
          double inner = 0;
          for (int64_t k = 0; k < last.n; ++k) {
            const size_t at = static_cast<size_t>(c * last.n + k);
            inner += last.weight[at] * static_cast<double>(static_cast<C>(in[offset + last.index[at]]));
          }
          sum += weight * inner;
        }
        o[c] = to_output<T>(sum);
      }
    }
  });
}

std::vector<double> tensor_doubles(const KernelContext& ctx, size_t i, std::string_view name) {
  const Tensor& t = ctx.input(i);
  if (!dtype_is_float(t.dtype())) ctx.fail(name, " must be a float tensor, got ", t.type_string());
  std::vector<double> out(static_cast<size_t>(t.numel()));
  for (int64_t k = 0; k < t.numel(); ++k) out[static_cast<size_t>(k)] = t.value_as_double(k);
  return out;
}

void resize_kernel_common(KernelContext& ctx, bool upsample) {
  const Tensor& x = ctx.input(0);
  const Settings s = read_settings(ctx, upsample);
  if (x.rank() == 0) ctx.fail("input must have rank >= 1");
  const InputLayout layout = input_layout(upsample, ctx.opset());
  std::vector<double> scales, roi;
  std::vector<int64_t> sizes;
  if (layout.scales_attribute) {
    std::vector<float> f = ctx.attrs().get_floats("scales", {});
    scales.assign(f.begin(), f.end());
  } else if (ctx.has_input(static_cast<size_t>(layout.scales))) {
    scales = tensor_doubles(ctx, static_cast<size_t>(layout.scales), "scales");
  }
  if (layout.sizes >= 0 && ctx.has_input(static_cast<size_t>(layout.sizes)))
    sizes = input_ints(ctx, static_cast<size_t>(layout.sizes), "sizes");
  if (scales.empty() && sizes.empty()) ctx.fail("one of scales and sizes must be given");
  Geometry g = compute_geometry(ctx, s, x.shape(), scales, sizes);
  const size_t rank = static_cast<size_t>(x.rank());
  // roi per dimension: [start..., end...] over `axes` (or all dims).
  std::vector<double> roi_start(rank, 0.0), roi_end(rank, 1.0);
  if (s.coordinate == CoordinateMode::tf_crop_and_resize) {
    if (layout.roi < 0 || !ctx.has_input(static_cast<size_t>(layout.roi)))
      ctx.fail("tf_crop_and_resize needs the roi input");
    roi = tensor_doubles(ctx, static_cast<size_t>(layout.roi), "roi");
    std::vector<int64_t> axes = s.axes;
    if (axes.empty())
      for (size_t d = 0; d < rank; ++d) axes.push_back(static_cast<int64_t>(d));
    axes = checked_axes(ctx, axes, static_cast<int64_t>(rank));
    if (roi.size() != 2 * axes.size()) ctx.fail("roi has ", roi.size(), " entries, expected ", 2 * axes.size());
    for (size_t i = 0; i < axes.size(); ++i) {
      roi_start[static_cast<size_t>(axes[i])] = roi[i];
      roi_end[static_cast<size_t>(axes[i])] = roi[i + axes.size()];
    }
  }
  // Scales such as 1e9 ask for more bytes than 64 bits count: say so (the
  // memory limit of allocate_output() judges every smaller request).
  double output_bytes = static_cast<double>(dtype_size(x.dtype()));
  for (int64_t d : g.out) output_bytes *= static_cast<double>(d);
  if (output_bytes >= 0x1p63)
    fail(ErrorKind::resource_exhausted, ctx.node().describe(), ": output ", dtype_name(x.dtype()), shape_to_string(g.out),
         " needs ", output_bytes, " bytes, more than any memory holds");
  Tensor& y = ctx.allocate_output(0, x.dtype(), g.out);
  if (y.numel() == 0) return;
  for (size_t d = 0; d < rank; ++d)
    if (x.shape()[d] == 0) ctx.fail("cannot resize an empty input ", x.type_string());
  std::vector<Taps> taps;
  for (size_t d = 0; d < rank; ++d)
    taps.push_back(compute_taps(s, x.shape()[d], g.out[d], g.scale[d], roi_start[d], roi_end[d]));
  visit_numeric_dtype(x.dtype(), upsample ? "Upsample" : "Resize",
                      [&]<typename T>() { interpolate<T>(x, y, taps, s.extrapolation); });
}

void resize_kernel(KernelContext& ctx) { resize_kernel_common(ctx, false); }
void upsample_kernel(KernelContext& ctx) { resize_kernel_common(ctx, true); }

}  // namespace

GRAFT_REGISTER_OP("", "Resize", resize_infer, resize_kernel);
GRAFT_REGISTER_OP("", "Upsample", upsample_infer, upsample_kernel);

}  // namespace graft::ops
