// The OpenCL runtime loader (opencl_runtime.h): dlopen of the ICD loader,
// the entry points by name, every platform's devices with their facts, and
// one context per device made on first use. Shared by the OpenCL emitter
// (its kernels) and the OpenCL DeviceAPI (memory, queues, events), so there
// is one loader and one context per device in the process.
#include "graft/codegen/opencl_runtime.h"

#include <dlfcn.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include <memory>
#include <mutex>

#include "graft/codegen/compile_cache.h"
#include "graft/core/error.h"
#include "graft/ir/kernel_ir.h"

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

namespace {

std::string hex64(uint64_t value) {
  static const char* digits = "0123456789abcdef";
  std::string text(16, '0');
  for (int i = 15; i >= 0; --i, value >>= 4) text[static_cast<size_t>(i)] = digits[value & 15];
  return text;
}

constexpr char kBinaryMagic[8] = {'G', 'R', 'A', 'F', 'T', 'C', 'L', 'B'};

/// The binary in `path` when its header and checksum hold, else empty.
std::string read_binary(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  char magic[8];
  uint64_t size = 0, checksum = 0;
  in.read(magic, 8);
  in.read(reinterpret_cast<char*>(&size), 8);
  in.read(reinterpret_cast<char*>(&checksum), 8);
  if (!in || std::memcmp(magic, kBinaryMagic, 8) != 0 || size == 0 || size > (1ull << 30)) return {};
  std::string bytes(size, '\0');
  in.read(bytes.data(), static_cast<std::streamsize>(size));
  if (static_cast<uint64_t>(in.gcount()) != size || ir::fnv1a(bytes) != checksum) return {};
  return bytes;
}

/// Writes a binary beside its final name, then renames it into place (an
/// unwritable cache only costs a rebuild next time).
void write_binary(const std::filesystem::path& path, const std::string& bytes) {
  static std::atomic<uint64_t> counter{0};
  std::ostringstream name;
  name << "." << path.filename().string() << "." << ::getpid() << "." << counter.fetch_add(1) << ".tmp";
  std::filesystem::path temporary = path.parent_path() / name.str();
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    if (!out) return;
    uint64_t size = bytes.size(), checksum = ir::fnv1a(bytes);
    out.write(kBinaryMagic, 8);
    out.write(reinterpret_cast<const char*>(&size), 8);
    out.write(reinterpret_cast<const char*>(&checksum), 8);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out) {
      std::error_code ignored;
      std::filesystem::remove(temporary, ignored);
      return;
    }
  }
  std::error_code ec;
  std::filesystem::rename(temporary, path, ec);
  if (ec) std::filesystem::remove(temporary, ec);
}

std::string build_log(const OpenClFunctions& cl, cl_program program, cl_device_id device) {
  size_t size = 0;
  cl.build_info(program, device, CL_PROGRAM_BUILD_LOG, 0, nullptr, &size);
  std::string log(size, '\0');
  if (size) cl.build_info(program, device, CL_PROGRAM_BUILD_LOG, size, log.data(), nullptr);
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
  return log;
}

std::atomic<bool> build_failures_injected{false};

}  // namespace

void opencl_inject_build_failures(bool on) { build_failures_injected = on; }
bool opencl_build_failures_injected() { return build_failures_injected; }

cl_program opencl_build_program(size_t index, const std::string& given_source, const std::string& options) {
  const OpenClFunctions& cl = opencl_functions();
  cl_device_id device = opencl_device_id(index);
  cl_context context = opencl_context(index);
  const OpenClDeviceInfo& info = opencl_devices()[index];
  const std::string source =
      build_failures_injected ? given_source + "\n#error graft test: a build failure injected\n" : given_source;
  CompileCounters& counters = CompileCache::global().counters();
  std::optional<std::string> directory = cache_directory_from_environment();
  std::filesystem::path path;
  if (directory) {
    std::string material = info.platform + '\0' + info.platform_version + '\0' + info.name + '\0' + info.version +
                           '\0' + options + '\0' + source;
    path = std::filesystem::path(*directory) /
           ("opencl-" + hex64(ir::fnv1a(material)) + hex64(ir::fnv1a(material, 0x84222325cbf29ce4ull)) + ".bin");
    std::string binary = read_binary(path);
    if (!binary.empty()) {
      const auto* data = reinterpret_cast<const unsigned char*>(binary.data());
      size_t size = binary.size();
      cl_int status = CL_SUCCESS, binary_status = CL_SUCCESS;
      cl_program program = cl.create_program_with_binary(context, 1, &device, &size, &data, &binary_status, &status);
      if (status == CL_SUCCESS && binary_status == CL_SUCCESS &&
          cl.build_program(program, 1, &device, options.c_str(), nullptr, nullptr) == CL_SUCCESS) {
        counters.opencl_disk_hits++;
        return program;
      }
      if (program) cl.release_program(program);  // stale or foreign: built from source below
      counters.disk_rejects++;
    }
  }
  const char* text = source.c_str();
  size_t length = source.size();
  cl_int status = CL_SUCCESS;
  cl_program program = cl.create_program(context, 1, &text, &length, &status);
  if (status != CL_SUCCESS || !program)
    fail(ErrorKind::internal, "clCreateProgramWithSource failed on opencl:", index, " with OpenCL error ", status);
  if (cl.build_program(program, 1, &device, options.c_str(), nullptr, nullptr) != CL_SUCCESS) {
    std::string log = build_log(cl, program, device);
    cl.release_program(program);
    fail(ErrorKind::internal, "OpenCL program does not build on opencl:", index, " (", info.name, "): ", log);
  }
  counters.opencl_builds++;
  if (directory) {
    size_t size = 0;
    if (cl.get_program_info(program, CL_PROGRAM_BINARY_SIZES, sizeof size, &size, nullptr) == CL_SUCCESS && size > 0) {
      std::string binary(size, '\0');
      unsigned char* data = reinterpret_cast<unsigned char*>(binary.data());
      if (cl.get_program_info(program, CL_PROGRAM_BINARIES, sizeof data, &data, nullptr) == CL_SUCCESS)
        write_binary(path, binary);
    }
  }
  return program;
}

#else  // no OpenCL headers at build time

std::string opencl_runtime_unavailable_reason() { return "graft was built without the OpenCL headers (CL/cl.h)"; }

const std::vector<OpenClDeviceInfo>& opencl_devices() {
  static const std::vector<OpenClDeviceInfo> none;
  return none;
}

#endif

}  // namespace graft::codegen
