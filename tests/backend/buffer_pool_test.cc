#include "graft/backend/buffer_pool.h"

#include <gtest/gtest.h>

#include <vector>

using namespace graft;
using namespace graft::backend;

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

TEST(BufferPool, AMissReleasesFreeBlocksTooSmallToServeIt) {
  BufferPool pool;
  pool.begin_run();
  {
    std::vector<Tensor> small;
    for (int i = 0; i < 10; ++i) small.push_back(pool.allocate(DType::float32, {256}));
  }
  EXPECT_EQ(pool.cached_bytes(), 10u * 1024u);
  // A value none of them can hold: the ten small blocks, more than the
  // values in use, go back to the system instead of staying beside it.
  Tensor big = pool.allocate(DType::float32, {1 << 18});
  EXPECT_EQ(pool.cached_bytes(), 0u);
  {
    // While values in use outweigh the free blocks, the free ones stay.
    Tensor held = pool.allocate(DType::float32, {1 << 16});
    { Tensor spare = pool.allocate(DType::float32, {256}); }
    Tensor bigger = pool.allocate(DType::float32, {1 << 19});
    EXPECT_EQ(pool.cached_bytes(), 1024u);
  }
}
