// Device tensors (device_tensor.h): a Storage whose data() is the device
// handle and whose release callback gives the DeviceBuffer back to its pool.
// The buffer itself lives in a DeviceMemory block the storage's callback
// owns; device_buffer() finds it through a side table keyed by the storage,
// so core's Storage needs to know nothing of devices.
#include "graft/backend/device_tensor.h"

#include <mutex>
#include <unordered_map>

#include "graft/core/error.h"

namespace graft::backend {

namespace {

struct DeviceMemory {
  DeviceBuffer buffer;
  std::shared_ptr<DeviceQueue> queue;  ///< release after its work; null: release at once
  const Storage* key = nullptr;        ///< the storage it backs (its registry key)
};

/// Storage -> its DeviceMemory, for device_buffer().
struct DeviceMemoryRegistry {
  std::mutex mutex;
  std::unordered_map<const Storage*, DeviceMemory*> memories;
};
DeviceMemoryRegistry& device_memory_registry() {
  static DeviceMemoryRegistry* r = new DeviceMemoryRegistry;  // outlives tensors destroyed during exit
  return *r;
}

Tensor wrap(DType dtype, const Shape& shape, std::unique_ptr<DeviceMemory> memory) {
  DeviceMemory* raw = memory.release();
  const Device device = raw->buffer.device();
  const size_t bytes = raw->buffer.size();
  void* handle = raw->buffer.handle();
  auto storage = std::make_shared<Storage>(handle, bytes, [raw] {
    DeviceMemoryRegistry& r = device_memory_registry();
    {
      std::lock_guard lock(r.mutex);
      r.memories.erase(raw->key);
    }
    if (raw->queue && raw->buffer) device_api(raw->buffer.device().type).release_after(*raw->queue, raw->buffer);
    delete raw;
  });
  {
    std::lock_guard lock(device_memory_registry().mutex);
    raw->key = storage.get();
    device_memory_registry().memories[raw->key] = raw;
  }
  return Tensor(dtype, shape, std::move(storage), 0, device);
}

}  // namespace

Tensor make_device_tensor(DType dtype, const Shape& shape, Device device, std::shared_ptr<DeviceQueue> queue) {
  if (device.type == DeviceType::cpu)
    fail(ErrorKind::invalid_argument, "make_device_tensor: ", to_string(device), " is the host");
  if (!queue || !(queue->device() == device))
    fail(ErrorKind::invalid_argument, "make_device_tensor: the queue is not on ", to_string(device));
  const size_t bytes = shape_nbytes(shape, dtype_size(dtype));
  auto memory = std::make_unique<DeviceMemory>();
  memory->buffer = device_api(device.type).allocate(device, bytes);
  memory->queue = std::move(queue);
  return wrap(dtype, shape, std::move(memory));
}

Tensor adopt_device_buffer(DType dtype, const Shape& shape, DeviceBuffer buffer) {
  if (!buffer) fail(ErrorKind::invalid_argument, "adopt_device_buffer: an empty buffer");
  const size_t bytes = shape_nbytes(shape, dtype_size(dtype));
  if (bytes > buffer.size())
    fail(ErrorKind::invalid_argument, "adopt_device_buffer: ", bytes, " bytes do not fit a buffer of ", buffer.size());
  auto memory = std::make_unique<DeviceMemory>();
  memory->buffer = std::move(buffer);
  return wrap(dtype, shape, std::move(memory));
}

const DeviceBuffer& device_buffer(const Tensor& tensor) {
  if (!tensor.on_device())
    fail(ErrorKind::invalid_argument, "tensor ", tensor.type_string(), " is on the host, not on a device");
  DeviceMemoryRegistry& r = device_memory_registry();
  std::lock_guard lock(r.mutex);
  auto it = r.memories.find(tensor.storage().get());
  if (it == r.memories.end())
    fail(ErrorKind::invalid_argument, "tensor ", tensor.type_string(), " on ", to_string(tensor.device()),
         " was not made by make_device_tensor");
  return it->second->buffer;
}

void* device_handle(const Tensor& tensor) { return device_buffer(tensor).handle(); }

Tensor copy_to_host(const Tensor& tensor, DeviceQueue& queue) {
  if (!tensor.on_device()) return tensor;
  Tensor host(tensor.dtype(), tensor.shape());
  if (host.nbytes()) {
    DeviceAPI& api = device_api(tensor.device().type);
    api.copy_to_host(queue, host.raw_data(), device_buffer(tensor), 0, host.nbytes());
    api.synchronize(queue);
  }
  return host;
}

}  // namespace graft::backend
