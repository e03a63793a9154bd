// The OpenCL node-kernel plumbing (opencl_kernel.h): the per-device program
// cache (memory, then GRAFT_CACHE_DIR binaries), kernel launches, the kernel
// registry and the single-node test runner.
#include "opencl_kernel.h"

#ifdef GRAFT_HAVE_OPENCL_HEADERS

#include <map>

#include "graft/core/error.h"

namespace graft::opencl {

namespace {

void check(cl_int status, const char* what) {
  if (status != CL_SUCCESS) fail(ErrorKind::internal, what, " failed with OpenCL error ", status);
}

backend::DeviceKernelRegistry<NodeKernel>& registry() {
  static backend::DeviceKernelRegistry<NodeKernel> kernels("opencl", "OpenCL");
  return kernels;
}

}  // namespace

int64_t ClTensor::numel() const { return shape_numel(shape); }

// ---- ClDevice ---------------------------------------------------------------

ClDevice& ClDevice::get(int index) {
  static std::mutex mutex;
  static std::map<int, ClDevice*> devices;  // kept for the process, like the contexts
  std::lock_guard lock(mutex);
  auto it = devices.find(index);
  if (it != devices.end()) return *it->second;
  auto* device = new ClDevice(index);
  devices.emplace(index, device);
  return *device;
}

ClDevice::ClDevice(int index) : index_(index) {
  if (index < 0) fail(ErrorKind::invalid_argument, "no device opencl:", index);
  functions_ = &codegen::opencl_functions();
  device_ = codegen::opencl_device_id(static_cast<size_t>(index));
  context_ = codegen::opencl_context(static_cast<size_t>(index));
}

cl_program ClDevice::program(const std::string& source, const std::string& options) {
  std::string key = options + '\0' + source;
  std::lock_guard lock(mutex_);
  if (codegen::opencl_build_failures_injected())  // fails: no cached program may stand in
    return codegen::opencl_build_program(static_cast<size_t>(index_), source, options);
  for (auto& [k, p] : programs_)
    if (k == key) return p;
  cl_program program = codegen::opencl_build_program(static_cast<size_t>(index_), source, options);
  programs_.emplace_back(std::move(key), program);
  return program;
}

size_t ClDevice::programs() const {
  std::lock_guard lock(mutex_);
  return programs_.size();
}

// ---- ClKernel ---------------------------------------------------------------

ClKernel::ClKernel(ClDevice& device, cl_program program, const std::string& name)
    : device_(&device), mutex_(std::make_unique<std::mutex>()) {
  cl_int status = CL_SUCCESS;
  kernel_ = device.cl().create_kernel(program, name.c_str(), &status);
  if (status != CL_SUCCESS || !kernel_)
    fail(ErrorKind::internal, "OpenCL program has no kernel '", name, "' (error ", status, ")");
}

ClKernel::~ClKernel() {
  if (kernel_) device_->cl().release_kernel(kernel_);
}

ClKernel::ClKernel(ClKernel&& other) noexcept
    : device_(other.device_), kernel_(other.kernel_), mutex_(std::move(other.mutex_)) {
  other.kernel_ = nullptr;
}

ClKernel& ClKernel::operator=(ClKernel&& other) noexcept {
  if (this != &other) {
    if (kernel_) device_->cl().release_kernel(kernel_);
    device_ = other.device_;
    kernel_ = other.kernel_;
    mutex_ = std::move(other.mutex_);
    other.kernel_ = nullptr;
  }
  return *this;
}

void ClKernel::set_raw(cl_uint index, size_t size, const void* value) const {
  cl_int status = device_->cl().set_arg(kernel_, index, size, value);
  if (status != CL_SUCCESS) fail(ErrorKind::internal, "clSetKernelArg ", index, " failed with OpenCL error ", status);
}

void ClKernel::enqueue(cl_command_queue queue, const ClRange& range) const {
  if (range.dims < 1 || range.dims > 3) fail(ErrorKind::internal, "OpenCL launch of ", range.dims, " dimensions");
  for (uint32_t d = 0; d < range.dims; ++d)
    if (range.global[d] == 0) return;  // nothing to do
  bool local = range.local[0] != 0;
  check(device_->cl().enqueue_kernel(queue, kernel_, range.dims, nullptr, range.global.data(),
                                     local ? range.local.data() : nullptr, 0, nullptr, nullptr),
        "clEnqueueNDRangeKernel");
}

// ---- ClLaunchContext --------------------------------------------------------

ClLaunchContext::ClLaunchContext(ClDevice& device, backend::DeviceQueue& queue) : device_(device), queue_(queue) {}

ClLaunchContext::~ClLaunchContext() {
  backend::DeviceAPI& api = backend::device_api(DeviceType::opencl);
  for (backend::DeviceBuffer& buffer : scratch_) api.release_after(queue_, buffer);
}

cl_mem ClLaunchContext::scratch(size_t bytes) {
  backend::DeviceAPI& api = backend::device_api(DeviceType::opencl);
  scratch_.push_back(api.allocate(Device{DeviceType::opencl, device_.index()}, std::max<size_t>(bytes, 1)));
  return static_cast<cl_mem>(scratch_.back().handle());
}

ClTensor ClLaunchContext::scratch_tensor(DType dtype, const Shape& shape) {
  ClTensor t{nullptr, dtype, shape};
  t.buffer = scratch(t.nbytes());
  return t;
}

// ---- registry ---------------------------------------------------------------

bool register_kernel(ir::OpId op, KernelSupport support, KernelFactory factory) {
  return registry().add(op, support, factory);
}

const KernelRegistration* find_kernel(ir::OpId op) { return registry().find(op); }

KernelRequest make_kernel_request(const ir::Node& node) { return backend::make_device_kernel_request(node); }

std::string kernel_support(const ir::Node& node) { return registry().support_of(node); }

const char* cl_type_name(DType dtype) {
  switch (dtype) {
    case DType::float32: return "float";
    case DType::float64: return "double";
    case DType::float16: return "half";
    case DType::int8: return "char";
    case DType::uint8: return "uchar";
    case DType::boolean: return "uchar";
    case DType::int16: return "short";
    case DType::uint16: return "ushort";
    case DType::int32: return "int";
    case DType::uint32: return "uint";
    case DType::int64: return "long";
    case DType::uint64: return "ulong";
    default: fail(ErrorKind::unsupported, "no OpenCL C type for ", dtype_name(dtype));
  }
}

// ---- single-node runner -----------------------------------------------------

std::vector<Tensor> run_node_for_test(const ir::Node& node, std::span<const Tensor> inputs, int device_index) {
  std::string why = kernel_support(node);
  if (!why.empty()) fail(ErrorKind::unsupported, node.describe(), " cannot run on OpenCL: ", why);
  KernelRequest request = make_kernel_request(node);
  ClDevice& device = ClDevice::get(device_index);
  backend::DeviceAPI& api = backend::device_api(DeviceType::opencl);
  Device where{DeviceType::opencl, device_index};
  std::unique_ptr<backend::DeviceQueue> queue = api.create_queue(device_index);

  std::vector<backend::DeviceBuffer> buffers;
  std::vector<ClTensor> device_inputs;
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    const ClType& type = request.inputs[i];
    if (type.dtype == DType::undefined) {
      device_inputs.push_back({});
      continue;
    }
    const Tensor* host = request.constants[i] ? request.constants[i] : (i < inputs.size() ? &inputs[i] : nullptr);
    GRAFT_CHECK(host && host->is_defined(), node.describe(), ": no value for input ", i);
    ClTensor t{nullptr, type.dtype, type.shape};
    if (t.nbytes() > 0) {
      buffers.push_back(api.allocate(where, t.nbytes()));
      api.copy_to_device(*queue, buffers.back(), 0, host->raw_data(), t.nbytes());
      t.buffer = static_cast<cl_mem>(buffers.back().handle());
    }
    device_inputs.push_back(t);
  }
  std::unique_ptr<NodeKernel> kernel = find_kernel(node.op())->factory(request);
  kernel->compile(device);
  std::vector<ClTensor> device_outputs;
  for (size_t o = 0; o < request.outputs.size(); ++o) {
    ClTensor t{nullptr, request.outputs[o].dtype, request.outputs[o].shape};
    if (o == 0 && kernel->aliased_input() >= 0) {
      t.buffer = device_inputs.at(static_cast<size_t>(kernel->aliased_input())).buffer;
    } else if (t.nbytes() > 0) {
      buffers.push_back(api.allocate(where, t.nbytes()));
      t.buffer = static_cast<cl_mem>(buffers.back().handle());
    }
    device_outputs.push_back(t);
  }
  {
    ClLaunchContext context(device, *queue);
    kernel->enqueue(context, device_inputs, device_outputs);
  }
  std::vector<Tensor> outputs;
  for (const ClTensor& t : device_outputs) {
    Tensor host(t.dtype, t.shape);
    if (t.nbytes() > 0) {
      for (const backend::DeviceBuffer& b : buffers)
        if (b.handle() == t.buffer) api.copy_to_host(*queue, host.raw_data(), b, 0, t.nbytes());
    }
    outputs.push_back(host);
  }
  api.synchronize(*queue);
  return outputs;
}

}  // namespace graft::opencl

#endif  // GRAFT_HAVE_OPENCL_HEADERS
