// Internal: SHA-256 of sixteen equal-length messages at once, one message per
// 32-bit lane of the AVX-512 registers (the "multi-buffer" technique).
//
// Verifying an artifact is SHA-256 over every byte of a file of a few hundred
// megabytes: one SHA-256 stream is a chain of dependent rounds, about 2 GB/s
// per core even with the SHA instructions. Sixteen independent streams keep
// the vector units busy instead (about 3 GB/s per core on AMD Zen 5). No
// packaged library offers multi-buffer SHA-256 (OpenSSL's is internal to its
// TLS code), hence this file. The result is plain SHA-256 of each message:
// tests/artifact/sha256_x16_test.cc checks it against OpenSSL.
#pragma once

#include <cstddef>
#include <cstdint>

namespace graft::runtime {

/// Whether this machine can run sha256_x16 (x86-64 with AVX-512F and BW).
bool sha256_x16_supported();

/// Writes the SHA-256 digests of sixteen messages of `length` bytes each,
/// message i starting at `first + i * stride`, to `digests[i]`. Requires
/// sha256_x16_supported() and 15 * stride + 63 to fit in an int32 (the lanes
/// load through 32-bit gather offsets); both are checked (internal error).
void sha256_x16(const uint8_t* first, size_t stride, size_t length, unsigned char (*digests)[32]);

}  // namespace graft::runtime
