/// \file
/// DeviceAPI: the memory, copies, queues and events of one device type
/// (DESIGN.md section 8, "Devices"). One implementation per DeviceType is
/// registered once (GRAFT_REGISTER_DEVICE_API) and found with device_api().
/// The CPU's is built in (its memory is host memory and its queues run the
/// work as it is enqueued); OpenCL's is in backends/opencl.
///
///   DeviceAPI& api = device_api(DeviceType::opencl);
///   Device device{DeviceType::opencl, 0};
///   DeviceBuffer a = api.allocate(device, bytes);        // from the device's caching pool
///   std::unique_ptr<DeviceQueue> queue = api.create_queue(device.id);
///   api.copy_to_device(*queue, a, 0, host, bytes);       // queued, asynchronous
///   api.copy_to_host(*queue, back, a, 0, bytes);         // after the upload (FIFO)
///   api.synchronize(*queue);                             // `back` holds the bytes now
///
/// Work queued on one queue runs in the order it was queued; separate queues
/// run independently, and an event (record_event on one, wait_event on the
/// other) orders them. Copies that touch host memory are asynchronous like
/// the rest: the host memory must stay valid, and unmodified (to the device)
/// or unread (to the host), until the queue is synchronized or an event
/// recorded after the copy has completed.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "graft/core/device.h"

namespace graft::backend {

class DeviceAPI;

namespace detail {
struct DevicePool;
}

/// What a device is: for `graft devices` and for choosing one.
struct DeviceProperties {
  std::string name;                 ///< the device's name ("cpu-haswell-AMD EPYC ...")
  std::string platform;             ///< the driver or platform ("Portable Computing Language"); "host" for the CPU
  std::string version;              ///< the device's version string (OpenCL "OpenCL 3.0 PoCL ..."), may be empty
  std::string kind;                 ///< "cpu", "gpu", "accelerator" or "other"
  uint64_t global_memory_bytes = 0;  ///< memory the device has in all
  uint64_t max_allocation_bytes = 0;  ///< the largest single allocation it takes
  uint32_t compute_units = 0;       ///< parallel compute units (cores on a CPU)
};

/// Counters of one device's caching pool.
struct DevicePoolStats {
  uint64_t device_allocations = 0;  ///< blocks allocated from the device (pool misses)
  uint64_t device_frees = 0;        ///< blocks returned to the device (emptied cache)
  uint64_t reuses = 0;              ///< allocations served by a cached block
  uint64_t failed_allocations = 0;  ///< device allocations that failed (before or after the retry)
  uint64_t bytes_in_use = 0;        ///< bytes of the blocks held by live DeviceBuffers
  uint64_t bytes_cached = 0;        ///< bytes of the freed blocks the pool keeps for reuse
  uint64_t bytes_pending = 0;       ///< bytes released after queued work that has not finished (release_after)
  uint64_t peak_bytes_in_use = 0;   ///< the most bytes_in_use has been
};

/// Memory on a device, taken from its DeviceAPI's caching pool and given back
/// to the pool when the buffer is destroyed or reset (move-only), for
/// immediate reuse: the caller has waited for the queued work that uses it.
/// DeviceAPI::release_after gives it back without waiting instead.
class DeviceBuffer {
 public:
  /// An empty buffer (no memory).
  DeviceBuffer() = default;
  ~DeviceBuffer();
  /// Takes `other`'s memory; `other` becomes empty.
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  /// Gives back this buffer's memory, then takes `other`'s.
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  /// The device the memory is on.
  Device device() const { return device_; }
  /// The bytes asked for (copies are checked against it).
  size_t size() const { return size_; }
  /// The bytes of the pool block behind it (its size class, at least size()).
  size_t capacity() const { return capacity_; }
  /// The device's handle: the host address on the CPU, the cl_mem on OpenCL.
  void* handle() const { return handle_; }
  /// True when the buffer holds memory.
  explicit operator bool() const { return handle_ != nullptr; }
  /// Gives the memory back to the pool (the buffer becomes empty).
  void reset();

 private:
  friend class DeviceAPI;
  std::shared_ptr<detail::DevicePool> pool_;
  void* handle_ = nullptr;
  size_t size_ = 0;
  size_t capacity_ = 0;
  Device device_;
};

/// A queue of work on one device: what is queued on it runs in order (FIFO).
/// Made by DeviceAPI::create_queue; destroying it waits for its work.
class DeviceQueue {
 public:
  virtual ~DeviceQueue() = default;
  /// The device the queue runs on.
  Device device() const { return device_; }
  /// The native queue (a cl_command_queue on OpenCL; null on the CPU).
  virtual void* native_handle() const { return nullptr; }

