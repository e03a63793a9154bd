// Resize (opset 10+) and Upsample (7-9) on the OpenCL device.
//
// What: nearest (every numeric dtype; bool is refused, as the reference
// refuses it: round_prefer_floor/ceil, floor, ceil, and the "simple"
// rounding of Resize-10 and Upsample) and linear (float32)
// interpolation of the last two axes, with the coordinate transformation
// modes half_pixel, half_pixel_symmetric, pytorch_half_pixel, align_corners,
// asymmetric and tf_half_pixel_for_nn; every other axis must be left as it
// is (typically N and C of NCHW).
// Why: decoders and FPN-style heads upsample feature maps between device
// convolutions.
// How: as the reference kernel (ops/resize.cc), the interpolation is separable
// and its taps are computed per axis on the host, at plan time, with the
// reference's own double-precision formulas: for each output row and column,
// the input points and weights. They are uploaded once (compile) as tables;
// nearest then is a byte-size gather through the tables (bit-exact for every
// dtype), linear a weighted sum of ny x nx taps in float. Scales must be
// constants (sizes may be computed: the output shape gives them); cubic,
// antialias, exclude_outside with linear, keep_aspect_ratio_policy other than
// stretch and tf_crop_and_resize (roi) are refused. The tables depend on the
// shapes, the program does not: it is the shared data-movement program.
#include "opencl_data_movement.h"

#ifdef GRAFT_HAVE_OPENCL_HEADERS

#include <algorithm>
#include <cmath>

