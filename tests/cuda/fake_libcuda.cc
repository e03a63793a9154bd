// A stand-in libcuda.so.1 for tests on machines without an NVIDIA driver:
// one "device" whose memory is host memory (1 GiB, CUDA_ERROR_OUT_OF_MEMORY
// beyond), streams that run each copy when it is queued (so FIFO order and
// events hold trivially), and no kernels (cuModuleLoadData fails with
// CUDA_ERROR_INVALID_IMAGE). Loaded instead of the real driver through
// LD_LIBRARY_PATH (tests/CMakeLists.txt), it lets the CUDA DeviceAPI's own
// code run here: allocation, copies at offsets, streams, events, the pool's
// out-of-memory retry, and the backend up to the point where a kernel loads.
// (NVRTC also opens libcuda.so.1 and asks for cuGetExportTable: it gets none
// and compiles as it does without a driver.)
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>

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

}  // namespace

extern "C" {

int cuInit(unsigned) { return kSuccess; }
int cuDriverGetVersion(int* v) {
  *v = 13000;
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
int cuModuleLoadData(void**, const void*) { return kInvalidImage; }
int cuModuleUnload(void*) { return kSuccess; }
int cuModuleGetFunction(void**, void*, const char*) { return kInvalidImage; }
int cuLaunchKernel(void*, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void*, void**, void**) {
  return kInvalidImage;
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
    default: return kInvalidValue;
  }
  return kSuccess;
}

}  // extern "C"
