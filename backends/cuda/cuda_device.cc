// The CUDA DeviceAPI: device memory (cuMemAlloc) from the per-device caching
// pool, one CUDA stream per graft queue, asynchronous cuMemcpy*Async copies
// on it, and CUDA events to order streams (cuStreamWaitEvent) and to time
// profiled runs (events with timing on profiled queues; plain runs use
// events without timing, which are cheaper). Devices are the driver's
// ordinals (cuda:0, cuda:1, ...), each in its primary context.
//
// The driver is opened at run time through the table the CUDA emitter uses
// (codegen/cuda_driver.h): without libcuda.so.1 or a device this registers a
// DeviceAPI with no devices whose unavailable_reason says why.
//
// Host memory: copies from pageable host memory are staged by the driver
// (cuMemcpyHtoDAsync returns once the bytes are staged), so the asynchrony
// contract of device_api.h holds; page-locked staging buffers for the
// model's inputs and outputs are left to a later change.
#include <algorithm>
#include <memory>

#include "graft/backend/device_api.h"
#include "graft/codegen/cuda_driver.h"
#include "graft/core/error.h"

namespace graft::backend {

namespace {

using codegen::cuda_driver;
using codegen::CudaDriver;

constexpr unsigned kStreamNonBlocking = 0x1;   // CU_STREAM_NON_BLOCKING
constexpr unsigned kEventDisableTiming = 0x2;  // CU_EVENT_DISABLE_TIMING
constexpr int kAttributeMultiprocessors = 16;  // CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT
constexpr int kAttributeMajor = 75, kAttributeMinor = 76;

/// A CUDA stream on one device. Destroying it waits for its work.
class CudaDeviceQueue : public DeviceQueue {
 public:
  CudaDeviceQueue(int id, bool profiling) : DeviceQueue(Device{DeviceType::cuda, id}), profiling_(profiling) {
    const CudaDriver& cu = cuda_driver();
    cu.make_current(id);
    cu.check(cu.stream_create(&stream_, kStreamNonBlocking), "cuStreamCreate");
  }
  ~CudaDeviceQueue() override {
    const CudaDriver& cu = cuda_driver();
    cu.ctx_set_current(cu.contexts[static_cast<size_t>(device().id)]);
    cu.stream_synchronize(stream_);  // work queued on it may still use its buffers
    cu.stream_destroy(stream_);
  }
  void* native_handle() const override { return stream_; }
  void* stream() const { return stream_; }
  bool profiling() const { return profiling_; }

 private:
  void* stream_ = nullptr;
  bool profiling_ = false;
};

/// A CUDA event recorded on one stream.
class CudaDeviceEvent : public DeviceEvent {
 public:
  CudaDeviceEvent(Device device, void* event, bool timed) : DeviceEvent(device), event_(event), timed_(timed) {}
  ~CudaDeviceEvent() override {
    const CudaDriver& cu = cuda_driver();
    cu.ctx_set_current(cu.contexts[static_cast<size_t>(device().id)]);
    cu.event_destroy(event_);
  }
  void* native_handle() const override { return event_; }
  void* event() const { return event_; }
  bool timed() const { return timed_; }

