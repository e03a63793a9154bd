// The OpenCL runtime loader (opencl_runtime.h): dlopen of the ICD loader,
// the entry points by name, every platform's devices with their facts, and
// one context per device made on first use. Shared by the OpenCL emitter
// (its kernels) and the OpenCL DeviceAPI (memory, queues, events), so there
// is one loader and one context per device in the process.
#include "graft/codegen/opencl_runtime.h"

#include <dlfcn.h>

#include <memory>
#include <mutex>

#include "graft/core/error.h"

namespace graft::codegen {

#ifdef GRAFT_HAVE_OPENCL_HEADERS

namespace {

struct Runtime {
  std::string error;
  OpenClFunctions functions;
  std::vector<OpenClDeviceInfo> devices;
  std::vector<cl_device_id> device_ids;
  std::mutex context_mutex;
  std::vector<cl_context> contexts;  ///< per device; null until first use
};

template <typename F>
void resolve(void* handle, F& slot, const char* name, bool& missing) {
  slot = reinterpret_cast<F>(dlsym(handle, name));
  if (!slot) missing = true;
}

std::string platform_string(const OpenClFunctions& cl, cl_platform_id platform, cl_platform_info what) {
  size_t size = 0;
  if (cl.get_platform_info(platform, what, 0, nullptr, &size) != CL_SUCCESS || size == 0) return {};
  std::string text(size, '\0');
  cl.get_platform_info(platform, what, size, text.data(), nullptr);
  while (!text.empty() && text.back() == '\0') text.pop_back();
  return text;
}

std::string device_string(const OpenClFunctions& cl, cl_device_id device, cl_device_info what) {
  size_t size = 0;
  if (cl.get_device_info(device, what, 0, nullptr, &size) != CL_SUCCESS || size == 0) return {};
  std::string text(size, '\0');
  cl.get_device_info(device, what, size, text.data(), nullptr);
  while (!text.empty() && text.back() == '\0') text.pop_back();
  return text;
}

template <typename T>
T device_value(const OpenClFunctions& cl, cl_device_id device, cl_device_info what) {
  T value{};
  if (cl.get_device_info(device, what, sizeof value, &value, nullptr) != CL_SUCCESS) return T{};
  return value;
}

Runtime& runtime() {
  static Runtime* loaded = [] {
    auto* r = new Runtime;  // kept for the process: buffers and queues may be released during exit
    void* handle = dlopen("libOpenCL.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!handle) handle = dlopen("libOpenCL.so", RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      r->error = "libOpenCL.so.1 not found (install an OpenCL ICD loader and a driver, e.g. pocl-opencl-icd)";
      return r;
    }
    OpenClFunctions& cl = r->functions;
    bool missing = false;
    resolve(handle, cl.get_platform_ids, "clGetPlatformIDs", missing);
    resolve(handle, cl.get_platform_info, "clGetPlatformInfo", missing);
    resolve(handle, cl.get_device_ids, "clGetDeviceIDs", missing);
    resolve(handle, cl.get_device_info, "clGetDeviceInfo", missing);
    resolve(handle, cl.create_context, "clCreateContext", missing);
    resolve(handle, cl.create_queue, "clCreateCommandQueue", missing);
    resolve(handle, cl.release_queue, "clReleaseCommandQueue", missing);
    resolve(handle, cl.build_info, "clGetProgramBuildInfo", missing);
    resolve(handle, cl.create_program, "clCreateProgramWithSource", missing);
    resolve(handle, cl.build_program, "clBuildProgram", missing);
    resolve(handle, cl.create_kernel, "clCreateKernel", missing);
    resolve(handle, cl.set_arg, "clSetKernelArg", missing);
    resolve(handle, cl.create_buffer, "clCreateBuffer", missing);
    resolve(handle, cl.read_buffer, "clEnqueueReadBuffer", missing);
    resolve(handle, cl.write_buffer, "clEnqueueWriteBuffer", missing);
    resolve(handle, cl.copy_buffer, "clEnqueueCopyBuffer", missing);
    resolve(handle, cl.enqueue_kernel, "clEnqueueNDRangeKernel", missing);
    resolve(handle, cl.finish, "clFinish", missing);
    resolve(handle, cl.flush, "clFlush", missing);
    resolve(handle, cl.release_buffer, "clReleaseMemObject", missing);
    resolve(handle, cl.release_kernel, "clReleaseKernel", missing);
    resolve(handle, cl.release_program, "clReleaseProgram", missing);
    resolve(handle, cl.enqueue_marker, "clEnqueueMarkerWithWaitList", missing);
    resolve(handle, cl.enqueue_barrier, "clEnqueueBarrierWithWaitList", missing);
    resolve(handle, cl.wait_for_events, "clWaitForEvents", missing);
    resolve(handle, cl.release_event, "clReleaseEvent", missing);
    resolve(handle, cl.get_event_info, "clGetEventInfo", missing);
    resolve(handle, cl.get_program_info, "clGetProgramInfo", missing);
    resolve(handle, cl.create_program_with_binary, "clCreateProgramWithBinary", missing);
    resolve(handle, cl.get_event_profiling_info, "clGetEventProfilingInfo", missing);
    resolve(handle, cl.retain_buffer, "clRetainMemObject", missing);
    if (missing) {
      r->error = "libOpenCL.so.1 lacks an expected function (graft needs OpenCL 1.2)";
      return r;
    }
    cl_uint count = 0;
    if (cl.get_platform_ids(0, nullptr, &count) != CL_SUCCESS || count == 0) {
      r->error = "no OpenCL platform";
      return r;
    }
    std::vector<cl_platform_id> platforms(count);
    cl.get_platform_ids(count, platforms.data(), nullptr);
    for (cl_platform_id platform : platforms) {
      cl_uint n = 0;
      if (cl.get_device_ids(platform, CL_DEVICE_TYPE_ALL, 0, nullptr, &n) != CL_SUCCESS || n == 0) continue;
      std::vector<cl_device_id> ids(n);
      cl.get_device_ids(platform, CL_DEVICE_TYPE_ALL, n, ids.data(), nullptr);
      for (cl_device_id id : ids) {
        OpenClDeviceInfo info;
        info.platform = platform_string(cl, platform, CL_PLATFORM_NAME);
        info.platform_version = platform_string(cl, platform, CL_PLATFORM_VERSION);
        info.name = device_string(cl, id, CL_DEVICE_NAME);
        info.version = device_string(cl, id, CL_DEVICE_VERSION);
        auto type = device_value<cl_device_type>(cl, id, CL_DEVICE_TYPE);
        info.kind = (type & CL_DEVICE_TYPE_GPU)           ? "gpu"
                    : (type & CL_DEVICE_TYPE_CPU)         ? "cpu"
                    : (type & CL_DEVICE_TYPE_ACCELERATOR) ? "accelerator"
                                                          : "other";
        info.global_memory_bytes = device_value<cl_ulong>(cl, id, CL_DEVICE_GLOBAL_MEM_SIZE);
        info.max_allocation_bytes = device_value<cl_ulong>(cl, id, CL_DEVICE_MAX_MEM_ALLOC_SIZE);
        info.compute_units = device_value<cl_uint>(cl, id, CL_DEVICE_MAX_COMPUTE_UNITS);
        info.fp64 = device_value<cl_device_fp_config>(cl, id, CL_DEVICE_DOUBLE_FP_CONFIG) != 0;
        r->devices.push_back(std::move(info));
        r->device_ids.push_back(id);
      }
    }
    if (r->devices.empty()) r->error = "no OpenCL device (" + std::to_string(count) + " platforms, none with a device)";
    r->contexts.assign(r->devices.size(), nullptr);
    return r;
  }();
  return *loaded;
}

const Runtime& usable_runtime() {
  const Runtime& r = runtime();
  if (!r.error.empty()) fail(ErrorKind::unsupported, "OpenCL unavailable: ", r.error);
  return r;
}

}  // namespace

std::string opencl_runtime_unavailable_reason() { return runtime().error; }

const std::vector<OpenClDeviceInfo>& opencl_devices() { return runtime().devices; }

const OpenClFunctions& opencl_functions() { return usable_runtime().functions; }

cl_device_id opencl_device_id(size_t index) {
  const Runtime& r = usable_runtime();
  if (index >= r.device_ids.size())
    fail(ErrorKind::invalid_argument, "no device opencl:", index, " (", r.device_ids.size(), " OpenCL devices)");
  return r.device_ids[index];
}

cl_context opencl_context(size_t index) {
  cl_device_id device = opencl_device_id(index);
  Runtime& r = runtime();
  std::lock_guard<std::mutex> lock(r.context_mutex);
  if (!r.contexts[index]) {
    cl_int status = CL_SUCCESS;
    cl_context context = r.functions.create_context(nullptr, 1, &device, nullptr, nullptr, &status);
    if (status != CL_SUCCESS || !context)
      fail(ErrorKind::internal, "OpenCL cannot make a context on ", r.devices[index].platform, ": ",
           r.devices[index].name, " (error ", status, ")");
    r.contexts[index] = context;
  }
  return r.contexts[index];
}

#else  // no OpenCL headers at build time

std::string opencl_runtime_unavailable_reason() { return "graft was built without the OpenCL headers (CL/cl.h)"; }

const std::vector<OpenClDeviceInfo>& opencl_devices() {
  static const std::vector<OpenClDeviceInfo> none;
  return none;
}

#endif

}  // namespace graft::codegen
