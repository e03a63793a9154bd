// Gather, Expand and Tile on the OpenCL device.
//
// What: Gather picks slices of the data along an axis by an int32/int64 index
// tensor (negative indices count from the end); Expand broadcasts a tensor to
// a larger shape; Tile repeats it along every dimension.
// Why: embedding lookups (Gather on axis 0), attention-mask broadcasts and
// position tiling sit right at the start of transformer graphs.
// How: Gather views the data as [outer, extent, inner] and the output as
// [outer, count, inner], one work item per output element reading its index
// on the device (the indices may be a graph input or a constant; constant
// indices are range-checked at plan time, and a run-time index still out of
// range after the negative shift is clamped on the device, where the
// reference kernel would fail). Expand and Tile are CopyPlans over the
// output: Expand with source stride 0 along broadcast dimensions, Tile by
// splitting each output dimension into (repeat, input extent) with source
// strides (0, input stride). Both take the concrete output shape, so the
// shape/repeats inputs need not be read.
#include "opencl_data_movement.h"

#ifdef GRAFT_HAVE_OPENCL_HEADERS

namespace graft::opencl {

namespace {

namespace dm = data_movement;

// ---- Gather -----------------------------------------------------------------

std::string gather_support(const KernelRequest& request) {
  const ClType& data = request.inputs[0];
  const ClType& indices = request.inputs[1];
  std::string why = dm::check_movable(data.dtype);
  if (!why.empty()) return why;
  if (indices.dtype != DType::int32 && indices.dtype != DType::int64) return "Gather indices not int32/int64";
  if (data.shape.empty()) return "Gather of a scalar";
  const int64_t rank = static_cast<int64_t>(data.shape.size());
  auto axis = dm::normalized_axis(request.node.attributes.get_int("axis", 0), rank);
  if (!axis) return "axis out of range";
  const int64_t extent = data.shape[static_cast<size_t>(*axis)];
  if (auto constant = dm::constant_ints(request, 1)) {
    for (int64_t i : *constant)
      if (i < -extent || i >= extent) return "Gather index out of range";
  }
  if (extent == 0 && request.outputs[0].numel() > 0) return "Gather from an empty axis";
  return {};
}

class GatherKernel final : public NodeKernel {
 public:
  GatherKernel(int64_t count, int64_t inner, int64_t extent, int64_t total, size_t element_size, bool wide_indices)
      : count_(count),
        inner_(inner),
        extent_(extent),
        total_(total),
        element_size_(element_size),
        wide_indices_(wide_indices) {}

  void compile(ClDevice& device) override {
    gather_ = dm::SizedKernels(device, dm::program(device), wide_indices_ ? "graft_gather64" : "graft_gather32");
  }

  void enqueue(ClLaunchContext& context, std::span<const ClTensor> inputs,
               std::span<const ClTensor> outputs) const override {
    if (total_ == 0) return;
    ClRange range;
    range.global[0] = static_cast<size_t>(total_);
    gather_.of(element_size_)
        .launch(context.queue(), range, inputs[0].buffer, inputs[1].buffer, outputs[0].buffer, count_, inner_, extent_,
                total_);
  }

 private:
  int64_t count_, inner_, extent_, total_;
  size_t element_size_;
  bool wide_indices_;
  dm::SizedKernels gather_;
};

std::unique_ptr<NodeKernel> make_gather_kernel(const KernelRequest& request) {
  const ClType& data = request.inputs[0];
  const int64_t rank = static_cast<int64_t>(data.shape.size());
  const int64_t axis = *dm::normalized_axis(request.node.attributes.get_int("axis", 0), rank);
  int64_t inner = 1;
  for (int64_t d = axis + 1; d < rank; ++d) inner *= data.shape[static_cast<size_t>(d)];
  return std::make_unique<GatherKernel>(request.inputs[1].numel(), inner, data.shape[static_cast<size_t>(axis)],
                                        request.outputs[0].numel(), dtype_size(data.dtype),
                                        request.inputs[1].dtype == DType::int64);
}

// ---- Expand and Tile ----------------------------------------------------------

class CopyKernel final : public NodeKernel {
 public:
  CopyKernel(dm::CopyPlan plan, size_t element_size) : plan_(std::move(plan)), element_size_(element_size) {}

  void compile(ClDevice& device) override {
    copy_ = dm::SizedKernels(device, dm::program(device), "graft_strided_copy");
  }

