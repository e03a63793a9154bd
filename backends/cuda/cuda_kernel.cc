// The CUDA node-kernel plumbing (cuda_kernel.h): NVRTC programs kept per
// source and architecture, modules loaded per device, launches on a stream,
// the kernel and source registries and the single-node test runner.
#include "cuda_kernel.h"

#include <algorithm>
#include <map>

#include "graft/codegen/cuda_driver.h"
#include "graft/codegen/cuda_emitter.h"
#include "graft/core/error.h"
#include "graft/ir/op_id.h"

namespace graft::cuda {

namespace {

int64_t count(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

/// Why no kernel can be compiled here ("" when NVRTC is there).
std::string nvrtc_missing() {
  std::string why = codegen::nvrtc_unavailable_reason();
  return why.empty() ? why : "no NVRTC to compile the kernels: " + why;
}

backend::DeviceKernelRegistry<NodeKernel>& registry() {
  static backend::DeviceKernelRegistry<NodeKernel> kernels("cuda", "CUDA", nvrtc_missing);
  return kernels;
}

std::vector<std::pair<std::string, const char*>>& sources() {
  static std::vector<std::pair<std::string, const char*>> list;
  return list;
}

}  // namespace

int64_t CuTensor::numel() const { return count(shape); }

std::string target_architecture() {
  if (codegen::cuda_device_unavailable_reason().empty()) return codegen::cuda_device_architecture();
  return "compute_75";
}

uint64_t blocks_for(int64_t n, unsigned threads) {
  int64_t blocks = (n + threads - 1) / threads;
  return static_cast<uint64_t>(std::clamp<int64_t>(blocks, 1, (int64_t{1} << 31) - 1));
}

// ---- programs ---------------------------------------------------------------

std::shared_ptr<const std::string> program_ptx(const char* source, const std::string& architecture) {
  static std::mutex mutex;
  static std::map<std::pair<const char*, std::string>, std::shared_ptr<const std::string>> cache;
  std::lock_guard lock(mutex);
  auto key = std::make_pair(source, architecture);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  auto ptx = std::make_shared<const std::string>(codegen::compile_cuda_to_ptx(source, "graft_cuda_library.cu", architecture));
  cache.emplace(key, ptx);
  return ptx;
}

CudaFunction::CudaFunction(const char* source, const std::string& name, int device) : device_(device) {
  static std::mutex mutex;
  static std::map<std::pair<const char*, int>, void*> modules;  // kept for the process
  const codegen::CudaDriver& cu = codegen::cuda_driver();
  std::shared_ptr<const std::string> ptx = program_ptx(source, target_architecture());
  std::lock_guard lock(mutex);
  cu.make_current(device);
  void*& module = modules[{source, device}];
  if (!module) cu.check(cu.module_load_data(&module, ptx->c_str()), "cuModuleLoadData");
  if (cu.module_get_function(&function_, module, name.c_str()) != 0 || !function_)
    fail(ErrorKind::internal, "the CUDA program has no kernel '", name, "'");
}

void CudaFunction::launch_raw(void* stream, uint64_t blocks, unsigned threads, void** params) const {
  const codegen::CudaDriver& cu = codegen::cuda_driver();
  cu.make_current(device_);
  // Grids beyond 2^31 - 1 blocks in x are folded into y (kernels use the
  // flat block index of graft_block()).
  unsigned x = static_cast<unsigned>(std::min<uint64_t>(blocks, 65535u * 512u));
  unsigned y = static_cast<unsigned>((blocks + x - 1) / x);
  cu.check(cu.launch_kernel(function_, x, y, 1, threads, 1, 1, 0, stream, params, nullptr), "cuLaunchKernel");
}

bool register_source(const char* name, const char* source) {
  sources().emplace_back(name, source);
  return true;
}

std::vector<std::pair<std::string, const char*>> registered_sources() { return sources(); }

// ---- launch context ---------------------------------------------------------

CudaLaunchContext::CudaLaunchContext(int device, backend::DeviceQueue& queue) : device_(device), queue_(queue) {}

CudaLaunchContext::~CudaLaunchContext() {
  backend::DeviceAPI& api = backend::device_api(DeviceType::cuda);
  for (backend::DeviceBuffer& buffer : scratch_) api.release_after(queue_, buffer);
}

uint64_t CudaLaunchContext::scratch(size_t bytes) {
  backend::DeviceAPI& api = backend::device_api(DeviceType::cuda);
  scratch_.push_back(api.allocate(Device{DeviceType::cuda, device_}, std::max<size_t>(bytes, 1)));
  return reinterpret_cast<uintptr_t>(scratch_.back().handle());
}

// ---- registry ---------------------------------------------------------------

bool register_kernel(ir::OpId op, KernelSupport support, KernelFactory factory) {
  return registry().add(op, support, factory);
}

const KernelRegistration* find_kernel(ir::OpId op) { return registry().find(op); }

KernelRequest make_kernel_request(const ir::Node& node) { return backend::make_device_kernel_request(node); }

std::string kernel_support(const ir::Node& node) { return registry().support_of(node); }

// ---- single-node runner -----------------------------------------------------

std::vector<Tensor> run_node_for_test(const ir::Node& node, std::span<const Tensor> inputs, int device_index) {
  std::string why = kernel_support(node);
  if (!why.empty()) fail(ErrorKind::unsupported, node.describe(), " cannot run on CUDA: ", why);
  KernelRequest request = make_kernel_request(node);
  backend::DeviceAPI& api = backend::device_api(DeviceType::cuda);
  Device where{DeviceType::cuda, device_index};
  std::unique_ptr<backend::DeviceQueue> queue = api.create_queue(device_index);
  std::vector<backend::DeviceBuffer> buffers;
  auto address = [](const backend::DeviceBuffer& b) { return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(b.handle())); };
  std::vector<CuTensor> device_inputs;
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    const CuType& type = request.inputs[i];
    if (type.dtype == DType::undefined) {
      device_inputs.push_back({});
      continue;
    }
    const Tensor* host = request.constants[i] ? request.constants[i] : (i < inputs.size() ? &inputs[i] : nullptr);
    GRAFT_CHECK(host && host->is_defined(), node.describe(), ": no value for input ", i);
    CuTensor t{0, type.dtype, type.shape};
    if (t.nbytes() > 0) {
      buffers.push_back(api.allocate(where, t.nbytes()));
      api.copy_to_device(*queue, buffers.back(), 0, host->raw_data(), t.nbytes());
      t.address = address(buffers.back());
    }
    device_inputs.push_back(t);
  }
  std::unique_ptr<NodeKernel> kernel = find_kernel(node.op())->factory(request);
  kernel->compile(device_index);
  std::vector<CuTensor> device_outputs;
  for (size_t o = 0; o < request.outputs.size(); ++o) {
    CuTensor t{0, request.outputs[o].dtype, request.outputs[o].shape};
    if (o == 0 && kernel->aliased_input() >= 0) {
      t.address = device_inputs.at(static_cast<size_t>(kernel->aliased_input())).address;
    } else if (t.nbytes() > 0) {
      buffers.push_back(api.allocate(where, t.nbytes()));
      t.address = address(buffers.back());
    }
    device_outputs.push_back(t);
  }
  {
    CudaLaunchContext context(device_index, *queue);
    kernel->enqueue(context, device_inputs, device_outputs);
  }
  std::vector<Tensor> outputs;
  for (const CuTensor& t : device_outputs) {
    Tensor host(t.dtype, t.shape);
    if (t.nbytes() > 0)
      for (const backend::DeviceBuffer& b : buffers)
        if (address(b) == t.address) api.copy_to_host(*queue, host.raw_data(), b, 0, t.nbytes());
    outputs.push_back(host);
  }
  api.synchronize(*queue);
  return outputs;
}

}  // namespace graft::cuda
