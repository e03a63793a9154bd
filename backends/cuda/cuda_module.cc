// The CUDA module (cuda_module.h).
#include "cuda_module.h"

#include <istream>

#include "graft/backend/device_tensor.h"

namespace graft::cuda {

namespace {

constexpr std::string_view kModuleMagic = "GCUD";

std::unique_ptr<backend::CompiledModule> load_cuda_module(std::istream& in, const ir::Graph& subgraph,
                                                          std::span<const Tensor> tensors) {
  const int device = backend::DeviceModule::load_device_index(in, tensors, kModuleMagic, "cuda");
  return std::make_unique<CudaModule>(subgraph, device);
}

GRAFT_REGISTER_MODULE_LOADER("cuda", load_cuda_module);

CuTensor view_of(const Tensor& t) {
  CuTensor view{0, t.dtype(), t.shape()};
  if (t.is_defined() && t.nbytes() > 0) view.address = reinterpret_cast<uintptr_t>(backend::device_handle(t));
  return view;
}

}  // namespace

CudaModule::CudaModule(const ir::Graph& subgraph, int device_index)
    : DeviceModule(subgraph, Device{DeviceType::cuda, device_index}, kModuleMagic) {
  create_kernels();
}

std::string CudaModule::kernel_support(const ir::Node& node) const { return cuda::kernel_support(node); }

std::unique_ptr<backend::DeviceNodeKernel> CudaModule::create_kernel(const ir::Node& node) const {
  return find_kernel(node.op())->factory(make_kernel_request(node));
}

void CudaModule::compile_kernel(backend::DeviceNodeKernel& kernel) const {
  static_cast<NodeKernel&>(kernel).compile(device().id);
}

std::unique_ptr<backend::DeviceKernelLauncher> CudaModule::start_launches(backend::DeviceQueue& queue) const {
  return std::make_unique<backend::ViewLauncher<CudaLaunchContext, CuTensor, NodeKernel, view_of>>(device().id, queue);
}

}  // namespace graft::cuda