  void enqueue(ClLaunchContext& context, std::span<const ClTensor> inputs,
               std::span<const ClTensor> outputs) const override {
    dm::enqueue_copy(context, copy_, inputs[0].buffer, outputs[0].buffer, element_size_, plan_);
  }

 private:
  dm::CopyPlan plan_;
  size_t element_size_;
  dm::SizedKernels copy_;
};

/// Expand's plan, or the reason there is none.
std::string expand_plan(const KernelRequest& request, dm::CopyPlan* plan) {
  const ClType& in = request.inputs[0];
  const ClType& out = request.outputs[0];
  std::string why = dm::check_movable(in.dtype);
  if (!why.empty()) return why;
  if (out.dtype != in.dtype) return "the output dtype differs from the input's";
  if (out.shape.size() > static_cast<size_t>(dm::kMaxRank)) return "rank above 8";
  if (out.shape.size() < in.shape.size()) return "the output rank is below the input's";
  const size_t lead = out.shape.size() - in.shape.size();
  const std::vector<int64_t> in_strides = dm::strides_of(in.shape);
  *plan = dm::CopyPlan{};
  plan->shape = out.shape;
  plan->dst_stride = dm::strides_of(out.shape);
  for (size_t d = 0; d < out.shape.size(); ++d) {
    if (d < lead) {
      plan->src_stride.push_back(0);
      continue;
    }
    const int64_t e = in.shape[d - lead];
    if (e == out.shape[d])
      plan->src_stride.push_back(in_strides[d - lead]);
    else if (e == 1)
      plan->src_stride.push_back(0);
    else
      return "the output shape is not a broadcast of the input's";
  }
  plan->simplify();
  if (plan->shape.size() > static_cast<size_t>(dm::kMaxRank)) return "rank above 8";
  return {};
}

std::string expand_support(const KernelRequest& request) {
  dm::CopyPlan plan;
  return expand_plan(request, &plan);
}

std::unique_ptr<NodeKernel> make_expand_kernel(const KernelRequest& request) {
  dm::CopyPlan plan;
  expand_plan(request, &plan);
  return std::make_unique<CopyKernel>(std::move(plan), dtype_size(request.inputs[0].dtype));
}

/// Tile's plan: each output dimension d as (repeat, input extent), or the reason there is none.
std::string tile_plan(const KernelRequest& request, dm::CopyPlan* plan) {
  const ClType& in = request.inputs[0];
  const ClType& out = request.outputs[0];
  std::string why = dm::check_movable(in.dtype);
  if (!why.empty()) return why;
  if (out.dtype != in.dtype || out.shape.size() != in.shape.size()) return "the output type differs from the input's";
  const std::vector<int64_t> in_strides = dm::strides_of(in.shape);
  const std::vector<int64_t> out_strides = dm::strides_of(out.shape);
  *plan = dm::CopyPlan{};
  for (size_t d = 0; d < in.shape.size(); ++d) {
    const int64_t e = in.shape[d];
    if (e == 0) {
      if (out.shape[d] != 0) return "the output shape is not a tiling of the input's";
      plan->shape = {0};
      plan->src_stride = {1};
      plan->dst_stride = {1};
      return {};
    }
    if (out.shape[d] % e != 0) return "the output shape is not a tiling of the input's";
    plan->shape.push_back(out.shape[d] / e);
    plan->src_stride.push_back(0);
    plan->dst_stride.push_back(e * out_strides[d]);
    plan->shape.push_back(e);
    plan->src_stride.push_back(in_strides[d]);
    plan->dst_stride.push_back(out_strides[d]);
  }
  plan->simplify();
  if (plan->shape.size() > static_cast<size_t>(dm::kMaxRank)) return "a tiling of more than 8 dimensions";
  return {};
}

std::string tile_support(const KernelRequest& request) {
  dm::CopyPlan plan;
  return tile_plan(request, &plan);
}

std::unique_ptr<NodeKernel> make_tile_kernel(const KernelRequest& request) {
  dm::CopyPlan plan;
  tile_plan(request, &plan);
  return std::make_unique<CopyKernel>(std::move(plan), dtype_size(request.inputs[0].dtype));
}

}  // namespace

GRAFT_REGISTER_OPENCL_KERNEL(Gather, gather_support, make_gather_kernel);
GRAFT_REGISTER_OPENCL_KERNEL(Expand, expand_support, make_expand_kernel);
GRAFT_REGISTER_OPENCL_KERNEL(Tile, tile_support, make_tile_kernel);

}  // namespace graft::opencl

#endif  // GRAFT_HAVE_OPENCL_HEADERS
