// Reshape, Flatten, Squeeze and Unsqueeze on the OpenCL device: views.
//
// What: these ops keep every byte of the input in place and only name another
// shape, so their kernels do no work at all.
// Why: a copy would cost a full read and write of the tensor for nothing.
// How: aliased_input() is 0, so the caller passes the input's buffer as the
// output's, and enqueue() queues nothing. The output shape is the concrete one
// the plan inferred (KernelRequest::outputs), so the shape/axes inputs need not
// be read here; a node is refused only when its output could not be that
// view (another dtype or element count).
#include "opencl_data_movement.h"

#ifdef GRAFT_HAVE_OPENCL_HEADERS

namespace graft::opencl {

namespace {

class ViewKernel final : public NodeKernel {
 public:
  void compile(ClDevice&) override {}
  void enqueue(ClLaunchContext&, std::span<const ClTensor>, std::span<const ClTensor>) const override {}
  int aliased_input() const override { return 0; }
};

std::string view_support(const KernelRequest& request) {
  if (request.inputs.empty() || request.outputs.size() != 1) return "not a single-output view";
  const ClType& in = request.inputs[0];
  const ClType& out = request.outputs[0];
  std::string why = data_movement::check_movable(in.dtype);
  if (!why.empty()) return why;
  if (in.dtype != out.dtype) return "the output dtype differs from the input's";
  if (in.numel() != out.numel()) return "the output has another element count than the input";
  return {};
}

std::unique_ptr<NodeKernel> make_view_kernel(const KernelRequest&) { return std::make_unique<ViewKernel>(); }

}  // namespace

GRAFT_REGISTER_OPENCL_KERNEL(Reshape, view_support, make_view_kernel);
GRAFT_REGISTER_OPENCL_KERNEL(Flatten, view_support, make_view_kernel);
GRAFT_REGISTER_OPENCL_KERNEL(Squeeze, view_support, make_view_kernel);
GRAFT_REGISTER_OPENCL_KERNEL(Unsqueeze, view_support, make_view_kernel);

}  // namespace graft::opencl

#endif  // GRAFT_HAVE_OPENCL_HEADERS