namespace graft::opencl {

namespace {

namespace dm = data_movement;

enum class Mode { nearest, linear };
enum class Coordinate {
  half_pixel,
  half_pixel_symmetric,
  pytorch_half_pixel,
  align_corners,
  asymmetric,
  tf_half_pixel_for_nn
};
enum class Nearest { round_prefer_floor, round_prefer_ceil, floor, ceil, simple };

struct Settings {
  Mode mode = Mode::nearest;
  Coordinate coordinate = Coordinate::half_pixel;
  Nearest nearest = Nearest::round_prefer_floor;
  bool exclude_outside = false;
  std::vector<int64_t> axes;
};

std::string read_settings(const ir::Node& node, bool upsample, Settings* s) {
  const ir::Attributes& a = node.attributes;
  const int opset = node.opset_version;
  const std::string mode = a.get_string("mode", "nearest");
  if (mode == "nearest")
    s->mode = Mode::nearest;
  else if (mode == "linear" || mode == "bilinear")
    s->mode = Mode::linear;
  else
    return "Resize mode '" + mode + "'";
  if (upsample || opset < 11) {
    s->coordinate = Coordinate::asymmetric;
    s->nearest = Nearest::simple;
    return {};
  }
  const std::string coordinate = a.get_string("coordinate_transformation_mode", "half_pixel");
  if (coordinate == "half_pixel")
    s->coordinate = Coordinate::half_pixel;
  else if (coordinate == "half_pixel_symmetric" && opset >= 19)
    s->coordinate = Coordinate::half_pixel_symmetric;
  else if (coordinate == "pytorch_half_pixel")
    s->coordinate = Coordinate::pytorch_half_pixel;
  else if (coordinate == "align_corners")
    s->coordinate = Coordinate::align_corners;
  else if (coordinate == "asymmetric")
    s->coordinate = Coordinate::asymmetric;
  else if (coordinate == "tf_half_pixel_for_nn" && opset < 13)
    s->coordinate = Coordinate::tf_half_pixel_for_nn;
  else
    return "Resize coordinate_transformation_mode '" + coordinate + "'";
  const std::string nearest = a.get_string("nearest_mode", "round_prefer_floor");
  if (nearest == "round_prefer_floor")
    s->nearest = Nearest::round_prefer_floor;
  else if (nearest == "round_prefer_ceil")
    s->nearest = Nearest::round_prefer_ceil;
  else if (nearest == "floor")
    s->nearest = Nearest::floor;
  else if (nearest == "ceil")
    s->nearest = Nearest::ceil;
  else
    return "Resize nearest_mode '" + nearest + "'";
  s->exclude_outside = a.get_int("exclude_outside", 0) != 0;
  if (s->exclude_outside && s->mode == Mode::linear) return "Resize exclude_outside with linear";
  if (opset >= 18) {
    if (a.get_int("antialias", 0) != 0) return "Resize antialias";
    if (a.get_string("keep_aspect_ratio_policy", "stretch") != "stretch") return "Resize keep_aspect_ratio_policy";
    s->axes = a.get_ints("axes", {});
  }
  return {};
}

// Input coordinate of output coordinate x (the reference's formulas).
double original_coordinate(Coordinate c, double x, double scale, int64_t in, int64_t out) {
  const double in_w = static_cast<double>(in);
  const double out_w = scale * in_w;
  switch (c) {
    case Coordinate::half_pixel:
      return (x + 0.5) / scale - 0.5;
    case Coordinate::half_pixel_symmetric: {
      const double adjustment = static_cast<double>(out) / out_w;
      const double offset = in_w / 2 * (1 - adjustment);
      return offset + (x + 0.5) / scale - 0.5;
    }
    case Coordinate::pytorch_half_pixel:
      return out_w == 1 ? -0.5 : (x + 0.5) / scale - 0.5;
    case Coordinate::align_corners:
      return out_w == 1 ? 0.0 : x * (in_w - 1) / (out_w - 1);
    case Coordinate::asymmetric:
      return x / scale;
    case Coordinate::tf_half_pixel_for_nn:
      return (x + 0.5) / scale;
  }
  return x;
}

std::vector<double> coefficients(const Settings& s, double ratio, bool upsampling) {
  if (s.mode == Mode::linear) return {1 - ratio, ratio};
  if (ratio == 1) return {0, 1};
  switch (s.nearest) {
    case Nearest::round_prefer_floor:
      return {ratio <= 0.5 ? 1.0 : 0.0, ratio > 0.5 ? 1.0 : 0.0};
    case Nearest::round_prefer_ceil:
      return {ratio < 0.5 ? 1.0 : 0.0, ratio >= 0.5 ? 1.0 : 0.0};
    case Nearest::floor:
      return {1, 0};
    case Nearest::ceil:
      return {0, 1};
    case Nearest::simple:
      return upsampling ? std::vector<double>{1, 0} : std::vector<double>{0, 1};
  }
  return {1, 0};
}

/// Taps of one axis: n points per output coordinate (as the reference's compute_taps).
struct Taps {
  int64_t n = 1;
  std::vector<int64_t> index;
  std::vector<double> weight;
};

Taps compute_taps(const Settings& s, int64_t in, int64_t out, double scale) {
  std::vector<std::vector<std::pair<int64_t, double>>> per_output(static_cast<size_t>(out));
  for (int64_t o = 0; o < out; ++o) {
    const double x = original_coordinate(s.coordinate, static_cast<double>(o), scale, in, out);
    auto& list = per_output[static_cast<size_t>(o)];
    const double x_floor = std::floor(x);
    const int64_t x_int = static_cast<int64_t>(x_floor) - (x == x_floor ? 1 : 0);
    const double ratio = x == x_floor ? 1.0 : x - x_floor;
    std::vector<double> c = coefficients(s, ratio, scale >= 1);
    if (s.exclude_outside) {
      double sum = 0;
      for (size_t t = 0; t < c.size(); ++t) {
        const int64_t p = x_int + static_cast<int64_t>(t);
        if (p < 0 || p >= in) c[t] = 0;
        sum += c[t];
      }
      if (sum != 0)
        for (double& v : c) v /= sum;
    }
    for (size_t t = 0; t < c.size(); ++t) {
      if (c[t] == 0) continue;
      list.emplace_back(std::clamp<int64_t>(x_int + static_cast<int64_t>(t), 0, in - 1), c[t]);
    }
    if (list.empty()) list.emplace_back(std::clamp<int64_t>(x_int + 1, 0, in - 1), 0.0);
  }
  Taps taps;
  size_t n = 1;
  for (const auto& list : per_output) n = std::max(n, list.size());
  taps.n = static_cast<int64_t>(n);
  taps.index.assign(static_cast<size_t>(out) * n, 0);
  taps.weight.assign(static_cast<size_t>(out) * n, 0.0);
  for (int64_t o = 0; o < out; ++o) {
    const auto& list = per_output[static_cast<size_t>(o)];
    for (size_t t = 0; t < list.size(); ++t) {
      taps.index[static_cast<size_t>(o) * n + t] = list[t].first;
      taps.weight[static_cast<size_t>(o) * n + t] = list[t].second;
    }
  }
  return taps;
}

/// True when the taps leave the axis as it is: every output o reads input o
/// only, with weights summing to 1 (pytorch_half_pixel on an axis of 1 gives
/// two taps of 0.5 at the same point).
bool passes_through(const Taps& t, int64_t in, int64_t out) {
  if (in != out) return false;
  for (int64_t o = 0; o < out; ++o) {
    double sum = 0;
    for (int64_t k = 0; k < t.n; ++k) {
      const size_t at = static_cast<size_t>(o * t.n + k);
      if (t.weight[at] == 0) continue;
      if (t.index[at] != o) return false;
      sum += t.weight[at];
    }
    if (std::abs(sum - 1.0) > 1e-12) return false;
  }
  return true;
}

/// What the kernel needs: the last two axes' taps and the extents.
struct ResizePlan {
  bool nearest = true;
  Taps y, x;
  int64_t hi = 1, wi = 1, ho = 1, wo = 1, total = 0;
};

std::string resize_plan(const KernelRequest& request, bool upsample, ResizePlan* plan) {
  const ir::Node& node = request.node;
  const ClType& in = request.inputs[0];
  const ClType& out = request.outputs[0];
  std::string why = dm::check_movable(in.dtype);
  if (!why.empty()) return why;
  Settings s;
  why = read_settings(node, upsample, &s);
  if (!why.empty()) return why;
  if (in.dtype == DType::boolean) return "Resize of bool";
  if (s.mode == Mode::linear && in.dtype != DType::float32)
    return "Resize linear on " + std::string(dtype_name(in.dtype));
  const int64_t rank = static_cast<int64_t>(in.shape.size());
  if (rank < 2) return "Resize of rank below 2";
  if (out.shape.size() != in.shape.size() || out.dtype != in.dtype) return "the output type differs from the input's";
  // Scales: an attribute (Upsample 7-8), else an input that must be a constant.
  const int opset = node.opset_version;
  int scales_input = -1, sizes_input = -1;
  std::vector<double> scales;
  if (upsample) {
    if (opset < 9) {
      for (float f : node.attributes.get_floats("scales", {})) scales.push_back(f);
    } else {
      scales_input = 1;
    }
  } else if (opset < 11) {
    scales_input = 1;
  } else {
    scales_input = 2;
    sizes_input = 3;
  }
  auto present = [&](int i) {
    return i >= 0 && static_cast<size_t>(i) < request.inputs.size() &&
           request.inputs[static_cast<size_t>(i)].dtype != DType::undefined &&
           request.inputs[static_cast<size_t>(i)].numel() > 0;
  };
  if (present(scales_input)) {
    const Tensor* t = request.constants[static_cast<size_t>(scales_input)];
    if (!t) return "Resize scales not constant";
    if (!dtype_is_float(t->dtype())) return "Resize scales not float";
    for (int64_t k = 0; k < t->numel(); ++k) scales.push_back(t->value_as_double(k));
  }
  const bool sizes_given = present(sizes_input);
  if (scales.empty() == !sizes_given) return "Resize needs exactly one of scales and sizes";
  std::vector<int64_t> axes = s.axes;
  if (axes.empty())
    for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
  std::vector<double> scale(static_cast<size_t>(rank), 1.0);
  std::vector<bool> resized(static_cast<size_t>(rank), false);
  for (int64_t& a : axes) {
    auto axis = dm::normalized_axis(a, rank);
    if (!axis) return "Resize axes out of range";
    a = *axis;
    resized[static_cast<size_t>(a)] = true;
  }
  if (sizes_given) {
    if (request.inputs[static_cast<size_t>(sizes_input)].numel() != static_cast<int64_t>(axes.size()))
      return "Resize sizes of another length than the axes";
    for (int64_t a : axes) {
      const size_t d = static_cast<size_t>(a);
      if (in.shape[d] == 0) return "Resize of an empty dimension";
      scale[d] = static_cast<double>(out.shape[d]) / static_cast<double>(in.shape[d]);
    }
  } else {
    if (scales.size() != axes.size()) return "Resize scales of another length than the axes";
    for (size_t i = 0; i < axes.size(); ++i) {
      const size_t d = static_cast<size_t>(axes[i]);
      if (!(scales[i] > 0) || !std::isfinite(scales[i])) return "Resize scales not positive";
      scale[d] = scales[i];
      if (static_cast<int64_t>(std::floor(scales[i] * static_cast<double>(in.shape[d]))) != out.shape[d])
        return "the output shape differs from the scales'";
    }
  }
  for (int64_t d = 0; d < rank; ++d)
    if (!resized[static_cast<size_t>(d)] && out.shape[static_cast<size_t>(d)] != in.shape[static_cast<size_t>(d)])
      return "the output shape differs on an axis not resized";
  plan->total = dm::numel_of(out.shape);
  if (plan->total == 0) return {};
  for (int64_t d : in.shape)
    if (d == 0) return "Resize of an empty dimension";
  // Every axis but the last two must be left as it is.
  for (int64_t d = 0; d + 2 < rank; ++d) {
    const size_t i = static_cast<size_t>(d);
    if (!passes_through(compute_taps(s, in.shape[i], out.shape[i], scale[i]), in.shape[i], out.shape[i]))
      return "Resize of an axis other than the last two";
  }
  const size_t h = static_cast<size_t>(rank - 2), w = static_cast<size_t>(rank - 1);
  plan->y = compute_taps(s, in.shape[h], out.shape[h], scale[h]);
  plan->x = compute_taps(s, in.shape[w], out.shape[w], scale[w]);
  plan->hi = in.shape[h];
  plan->wi = in.shape[w];
  plan->ho = out.shape[h];
  plan->wo = out.shape[w];
  plan->nearest = s.mode == Mode::nearest;
  if (plan->nearest) {
    for (const Taps* t : {&plan->y, &plan->x}) {
      if (t->n != 1) return "Resize nearest with more than one tap";
      for (double v : t->weight)
        if (v != 1.0) return "Resize nearest with a weight other than 1 (exclude_outside)";
    }
  }
  return {};
}

class ResizeKernel final : public NodeKernel {
 public:
  ResizeKernel(ResizePlan plan, size_t element_size) : plan_(std::move(plan)), element_size_(element_size) {}

