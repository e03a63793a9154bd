// Internal: the artifact's fixed header offsets, its attribute tags and the
// bounds-checked little-endian byte reader/writer the writer and reader share.
// docs/artifact-format.md is the prose version of this file; keep them in step.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "graft/core/error.h"

namespace graft::runtime::artifact_format {

// Header field offsets (the header is kArtifactHeaderSize = 128 bytes).
constexpr size_t kMagicOffset = 0;           // 8 bytes "GRAFTART"
constexpr size_t kVersionOffset = 8;         // u32 format version
constexpr size_t kHeaderSizeOffset = 12;     // u32 header size (128)
constexpr size_t kFileSizeOffset = 16;       // u64 total file size, checksum included
constexpr size_t kCpuFeaturesOffset = 24;    // u64 CpuFeature bits required
constexpr size_t kArchitectureOffset = 32;   // 16 bytes, NUL-padded ASCII
constexpr size_t kGraftVersionOffset = 48;   // 16 bytes, NUL-padded ASCII
constexpr size_t kSectionTableOffset = 64;   // 3 x (u64 offset, u64 size): graph, weights, modules
constexpr size_t kReservedOffset = 112;      // 16 zero bytes

constexpr size_t kWeightAlignment = 64;
constexpr uint32_t kNoWeight = UINT32_MAX;   // a Constant without value / an undefined tensor attribute
constexpr uint32_t kAbsentInput = UINT32_MAX;
constexpr uint64_t kNoWeightData = UINT64_MAX;  // data offset of a weight stored only in converted form (format 3)
constexpr int kMaxGraphDepth = 16;           // nested bodies (Subgraph in If in Loop ...)
constexpr uint32_t kMaxRank = 64;

/// Attribute value tags (the index of the AttributeValue variant alternative).
enum class AttributeTag : uint8_t {
  int64 = 0, float32 = 1, string = 2, tensor = 3, graph = 4, ints = 5, floats = 6, strings = 7, tensors = 8,
};

/// Appends little-endian fields to a string.
class ByteWriter {
 public:
  explicit ByteWriter(std::string& out) : out_(out) {}
  template <typename T> void put(T value) { out_.append(reinterpret_cast<const char*>(&value), sizeof(T)); }
  void str(std::string_view s) {
    put<uint32_t>(static_cast<uint32_t>(s.size()));
    out_.append(s.data(), s.size());
  }
  void pad_to(size_t alignment, size_t base = 0) {
    while ((base + out_.size()) % alignment) out_.push_back('\0');
  }
  size_t size() const { return out_.size(); }

 private:
  std::string& out_;
};

/// Reads little-endian fields from [begin, end); every read is checked and a
/// short read throws invalid_model naming the section and field.
class ByteReader {
 public:
  ByteReader(const uint8_t* begin, const uint8_t* end, std::string what) : p_(begin), end_(end), what_(std::move(what)) {}
  size_t remaining() const { return static_cast<size_t>(end_ - p_); }
  const uint8_t* position() const { return p_; }

  template <typename T> T get(std::string_view field) {
    need(sizeof(T), field);
    T value;
    std::memcpy(&value, p_, sizeof(T));
    p_ += sizeof(T);
    return value;
  }
  std::string str(std::string_view field, uint32_t max_size = 1u << 20) {
    uint32_t size = get<uint32_t>(field);
    if (size > max_size) fail(ErrorKind::invalid_model, what_, ": ", field, " of ", size, " bytes is too long");
    need(size, field);
    std::string s(reinterpret_cast<const char*>(p_), size);
    p_ += size;
    return s;
  }
  /// A count of records of at least `min_record_bytes` each, checked against what is left.
  uint32_t count(std::string_view field, size_t min_record_bytes) {
    uint32_t n = get<uint32_t>(field);
    if (min_record_bytes && n > remaining() / min_record_bytes)
      fail(ErrorKind::invalid_model, what_, ": ", field, " count ", n, " does not fit in the ", remaining(),
           " bytes left");
    return n;
  }
  void skip(size_t n, std::string_view field) {
    need(n, field);
    p_ += n;
  }
  const std::string& what() const { return what_; }

 private:
  void need(size_t n, std::string_view field) const {
    if (n > remaining())
      fail(ErrorKind::invalid_model, what_, ": ends inside ", field, " (", n, " bytes needed, ", remaining(), " left)");
  }
  const uint8_t* p_;
  const uint8_t* end_;
  std::string what_;
};

}  // namespace graft::runtime::artifact_format
