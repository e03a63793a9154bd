/// \file
/// The OpenCL runtime as graft loads it: the ICD loader (libOpenCL.so.1)
/// opened with dlopen, its entry points looked up by name (graft has no
/// link-time OpenCL dependency), and every device of every platform. The
/// OpenCL emitter (opencl_emitter.h) runs its kernels on one of these
/// devices, and the OpenCL DeviceAPI (backends/opencl) numbers them in this
/// order (opencl:0, opencl:1, ...). One context per device, made on first use
/// and kept for the process, so buffers of the DeviceAPI and kernels of the
/// emitter on the same device share it.
///
/// The device list needs nothing from the OpenCL headers; the function table
/// (OpenClFunctions) is declared where <CL/cl.h> is found at build time
/// (GRAFT_HAVE_OPENCL_HEADERS).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#if __has_include(<CL/cl.h>)
#define GRAFT_HAVE_OPENCL_HEADERS 1
#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#include <CL/cl.h>
#endif

namespace graft::codegen {

/// One OpenCL device as the loader found it.
struct OpenClDeviceInfo {
  std::string platform;           ///< CL_PLATFORM_NAME
  std::string platform_version;   ///< CL_PLATFORM_VERSION
  std::string name;               ///< CL_DEVICE_NAME
  std::string version;            ///< CL_DEVICE_VERSION
  std::string kind;               ///< "cpu", "gpu", "accelerator" or "other" (CL_DEVICE_TYPE)
  uint64_t global_memory_bytes = 0;  ///< CL_DEVICE_GLOBAL_MEM_SIZE
  uint64_t max_allocation_bytes = 0;  ///< CL_DEVICE_MAX_MEM_ALLOC_SIZE
  uint32_t compute_units = 0;     ///< CL_DEVICE_MAX_COMPUTE_UNITS
  bool fp64 = false;              ///< double precision (the emitter's kernels need it)
};

/// Why OpenCL cannot be used at all ("libOpenCL.so.1 not found ...", "no
/// OpenCL platform", "no OpenCL device"); empty when at least one device was found.
std::string opencl_runtime_unavailable_reason();

/// Every device of every platform, platforms in the ICD loader's order
/// (empty when opencl_runtime_unavailable_reason() is not).
const std::vector<OpenClDeviceInfo>& opencl_devices();

#ifdef GRAFT_HAVE_OPENCL_HEADERS

/// The entry points graft uses, resolved from the ICD loader.
struct OpenClFunctions {
  decltype(&clGetPlatformIDs) get_platform_ids = nullptr;
  decltype(&clGetPlatformInfo) get_platform_info = nullptr;
  decltype(&clGetDeviceIDs) get_device_ids = nullptr;
  decltype(&clGetDeviceInfo) get_device_info = nullptr;
  decltype(&clCreateContext) create_context = nullptr;
  decltype(&clCreateCommandQueue) create_queue = nullptr;
  decltype(&clReleaseCommandQueue) release_queue = nullptr;
  decltype(&clGetProgramBuildInfo) build_info = nullptr;
  decltype(&clCreateProgramWithSource) create_program = nullptr;
  decltype(&clBuildProgram) build_program = nullptr;
  decltype(&clCreateKernel) create_kernel = nullptr;
  decltype(&clSetKernelArg) set_arg = nullptr;
  decltype(&clCreateBuffer) create_buffer = nullptr;
  decltype(&clEnqueueReadBuffer) read_buffer = nullptr;
  decltype(&clEnqueueWriteBuffer) write_buffer = nullptr;
  decltype(&clEnqueueCopyBuffer) copy_buffer = nullptr;
  decltype(&clEnqueueNDRangeKernel) enqueue_kernel = nullptr;
  decltype(&clFinish) finish = nullptr;
  decltype(&clFlush) flush = nullptr;
  decltype(&clReleaseMemObject) release_buffer = nullptr;
  decltype(&clReleaseKernel) release_kernel = nullptr;
  decltype(&clReleaseProgram) release_program = nullptr;
  decltype(&clEnqueueMarkerWithWaitList) enqueue_marker = nullptr;
  decltype(&clEnqueueBarrierWithWaitList) enqueue_barrier = nullptr;
  decltype(&clWaitForEvents) wait_for_events = nullptr;
  decltype(&clReleaseEvent) release_event = nullptr;
  decltype(&clGetEventInfo) get_event_info = nullptr;
  decltype(&clGetProgramInfo) get_program_info = nullptr;
  decltype(&clCreateProgramWithBinary) create_program_with_binary = nullptr;
  decltype(&clGetEventProfilingInfo) get_event_profiling_info = nullptr;
  decltype(&clRetainMemObject) retain_buffer = nullptr;
};

/// The loaded entry points. Throws unsupported ("OpenCL unavailable: ...")
/// when opencl_runtime_unavailable_reason() is not empty.
const OpenClFunctions& opencl_functions();
/// The cl_device_id of opencl_devices()[index] (throws invalid_argument on a
/// bad index, unsupported without OpenCL).
cl_device_id opencl_device_id(size_t index);
/// The context of device `index`, made on first use and kept for the
/// process. Throws internal when the driver cannot make one.
cl_context opencl_context(size_t index);

/// A program of `source` built with `options` for device `index` (in its
/// context; the caller releases it): loaded from a binary in
/// GRAFT_CACHE_DIR when one was stored for this device, driver, options and
/// source (CompileCounters::opencl_disk_hits), else built from source
/// (opencl_builds) and its binary stored there. A corrupt or foreign binary
/// is rebuilt from source. Throws internal naming the device, with the build
/// log, when the source does not build.
cl_program opencl_build_program(size_t index, const std::string& source, const std::string& options = {});

/// Fault injection for tests: while on, every OpenCL program graft asks for
/// fails to build, as on a driver that rejects the kernel (the in-process
/// program caches are bypassed, so programs built before fail too).
void opencl_inject_build_failures(bool on);
/// True while opencl_inject_build_failures is on.
bool opencl_build_failures_injected();

#endif

}  // namespace graft::codegen
