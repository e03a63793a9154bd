#include <gtest/gtest.h>

#include "graft/runtime/buffer_pool.h"

using namespace graft;
using namespace graft::runtime;

TEST(BufferPool, ReusesFreedBlocksAndTracksPeak) {
  BufferPool pool;
  pool.begin_run();
  void* first = nullptr;
  {
    Tensor a = pool.allocate(DType::float32, {1024});
    first = a.raw_data();
    EXPECT_EQ(reinterpret_cast<uintptr_t>(first) % 64, 0u);
    Tensor b = pool.allocate(DType::float32, {1024});
    EXPECT_NE(b.raw_data(), first);
  }
  Tensor c = pool.allocate(DType::float32, {1000});
  MemoryStats s = pool.stats();
  EXPECT_EQ(s.allocations, 3u);
  EXPECT_EQ(s.reused, 1u);
  EXPECT_EQ(s.peak_bytes, 2u * 4096u);
  EXPECT_EQ(s.total_allocated_bytes, 4096u * 2 + 4000u);
}

TEST(BufferPool, BlocksOutliveThePool) {
  Tensor t;
  {
    BufferPool pool;
    t = pool.allocate(DType::int64, {3});
  }
  t.data<int64_t>()[2] = 7;
  EXPECT_EQ(t.data<int64_t>()[2], 7);
}

TEST(BufferPool, RejectsOverflowingShape) {
  BufferPool pool;
  EXPECT_THROW(pool.allocate(DType::float32, {int64_t{1} << 62, 8}), Error);
}