  void compile(ClDevice& device) override {
    cl_program program = dm::program(device);
    if (plan_.total == 0) return;
    std::vector<int64_t> index(plan_.y.index);
    index.insert(index.end(), plan_.x.index.begin(), plan_.x.index.end());
    index_.upload(device, index.data(), index.size() * sizeof(int64_t));
    if (plan_.nearest) {
      nearest_ = dm::SizedKernels(device, program, "graft_resize_nearest");
      return;
    }
    std::vector<float> weight;
    for (double v : plan_.y.weight) weight.push_back(static_cast<float>(v));
    for (double v : plan_.x.weight) weight.push_back(static_cast<float>(v));
    weight_.upload(device, weight.data(), weight.size() * sizeof(float));
    linear_ = ClKernel(device, program, "graft_resize_taps_float");
  }

  void enqueue(ClLaunchContext& context, std::span<const ClTensor> inputs,
               std::span<const ClTensor> outputs) const override {
    if (plan_.total == 0) return;
    ClRange range;
    range.global[0] = static_cast<size_t>(plan_.total);
    if (plan_.nearest) {
      nearest_.of(element_size_)
          .launch(context.queue(), range, inputs[0].buffer, outputs[0].buffer, index_.buffer(), plan_.hi, plan_.wi,
                  plan_.ho, plan_.wo, plan_.total);
      return;
    }
    linear_.launch(context.queue(), range, inputs[0].buffer, outputs[0].buffer, index_.buffer(), weight_.buffer(),
                   plan_.hi, plan_.wi, plan_.ho, plan_.wo, static_cast<int32_t>(plan_.y.n),
                   static_cast<int32_t>(plan_.x.n), plan_.total);
  }

 private:
  ResizePlan plan_;
  size_t element_size_;
  dm::DeviceTable index_, weight_;
  dm::SizedKernels nearest_;
  ClKernel linear_;
};

template <bool Upsample>
std::string resize_support(const KernelRequest& request) {
  ResizePlan plan;
  return resize_plan(request, Upsample, &plan);
}

template <bool Upsample>
std::unique_ptr<NodeKernel> make_resize_kernel(const KernelRequest& request) {
  ResizePlan plan;
  resize_plan(request, Upsample, &plan);
  return std::make_unique<ResizeKernel>(std::move(plan), dtype_size(request.inputs[0].dtype));
}

}  // namespace

GRAFT_REGISTER_OPENCL_KERNEL(Resize, resize_support<false>, make_resize_kernel<false>);
GRAFT_REGISTER_OPENCL_KERNEL(Upsample, resize_support<true>, make_resize_kernel<true>);

}  // namespace graft::opencl

#endif  // GRAFT_HAVE_OPENCL_HEADERS
