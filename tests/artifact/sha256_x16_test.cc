// sha256_x16 (sixteen SHA-256 streams at once) gives OpenSSL's digests for
// every tail length the padding distinguishes, at several strides.
#include <gtest/gtest.h>
#include <openssl/evp.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "../../src/runtime/sha256_x16.h"

namespace {

std::string openssl_sha256(const uint8_t* data, size_t size) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  EXPECT_TRUE(EVP_Digest(data, size, digest, &length, EVP_sha256(), nullptr));
  return std::string(reinterpret_cast<const char*>(digest), 32);
}

TEST(Sha256x16, MatchesOpenSslForEveryPaddingCase) {
  if (!graft::runtime::sha256_x16_supported()) GTEST_SKIP() << "this CPU has no AVX-512F/BW; the checksum uses OpenSSL alone";
  std::mt19937_64 random(11);
  std::vector<uint8_t> bytes(16 * 5000 + 64);
  for (uint8_t& b : bytes) b = static_cast<uint8_t>(random());
  // 0, one byte, the last tail that fits one padding block (55), the first
  // that needs two (56), block edges, and longer messages.
  for (size_t length : {0, 1, 3, 55, 56, 57, 63, 64, 65, 119, 120, 127, 128, 129, 1000, 4096, 4999}) {
    for (size_t stride : {length, length + 1, size_t{5000}}) {
      if (stride < length || 15 * stride + length > bytes.size()) continue;
      const uint8_t* first = bytes.data() + 3;  // unaligned on purpose
      unsigned char digests[16][32];
      graft::runtime::sha256_x16(first, stride, length, digests);
      for (size_t lane = 0; lane < 16; ++lane)
        EXPECT_EQ(std::string(reinterpret_cast<const char*>(digests[lane]), 32),
                  openssl_sha256(first + lane * stride, length))
            << "length " << length << ", stride " << stride << ", lane " << lane;
    }
  }
}

TEST(Sha256x16, LanesAreIndependent) {
  if (!graft::runtime::sha256_x16_supported()) GTEST_SKIP() << "this CPU has no AVX-512F/BW";
  std::vector<uint8_t> bytes(16 * 256, 0);
  bytes[5 * 256 + 17] = 1;  // only lane 5 differs
  unsigned char digests[16][32];
  graft::runtime::sha256_x16(bytes.data(), 256, 256, digests);
  for (size_t lane = 0; lane < 16; ++lane)
    EXPECT_EQ(std::memcmp(digests[lane], digests[lane == 0 ? 1 : 0], 32) == 0, lane != 5) << lane;
}

}  // namespace
