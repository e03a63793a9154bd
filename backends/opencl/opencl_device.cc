// The OpenCL DeviceAPI: cl_mem buffers from the per-device caching pool,
// one in-order cl_command_queue per graft queue, clEnqueueRead/Write/
// CopyBuffer for the copies, and markers and barriers (cl_event) to order
// work across queues. Devices are every device of every platform, numbered
// as opencl_devices() lists them (opencl:0, opencl:1, ...).
//
// Why here: the DeviceAPI interface is in the `backend` component, so its
// OpenCL implementation sits at or above it; as a backends/<name> folder it
// builds against public headers only, like any device plugin would. The
// runtime loader it uses stays in `codegen` (opencl_runtime.h), below, where
// the OpenCL emitter uses the same loader, device list and per-device
// contexts: a buffer from this DeviceAPI and an OpenClKernel on the same
// device share one cl_context.
//
// Built without the OpenCL headers, it registers a DeviceAPI with no devices
// that says why.
#include "graft/backend/device_api.h"
#include "graft/codegen/opencl_runtime.h"
#include "graft/core/error.h"

namespace graft::backend {

namespace {

#ifdef GRAFT_HAVE_OPENCL_HEADERS

using codegen::opencl_functions;

void check(cl_int status, const char* what) {
  if (status != CL_SUCCESS) fail(ErrorKind::internal, what, " failed with OpenCL error ", status);
}

/// An in-order cl_command_queue on one device.
class OpenClDeviceQueue : public DeviceQueue {
 public:
  OpenClDeviceQueue(int id, bool profiling) : DeviceQueue(Device{DeviceType::opencl, id}) {
    cl_int status = CL_SUCCESS;
    queue_ = opencl_functions().create_queue(codegen::opencl_context(static_cast<size_t>(id)),
                                             codegen::opencl_device_id(static_cast<size_t>(id)),
                                             profiling ? CL_QUEUE_PROFILING_ENABLE : 0, &status);
    check(status, "clCreateCommandQueue");
  }
  ~OpenClDeviceQueue() override {
    const codegen::OpenClFunctions& cl = opencl_functions();
    cl.finish(queue_);  // work queued on it may still use its buffers
    cl.release_queue(queue_);
  }
  void* native_handle() const override { return queue_; }
  cl_command_queue queue() const { return queue_; }

 private:
  cl_command_queue queue_ = nullptr;
};

/// A marker on one queue.
class OpenClDeviceEvent : public DeviceEvent {
 public:
  OpenClDeviceEvent(Device device, cl_event event) : DeviceEvent(device), event_(event) {}
  ~OpenClDeviceEvent() override { opencl_functions().release_event(event_); }
  void* native_handle() const override { return event_; }
  cl_event event() const { return event_; }

