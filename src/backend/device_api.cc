// DeviceAPI: the per-device caching pool, the checks shared by every device
// type, the registry, and the CPU's DeviceAPI.
//
// The pool keeps freed blocks in free lists keyed by size class
// (device_pool_size_class) and hands them out again before asking the
// device; a failed device allocation returns every cached block of that
// device and retries once. One mutex per device guards its lists and
// counters (the device allocation itself runs under it, so two threads never
// both miss and allocate past the device's memory).
//
// The CPU's memory is host memory (64-byte aligned); its queues run each
// piece of work when it is enqueued, so FIFO order and events hold trivially.
#include "graft/backend/device_api.h"

#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <thread>
#include <unordered_map>
#include <utility>

#include "graft/core/error.h"

namespace graft::backend {

namespace detail {

/// One device's caching pool.
struct DevicePool {
  DeviceAPI* api = nullptr;
  Device device;
  std::mutex mutex;
  std::unordered_map<size_t, std::vector<void*>> free_blocks;  ///< by size class
  /// A block given back by release_after: free once `event` completes.
  struct Pending {
    void* handle;
    size_t size_class;
    std::unique_ptr<DeviceEvent> event;
  };
  std::vector<Pending> pending;  ///< in release order
  DevicePoolStats stats;
  uint64_t limit = 0;     ///< set_memory_limit; 0: none
  uint64_t capacity = 0;  ///< the device's global memory; 0: unknown

  /// Moves the pending blocks whose work has finished (all of them, waiting
  /// for each, when `wait`) to the free lists (mutex held).
  void collect_pending_locked(bool wait) {
    size_t kept = 0;
    for (size_t i = 0; i < pending.size(); ++i) {
      Pending& p = pending[i];
      if (wait)
        api->synchronize(*p.event);
      else if (!api->event_completed(*p.event)) {
        if (kept != i) pending[kept] = std::move(p);
        ++kept;
        continue;
      }
      stats.bytes_pending -= p.size_class;
      stats.bytes_cached += p.size_class;
      free_blocks[p.size_class].push_back(p.handle);
    }
    pending.resize(kept);
  }

  /// Returns every cached block to the device, waiting for the pending ones (mutex held).
  void release_cached_locked() {
    collect_pending_locked(true);
    for (auto& [size_class, blocks] : free_blocks) {
      for (void* block : blocks) {
        api->device_free(device.id, block);
        stats.device_frees++;
        stats.bytes_cached -= size_class;
      }
      blocks.clear();
    }
  }

  /// A block from the device, or null past the limit or when it is out of memory (mutex held).
  void* device_allocate_locked(size_t size_class) {
    uint64_t held = stats.bytes_in_use + stats.bytes_cached + stats.bytes_pending;
    if (limit != 0 && held + size_class > limit) return nullptr;
    if (capacity != 0 && held + size_class > capacity) return nullptr;  // more than the device has
    return api->device_allocate(device.id, size_class);
  }

