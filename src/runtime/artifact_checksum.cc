#include "artifact_checksum.h"

#include <openssl/evp.h>

#include <algorithm>
#include <vector>

#include "graft/core/error.h"
#include "graft/core/parallel.h"
#include "sha256_x16.h"

namespace graft::runtime::artifact_format {

namespace {

void sha256(const uint8_t* data, size_t size, unsigned char* digest) {
  unsigned int digest_size = 0;
  if (!EVP_Digest(data, size, digest, &digest_size, EVP_sha256(), nullptr) || digest_size != 32)
    fail(ErrorKind::internal, "SHA-256 failed");
}

}  // namespace

std::array<unsigned char, 32> artifact_checksum(const uint8_t* data, size_t size, uint32_t version) {
  std::array<unsigned char, 32> result{};
  if (version < 2) {
    sha256(data, size, result.data());
    return result;
  }
  const size_t chunk_bytes = version < 4 ? kChecksumChunkBytesV2 : kChecksumChunkBytesV4;
  const size_t chunks = size == 0 ? 1 : (size + chunk_bytes - 1) / chunk_bytes;
  std::vector<unsigned char> digests(chunks * 32);
  // Batches of sixteen whole chunks hashed at once where the CPU allows, then
  // the remaining chunks one by one: two loops, so that each splits evenly.
  const size_t batches = sha256_x16_supported() ? size / chunk_bytes / 16 : 0;
  parallel_for(static_cast<int64_t>(batches), 1, [&](int64_t begin, int64_t end) {
    for (int64_t batch = begin; batch < end; ++batch) {
      const size_t first = 16 * static_cast<size_t>(batch);
      sha256_x16(data + first * chunk_bytes, chunk_bytes, chunk_bytes,
                 reinterpret_cast<unsigned char (*)[32]>(digests.data() + 32 * first));
    }
  });
  const size_t first_single = 16 * batches;
  parallel_for(static_cast<int64_t>(chunks - first_single), 1, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const size_t c = first_single + static_cast<size_t>(i);
      const size_t offset = c * chunk_bytes;
      sha256(data + offset, std::min(chunk_bytes, size - offset), digests.data() + 32 * c);
    }
  });
  sha256(digests.data(), digests.size(), result.data());
  return result;
}

}  // namespace graft::runtime::artifact_format
