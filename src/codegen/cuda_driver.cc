// The CUDA driver table (cuda_driver.h): libcuda.so.1 opened with dlopen,
// each entry point looked up by its versioned name (the names cuda.h maps
// the API to: cuMemAlloc_v2, cuEventElapsedTime_v2, ...), cuInit, and each
// device's primary context retained for the process.
#include "graft/codegen/cuda_driver.h"

#include <dlfcn.h>

#include "graft/core/error.h"

namespace graft::codegen {

namespace {

template <typename F>
void load(void* handle, F& slot, const char* name, const char* fallback = nullptr) {
  slot = reinterpret_cast<F>(dlsym(handle, name));
  if (!slot && fallback) slot = reinterpret_cast<F>(dlsym(handle, fallback));
}

}  // namespace

const CudaDriver& cuda_driver() {
  static const CudaDriver driver = [] {
    CudaDriver d;
    void* handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      d.error = "libcuda.so.1 not found (no NVIDIA driver)";
      return d;
    }
    int (*init)(unsigned) = nullptr;
    int (*version)(int*) = nullptr;
    int (*count)(int*) = nullptr;
    int (*get)(int*, int) = nullptr;
    int (*retain)(void**, int) = nullptr;
    load(handle, init, "cuInit");
    load(handle, version, "cuDriverGetVersion");
    load(handle, count, "cuDeviceGetCount");
    load(handle, get, "cuDeviceGet");
    load(handle, retain, "cuDevicePrimaryCtxRetain");
    load(handle, d.device_get_name, "cuDeviceGetName");
    load(handle, d.device_get_attribute, "cuDeviceGetAttribute");
    load(handle, d.device_total_mem, "cuDeviceTotalMem_v2");
    load(handle, d.ctx_set_current, "cuCtxSetCurrent");
    load(handle, d.ctx_synchronize, "cuCtxSynchronize");
    load(handle, d.mem_alloc, "cuMemAlloc_v2");
    load(handle, d.mem_free, "cuMemFree_v2");
    load(handle, d.mem_get_info, "cuMemGetInfo_v2");
    load(handle, d.mem_alloc_host, "cuMemAllocHost_v2");
    load(handle, d.mem_free_host, "cuMemFreeHost");
    load(handle, d.memcpy_htod, "cuMemcpyHtoD_v2");
    load(handle, d.memcpy_dtoh, "cuMemcpyDtoH_v2");
    load(handle, d.memcpy_dtod, "cuMemcpyDtoD_v2");
    load(handle, d.memcpy_htod_async, "cuMemcpyHtoDAsync_v2");
    load(handle, d.memcpy_dtoh_async, "cuMemcpyDtoHAsync_v2");
    load(handle, d.memcpy_dtod_async, "cuMemcpyDtoDAsync_v2");
    load(handle, d.memset_d8_async, "cuMemsetD8Async");
    load(handle, d.stream_create, "cuStreamCreate");
    load(handle, d.stream_destroy, "cuStreamDestroy_v2");
    load(handle, d.stream_synchronize, "cuStreamSynchronize");
    load(handle, d.stream_wait_event, "cuStreamWaitEvent");
    load(handle, d.event_create, "cuEventCreate");
    load(handle, d.event_destroy, "cuEventDestroy_v2");
    load(handle, d.event_record, "cuEventRecord");
    load(handle, d.event_synchronize, "cuEventSynchronize");
    load(handle, d.event_query, "cuEventQuery");
    load(handle, d.event_elapsed_time, "cuEventElapsedTime_v2", "cuEventElapsedTime");
    load(handle, d.module_load_data, "cuModuleLoadData");
    load(handle, d.module_unload, "cuModuleUnload");
    load(handle, d.module_get_function, "cuModuleGetFunction");
    load(handle, d.launch_kernel, "cuLaunchKernel");
    load(handle, d.get_error_string, "cuGetErrorName");
    if (!init || !version || !count || !get || !retain || !d.device_get_name || !d.device_get_attribute ||
        !d.device_total_mem || !d.ctx_set_current || !d.ctx_synchronize || !d.mem_alloc || !d.mem_free ||
        !d.mem_get_info || !d.mem_alloc_host || !d.mem_free_host || !d.memcpy_htod || !d.memcpy_dtoh ||
        !d.memcpy_dtod || !d.memcpy_htod_async || !d.memcpy_dtoh_async || !d.memcpy_dtod_async ||
        !d.memset_d8_async || !d.stream_create || !d.stream_destroy || !d.stream_synchronize ||
        !d.stream_wait_event || !d.event_create || !d.event_destroy || !d.event_record || !d.event_synchronize ||
        !d.event_query || !d.event_elapsed_time || !d.module_load_data || !d.module_unload ||
        !d.module_get_function || !d.launch_kernel) {
      d.error = "libcuda.so.1 lacks an expected function (a driver older than CUDA 11?)";
      return d;
    }
    version(&d.driver_version);
    if (int status = init(0); status != 0) {
      d.error = status == 100 ? "no CUDA device (cuInit: CUDA_ERROR_NO_DEVICE)"
                              : "cuInit failed with CUDA error " + std::to_string(status);
      return d;
    }
    int n = 0;
    if (count(&n) != 0 || n <= 0) {
      d.error = "no CUDA device";
      return d;
    }
    for (int i = 0; i < n; ++i) {
      int device = 0;
      void* context = nullptr;
      if (get(&device, i) != 0 || retain(&context, device) != 0) {
        d.error = "cannot open CUDA device " + std::to_string(i) + " (its primary context)";
        d.devices.clear();
        d.contexts.clear();
        return d;
      }
      d.devices.push_back(device);
      d.contexts.push_back(context);
    }
    return d;
  }();
  return driver;
}

void CudaDriver::make_current(int ordinal) const {
  if (!error.empty()) fail(ErrorKind::unsupported, "CUDA unavailable: ", error);
  if (ordinal < 0 || static_cast<size_t>(ordinal) >= contexts.size())
    fail(ErrorKind::invalid_argument, "no device cuda:", ordinal, " (", contexts.size(), " CUDA devices)");
  check(ctx_set_current(contexts[static_cast<size_t>(ordinal)]), "cuCtxSetCurrent");
}

std::string CudaDriver::describe(int status) const {
  const char* name = nullptr;
  if (get_error_string && get_error_string(status, &name) == 0 && name) return name;
  return "error " + std::to_string(status);
}

void CudaDriver::check(int status, const char* what) const {
  if (status != 0) fail(ErrorKind::internal, what, " failed with CUDA error ", status, " (", describe(status), ")");
}

std::string cuda_driver_version() {
  const CudaDriver& d = cuda_driver();
  if (d.driver_version <= 0) return {};
  return std::to_string(d.driver_version / 1000) + "." + std::to_string(d.driver_version % 1000 / 10);
}

}  // namespace graft::codegen