  /// Takes back a block a DeviceBuffer held.
  void give_back(void* handle, size_t size_class) {
    std::lock_guard<std::mutex> lock(mutex);
    stats.bytes_in_use -= size_class;
    stats.bytes_cached += size_class;
    free_blocks[size_class].push_back(handle);
  }
};

}  // namespace detail

// ---------------------------------------------------------------------------
// DeviceBuffer

DeviceBuffer::~DeviceBuffer() { reset(); }

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : pool_(std::move(other.pool_)),
      handle_(std::exchange(other.handle_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      capacity_(std::exchange(other.capacity_, 0)),
      device_(other.device_) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    reset();
    pool_ = std::move(other.pool_);
    handle_ = std::exchange(other.handle_, nullptr);
    size_ = std::exchange(other.size_, 0);
    capacity_ = std::exchange(other.capacity_, 0);
    device_ = other.device_;
  }
  return *this;
}

void DeviceBuffer::reset() {
  if (handle_ && pool_) pool_->give_back(handle_, capacity_);
  pool_.reset();
  handle_ = nullptr;
  size_ = 0;
  capacity_ = 0;
}

// ---------------------------------------------------------------------------
// Helpers

size_t device_pool_size_class(size_t bytes) {
  constexpr size_t kMinimum = 512;
  if (bytes <= kMinimum) return kMinimum;
  size_t step = std::max(kMinimum, std::bit_floor(bytes) / 4);
  if (bytes > std::numeric_limits<size_t>::max() - step) return bytes;  // no room to round: its own class
  return (bytes + step - 1) / step * step;
}

std::string format_bytes(uint64_t bytes) {
  if (bytes < 1024) return std::to_string(bytes) + (bytes == 1 ? " byte" : " bytes");
  static const char* const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int unit = 0;
  uint64_t scale = 1024;
  while (unit + 1 < 6 && bytes / scale >= 1024) {
    scale *= 1024;
    ++unit;
  }
  char text[64];
  if (bytes % scale == 0)
    std::snprintf(text, sizeof text, "%llu %s", static_cast<unsigned long long>(bytes / scale), units[unit]);
  else
    std::snprintf(text, sizeof text, "%.1f %s", static_cast<double>(bytes) / static_cast<double>(scale), units[unit]);
  return text;
}

namespace {

const char* type_name(DeviceType type) {
  switch (type) {
    case DeviceType::cpu:
      return "cpu";
    case DeviceType::cuda:
      return "cuda";
    case DeviceType::opencl:
      return "opencl";
  }
  return "unknown";
}

void check_range(const DeviceBuffer& buffer, size_t offset, size_t bytes, const char* what) {
  if (!buffer && bytes == 0) return;
  if (!buffer) fail(ErrorKind::invalid_argument, what, ": empty DeviceBuffer");
  if (offset > buffer.size() || bytes > buffer.size() - offset)
    fail(ErrorKind::invalid_argument, what, ": bytes [", offset, ", ", offset + bytes, ") of a ", buffer.size(),
         "-byte buffer on ", to_string(buffer.device()));
}

void check_queue_device(const DeviceQueue& queue, const DeviceBuffer& buffer, const char* what) {
  if (buffer && !(buffer.device() == queue.device()))
    fail(ErrorKind::invalid_argument, what, ": a buffer on ", to_string(buffer.device()), " on a queue of ",
         to_string(queue.device()));
}

}  // namespace

// ---------------------------------------------------------------------------
// DeviceAPI

DeviceAPI::~DeviceAPI() = default;

std::shared_ptr<detail::DevicePool> DeviceAPI::pool(int id) const {
  std::lock_guard<std::mutex> lock(pools_mutex_);
  int count = device_count();
  if (id < 0 || id >= count)
    fail(ErrorKind::invalid_argument, "no device ", type_name(type()), ":", id, " (", count, " ", type_name(type()),
         count == 1 ? " device" : " devices", unavailable_reason().empty() ? "" : ": " + unavailable_reason(), ")");
  if (pools_.size() < static_cast<size_t>(count)) pools_.resize(static_cast<size_t>(count));
  auto& slot = pools_[static_cast<size_t>(id)];
  if (!slot) {
    slot = std::make_shared<detail::DevicePool>();
    slot->api = const_cast<DeviceAPI*>(this);
    slot->device = Device{type(), id};
    slot->capacity = properties(id).global_memory_bytes;
  }
  return slot;
}

DeviceBuffer DeviceAPI::allocate(Device device, size_t bytes) {
  if (device.type != type())
    fail(ErrorKind::invalid_argument, "the ", type_name(type()), " DeviceAPI cannot allocate on ", to_string(device));
  std::shared_ptr<detail::DevicePool> p = pool(device.id);
  size_t size_class = device_pool_size_class(bytes);
  void* handle = nullptr;
  {
    std::lock_guard<std::mutex> lock(p->mutex);
    if (!p->pending.empty()) p->collect_pending_locked(false);
    auto it = p->free_blocks.find(size_class);
    if (it != p->free_blocks.end() && !it->second.empty()) {
      handle = it->second.back();
      it->second.pop_back();
      p->stats.reuses++;
      p->stats.bytes_cached -= size_class;
    } else {
      handle = p->device_allocate_locked(size_class);
      if (!handle) {
        p->stats.failed_allocations++;
        p->release_cached_locked();
        handle = p->device_allocate_locked(size_class);
      }
      if (!handle) {
        p->stats.failed_allocations++;
        fail(ErrorKind::invalid_argument, "out of device memory on ", to_string(device), ": ", format_bytes(bytes),
             " requested, ", format_bytes(p->stats.bytes_in_use), " in use",
             p->limit != 0 ? " (pool limit " + format_bytes(p->limit) + ")" : std::string());
      }
      p->stats.device_allocations++;
    }
    p->stats.bytes_in_use += size_class;
    p->stats.peak_bytes_in_use = std::max(p->stats.peak_bytes_in_use, p->stats.bytes_in_use);
  }
  DeviceBuffer buffer;
  buffer.pool_ = std::move(p);
  buffer.handle_ = handle;
  buffer.size_ = bytes;
  buffer.capacity_ = size_class;
  buffer.device_ = device;
  return buffer;
}

DevicePoolStats DeviceAPI::pool_stats(int id) const {
  std::shared_ptr<detail::DevicePool> p = pool(id);
  std::lock_guard<std::mutex> lock(p->mutex);
  return p->stats;
}

void DeviceAPI::empty_cache(int id) {
  std::shared_ptr<detail::DevicePool> p = pool(id);
  std::lock_guard<std::mutex> lock(p->mutex);
  p->release_cached_locked();
}

void DeviceAPI::release_after(DeviceQueue& queue, DeviceBuffer& buffer) {
  if (!buffer) return;
  if (!(buffer.device() == queue.device()))
    fail(ErrorKind::invalid_argument, "release_after: a buffer on ", to_string(buffer.device()), " with a queue of ",
         to_string(queue.device()));
  std::unique_ptr<DeviceEvent> event = record_event(queue);
  std::shared_ptr<detail::DevicePool> p = std::move(buffer.pool_);
  void* handle = std::exchange(buffer.handle_, nullptr);
  size_t size_class = std::exchange(buffer.capacity_, 0);
  buffer.size_ = 0;
  if (!p) return;
  std::lock_guard<std::mutex> lock(p->mutex);
  p->stats.bytes_in_use -= size_class;
  p->stats.bytes_pending += size_class;
  p->pending.push_back({handle, size_class, std::move(event)});
}

void DeviceAPI::set_memory_limit(int id, uint64_t bytes) {
  std::shared_ptr<detail::DevicePool> p = pool(id);
  std::lock_guard<std::mutex> lock(p->mutex);
  p->limit = bytes;
}

void DeviceAPI::copy_to_device(DeviceQueue& queue, const DeviceBuffer& destination, size_t offset, const void* source,
                               size_t bytes) {
  check_range(destination, offset, bytes, "copy to device");
  check_queue_device(queue, destination, "copy to device");
  if (bytes == 0) return;
  if (!source) fail(ErrorKind::invalid_argument, "copy to device: null host pointer");
  do_copy_to_device(queue, destination.handle(), offset, source, bytes);
}

void DeviceAPI::copy_to_host(DeviceQueue& queue, void* destination, const DeviceBuffer& source, size_t offset,
                             size_t bytes) {
  check_range(source, offset, bytes, "copy to host");
  check_queue_device(queue, source, "copy to host");
  if (bytes == 0) return;
  if (!destination) fail(ErrorKind::invalid_argument, "copy to host: null host pointer");
  do_copy_to_host(queue, destination, source.handle(), offset, bytes);
}

void DeviceAPI::copy_on_device(DeviceQueue& queue, const DeviceBuffer& destination, size_t destination_offset,
                               const DeviceBuffer& source, size_t source_offset, size_t bytes) {
  check_range(destination, destination_offset, bytes, "device copy (destination)");
  check_range(source, source_offset, bytes, "device copy (source)");
  check_queue_device(queue, destination, "device copy");
  if (bytes == 0) return;
  if (source.device().type != type())
    fail(ErrorKind::invalid_argument, "device copy: the source is on ", to_string(source.device()), ", not ",
         type_name(type()));
  if (source.handle() == destination.handle() && source_offset < destination_offset + bytes &&
      destination_offset < source_offset + bytes)
    fail(ErrorKind::invalid_argument, "device copy: bytes [", source_offset, ", ", source_offset + bytes, ") onto [",
         destination_offset, ", ", destination_offset + bytes, ") of the same buffer overlap");
  if (source.device() == queue.device()) {
    do_copy_on_device(queue, destination.handle(), destination_offset, source.handle(), source_offset, bytes);
    return;
  }
  // Another device of this type: through the host, waiting for both sides.
  std::vector<unsigned char> staging(bytes);
  std::unique_ptr<DeviceQueue> source_queue = create_queue(source.device().id);
  do_copy_to_host(*source_queue, staging.data(), source.handle(), source_offset, bytes);
  synchronize(*source_queue);
  do_copy_to_device(queue, destination.handle(), destination_offset, staging.data(), bytes);
  synchronize(queue);
}

// ---------------------------------------------------------------------------
// Registry

namespace {

struct DeviceApiRegistry {
  std::mutex mutex;
  std::map<int, std::unique_ptr<DeviceAPI>> apis;  ///< by DeviceType; never destroyed (buffers may outlive main)
};

DeviceApiRegistry& device_api_registry() {
  static DeviceApiRegistry* r = new DeviceApiRegistry;
  return *r;
}

}  // namespace

void register_device_api(std::unique_ptr<DeviceAPI> api) {
  GRAFT_CHECK(api != nullptr);
  DeviceApiRegistry& r = device_api_registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  int key = static_cast<int>(api->type());
  if (r.apis.count(key)) fail(ErrorKind::internal, "a DeviceAPI for ", type_name(api->type()), " is already registered");
  r.apis.emplace(key, std::move(api));
}

DeviceAPI& device_api(DeviceType type) {
  DeviceApiRegistry& r = device_api_registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.apis.find(static_cast<int>(type));
  if (it != r.apis.end()) return *it->second;
  std::string names;
  for (const auto& [key, api] : r.apis) names += (names.empty() ? "" : ", ") + std::string(type_name(api->type()));
  fail(ErrorKind::unsupported, "no DeviceAPI registered for ", type_name(type), " (registered: ",
       names.empty() ? "none" : names, ")");
}

std::vector<DeviceAPI*> device_apis() {
  DeviceApiRegistry& r = device_api_registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  std::vector<DeviceAPI*> result;
  for (const auto& [key, api] : r.apis) result.push_back(api.get());
  return result;
}

// ---------------------------------------------------------------------------
// The CPU

namespace {

class CpuQueue : public DeviceQueue {
 public:
  CpuQueue() : DeviceQueue(Device{DeviceType::cpu, 0}) {}
};

class CpuEvent : public DeviceEvent {
 public:
  CpuEvent() : DeviceEvent(Device{DeviceType::cpu, 0}) {}
};

std::string cpu_model_name() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("model name", 0) == 0) {
      size_t colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(' ', colon + 1));
    }
  }
  return "host CPU";
}