 private:
  cl_event event_ = nullptr;
};

cl_command_queue queue_of(DeviceQueue& queue) {
  auto* q = dynamic_cast<OpenClDeviceQueue*>(&queue);
  if (!q) fail(ErrorKind::invalid_argument, "not an OpenCL queue: a queue of ", to_string(queue.device()));
  return q->queue();
}

cl_event event_of(const DeviceEvent& event) {
  auto* e = dynamic_cast<const OpenClDeviceEvent*>(&event);
  if (!e) fail(ErrorKind::invalid_argument, "not an OpenCL event: an event of ", to_string(event.device()));
  return e->event();
}

class OpenClDeviceAPI : public DeviceAPI {
 public:
  DeviceType type() const override { return DeviceType::opencl; }
  std::string unavailable_reason() const override { return codegen::opencl_runtime_unavailable_reason(); }
  int device_count() const override { return static_cast<int>(codegen::opencl_devices().size()); }
  DeviceProperties properties(int id) const override {
    const codegen::OpenClDeviceInfo& info = device_info(id);
    DeviceProperties p;
    p.name = info.name;
    p.platform = info.platform;
    p.version = info.version;
    p.kind = info.kind;
    p.global_memory_bytes = info.global_memory_bytes;
    p.max_allocation_bytes = info.max_allocation_bytes;
    p.compute_units = info.compute_units;
    return p;
  }
  std::unique_ptr<DeviceQueue> create_queue(int id) override {
    device_info(id);
    return std::make_unique<OpenClDeviceQueue>(id, false);
  }
  std::unique_ptr<DeviceQueue> create_profiled_queue(int id) override {
    device_info(id);
    return std::make_unique<OpenClDeviceQueue>(id, true);
  }
  double elapsed_microseconds(const DeviceEvent& begin, const DeviceEvent& end) override {
    const codegen::OpenClFunctions& cl = opencl_functions();
    cl_ulong from = 0, to = 0;
    if (cl.get_event_profiling_info(event_of(begin), CL_PROFILING_COMMAND_END, sizeof from, &from, nullptr) !=
            CL_SUCCESS ||
        cl.get_event_profiling_info(event_of(end), CL_PROFILING_COMMAND_END, sizeof to, &to, nullptr) != CL_SUCCESS)
      return -1;  // a queue made without profiling
    return to >= from ? static_cast<double>(to - from) / 1000.0 : 0.0;
  }
  void enqueue_kernel(DeviceQueue& queue, const DeviceKernel& kernel) override {
    cl_command_queue q = queue_of(queue);
    if (kernel.native) {
      if (kernel.dims < 1 || kernel.dims > 3)
        fail(ErrorKind::invalid_argument, "an OpenCL kernel launch of ", kernel.dims, " dimensions (1 to 3)");
      check(opencl_functions().enqueue_kernel(q, static_cast<cl_kernel>(kernel.native), kernel.dims, nullptr,
                                              kernel.global.data(), nullptr, 0, nullptr, nullptr),
            "clEnqueueNDRangeKernel");
    } else if (kernel.host) {
      check(opencl_functions().finish(q), "clFinish");
      kernel.host();
    } else {
      fail(ErrorKind::invalid_argument, "a DeviceKernel with neither a native kernel nor a host function");
    }
  }
  void synchronize(DeviceQueue& queue) override { check(opencl_functions().finish(queue_of(queue)), "clFinish"); }
  std::unique_ptr<DeviceEvent> record_event(DeviceQueue& queue) override {
    const codegen::OpenClFunctions& cl = opencl_functions();
    cl_command_queue q = queue_of(queue);
    cl_event event = nullptr;
    check(cl.enqueue_marker(q, 0, nullptr, &event), "clEnqueueMarkerWithWaitList");
    check(cl.flush(q), "clFlush");  // submitted, so that another queue waiting for it cannot stall
    return std::make_unique<OpenClDeviceEvent>(queue.device(), event);
  }
  void wait_event(DeviceQueue& queue, const DeviceEvent& event) override {
    cl_event e = event_of(event);
    if (!(event.device() == queue.device())) {  // another context: wait on the host
      check(opencl_functions().wait_for_events(1, &e), "clWaitForEvents");
      return;
    }
    check(opencl_functions().enqueue_barrier(queue_of(queue), 1, &e, nullptr), "clEnqueueBarrierWithWaitList");
  }
  void synchronize(const DeviceEvent& event) override {
    cl_event e = event_of(event);
    check(opencl_functions().wait_for_events(1, &e), "clWaitForEvents");
  }
  bool event_completed(const DeviceEvent& event) override {
    cl_int state = CL_QUEUED;
    check(opencl_functions().get_event_info(event_of(event), CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof state, &state,
                                            nullptr),
          "clGetEventInfo");
    return state == CL_COMPLETE || state < 0;  // < 0: the work ended in an error (reported where it was queued)
  }

