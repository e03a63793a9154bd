// A stand-in libcuda.so.1 for tests on machines without an NVIDIA driver:
// one "device" whose memory is host memory (1 GiB, CUDA_ERROR_OUT_OF_MEMORY
// beyond), streams that run each copy when it is queued (so FIFO order and
// events hold trivially), and kernels only from host builds of graft's CUDA
// sources: when GRAFT_FAKE_CUDA_KERNELS lists shared objects (colon-separated,
// made by tests/cuda/cuda_host_emulation.h), cuModuleGetFunction finds
// `graft_call_<name>` in them and cuLaunchKernel runs it on the host through
// their `graft_host_launch`, at once. The PTX of a pointwise kernel is
// recognized by its hash when GRAFT_FAKE_CUDA_MODULES maps it to a host build
// of that kernel. Otherwise cuModuleLoadData fails with CUDA_ERROR_INVALID_IMAGE. Loaded instead of the real driver through
// LD_LIBRARY_PATH (tests/CMakeLists.txt), it lets the CUDA DeviceAPI's own
// code run here: allocation, copies at offsets, streams, events, the pool's
// out-of-memory retry, and the backend up to the point where a kernel loads.
// (NVRTC also opens libcuda.so.1 and asks for cuGetExportTable: it gets none
// and compiles as it does without a driver.)
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>

#include <map>
#include <mutex>
#include <string>

namespace {

constexpr int kSuccess = 0, kInvalidValue = 1, kOutOfMemory = 2, kInvalidImage = 200, kInvalidDevice = 101;
constexpr size_t kMemory = size_t{1} << 30;
std::mutex mutex;
size_t in_use = 0;
int context_token = 1, stream_token = 2, event_token = 3;

/// Allocations carry their size in a header before the address handed out.
struct Header {
  size_t bytes;
  size_t pad;
};

void* ptr(uint64_t address) { return reinterpret_cast<void*>(static_cast<uintptr_t>(address)); }

/// A kernel of a host build: its caller and the launcher of its object.
struct HostKernel {
  void (*call)(void**) = nullptr;
  void (*launch)(unsigned, unsigned, void (*)(void*), void*) = nullptr;
};
int module_token = 4;

/// A module of a pointwise kernel: the host build GRAFT_FAKE_CUDA_MODULES
/// maps its PTX to ("<FNV-1a of the PTX>=<object>#<kernel>", colon-separated).
struct HostModule {
  std::string path, kernel;
};

HostModule* find_host_module(const char* ptx) {
  static std::map<std::string, HostModule> modules;
  const char* list = std::getenv("GRAFT_FAKE_CUDA_MODULES");
  if (!list) return nullptr;
  uint64_t h = 1469598103934665603ULL;
  for (const char* c = ptx; *c; ++c) h = (h ^ static_cast<unsigned char>(*c)) * 1099511628211ULL;
  const std::string key = std::to_string(h) + "=", entries = list;
  for (size_t start = 0; start < entries.size();) {
    size_t end = entries.find(':', start);
    if (end == std::string::npos) end = entries.size();
    std::string entry = entries.substr(start, end - start);
    start = end + 1;
    if (entry.rfind(key, 0) != 0) continue;
    size_t hash = entry.find('#');
    std::lock_guard lock(mutex);
    HostModule& m = modules[entry];
    m.path = entry.substr(key.size(), hash - key.size());
    m.kernel = entry.substr(hash + 1);
    return &m;
  }
  return nullptr;
}

/// The kernel `name` in the objects GRAFT_FAKE_CUDA_KERNELS lists, or null.
HostKernel* find_host_kernel(const char* name, const char* only_in = nullptr) {
  static std::map<std::string, HostKernel> kernels;
  std::lock_guard lock(mutex);
  const char* list = only_in ? only_in : std::getenv("GRAFT_FAKE_CUDA_KERNELS");
  if (!list) return nullptr;
  std::string paths = list, symbol = std::string("graft_call_") + name;
  for (size_t start = 0; start <= paths.size();) {
    size_t end = paths.find(':', start);
    if (end == std::string::npos) end = paths.size();
    std::string path = paths.substr(start, end - start);
    start = end + 1;
    if (path.empty()) continue;
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) continue;
    HostKernel k;
    k.call = reinterpret_cast<void (*)(void**)>(dlsym(handle, symbol.c_str()));
    k.launch = reinterpret_cast<void (*)(unsigned, unsigned, void (*)(void*), void*)>(dlsym(handle, "graft_host_launch"));
    if (k.call && k.launch) return &(kernels[path + ":" + name] = k);
  }
  return nullptr;
}

}  // namespace