/// Host memory as a device: allocations are 64-byte aligned host blocks, and
/// every queue runs its work as it is enqueued.
class CpuDeviceAPI : public DeviceAPI {
 public:
  /// Refuses a queue of another device type.
  static void check_queue(const DeviceQueue& queue) {
    if (queue.device().type != DeviceType::cpu)
      fail(ErrorKind::invalid_argument, "a queue of ", to_string(queue.device()), " given to the cpu DeviceAPI");
  }
  CpuDeviceAPI() {
    long pages = sysconf(_SC_PHYS_PAGES);
    long page_size = sysconf(_SC_PAGE_SIZE);
    memory_ = pages > 0 && page_size > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page_size) : 0;
  }
  DeviceType type() const override { return DeviceType::cpu; }
  int device_count() const override { return 1; }
  DeviceProperties properties(int id) const override {
    if (id != 0) fail(ErrorKind::invalid_argument, "no device cpu:", id, " (1 cpu device)");
    DeviceProperties p;
    p.name = cpu_model_name();
    p.platform = "host";
    p.kind = "cpu";
    p.global_memory_bytes = memory_;
    p.max_allocation_bytes = memory_;
    p.compute_units = std::max(1u, std::thread::hardware_concurrency());
    return p;
  }
  std::unique_ptr<DeviceQueue> create_queue(int id) override {
    if (id != 0) fail(ErrorKind::invalid_argument, "no device cpu:", id, " (1 cpu device)");
    return std::make_unique<CpuQueue>();
  }
  void enqueue_kernel(DeviceQueue& queue, const DeviceKernel& kernel) override {
    check_queue(queue);
    if (!kernel.host) fail(ErrorKind::invalid_argument, "a cpu queue runs host kernels only (DeviceKernel::host)");
    kernel.host();
  }
  void synchronize(DeviceQueue& queue) override { check_queue(queue); }
  std::unique_ptr<DeviceEvent> record_event(DeviceQueue& queue) override {
    check_queue(queue);
    return std::make_unique<CpuEvent>();
  }
  void wait_event(DeviceQueue& queue, const DeviceEvent&) override { check_queue(queue); }
  void synchronize(const DeviceEvent&) override {}
  bool event_completed(const DeviceEvent&) override { return true; }

 protected:
  void* device_allocate(int, size_t bytes) override {
    if (memory_ != 0 && bytes > memory_) return nullptr;
    size_t rounded = (bytes + 63) / 64 * 64;
    return std::aligned_alloc(64, rounded);
  }
  void device_free(int, void* handle) override { std::free(handle); }
  void do_copy_to_device(DeviceQueue&, void* destination, size_t offset, const void* source, size_t bytes) override {
    std::memcpy(static_cast<unsigned char*>(destination) + offset, source, bytes);
  }
  void do_copy_to_host(DeviceQueue&, void* destination, void* source, size_t offset, size_t bytes) override {
    std::memcpy(destination, static_cast<const unsigned char*>(source) + offset, bytes);
  }
  void do_copy_on_device(DeviceQueue&, void* destination, size_t destination_offset, void* source, size_t source_offset,
                         size_t bytes) override {
    std::memcpy(static_cast<unsigned char*>(destination) + destination_offset,
                 static_cast<const unsigned char*>(source) + source_offset, bytes);
  }

 private:
  uint64_t memory_ = 0;
};

}  // namespace

GRAFT_REGISTER_DEVICE_API(CpuDeviceAPI);

}  // namespace graft::backend
