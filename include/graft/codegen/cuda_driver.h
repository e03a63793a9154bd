/// \file
/// The CUDA driver API, opened at run time (dlopen of libcuda.so.1): one
/// table of the entry points graft uses, loaded and initialized (cuInit)
/// once per process, with each device's primary context retained. The CUDA
/// emitter's launcher (cuda_emitter.h) and the `cuda` backend's DeviceAPI
/// (backends/cuda) share it, so a buffer of the DeviceAPI and a kernel of the
/// emitter live in one context per device.
///
/// Types are the driver's handles as opaque pointers and CUdeviceptr as
/// uint64_t; nothing here needs the CUDA headers, and graft links without
/// CUDA. On a machine without the driver, cuda_driver().error says why.
///
///   const CudaDriver& cu = cuda_driver();
///   if (!cu.error.empty()) { /* "libcuda.so.1 not found (no NVIDIA driver)" */ }
///   cu.make_current(0);                      // device 0's primary context
///   uint64_t p = 0; cu.check(cu.mem_alloc(&p, 1024), "cuMemAlloc");
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace graft::codegen {

/// Driver status codes graft tests for (CUresult).
inline constexpr int kCudaSuccess = 0;
inline constexpr int kCudaErrorOutOfMemory = 2;
inline constexpr int kCudaErrorNotReady = 600;

/// The driver's entry points and devices (see the file comment).
struct CudaDriver {
  using Stream = void*;
  using Event = void*;
  /// Empty when the driver opened, initialized and found a device; otherwise
  /// why not ("libcuda.so.1 not found (no NVIDIA driver)", "no CUDA device",
  /// "cuInit failed with CUDA error 100").
  std::string error;
  int driver_version = 0;           ///< cuDriverGetVersion: 13000 for CUDA 13.0 (0 without a driver)
  std::vector<int> devices;         ///< CUdevice per ordinal
  std::vector<void*> contexts;      ///< the retained primary context per ordinal

  int (*device_get_name)(char*, int, int) = nullptr;
  int (*device_get_attribute)(int*, int, int) = nullptr;
  int (*device_total_mem)(size_t*, int) = nullptr;
  int (*ctx_set_current)(void*) = nullptr;
  int (*ctx_synchronize)() = nullptr;
  int (*mem_alloc)(uint64_t*, size_t) = nullptr;
  int (*mem_free)(uint64_t) = nullptr;
  int (*mem_get_info)(size_t*, size_t*) = nullptr;
  int (*mem_alloc_host)(void**, size_t) = nullptr;
  int (*mem_free_host)(void*) = nullptr;
  int (*memcpy_htod)(uint64_t, const void*, size_t) = nullptr;
  int (*memcpy_dtoh)(void*, uint64_t, size_t) = nullptr;
  int (*memcpy_dtod)(uint64_t, uint64_t, size_t) = nullptr;
  int (*memcpy_htod_async)(uint64_t, const void*, size_t, Stream) = nullptr;
  int (*memcpy_dtoh_async)(void*, uint64_t, size_t, Stream) = nullptr;
  int (*memcpy_dtod_async)(uint64_t, uint64_t, size_t, Stream) = nullptr;
  int (*memset_d8_async)(uint64_t, unsigned char, size_t, Stream) = nullptr;
  int (*stream_create)(Stream*, unsigned) = nullptr;
  int (*stream_destroy)(Stream) = nullptr;
  int (*stream_synchronize)(Stream) = nullptr;
  int (*stream_wait_event)(Stream, Event, unsigned) = nullptr;
  int (*event_create)(Event*, unsigned) = nullptr;
  int (*event_destroy)(Event) = nullptr;
  int (*event_record)(Event, Stream) = nullptr;
  int (*event_synchronize)(Event) = nullptr;
  int (*event_query)(Event) = nullptr;
  int (*event_elapsed_time)(float*, Event, Event) = nullptr;
  int (*module_load_data)(void**, const void*) = nullptr;
  int (*module_unload)(void*) = nullptr;
  int (*module_get_function)(void**, void*, const char*) = nullptr;
  int (*launch_kernel)(void*, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, Stream, void**,
                       void**) = nullptr;
  int (*get_error_string)(int, const char**) = nullptr;

  /// True when error is empty.
  bool usable() const { return error.empty(); }
  /// Makes device `ordinal`'s primary context current on this thread
  /// (throws invalid_argument on a bad ordinal, unsupported without a driver).
  void make_current(int ordinal) const;
  /// Throws internal "<what> failed with CUDA error <status> (<name>)" unless status is 0.
  void check(int status, const char* what) const;
  /// "CUDA_ERROR_OUT_OF_MEMORY"-like text of a status ("error 2" without the driver's strings).
  std::string describe(int status) const;
};

/// The process's driver table (loaded at the first call; thread-safe).
const CudaDriver& cuda_driver();

/// The driver version as "13.0", or empty without a driver.
std::string cuda_driver_version();

}  // namespace graft::codegen
