#include "artifact_checksum.h"

#include <openssl/evp.h>

#include <algorithm>
#include <vector>

#include "graft/core/error.h"
#include "graft/core/parallel.h"

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
  const size_t chunks = size == 0 ? 1 : (size + kChecksumChunkBytes - 1) / kChecksumChunkBytes;
  std::vector<unsigned char> digests(chunks * 32);
  parallel_for(static_cast<int64_t>(chunks), 1, [&](int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c) {
      size_t offset = static_cast<size_t>(c) * kChecksumChunkBytes;
      size_t length = std::min(kChecksumChunkBytes, size - offset);
      sha256(data + offset, length, digests.data() + 32 * static_cast<size_t>(c));
    }
  });
  sha256(digests.data(), digests.size(), result.data());
  return result;
}

}  // namespace graft::runtime::artifact_format
