// The OpenCL module (opencl_module.h).
#include "opencl_module.h"

#ifdef GRAFT_HAVE_OPENCL_HEADERS

#include <istream>

#include "graft/backend/device_tensor.h"

namespace graft::opencl {

namespace {

constexpr std::string_view kModuleMagic = "GOCL";

std::unique_ptr<backend::CompiledModule> load_opencl_module(std::istream& in, const ir::Graph& subgraph,
                                                            std::span<const Tensor> tensors) {
  const int device = backend::DeviceModule::load_device_index(in, tensors, kModuleMagic, "opencl");
  return std::make_unique<OpenClModule>(subgraph, device);
}

GRAFT_REGISTER_MODULE_LOADER("opencl", load_opencl_module);

ClTensor view_of(const Tensor& t) {
  ClTensor view{nullptr, t.dtype(), t.shape()};
  if (t.is_defined() && t.nbytes() > 0) view.buffer = static_cast<cl_mem>(backend::device_handle(t));
  return view;
}

}  // namespace

OpenClModule::OpenClModule(const ir::Graph& subgraph, int device_index)
    : DeviceModule(subgraph, Device{DeviceType::opencl, device_index}, kModuleMagic) {
  create_kernels();
}

std::string OpenClModule::kernel_support(const ir::Node& node) const { return opencl::kernel_support(node); }

std::unique_ptr<backend::DeviceNodeKernel> OpenClModule::create_kernel(const ir::Node& node) const {
  return find_kernel(node.op())->factory(make_kernel_request(node));
}

void OpenClModule::compile_kernel(backend::DeviceNodeKernel& kernel) const {
  static_cast<NodeKernel&>(kernel).compile(ClDevice::get(device().id));
}

std::unique_ptr<backend::DeviceKernelLauncher> OpenClModule::start_launches(backend::DeviceQueue& queue) const {
  return std::make_unique<backend::ViewLauncher<ClLaunchContext, ClTensor, NodeKernel, view_of>>(ClDevice::get(device().id), queue);
}

}  // namespace graft::opencl

#endif  // GRAFT_HAVE_OPENCL_HEADERS