 private:
  void* event_ = nullptr;
  bool timed_ = false;
};

CudaDeviceQueue& queue_of(DeviceQueue& queue) {
  auto* q = dynamic_cast<CudaDeviceQueue*>(&queue);
  if (!q) fail(ErrorKind::invalid_argument, "not a CUDA queue: a queue of ", to_string(queue.device()));
  return *q;
}

const CudaDeviceEvent& event_of(const DeviceEvent& event) {
  auto* e = dynamic_cast<const CudaDeviceEvent*>(&event);
  if (!e) fail(ErrorKind::invalid_argument, "not a CUDA event: an event of ", to_string(event.device()));
  return *e;
}

/// The device address a pool handle stands for (handles are CUdeviceptr values).
uint64_t address(const void* handle) { return reinterpret_cast<uintptr_t>(handle); }

class CudaDeviceAPI : public DeviceAPI {
 public:
  DeviceType type() const override { return DeviceType::cuda; }
  std::string unavailable_reason() const override { return cuda_driver().error; }
  int device_count() const override { return static_cast<int>(cuda_driver().contexts.size()); }
  DeviceProperties properties(int id) const override {
    const CudaDriver& cu = usable(id);
    const int device = cu.devices[static_cast<size_t>(id)];
    DeviceProperties p;
    char name[256] = {};
    cu.check(cu.device_get_name(name, sizeof name - 1, device), "cuDeviceGetName");
    p.name = name;
    p.platform = "NVIDIA CUDA driver " + codegen::cuda_driver_version();
    int major = 0, minor = 0, sms = 0;
    cu.device_get_attribute(&major, kAttributeMajor, device);
    cu.device_get_attribute(&minor, kAttributeMinor, device);
    cu.device_get_attribute(&sms, kAttributeMultiprocessors, device);
    p.version = "compute capability " + std::to_string(major) + "." + std::to_string(minor);
    p.kind = "gpu";
    size_t total = 0;
    cu.device_total_mem(&total, device);
    p.global_memory_bytes = total;
    p.max_allocation_bytes = total;
    p.compute_units = static_cast<uint32_t>(sms);
    return p;
  }
  std::unique_ptr<DeviceQueue> create_queue(int id) override {
    usable(id);
    return std::make_unique<CudaDeviceQueue>(id, false);
  }
  std::unique_ptr<DeviceQueue> create_profiled_queue(int id) override {
    usable(id);
    return std::make_unique<CudaDeviceQueue>(id, true);
  }
  double elapsed_microseconds(const DeviceEvent& begin, const DeviceEvent& end) override {
    const CudaDeviceEvent& from = event_of(begin);
    const CudaDeviceEvent& to = event_of(end);
    if (!from.timed() || !to.timed()) return -1;  // recorded on a queue made without profiling
    float ms = 0;
    if (cuda_driver().event_elapsed_time(&ms, from.event(), to.event()) != 0) return -1;
    return ms >= 0 ? ms * 1000.0 : 0.0;
  }
  void enqueue_kernel(DeviceQueue& queue, const DeviceKernel& kernel) override {
    CudaDeviceQueue& q = queue_of(queue);
    if (kernel.native) {
      // graft's CUDA kernels launch themselves on the stream (cuda_kernel.h);
      // a native handle here has no launch configuration to go with it.
      fail(ErrorKind::invalid_argument,
           "a CUDA DeviceKernel is launched by its node kernel (CudaLaunch), not through enqueue_kernel");
    } else if (kernel.host) {
      const CudaDriver& cu = current(q);
      cu.check(cu.stream_synchronize(q.stream()), "cuStreamSynchronize");
      kernel.host();
    } else {
      fail(ErrorKind::invalid_argument, "a DeviceKernel with neither a native kernel nor a host function");
    }
  }
  void synchronize(DeviceQueue& queue) override {
    CudaDeviceQueue& q = queue_of(queue);
    const CudaDriver& cu = current(q);
    cu.check(cu.stream_synchronize(q.stream()), "cuStreamSynchronize");
  }
  std::unique_ptr<DeviceEvent> record_event(DeviceQueue& queue) override {
    CudaDeviceQueue& q = queue_of(queue);
    const CudaDriver& cu = current(q);
    void* event = nullptr;
    cu.check(cu.event_create(&event, q.profiling() ? 0u : kEventDisableTiming), "cuEventCreate");
    auto result = std::make_unique<CudaDeviceEvent>(queue.device(), event, q.profiling());
    cu.check(cu.event_record(event, q.stream()), "cuEventRecord");
    return result;
  }
  void wait_event(DeviceQueue& queue, const DeviceEvent& event) override {
    CudaDeviceQueue& q = queue_of(queue);
    const CudaDriver& cu = current(q);
    // Streams of any device of the process may wait for an event of another.
    cu.check(cu.stream_wait_event(q.stream(), event_of(event).event(), 0), "cuStreamWaitEvent");
  }
  void synchronize(const DeviceEvent& event) override {
    const CudaDriver& cu = cuda_driver();
    cu.check(cu.event_synchronize(event_of(event).event()), "cuEventSynchronize");
  }
  bool event_completed(const DeviceEvent& event) override {
    const CudaDriver& cu = cuda_driver();
    int status = cu.event_query(event_of(event).event());
    if (status == codegen::kCudaErrorNotReady) return false;
    return true;  // complete, or ended in an error (reported where the work was queued)
  }

 protected:
  void* device_allocate(int id, size_t bytes) override {
    const CudaDriver& cu = usable(id);
    cu.make_current(id);
    uint64_t pointer = 0;
    int status = cu.mem_alloc(&pointer, bytes);
    if (status == codegen::kCudaErrorOutOfMemory) return nullptr;
    cu.check(status, "cuMemAlloc");
    return reinterpret_cast<void*>(static_cast<uintptr_t>(pointer));
  }
  void device_free(int id, void* handle) override {
    const CudaDriver& cu = cuda_driver();
    if (!cu.usable()) return;
    cu.ctx_set_current(cu.contexts[static_cast<size_t>(id)]);
    cu.mem_free(address(handle));
  }
  void do_copy_to_device(DeviceQueue& queue, void* destination, size_t offset, const void* source,
                         size_t bytes) override {
    CudaDeviceQueue& q = queue_of(queue);
    const CudaDriver& cu = current(q);
    cu.check(cu.memcpy_htod_async(address(destination) + offset, source, bytes, q.stream()), "cuMemcpyHtoDAsync");
  }
  void do_copy_to_host(DeviceQueue& queue, void* destination, void* source, size_t offset, size_t bytes) override {
    CudaDeviceQueue& q = queue_of(queue);
    const CudaDriver& cu = current(q);
    cu.check(cu.memcpy_dtoh_async(destination, address(source) + offset, bytes, q.stream()), "cuMemcpyDtoHAsync");
  }
  void do_copy_on_device(DeviceQueue& queue, void* destination, size_t destination_offset, void* source,
                         size_t source_offset, size_t bytes) override {
    CudaDeviceQueue& q = queue_of(queue);
    const CudaDriver& cu = current(q);
    cu.check(cu.memcpy_dtod_async(address(destination) + destination_offset, address(source) + source_offset, bytes,
                                  q.stream()),
             "cuMemcpyDtoDAsync");
  }

 private:
  /// The driver, after checking that device `id` exists.
  static const CudaDriver& usable(int id) {
    const CudaDriver& cu = cuda_driver();
    if (id < 0 || static_cast<size_t>(id) >= cu.contexts.size())
      fail(ErrorKind::invalid_argument, "no device cuda:", id, " (", cu.contexts.size(), " CUDA devices",
           cu.error.empty() ? "" : ": " + cu.error, ")");
    return cu;
  }
  /// The driver with `queue`'s device current on this thread.
  static const CudaDriver& current(const CudaDeviceQueue& queue) {
    const CudaDriver& cu = cuda_driver();
    cu.make_current(queue.device().id);
    return cu;
  }
};

}  // namespace

GRAFT_REGISTER_DEVICE_API(CudaDeviceAPI);

}  // namespace graft::backend
