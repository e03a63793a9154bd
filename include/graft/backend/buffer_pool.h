/// \file
/// BufferPool: run-time memory for intermediate values with liveness-based
/// reuse. A value's buffer returns to the pool when its last reader is done
/// (when the executor drops it and no view holds it), and the next allocation
/// of a similar size (at most half the block wasted) takes it. An allocation
/// that no free block serves gives back the free blocks smaller than itself
/// while the free blocks outweigh the values in use.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>

#include "graft/ops/op_context.h"

namespace graft::backend {

/// Byte counts of one run.
struct MemoryStats {
  size_t peak_bytes = 0;           ///< most bytes held by intermediate values at once
  size_t total_allocated_bytes = 0;  ///< sum of the sizes of every intermediate value
  size_t allocations = 0;          ///< number of values allocated
  size_t reused = 0;               ///< allocations served from a freed buffer
};

/// A pool of 64-byte-aligned blocks. Not shared between concurrent runs; the
/// blocks it hands out stay valid after the pool object is gone.
class BufferPool : public ops::OutputAllocator {
 public:
  BufferPool();
  ~BufferPool() override;
  Tensor allocate(DType dtype, const Shape& shape) override;
  /// Starts counting a new run's statistics.
  void begin_run();
  /// Statistics since begin_run().
  MemoryStats stats() const;
  /// Bytes currently held in free blocks.
  size_t cached_bytes() const;
  /// Caps the bytes held by the values the pool has handed out and not got
  /// back (0: no cap). An allocation that would pass it throws a
  /// `resource_exhausted` Error naming the size, the type, the cap and what
  /// is held, before any memory is taken; the pool stays usable.
  void set_memory_limit(size_t bytes);

 private:
  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace graft::backend