 protected:
  /// A queue on `device`.
  explicit DeviceQueue(Device device) : device_(device) {}

 private:
  Device device_;
};

/// A point in one queue's work (DeviceAPI::record_event): complete when the
/// work queued before it has finished. Another queue may wait for it.
class DeviceEvent {
 public:
  virtual ~DeviceEvent() = default;
  /// The device of the queue it was recorded on.
  Device device() const { return device_; }
  /// The native event (a cl_event on OpenCL; null on the CPU).
  virtual void* native_handle() const { return nullptr; }

 protected:
  /// An event on `device`.
  explicit DeviceEvent(Device device) : device_(device) {}

 private:
  Device device_;
};

/// A kernel launch as a queue runs it. On a device, `native` is the
/// device's kernel object (a cl_kernel whose arguments are set) run over
/// `global` work items in `dims` dimensions. `host` is a function to run on
/// the host in the queue's order instead (the CPU's kernels; on a device the
/// call waits for the queue's earlier work, then runs it).
struct DeviceKernel {
  std::function<void()> host;           ///< host work, in queue order
  void* native = nullptr;               ///< the device's kernel object
  std::array<size_t, 3> global{1, 1, 1};  ///< work items per dimension
  uint32_t dims = 1;                    ///< dimensions of `global` used (1 to 3)
};

/// The memory, copies, queues and events of one device type, for all its
/// devices (ids 0 to device_count() - 1). Thread-safe. The pool is shared
/// by every caller of a device: allocation takes a cached block of the same
/// size class when one is free, else allocates from the device; when the
/// device is out of memory the pool returns its cached blocks to the device
/// and tries once more, then throws graft::Error (invalid_argument):
/// "out of device memory on opencl:0: 64 MiB requested, 1.2 GiB in use".
class DeviceAPI {
 public:
  virtual ~DeviceAPI();

  /// The device type it serves.
  virtual DeviceType type() const = 0;
  /// Empty when at least one device is usable; otherwise why there is none
  /// ("no OpenCL platform", "libOpenCL.so.1 not found ...").
  virtual std::string unavailable_reason() const { return {}; }
  /// Devices of this type on this machine (0 when none).
  virtual int device_count() const = 0;
  /// What device `id` is (throws invalid_argument on a bad id).
  virtual DeviceProperties properties(int id) const = 0;

  /// At least `bytes` (0 allowed) on `device` (of this type), from the
  /// device's pool. Throws invalid_argument on a wrong device, and the
  /// out-of-memory Error described above.
  DeviceBuffer allocate(Device device, size_t bytes);
  /// The pool counters of device `id`.
  DevicePoolStats pool_stats(int id) const;
  /// Returns device `id`'s cached (free) blocks to the device, after waiting
  /// for the blocks released with release_after.
  void empty_cache(int id);
  /// Caps the bytes the pool of device `id` holds from the device (in use
  /// plus cached); 0 removes the cap. An allocation past the cap fails as
  /// the device's would (to test the out-of-memory path, or to leave room).
  void set_memory_limit(int id, uint64_t bytes);

