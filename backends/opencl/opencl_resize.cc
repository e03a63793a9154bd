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
// and its taps are computed per axis on the host, at plan time, by the
// reference's own code (graft/ops/resize_taps.h): for each output row and column,
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

#include "graft/ops/resize_taps.h"

namespace graft::opencl {

namespace {

namespace dm = data_movement;

using ops::ResizeCoordinate;
using ops::ResizeMode;
using ops::ResizeSettings;
using ops::ResizeTaps;

/// The node's settings (graft/ops/resize_taps.h, the reference kernel's
/// reading), and what of them this kernel does not do: "" when it does all.
std::string read_settings(const ir::Node& node, bool upsample, ResizeSettings* s) {
  std::string why = ops::read_resize_settings(node.attributes, node.opset_version, upsample, s);
  if (!why.empty()) return "Resize " + why;
  if (s->mode == ResizeMode::cubic) return "Resize mode 'cubic'";
  if (s->coordinate == ResizeCoordinate::tf_crop_and_resize) return "Resize tf_crop_and_resize";
  if (s->exclude_outside && s->mode == ResizeMode::linear) return "Resize exclude_outside with linear";
  if (s->antialias) return "Resize antialias";
  if (s->policy != ops::ResizeAspectPolicy::stretch) return "Resize keep_aspect_ratio_policy";
  return {};
}

ResizeTaps compute_taps(const ResizeSettings& s, int64_t in, int64_t out, double scale) {
  return ops::compute_resize_taps(s, in, out, scale);
}

/// True when the taps leave the axis as it is: every output o reads input o
/// only, with weights summing to 1 (pytorch_half_pixel on an axis of 1 gives
/// two taps of 0.5 at the same point).
bool passes_through(const ResizeTaps& t, int64_t in, int64_t out) {
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
  ResizeTaps y, x;
  int64_t hi = 1, wi = 1, ho = 1, wo = 1, total = 0;
};

std::string resize_plan(const KernelRequest& request, bool upsample, ResizePlan* plan) {
  const ir::Node& node = request.node;
  const ClType& in = request.inputs[0];
  const ClType& out = request.outputs[0];
  std::string why = dm::check_movable(in.dtype);
  if (!why.empty()) return why;
  ResizeSettings s;
  why = read_settings(node, upsample, &s);
  if (!why.empty()) return why;
  if (in.dtype == DType::boolean) return "Resize of bool";
  if (s.mode == ResizeMode::linear && in.dtype != DType::float32)
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
  plan->nearest = s.mode == ResizeMode::nearest;
  if (plan->nearest) {
    for (const ResizeTaps* t : {&plan->y, &plan->x}) {
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
