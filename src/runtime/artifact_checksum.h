// Internal: the checksum that closes an artifact (docs/artifact-format.md).
//
// Format 1: SHA-256 of every byte before the checksum. Format 2: the bytes in
// 4 MiB chunks, each hashed with SHA-256 on the intra-op threads, then the
// SHA-256 of the chunk digests in order (a two-level hash tree). Both are
// SHA-256 over the whole file and detect the same damage; the tree lets two
// cores verify a 100 MB artifact in half the time, which is most of what
// loading one costs.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace graft::runtime::artifact_format {

/// Chunk size of format 2's hash tree.
constexpr size_t kChecksumChunkBytes = size_t{4} << 20;

/// The checksum of `size` bytes at `data` as format `version` (1 or 2)
/// defines it, on up to current_num_threads() threads.
std::array<unsigned char, 32> artifact_checksum(const uint8_t* data, size_t size, uint32_t version);

}  // namespace graft::runtime::artifact_format
