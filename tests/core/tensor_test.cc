#include <gtest/gtest.h>

#include <set>

#include <cmath>

#include "graft/core/tensor.h"

using namespace graft;

TEST(Tensor, AllocatesAlignedZeroedStorage) {
  Tensor t(DType::float32, {2, 3});
  EXPECT_EQ(t.numel(), 6);
  EXPECT_EQ(t.nbytes(), 24u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t.raw_data()) % 64, 0u);
  for (float v : t.values<float>()) EXPECT_EQ(v, 0.0f);
}

TEST(Tensor, RejectsOverflowingShape) {
  try {
    Tensor t(DType::float32, {int64_t{1} << 40, int64_t{1} << 40});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("2^63"), std::string::npos) << e.what();
  }
  EXPECT_THROW(Tensor(DType::float32, {-1, 2}), Error);
}

TEST(Tensor, CopyFromBumpsVersion) {
  Tensor w = Tensor::from_vector<float>({1, 2, 3}, {3});
  uint64_t v0 = w.version();
  w.copy_from(Tensor::from_vector<float>({4, 5, 6}, {3}));
  EXPECT_GT(w.version(), v0);
  EXPECT_EQ(w.data<float>()[2], 6.0f);
  EXPECT_THROW(w.copy_from(Tensor::from_vector<float>({1}, {1})), Error);
}

TEST(Tensor, AStorageWhereAFreedOneWasNeverRepeatsItsVersion) {
  // Caches key converted weights on (storage, version): a new storage at a
  // freed one's address must not look like the old bytes. Versions unique
  // over every storage and write guarantee it wherever the allocator puts
  // the next storage (a sanitizer's allocator rarely reuses an address soon,
  // glibc's at once).
  std::set<uint64_t> versions;
  for (int i = 0; i < 64; ++i) {
    Tensor t = Tensor::from_vector<float>({static_cast<float>(i)}, {1});
    EXPECT_TRUE(versions.insert(t.version()).second) << "a new storage repeated a version at " << i;
    t.copy_from(Tensor::from_vector<float>({1.0f}, {1}));
    EXPECT_TRUE(versions.insert(t.version()).second) << "a write repeated a version at " << i;
  }
}

TEST(DType, Float16RoundTrips) {
  for (float f : {0.0f, 1.0f, -2.5f, 65504.0f, 6.1035156e-05f, 5.9604645e-08f}) {
    EXPECT_EQ(static_cast<float>(float16_t(f)), f) << f;
  }
  EXPECT_TRUE(std::isinf(static_cast<float>(float16_t(1e6f))));
  EXPECT_EQ(static_cast<float>(bfloat16_t(1.0f)), 1.0f);
}
