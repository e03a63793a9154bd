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
// Interpolation is separable: its taps per dimension (the input points and
// weights of each output coordinate, by mode, nearest_mode, exclude_outside,
// antialias) are graft/ops/resize_taps.h's, which device kernels share.
// tf_crop_and_resize returns extrapolation_value where x_original falls
// outside the input.
//
// The kernel precomputes these taps per dimension, then computes each output
// row as the weighted sum over the tap product of the outer dimensions and
// the innermost dimension; dimensions whose taps are a single weight-1 point
// (batch and channel, typically) cost nothing extra.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "data_movement.h"
#include "graft/core/parallel.h"
#include "graft/ops/gradient.h"
#include "graft/ops/infer_util.h"
#include "graft/ops/resize_taps.h"

namespace graft::ops {
namespace {

using Settings = ResizeSettings;
using Mode = ResizeMode;
using CoordinateMode = ResizeCoordinate;
using AspectPolicy = ResizeAspectPolicy;
using Taps = ResizeTaps;

// The node's attributes (graft/ops/resize_taps.h); what is not valid fails
// the node.
template <typename Context>
Settings read_settings(const Context& ctx, bool upsample) {
  Settings s;
  std::string why = read_resize_settings(ctx.attrs(), ctx.opset(), upsample, &s);
  if (!why.empty()) ctx.fail(why);
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

// The taps of output row `row` (every dimension but the last) combined from
// dimension `first` on: (input offset, weight) pairs in `combos`, with
// `coordinate` set to the row's output coordinates and `next` as scratch.
// False where a coordinate lies outside tf_crop_and_resize's roi.
bool outer_taps(const std::vector<Taps>& taps, const Shape& out_shape, const std::vector<int64_t>& strides,
                size_t first, int64_t row, std::vector<int64_t>& coordinate,
                std::vector<std::pair<int64_t, double>>& combos, std::vector<std::pair<int64_t, double>>& next) {
  const size_t rank = out_shape.size();
  for (size_t d = rank - 1; d-- > 0;) {
    coordinate[d] = row % out_shape[d];
    row /= out_shape[d];
  }
  combos.assign(1, {0, 1.0});
  for (size_t d = first; d + 1 < rank; ++d) {
    const Taps& t = taps[d];
    const size_t o = static_cast<size_t>(coordinate[d]);
    if (t.outside[o]) return false;
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
  return true;
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
      const bool outside = !outer_taps(taps, out_shape, strides, 0, r, coordinate, combos, next);
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

// The output extents, scales and roi of a Resize or Upsample node of
// `opset` on input `x`, whose roi, scales and sizes inputs start at input
// `first` (1 for the op itself, 2 for its gradient, which reads d_y first).
struct Resizing {
  Settings settings;
  Geometry geometry;
  std::vector<double> roi_start, roi_end;
};

Resizing resizing_of(const KernelContext& ctx, const Tensor& x, bool upsample, int opset, size_t first) {
  Resizing r;
  const Settings& s = r.settings = [&] {
    Settings settings;
    std::string why = read_resize_settings(ctx.attrs(), opset, upsample, &settings);
    if (!why.empty()) ctx.fail(why);
    return settings;
  }();
  if (x.rank() == 0) ctx.fail("input must have rank >= 1");
  InputLayout layout = input_layout(upsample, opset);
  for (int* at : {&layout.roi, &layout.scales, &layout.sizes})
    if (*at >= 0) *at += static_cast<int>(first) - 1;
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
  r.geometry = compute_geometry(ctx, s, x.shape(), scales, sizes);
  const size_t rank = static_cast<size_t>(x.rank());
  // roi per dimension: [start..., end...] over `axes` (or all dims).
  r.roi_start.assign(rank, 0.0);
  r.roi_end.assign(rank, 1.0);
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
      r.roi_start[static_cast<size_t>(axes[i])] = roi[i];
      r.roi_end[static_cast<size_t>(axes[i])] = roi[i + axes.size()];
    }
  }
  return r;
}

std::vector<Taps> taps_of(const Resizing& r, const Shape& in) {
  std::vector<Taps> taps;
  for (size_t d = 0; d < in.size(); ++d)
    taps.push_back(
        compute_resize_taps(r.settings, in[d], r.geometry.out[d], r.geometry.scale[d], r.roi_start[d], r.roi_end[d]));
  return taps;
}

void resize_kernel_common(KernelContext& ctx, bool upsample) {
  const Tensor& x = ctx.input(0);
  const Resizing r = resizing_of(ctx, x, upsample, ctx.opset(), 1);
  const Settings& s = r.settings;
  const Geometry& g = r.geometry;
  const size_t rank = static_cast<size_t>(x.rank());
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
  const std::vector<Taps> taps = taps_of(r, x.shape());
  visit_numeric_dtype(x.dtype(), upsample ? "Upsample" : "Resize",
                      [&]<typename T>() { interpolate<T>(x, y, taps, s.extrapolation); });
}

void resize_kernel(KernelContext& ctx) { resize_kernel_common(ctx, false); }
void upsample_kernel(KernelContext& ctx) { resize_kernel_common(ctx, true); }

// ---- gradient -----------------------------------------------------------------
//
// Resize is linear in X: y[o] = sum over the tap product of weight * x[i].
// Its gradient is the transpose, graft.ResizeGrad(d_y, x, the forward's
// other inputs) -> d_x with the forward's attributes plus `opset` (the
// forward's, which decides its inputs and defaults) and `upsample` (1 for
// Upsample): every d_y[o] added into the points it was interpolated from,
// times their weights; outputs that took the extrapolation value add
// nothing. Leading axes that the resize leaves as they are (batch,
// channels) split the work into independent planes.

void infer_resize_grad(InferContext& ctx) { ctx.set_output(0, ctx.input_type(1)); }

template <typename T>
void scatter_gradient(const Tensor& dy, Tensor& dx, const std::vector<Taps>& taps) {
  using C = compute_t<T>;
  const Shape& in_shape = dx.shape();
  const Shape& out_shape = dy.shape();
  const size_t rank = in_shape.size();
  const std::vector<int64_t> strides = shape_strides(in_shape);
  size_t lead = 0;
  while (lead + 1 < rank && taps[lead].identity) ++lead;
  int64_t planes = 1;
  for (size_t d = 0; d < lead; ++d) planes *= in_shape[d];
  const int64_t row = out_shape[rank - 1];
  const int64_t rows_per_plane = planes == 0 ? 0 : dy.numel() / row / planes;
  const int64_t plane_size = planes == 0 ? 0 : dx.numel() / planes;
  const T* d_out = dy.data<T>();
  T* d_in = dx.data<T>();
  const Taps& last = taps[rank - 1];
  parallel_for(planes, 1, [&](int64_t begin, int64_t end) {
    std::vector<double> sums(static_cast<size_t>(plane_size));
    std::vector<std::pair<int64_t, double>> combos, next;
    std::vector<int64_t> coordinate(rank, 0);
    for (int64_t p = begin; p < end; ++p) {
      std::fill(sums.begin(), sums.end(), 0.0);
      for (int64_t pr = 0; pr < rows_per_plane; ++pr) {
        const int64_t r = p * rows_per_plane + pr;
        // Offsets within the plane: the dims before `lead` are the plane's.
        if (!outer_taps(taps, out_shape, strides, lead, r, coordinate, combos, next)) continue;
        const T* g = d_out + r * row;
        for (int64_t c = 0; c < row; ++c) {
          if (last.outside[static_cast<size_t>(c)]) continue;
          const double gradient = static_cast<double>(static_cast<C>(g[c]));
          for (int64_t k = 0; k < last.n; ++k) {
            const size_t at = static_cast<size_t>(c * last.n + k);
            if (last.weight[at] == 0) continue;
            for (const auto& [offset, weight] : combos)
              sums[static_cast<size_t>(offset + last.index[at])] += weight * last.weight[at] * gradient;
          }
        }
      }
      T* out = d_in + p * plane_size;
      for (int64_t i = 0; i < plane_size; ++i) out[i] = static_cast<T>(static_cast<C>(sums[static_cast<size_t>(i)]));
    }
  });
}

void resize_grad_kernel(KernelContext& ctx) {
  const Tensor& dy = ctx.input(0);
  const Tensor& x = ctx.input(1);
  const bool upsample = ctx.attrs().get_int("upsample", 0) != 0;
  const int64_t opset = ctx.attrs().get_int("opset", 0);
  if (opset < 7 || opset > 1000) ctx.fail("opset ", opset, " is not a forward Resize or Upsample opset");
  const Resizing r = resizing_of(ctx, x, upsample, static_cast<int>(opset), 2);
  if (dy.shape() != r.geometry.out)
    ctx.fail("d_y ", dy.type_string(), " is not the shape ", shape_to_string(r.geometry.out), " that resizing ",
             x.type_string(), " gives");
  if (dy.dtype() != x.dtype()) ctx.fail("d_y ", dy.type_string(), " and x ", x.type_string(), " differ in type");
  Tensor& dx = ctx.allocate_output(0, x.dtype(), x.shape());
  if (dx.numel() == 0) return;
  if (dy.numel() == 0) {
    std::memset(dx.raw_data(), 0, dx.nbytes());
    return;
  }
  const std::vector<Taps> taps = taps_of(r, x.shape());
  visit_float_dtype(x.dtype(), ctx.node().describe(), [&]<typename T>() { scatter_gradient<T>(dy, dx, taps); });
}

void resize_gradient_common(GradientContext& g, bool upsample) {
  if (!g.needs_input_gradient(0)) return;
  std::vector<ir::Value> inputs = {g.output_gradient(0)};
  for (size_t i = 0; i < g.num_inputs(); ++i) inputs.push_back(g.has_input(i) ? g.input(i) : ir::Value{});
  std::vector<std::pair<std::string, ir::AttributeValue>> attributes;
  for (const auto& [key, value] : g.attrs().all()) attributes.emplace_back(key, value);
  attributes.emplace_back("opset", int64_t{g.node().opset_version});
  attributes.emplace_back("upsample", int64_t{upsample ? 1 : 0});
  g.set_input_gradient(0, g.add(ir::OpId::ResizeGrad, inputs, std::move(attributes)));
}

void resize_gradient(GradientContext& g) { resize_gradient_common(g, false); }
void upsample_gradient(GradientContext& g) { resize_gradient_common(g, true); }

}  // namespace

GRAFT_REGISTER_OP("", "Resize", resize_infer, resize_kernel);
GRAFT_REGISTER_OP("", "Upsample", upsample_infer, upsample_kernel);
GRAFT_REGISTER_OP("graft", "ResizeGrad", infer_resize_grad, resize_grad_kernel);
GRAFT_REGISTER_GRADIENT(Resize, resize_gradient);
GRAFT_REGISTER_GRADIENT(Upsample, upsample_gradient);

}  // namespace graft::ops
