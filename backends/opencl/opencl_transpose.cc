// Transpose on the OpenCL device: any permutation of a tensor of rank <= 8.
//
// What: out[c_0, ..., c_{r-1}] = in[c at the input positions perm names].
// Why: attention layers transpose every head ([B,S,H,D] -> [B,H,S,D]), and a
// round trip through the host for it would dwarf the matmuls around it.
// How: the transpose becomes a CopyPlan over the output shape whose source
// stride for output dim k is the input stride of dim perm[k]. The plan drops
// extent-1 dims and merges runs that stay adjacent on both sides, so e.g.
// [2,8,4,16] perm (0,2,1,3) is a 3-D copy of rows of 16 elements, and a
// permutation that keeps the order becomes one buffer copy. Elements move by
// their byte size, so one kernel per size serves every dtype.
#include "opencl_data_movement.h"

#ifdef GRAFT_HAVE_OPENCL_HEADERS

#include <algorithm>

namespace graft::opencl {

namespace {

namespace dm = data_movement;

std::vector<int64_t> transpose_perm(const KernelRequest& request) {
  const size_t rank = request.inputs[0].shape.size();
  if (request.node.attributes.has("perm")) return request.node.attributes.get_ints("perm");
  std::vector<int64_t> perm(rank);
  for (size_t i = 0; i < rank; ++i) perm[i] = static_cast<int64_t>(rank - 1 - i);
  return perm;
}

std::string transpose_support(const KernelRequest& request) {
  const ClType& in = request.inputs[0];
  std::string why = dm::check_movable(in.dtype);
  if (!why.empty()) return why;
  if (in.shape.size() > static_cast<size_t>(dm::kMaxRank)) return "rank above 8";
  std::vector<int64_t> perm = transpose_perm(request);
  if (perm.size() != in.shape.size()) return "perm does not match the input rank";
  std::vector<bool> seen(perm.size(), false);
  for (int64_t& p : perm) {
    auto axis = dm::normalized_axis(p, static_cast<int64_t>(perm.size()));
    if (!axis || seen[static_cast<size_t>(*axis)]) return "perm is not a permutation";
    seen[static_cast<size_t>(*axis)] = true;
  }
  return {};
}

class TransposeKernel final : public NodeKernel {
 public:
  TransposeKernel(dm::CopyPlan plan, size_t element_size) : plan_(std::move(plan)), element_size_(element_size) {}

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

std::unique_ptr<NodeKernel> make_transpose_kernel(const KernelRequest& request) {
  const ClType& in = request.inputs[0];
  std::vector<int64_t> perm = transpose_perm(request);
  const int64_t rank = static_cast<int64_t>(in.shape.size());
  const std::vector<int64_t> in_strides = dm::strides_of(in.shape);
  dm::CopyPlan plan;
  for (int64_t k = 0; k < rank; ++k) {
    const size_t p = static_cast<size_t>(*dm::normalized_axis(perm[static_cast<size_t>(k)], rank));
    plan.shape.push_back(in.shape[p]);
    plan.src_stride.push_back(in_strides[p]);
  }
  plan.dst_stride = dm::strides_of(plan.shape);
  return std::make_unique<TransposeKernel>(std::move(plan), dtype_size(in.dtype));
}

}  // namespace

GRAFT_REGISTER_OPENCL_KERNEL(Transpose, transpose_support, make_transpose_kernel);

}  // namespace graft::opencl

#endif  // GRAFT_HAVE_OPENCL_HEADERS
