// Concat, Split, Slice and Pad on the OpenCL device.
//
// What: joining tensors along an axis, cutting one apart, taking
// start:end:step ranges, and growing (or cropping) dimensions with a constant,
// reflected, edge or wrapped border.
// Why: these sit between the heavy kernels of most models (QKV splits, KV
// concatenation, padding before convolutions); on the host they would force a
// device round trip.
// How: Concat, Split and Slice are CopyPlans (opencl_data_movement.h): one
// plan per Concat input (its shape, written at its offset along the axis of
// the output) or Split output (read at its offset of the input); a Slice is
// one plan over the output with source strides step * input stride from the
// start offset (negative steps give negative strides). Plans contiguous on
// both sides, such as Concat and Split on axis 0, become buffer copies. Split
// sizes and Concat offsets come from the concrete input and output shapes;
// Slice's starts/ends/axes/steps and Pad's pads/axes/constant_value must be
// constants (or attributes at older opsets): a node whose ranges are computed
// at run time is refused. Pad runs graft_pad, one work item per output
// element mapping each coordinate back to the input by the mode.
#include "opencl_data_movement.h"

#ifdef GRAFT_HAVE_OPENCL_HEADERS

#include <algorithm>
#include <cstring>

namespace graft::opencl {

namespace {

namespace dm = data_movement;

std::string check_movable_rank(const ClType& t) {
  std::string why = dm::check_movable(t.dtype);
  if (!why.empty()) return why;
  if (t.shape.size() > static_cast<size_t>(dm::kMaxRank)) return "rank above 8";
  return {};
}

/// Runs a list of copy plans (one per input or output).
class PlansKernel final : public NodeKernel {
 public:
  struct Step {
    size_t input = 0, output = 0;
    dm::CopyPlan plan;
  };
  PlansKernel(std::vector<Step> steps, size_t element_size) : steps_(std::move(steps)), element_size_(element_size) {}

  void compile(ClDevice& device) override {
    copy_ = dm::SizedKernels(device, dm::program(device), "graft_strided_copy");
  }

  void enqueue(ClLaunchContext& context, std::span<const ClTensor> inputs,
               std::span<const ClTensor> outputs) const override {
    for (const Step& s : steps_)
      dm::enqueue_copy(context, copy_, inputs[s.input].buffer, outputs[s.output].buffer, element_size_, s.plan);
  }

