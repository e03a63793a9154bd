#include "graft/backend/buffer_pool.h"

#include "graft/backend/device_api.h"  // format_bytes

#include <cstdlib>
#include <vector>

namespace graft::backend {

struct BufferPool::State {
  std::mutex mutex;
  std::multimap<size_t, void*> free_blocks;  // capacity -> block
  size_t cached = 0;
  size_t in_use = 0;
  size_t run_base = 0;
  size_t limit = 0;  // 0: none
  MemoryStats stats;

  ~State() {
    for (auto& [size, block] : free_blocks) std::free(block);
  }
};

BufferPool::BufferPool() : state_(std::make_shared<State>()) {}

void BufferPool::set_memory_limit(size_t bytes) {
  std::lock_guard<std::mutex> lock(state_->mutex);
  state_->limit = bytes;
}
BufferPool::~BufferPool() = default;

void BufferPool::begin_run() {
  std::lock_guard<std::mutex> lock(state_->mutex);
  state_->stats = MemoryStats{};
  state_->run_base = state_->in_use;
}

MemoryStats BufferPool::stats() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->stats;
}

size_t BufferPool::cached_bytes() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->cached;
}

Tensor BufferPool::allocate(DType dtype, const Shape& shape) {
  if (!dtype_is_storable(dtype))
    fail(ErrorKind::unsupported, "tensors of dtype ", dtype_name(dtype), " are not supported");
  size_t nbytes = shape_nbytes(shape, dtype_size(dtype));
  size_t capacity = (std::max<size_t>(nbytes, 1) + 63) / 64 * 64;
  void* block = nullptr;
  std::vector<void*> to_free;  // released outside the lock
  std::shared_ptr<State> state = state_;
  {
    std::lock_guard<std::mutex> lock(state->mutex);
    if (state->limit && (capacity > state->limit || state->in_use > state->limit - capacity))
      fail(ErrorKind::resource_exhausted, "allocating ", format_bytes(nbytes), " for ", dtype_name(dtype),
           shape_to_string(shape), " would pass the memory limit of ", format_bytes(state->limit), " (",
           format_bytes(state->in_use), " held by other values)");
    auto it = state->free_blocks.lower_bound(capacity);
    // Take a free block unless it wastes more than half of itself.
    if (it != state->free_blocks.end() && it->first <= capacity * 2 + 4096) {
      capacity = it->first;
      block = it->second;
      state->free_blocks.erase(it);
      state->cached -= capacity;
      ++state->stats.reused;
    } else {
      // A miss: the free blocks smaller than this request cannot serve it.
      // While they hold more than the values in use, give them back rather
      // than keep both (a first run with many shapes otherwise leaves the
      // pool holding several times its peak).
      for (auto small = state->free_blocks.begin();
           small != state->free_blocks.end() && small->first < capacity && state->cached > state->in_use;) {
        state->cached -= small->first;
        to_free.push_back(small->second);
        small = state->free_blocks.erase(small);
      }
    }
    state->in_use += capacity;
    state->stats.peak_bytes = std::max(state->stats.peak_bytes, state->in_use - std::min(state->in_use, state->run_base));
    state->stats.total_allocated_bytes += nbytes;
    ++state->stats.allocations;
  }
  for (void* unused : to_free) std::free(unused);
  if (!block) {
    block = std::aligned_alloc(64, capacity);
    if (!block) {
      std::lock_guard<std::mutex> lock(state->mutex);
      state->in_use -= capacity;
      fail(ErrorKind::resource_exhausted, "the host is out of memory allocating ", format_bytes(nbytes), " for ",
           dtype_name(dtype), shape_to_string(shape));
    }
  }
  auto release = [state, block, capacity] {
    std::lock_guard<std::mutex> lock(state->mutex);
    state->in_use -= capacity;
    state->free_blocks.emplace(capacity, block);
    state->cached += capacity;
  };
  auto storage = std::make_shared<Storage>(block, nbytes, release);
  return Tensor(dtype, shape, std::move(storage));
}

}  // namespace graft::backend