 protected:
  void* device_allocate(int id, size_t bytes) override {
    const codegen::OpenClDeviceInfo& info = device_info(id);
    if ((info.max_allocation_bytes != 0 && bytes > info.max_allocation_bytes) ||
        (info.global_memory_bytes != 0 && bytes > info.global_memory_bytes))
      return nullptr;
    cl_int status = CL_SUCCESS;
    cl_mem memory = opencl_functions().create_buffer(codegen::opencl_context(static_cast<size_t>(id)),
                                                     CL_MEM_READ_WRITE, bytes, nullptr, &status);
    if (status == CL_MEM_OBJECT_ALLOCATION_FAILURE || status == CL_OUT_OF_RESOURCES ||
        status == CL_OUT_OF_HOST_MEMORY || status == CL_INVALID_BUFFER_SIZE)
      return nullptr;
    check(status, "clCreateBuffer");
    return memory;
  }
  void device_free(int, void* handle) override { opencl_functions().release_buffer(static_cast<cl_mem>(handle)); }
  void do_copy_to_device(DeviceQueue& queue, void* destination, size_t offset, const void* source,
                         size_t bytes) override {
    check(opencl_functions().write_buffer(queue_of(queue), static_cast<cl_mem>(destination), CL_FALSE, offset, bytes,
                                          source, 0, nullptr, nullptr),
          "clEnqueueWriteBuffer");
  }
  void do_copy_to_host(DeviceQueue& queue, void* destination, void* source, size_t offset, size_t bytes) override {
    check(opencl_functions().read_buffer(queue_of(queue), static_cast<cl_mem>(source), CL_FALSE, offset, bytes,
                                         destination, 0, nullptr, nullptr),
          "clEnqueueReadBuffer");
  }
  void do_copy_on_device(DeviceQueue& queue, void* destination, size_t destination_offset, void* source,
                         size_t source_offset, size_t bytes) override {
    check(opencl_functions().copy_buffer(queue_of(queue), static_cast<cl_mem>(source), static_cast<cl_mem>(destination),
                                         source_offset, destination_offset, bytes, 0, nullptr, nullptr),
          "clEnqueueCopyBuffer");
  }

 private:
  static const codegen::OpenClDeviceInfo& device_info(int id) {
    const auto& devices = codegen::opencl_devices();
    if (id < 0 || static_cast<size_t>(id) >= devices.size()) {
      std::string why = codegen::opencl_runtime_unavailable_reason();
      fail(ErrorKind::invalid_argument, "no device opencl:", id, " (", devices.size(), " OpenCL devices",
           why.empty() ? "" : ": " + why, ")");
    }
    return devices[static_cast<size_t>(id)];
  }
};

#else  // no OpenCL headers at build time

/// No devices, and why.
class OpenClDeviceAPI : public DeviceAPI {
 public:
  DeviceType type() const override { return DeviceType::opencl; }
  std::string unavailable_reason() const override { return codegen::opencl_runtime_unavailable_reason(); }
  int device_count() const override { return 0; }
  DeviceProperties properties(int id) const override { none(id); }
  std::unique_ptr<DeviceQueue> create_queue(int id) override { none(id); }
  void enqueue_kernel(DeviceQueue& queue, const DeviceKernel&) override { none(queue.device().id); }
  void synchronize(DeviceQueue& queue) override { none(queue.device().id); }
  std::unique_ptr<DeviceEvent> record_event(DeviceQueue& queue) override { none(queue.device().id); }
  void wait_event(DeviceQueue& queue, const DeviceEvent&) override { none(queue.device().id); }
  void synchronize(const DeviceEvent& event) override { none(event.device().id); }
  bool event_completed(const DeviceEvent& event) override { none(event.device().id); }

 protected:
  void* device_allocate(int id, size_t) override { none(id); }
  void device_free(int, void*) override {}
  void do_copy_to_device(DeviceQueue& queue, void*, size_t, const void*, size_t) override { none(queue.device().id); }
  void do_copy_to_host(DeviceQueue& queue, void*, void*, size_t, size_t) override { none(queue.device().id); }
  void do_copy_on_device(DeviceQueue& queue, void*, size_t, void*, size_t, size_t) override {
    none(queue.device().id);
  }

 private:
  [[noreturn]] static void none(int id) {
    fail(ErrorKind::invalid_argument, "no device opencl:", id, " (", codegen::opencl_runtime_unavailable_reason(), ")");
  }
};

#endif

}  // namespace

GRAFT_REGISTER_DEVICE_API(OpenClDeviceAPI);

}  // namespace graft::backend