 private:
  std::vector<Step> steps_;
  size_t element_size_;
  dm::SizedKernels copy_;
};

// ---- Concat -----------------------------------------------------------------

int64_t concat_axis_attr(const ir::Node& node) {
  if (node.opset_version < 4) return node.attributes.get_int("axis", 1);
  return node.attributes.get_int("axis", 0);
}

std::string concat_support(const KernelRequest& request) {
  const ClType& out = request.outputs[0];
  std::string why = check_movable_rank(out);
  if (!why.empty()) return why;
  if (out.shape.empty()) return "cannot concatenate scalars";
  if (request.node.opset_version >= 4 && !request.node.attributes.has("axis")) return "no axis attribute";
  const int64_t rank = static_cast<int64_t>(out.shape.size());
  auto axis = dm::normalized_axis(concat_axis_attr(request.node), rank);
  if (!axis) return "axis out of range";
  int64_t sum = 0;
  for (const ClType& in : request.inputs) {
    if (in.dtype != out.dtype || in.shape.size() != out.shape.size()) return "inputs of another dtype or rank";
    for (int64_t d = 0; d < rank; ++d)
      if (d != *axis && in.shape[static_cast<size_t>(d)] != out.shape[static_cast<size_t>(d)])
        return "inputs differ outside the axis";
    sum += in.shape[static_cast<size_t>(*axis)];
  }
  if (sum != out.shape[static_cast<size_t>(*axis)]) return "the output extent is not the inputs' sum";
  return {};
}

std::unique_ptr<NodeKernel> make_concat_kernel(const KernelRequest& request) {
  const ClType& out = request.outputs[0];
  const int64_t rank = static_cast<int64_t>(out.shape.size());
  const size_t axis = static_cast<size_t>(*dm::normalized_axis(concat_axis_attr(request.node), rank));
  const std::vector<int64_t> out_strides = dm::strides_of(out.shape);
  std::vector<PlansKernel::Step> steps;
  int64_t offset = 0;
  for (size_t i = 0; i < request.inputs.size(); ++i) {
    const ClType& in = request.inputs[i];
    PlansKernel::Step step;
    step.input = i;
    step.plan.shape = in.shape;
    step.plan.src_stride = dm::strides_of(in.shape);
    step.plan.dst_stride = out_strides;
    step.plan.dst_base = offset * out_strides[axis];
    offset += in.shape[axis];
    if (in.numel() > 0) steps.push_back(std::move(step));
  }
  return std::make_unique<PlansKernel>(std::move(steps), dtype_size(out.dtype));
}

// ---- Split ------------------------------------------------------------------

std::string split_support(const KernelRequest& request) {
  const ClType& in = request.inputs[0];
  std::string why = check_movable_rank(in);
  if (!why.empty()) return why;
  if (in.shape.empty()) return "cannot split a scalar";
  const int64_t rank = static_cast<int64_t>(in.shape.size());
  auto axis = dm::normalized_axis(request.node.attributes.get_int("axis", 0), rank);
  if (!axis) return "axis out of range";
  int64_t sum = 0;
  for (const ClType& out : request.outputs) {
    if (out.dtype != in.dtype || out.shape.size() != in.shape.size()) return "outputs of another dtype or rank";
    for (int64_t d = 0; d < rank; ++d)
      if (d != *axis && in.shape[static_cast<size_t>(d)] != out.shape[static_cast<size_t>(d)])
        return "outputs differ from the input outside the axis";
    sum += out.shape[static_cast<size_t>(*axis)];
  }
  if (sum != in.shape[static_cast<size_t>(*axis)]) return "the split sizes do not sum to the axis extent";
  return {};
}

std::unique_ptr<NodeKernel> make_split_kernel(const KernelRequest& request) {
  const ClType& in = request.inputs[0];
  const int64_t rank = static_cast<int64_t>(in.shape.size());
  const size_t axis = static_cast<size_t>(*dm::normalized_axis(request.node.attributes.get_int("axis", 0), rank));
  const std::vector<int64_t> in_strides = dm::strides_of(in.shape);
  std::vector<PlansKernel::Step> steps;
  int64_t offset = 0;
  for (size_t o = 0; o < request.outputs.size(); ++o) {
    const ClType& out = request.outputs[o];
    PlansKernel::Step step;
    step.output = o;
    step.plan.shape = out.shape;
    step.plan.src_stride = in_strides;
    step.plan.dst_stride = dm::strides_of(out.shape);
    step.plan.src_base = offset * in_strides[axis];
    offset += out.shape[axis];
    if (out.numel() > 0) steps.push_back(std::move(step));
  }
  return std::make_unique<PlansKernel>(std::move(steps), dtype_size(in.dtype));
}

// ---- Slice ------------------------------------------------------------------

struct Range {
  int64_t start = 0, step = 1, count = 0;
};

// ONNX normalization of one start/end/step against `extent` (as the reference kernel).
Range normalize_range(int64_t start, int64_t end, int64_t step, int64_t extent) {
  Range r;
  r.step = step;
  if (extent == 0) return r;
  if (start < 0) start = start < -extent ? -1 : start + extent;
  if (end < 0) end = end < -extent ? -1 : end + extent;
  if (step > 0) {
    start = std::clamp<int64_t>(start, 0, extent);
    end = std::clamp<int64_t>(end, 0, extent);
    r.count = end > start ? (end - start + step - 1) / step : 0;
  } else {
    start = std::clamp<int64_t>(start, 0, extent - 1);
    end = std::clamp<int64_t>(end, -1, extent - 1);
    r.count = start > end ? (start - end + (-step) - 1) / (-step) : 0;
  }
  r.start = start;
  return r;
}

/// The per-dimension ranges of a Slice node, or the reason it cannot run.
std::string slice_ranges(const KernelRequest& request, std::vector<Range>* ranges) {
  const ir::Node& node = request.node;
  const Shape& shape = request.inputs[0].shape;
  const int64_t rank = static_cast<int64_t>(shape.size());
  std::vector<int64_t> starts, ends, axes, steps;
  if (node.opset_version < 10) {
    starts = node.attributes.get_ints("starts", {});
    ends = node.attributes.get_ints("ends", {});
    axes = node.attributes.get_ints("axes", {});
  } else {
    auto s = dm::constant_ints(request, 1);
    if (!s) return "Slice starts not constant";
    auto e = dm::constant_ints(request, 2);
    if (!e) return "Slice ends not constant";
    starts = *s;
    ends = *e;
    if (request.inputs.size() > 3 && request.inputs[3].dtype != DType::undefined) {
      auto a = dm::constant_ints(request, 3);
      if (!a) return "Slice axes not constant";
      axes = *a;
      if (axes.empty() && !starts.empty()) return "Slice axes empty";
    }
    if (request.inputs.size() > 4 && request.inputs[4].dtype != DType::undefined) {
      auto st = dm::constant_ints(request, 4);
      if (!st) return "Slice steps not constant";
      steps = *st;
    }
  }
  const size_t n = starts.size();
  if (ends.size() != n) return "starts and ends differ in length";
  if (axes.empty())
    for (size_t i = 0; i < n; ++i) axes.push_back(static_cast<int64_t>(i));
  if (steps.empty()) steps.assign(n, 1);
  if (axes.size() != n || steps.size() != n) return "axes or steps differ in length from starts";
  ranges->assign(shape.size(), Range{});
  for (size_t d = 0; d < shape.size(); ++d) (*ranges)[d].count = shape[d];
  std::vector<bool> seen(shape.size(), false);
  for (size_t i = 0; i < n; ++i) {
    auto axis = dm::normalized_axis(axes[i], rank);
    if (!axis || seen[static_cast<size_t>(*axis)]) return "Slice axes out of range or repeated";
    seen[static_cast<size_t>(*axis)] = true;
    if (steps[i] == 0) return "Slice step 0";
    const size_t a = static_cast<size_t>(*axis);
    (*ranges)[a] = normalize_range(starts[i], ends[i], steps[i], shape[a]);
  }
  const Shape& out = request.outputs[0].shape;
  if (out.size() != shape.size()) return "the output rank differs from the input's";
  for (size_t d = 0; d < shape.size(); ++d)
    if ((*ranges)[d].count != out[d]) return "the output shape differs from the slice's";
  return {};
}

std::string slice_support(const KernelRequest& request) {
  std::string why = check_movable_rank(request.inputs[0]);
  if (!why.empty()) return why;
  std::vector<Range> ranges;
  return slice_ranges(request, &ranges);
}

std::unique_ptr<NodeKernel> make_slice_kernel(const KernelRequest& request) {
  std::vector<Range> ranges;
  slice_ranges(request, &ranges);
  const ClType& in = request.inputs[0];
  const std::vector<int64_t> in_strides = dm::strides_of(in.shape);
  PlansKernel::Step step;
  for (size_t d = 0; d < in.shape.size(); ++d) {
    step.plan.shape.push_back(ranges[d].count);
    step.plan.src_stride.push_back(ranges[d].step * in_strides[d]);
    step.plan.src_base += ranges[d].start * in_strides[d];
  }
  step.plan.dst_stride = dm::strides_of(step.plan.shape);
  std::vector<PlansKernel::Step> steps;
  steps.push_back(std::move(step));
  return std::make_unique<PlansKernel>(std::move(steps), dtype_size(in.dtype));
}

// ---- Pad --------------------------------------------------------------------

/// Must match PadGeometry in the OpenCL source.
struct PadGeometry {
  int64_t out_shape[dm::kMaxRank];
  int64_t in_shape[dm::kMaxRank];
  int64_t in_stride[dm::kMaxRank];
  int64_t begin[dm::kMaxRank];
  int64_t total;
  int32_t rank;
  int32_t mode;
};

/// The bytes of `value` converted to T (as the reference converts Pad's value attribute).
template <typename T>
uint64_t bits_of(double value) {
  const T x = static_cast<T>(value);
  uint64_t bits = 0;
  std::memcpy(&bits, &x, sizeof(T));
  return bits;
}

struct PadSpec {
  PadGeometry geometry{};
  uint64_t fill = 0;  // the padding value's bytes
};

std::string pad_spec(const KernelRequest& request, PadSpec* spec) {
  const ir::Node& node = request.node;
  const ClType& in = request.inputs[0];
  const int64_t rank = static_cast<int64_t>(in.shape.size());
  const std::string mode = node.attributes.get_string("mode", "constant");
  int32_t mode_id = 0;
  if (mode == "constant")
    mode_id = 0;
  else if (mode == "reflect")
    mode_id = 1;
  else if (mode == "edge")
    mode_id = 2;
  else if (mode == "wrap")
    mode_id = 3;
  else
    return "Pad mode '" + mode + "'";
  std::vector<int64_t> pads, axes;
  if (node.opset_version < 11) {
    pads = node.attributes.has("pads") ? node.attributes.get_ints("pads") : node.attributes.get_ints("paddings", {});
  } else {
    auto p = dm::constant_ints(request, 1);
    if (!p) return "Pad pads not constant";
    pads = *p;
    if (node.opset_version >= 18 && request.inputs.size() > 3 && request.inputs[3].dtype != DType::undefined) {
      auto a = dm::constant_ints(request, 3);
      if (!a) return "Pad axes not constant";
      axes = *a;
    }
  }
  if (axes.empty())
    for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
  const size_t n = axes.size();
  if (pads.size() != 2 * n) return "pads do not match the axes";
  std::vector<int64_t> begin(static_cast<size_t>(rank), 0), end(static_cast<size_t>(rank), 0);
  for (size_t i = 0; i < n; ++i) {
    auto axis = dm::normalized_axis(axes[i], rank);
    if (!axis) return "Pad axes out of range";
    begin[static_cast<size_t>(*axis)] = pads[i];
    end[static_cast<size_t>(*axis)] = pads[i + n];
  }
  const Shape& out = request.outputs[0].shape;
  if (out.size() != in.shape.size()) return "the output rank differs from the input's";
  const std::vector<int64_t> strides = dm::strides_of(in.shape);
  PadGeometry& g = spec->geometry;
  g.rank = static_cast<int32_t>(rank);
  g.mode = mode_id;
  g.total = dm::numel_of(out);
  for (size_t d = 0; d < in.shape.size(); ++d) {
    if (in.shape[d] + begin[d] + end[d] != out[d]) return "the output shape differs from the padding's";
    if (mode_id != 0 && in.shape[d] == 0 && out[d] > 0) return "cannot pad an empty dimension in this mode";
    g.out_shape[d] = out[d];
    g.in_shape[d] = in.shape[d];
    g.in_stride[d] = strides[d];
    g.begin[d] = begin[d];
  }
  // The padding value.
  spec->fill = 0;
  const size_t es = dtype_size(in.dtype);
  if (node.opset_version >= 11) {
    if (request.inputs.size() > 2 && request.inputs[2].dtype != DType::undefined && request.inputs[2].numel() > 0) {
      const Tensor* v = request.constants[2];
      if (!v) return "Pad constant_value not constant";
      if (v->dtype() != in.dtype) return "Pad constant_value of another dtype";
      std::memcpy(&spec->fill, v->raw_data(), es);
    }
  } else {
    const double value = node.attributes.get_float("value", 0.0f);
    switch (in.dtype) {
      case DType::float32:
        spec->fill = bits_of<float>(value);
        break;
      case DType::float64:
        spec->fill = bits_of<double>(value);
        break;
      case DType::boolean:
        spec->fill = bits_of<bool>(value);
        break;
      case DType::int8:
        spec->fill = bits_of<int8_t>(value);
        break;
      case DType::uint8:
        spec->fill = bits_of<uint8_t>(value);
        break;
      case DType::int16:
        spec->fill = bits_of<int16_t>(value);
        break;
      case DType::uint16:
        spec->fill = bits_of<uint16_t>(value);
        break;
      case DType::int32:
        spec->fill = bits_of<int32_t>(value);
        break;
      case DType::uint32:
        spec->fill = bits_of<uint32_t>(value);
        break;
      case DType::int64:
        spec->fill = bits_of<int64_t>(value);
        break;
      case DType::uint64:
        spec->fill = bits_of<uint64_t>(value);
        break;
      default:
        if (value != 0) return "a Pad value attribute for " + std::string(dtype_name(in.dtype));
    }
  }
  return {};
}

std::string pad_support(const KernelRequest& request) {
  std::string why = check_movable_rank(request.inputs[0]);
  if (!why.empty()) return why;
  PadSpec spec;
  return pad_spec(request, &spec);
}

class PadKernel final : public NodeKernel {
 public:
  PadKernel(PadSpec spec, size_t element_size) : spec_(spec), element_size_(element_size) {}