extern "C" {

int cuInit(unsigned) { return kSuccess; }
int cuDriverGetVersion(int* v) {
  const char* version = std::getenv("GRAFT_FAKE_CUDA_DRIVER_VERSION");  // a test's older driver
  *v = version ? std::atoi(version) : 13000;
  return kSuccess;
}
int cuDeviceGetCount(int* n) {
  *n = 1;
  return kSuccess;
}
int cuDeviceGet(int* d, int ordinal) {
  if (ordinal != 0) return kInvalidDevice;
  *d = 0;
  return kSuccess;
}
int cuDevicePrimaryCtxRetain(void** context, int) {
  *context = &context_token;
  return kSuccess;
}
int cuDeviceGetName(char* name, int length, int) {
  std::strncpy(name, "graft fake CUDA device", static_cast<size_t>(length));
  return kSuccess;
}
int cuDeviceGetAttribute(int* value, int attribute, int) {
  *value = attribute == 75 ? 9 : attribute == 76 ? 0 : attribute == 16 ? 2 : 0;
  return kSuccess;
}
int cuDeviceTotalMem_v2(size_t* bytes, int) {
  *bytes = kMemory;
  return kSuccess;
}
int cuCtxSetCurrent(void*) { return kSuccess; }
int cuCtxSynchronize() { return kSuccess; }
int cuMemAlloc_v2(uint64_t* address, size_t bytes) {
  std::lock_guard lock(mutex);
  if (bytes == 0) return kInvalidValue;
  if (in_use + bytes > kMemory) return kOutOfMemory;
  auto* block = static_cast<Header*>(std::malloc(sizeof(Header) + bytes));
  if (!block) return kOutOfMemory;
  block->bytes = bytes;
  in_use += bytes;
  *address = reinterpret_cast<uintptr_t>(block + 1);
  return kSuccess;
}
int cuMemFree_v2(uint64_t address) {
  std::lock_guard lock(mutex);
  Header* block = static_cast<Header*>(ptr(address)) - 1;
  in_use -= block->bytes;
  std::free(block);
  return kSuccess;
}
int cuMemGetInfo_v2(size_t* free_bytes, size_t* total) {
  std::lock_guard lock(mutex);
  *free_bytes = kMemory - in_use;
  *total = kMemory;
  return kSuccess;
}
int cuMemAllocHost_v2(void** p, size_t bytes) {
  *p = std::malloc(bytes ? bytes : 1);
  return *p ? kSuccess : kOutOfMemory;
}
int cuMemFreeHost(void* p) {
  std::free(p);
  return kSuccess;
}
int cuMemcpyHtoD_v2(uint64_t d, const void* h, size_t n) {
  std::memcpy(ptr(d), h, n);
  return kSuccess;
}
int cuMemcpyDtoH_v2(void* h, uint64_t d, size_t n) {
  std::memcpy(h, ptr(d), n);
  return kSuccess;
}
int cuMemcpyDtoD_v2(uint64_t to, uint64_t from, size_t n) {
  std::memmove(ptr(to), ptr(from), n);
  return kSuccess;
}
int cuMemcpyHtoDAsync_v2(uint64_t d, const void* h, size_t n, void*) { return cuMemcpyHtoD_v2(d, h, n); }
int cuMemcpyDtoHAsync_v2(void* h, uint64_t d, size_t n, void*) { return cuMemcpyDtoH_v2(h, d, n); }
int cuMemcpyDtoDAsync_v2(uint64_t to, uint64_t from, size_t n, void*) { return cuMemcpyDtoD_v2(to, from, n); }
int cuMemsetD8Async(uint64_t d, unsigned char v, size_t n, void*) {
  std::memset(ptr(d), v, n);
  return kSuccess;
}
int cuStreamCreate(void** stream, unsigned) {
  *stream = &stream_token;
  return kSuccess;
}
int cuStreamDestroy_v2(void*) { return kSuccess; }
int cuStreamSynchronize(void*) { return kSuccess; }
int cuStreamWaitEvent(void*, void*, unsigned) { return kSuccess; }
int cuEventCreate(void** event, unsigned) {
  *event = &event_token;
  return kSuccess;
}
int cuEventDestroy_v2(void*) { return kSuccess; }
int cuEventRecord(void*, void*) { return kSuccess; }
int cuEventSynchronize(void*) { return kSuccess; }
int cuEventQuery(void*) { return kSuccess; }
int cuEventElapsedTime_v2(float* ms, void*, void*) {
  *ms = 0.0f;
  return kSuccess;
}
int cuModuleLoadData(void** module, const void* image) {
  if (HostModule* m = find_host_module(static_cast<const char*>(image))) {
    *module = m;
    return kSuccess;
  }
  if (!std::getenv("GRAFT_FAKE_CUDA_KERNELS")) return kInvalidImage;
  *module = &module_token;  // the PTX is not read: kernels come from the host builds
  return kSuccess;
}
int cuModuleUnload(void*) { return kSuccess; }
int cuModuleGetFunction(void** function, void* module, const char* name) {
  HostKernel* kernel = nullptr;
  if (module != &module_token) {  // a pointwise kernel's module: its one kernel, under its host name
    auto* m = static_cast<HostModule*>(module);
    kernel = find_host_kernel(m->kernel.c_str(), m->path.c_str());
  } else {
    kernel = find_host_kernel(name);
  }
  if (!kernel) return 500;  // CUDA_ERROR_NOT_FOUND
  *function = kernel;
  return kSuccess;
}
int cuLaunchKernel(void* function, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                   unsigned, void*, void** params, void**) {
  if (!function || gz != 1 || by != 1 || bz != 1 || bx % 32 != 0) return kInvalidValue;
  auto* kernel = static_cast<HostKernel*>(function);
  // One launch at a time: a host build's grid size and __shared__ memory are
  // process-wide (on a GPU each block has its own), so two runs launching at
  // once must not interleave here.
  static std::mutex launches;
  std::lock_guard lock(launches);
  struct Call {
    HostKernel* kernel;
    void** params;
  } call{kernel, params};
  kernel->launch(gx * gy, bx, [](void* c) { static_cast<Call*>(c)->kernel->call(static_cast<Call*>(c)->params); },
                 &call);
  return kSuccess;
}
// NVRTC opens the driver too and asks for its private tables: none here.
int cuGetExportTable(const void** table, const void*) {
  *table = nullptr;
  return 500;  // CUDA_ERROR_NOT_FOUND
}
int cuGetErrorName(int status, const char** name) {
  switch (status) {
    case kSuccess: *name = "CUDA_SUCCESS"; break;
    case kInvalidValue: *name = "CUDA_ERROR_INVALID_VALUE"; break;
    case kOutOfMemory: *name = "CUDA_ERROR_OUT_OF_MEMORY"; break;
    case kInvalidImage: *name = "CUDA_ERROR_INVALID_IMAGE"; break;
    case kInvalidDevice: *name = "CUDA_ERROR_INVALID_DEVICE"; break;
    case 500: *name = "CUDA_ERROR_NOT_FOUND"; break;
    default: return kInvalidValue;
  }
  return kSuccess;
}

}  // extern "C"