  /// A new queue on device `id`.
  virtual std::unique_ptr<DeviceQueue> create_queue(int id) = 0;
  /// A new queue on device `id` whose events carry device timestamps, for
  /// profiled runs (elapsed_microseconds). Default: create_queue (no times).
  virtual std::unique_ptr<DeviceQueue> create_profiled_queue(int id) { return create_queue(id); }
  /// Device time in microseconds from the completion of `begin` to that of
  /// `end`, two completed events recorded in this order on one profiled
  /// queue; negative when the device keeps no times (the default).
  virtual double elapsed_microseconds(const DeviceEvent& begin, const DeviceEvent& end) {
    (void)begin;
    (void)end;
    return -1;
  }
  /// Queues a copy of `bytes` from host `source` into `destination` at
  /// `offset`. Throws invalid_argument when the range passes the buffer's
  /// size or the buffer is on another device than the queue.
  void copy_to_device(DeviceQueue& queue, const DeviceBuffer& destination, size_t offset, const void* source,
                      size_t bytes);
  /// Queues a copy of `bytes` of `source` from `offset` to host `destination`
  /// (complete after synchronize or a completed event). Checked as above.
  void copy_to_host(DeviceQueue& queue, void* destination, const DeviceBuffer& source, size_t offset, size_t bytes);
  /// Queues a copy of `bytes` from `source` at `source_offset` to
  /// `destination` at `destination_offset`. Both buffers are of this device
  /// type; overlapping ranges of one buffer are an invalid_argument Error. A
  /// source on another device id than the queue's is copied through the host
  /// and the call waits (the caller has ordered the source's writes first).
  void copy_on_device(DeviceQueue& queue, const DeviceBuffer& destination, size_t destination_offset,
                      const DeviceBuffer& source, size_t source_offset, size_t bytes);
  /// Queues `kernel` (DeviceKernel says what runs).
  virtual void enqueue_kernel(DeviceQueue& queue, const DeviceKernel& kernel) = 0;
  /// Waits until everything queued on `queue` has finished.
  virtual void synchronize(DeviceQueue& queue) = 0;
  /// An event that completes when the work queued on `queue` so far has.
  virtual std::unique_ptr<DeviceEvent> record_event(DeviceQueue& queue) = 0;
  /// Work queued on `queue` after this call starts after `event` completes.
  virtual void wait_event(DeviceQueue& queue, const DeviceEvent& event) = 0;
  /// Waits on the host until `event` completes.
  virtual void synchronize(const DeviceEvent& event) = 0;
  /// True when `event` has completed (does not wait).
  virtual bool event_completed(const DeviceEvent& event) = 0;

  /// Gives `buffer` back to its pool once the work queued on `queue` so far
  /// has finished, without waiting for it: the block is reused only after an
  /// event recorded now completes (checked at each allocation; an allocation
  /// that finds the device out of memory waits for such blocks). `buffer`
  /// becomes empty. For values that die while a queue still reads them.
  void release_after(DeviceQueue& queue, DeviceBuffer& buffer);

 protected:
  /// Allocates `bytes` (> 0) on device `id`; null when the device is out of
  /// memory (or cannot take that size). Other failures throw.
  virtual void* device_allocate(int id, size_t bytes) = 0;
  /// Frees what device_allocate returned.
  virtual void device_free(int id, void* handle) = 0;
  /// The copies, after the checks of their public counterparts (bytes > 0).
  virtual void do_copy_to_device(DeviceQueue& queue, void* destination, size_t offset, const void* source,
                                 size_t bytes) = 0;
  /// See copy_to_host.
  virtual void do_copy_to_host(DeviceQueue& queue, void* destination, void* source, size_t offset, size_t bytes) = 0;
  /// See copy_on_device; both handles are on the queue's device.
  virtual void do_copy_on_device(DeviceQueue& queue, void* destination, size_t destination_offset, void* source,
                                 size_t source_offset, size_t bytes) = 0;

 private:
  friend struct detail::DevicePool;
  std::shared_ptr<detail::DevicePool> pool(int id) const;
  mutable std::mutex pools_mutex_;
  mutable std::vector<std::shared_ptr<detail::DevicePool>> pools_;
};

/// The size class a pool block of `bytes` gets: 512 bytes at least, then
/// steps of a quarter of the power of two below (at most 25% unused).
size_t device_pool_size_class(size_t bytes);

/// "512 bytes", "64 MiB", "1.2 GiB": a byte count as error messages give it.
std::string format_bytes(uint64_t bytes);

/// Registers `api` for its type (once per type; a second registration of a
/// type throws internal). Kept for the life of the process.
void register_device_api(std::unique_ptr<DeviceAPI> api);
/// The DeviceAPI of `type`. Throws unsupported naming the registered types
/// when none is registered for it.
DeviceAPI& device_api(DeviceType type);
/// Every registered DeviceAPI, in DeviceType order.
std::vector<DeviceAPI*> device_apis();

}  // namespace graft::backend

/// Registers a DeviceAPI class (default-constructible) at load time.
#define GRAFT_REGISTER_DEVICE_API(Class)                                                     \
  namespace {                                                                                \
  [[maybe_unused]] const bool graft_device_api_registered_##Class = [] {                    \
    ::graft::backend::register_device_api(std::make_unique<Class>());                       \
    return true;                                                                             \
  }();                                                                                       \
  }