  void compile(ClDevice& device) override { pad_ = dm::SizedKernels(device, dm::program(device), "graft_pad"); }

  void enqueue(ClLaunchContext& context, std::span<const ClTensor> inputs,
               std::span<const ClTensor> outputs) const override {
    if (spec_.geometry.total == 0) return;
    ClRange range;
    range.global[0] = static_cast<size_t>(spec_.geometry.total);
    pad_.of(element_size_)
        .launch(context.queue(), range, inputs[0].buffer, outputs[0].buffer, spec_.geometry, spec_.fill);
  }

 private:
  PadSpec spec_;
  size_t element_size_;
  dm::SizedKernels pad_;
};

std::unique_ptr<NodeKernel> make_pad_kernel(const KernelRequest& request) {
  PadSpec spec;
  pad_spec(request, &spec);
  return std::make_unique<PadKernel>(spec, dtype_size(request.inputs[0].dtype));
}

}  // namespace

GRAFT_REGISTER_OPENCL_KERNEL(Concat, concat_support, make_concat_kernel);
GRAFT_REGISTER_OPENCL_KERNEL(Split, split_support, make_split_kernel);
GRAFT_REGISTER_OPENCL_KERNEL(Slice, slice_support, make_slice_kernel);
GRAFT_REGISTER_OPENCL_KERNEL(Pad, pad_support, make_pad_kernel);

}  // namespace graft::opencl

#endif  // GRAFT_HAVE_OPENCL_HEADERS
