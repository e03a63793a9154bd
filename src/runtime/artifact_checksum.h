// Internal: the checksum that closes an artifact (docs/artifact-format.md).
//
// Format 1: SHA-256 of every byte before the checksum. Formats 2 and later:
// the bytes in chunks (4 MiB in formats 2 and 3, 256 KiB from format 4 on),
// each hashed with SHA-256 on the intra-op threads, then the SHA-256 of the
// chunk digests in order (a two-level hash tree). All are SHA-256 over the
// whole file and detect the same damage; the tree lets two cores verify a
// 100 MB artifact in half the time, which is most of what loading one costs.
// Format 4's smaller chunks come sixteen to a batch, hashed sixteen at once
// (sha256_x16.h) where the CPU has AVX-512.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace graft::runtime::artifact_format {

/// Chunk size of the hash tree of formats 2 and 3.
constexpr size_t kChecksumChunkBytesV2 = size_t{4} << 20;

/// Chunk size of the hash tree from format 4 on: sixteen chunks make one
/// sha256_x16 batch, and a 100 MB file gives every thread many batches.
constexpr size_t kChecksumChunkBytesV4 = size_t{256} << 10;

/// The checksum of `size` bytes at `data` as format `version` (1 to 4)
/// defines it, on up to current_num_threads() threads.
std::array<unsigned char, 32> artifact_checksum(const uint8_t* data, size_t size, uint32_t version);

}  // namespace graft::runtime::artifact_format
