// Reading a serialized ModelProto without holding its weights twice.
//
// Parsing a whole model with protobuf copies every initializer's raw_data into
// a std::string, and the importer then copies it again into a 64-byte-aligned
// graft tensor: file bytes, parsed message and tensors were alive at once
// (three times the weights at the peak). parse_model_skipping_raw_data walks
// the protobuf wire format itself down to the main graph's initializers and
// hands protobuf everything except their raw_data payloads; the importer then
// reads each payload straight from the source (pread for a file) into its
// tensor. The peak is the tensors plus the model's small non-weight part.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace graft::frontend {

/// Random-access bytes of a model: a file (read with pread, never held whole)
/// or a buffer in memory.
class ByteSource {
 public:
  virtual ~ByteSource() = default;
  virtual uint64_t size() const = 0;
  /// Copies [offset, offset + n) to dst; throws Error(io) when it cannot
  /// (a file that shrank while it was read). offset + n <= size() is checked
  /// by the caller.
  virtual void read(uint64_t offset, void* dst, size_t n) const = 0;
};

/// A buffer in memory (not copied: it must outlive the source).
class MemoryByteSource final : public ByteSource {
 public:
  MemoryByteSource(const char* data, size_t size) : data_(data), size_(size) {}
  uint64_t size() const override { return size_; }
  void read(uint64_t offset, void* dst, size_t n) const override;

 private:
  const char* data_;
  size_t size_;
};

/// An open file. Throws Error(io) when it cannot be opened or is a directory.
class FileByteSource final : public ByteSource {
 public:
  explicit FileByteSource(const std::string& path);
  ~FileByteSource() override;
  FileByteSource(const FileByteSource&) = delete;
  FileByteSource& operator=(const FileByteSource&) = delete;
  uint64_t size() const override { return size_; }
  void read(uint64_t offset, void* dst, size_t n) const override;

 private:
  std::string path_;
  int fd_ = -1;
  uint64_t size_ = 0;
};

/// Where one initializer's raw_data payload lies in the source.
struct RawDataSlice {
  const ByteSource* source = nullptr;
  uint64_t offset = 0;
  uint64_t size = 0;
};

/// A ModelProto whose main graph's initializers have no raw_data; raw_data[i]
/// is where initializer i's payload lies (nullopt: it had no raw_data field).
struct ModelWithoutRawData {
  onnx::ModelProto model;
  std::vector<std::optional<RawDataSlice>> raw_data;
};

/// How deep protobuf messages may nest when graft parses a model: protobuf's
/// default (100) stops at about 30 nested subgraphs (If, Loop, Scan bodies:
/// graph, node, attribute per level); this allows about 130. Deeper models are
/// refused with a message naming the limit, never a stack overflow.
inline constexpr int kProtobufNestingLimit = 400;
/// Parses `bytes` into `message` with kProtobufNestingLimit; false when the
/// bytes are not a well-formed message (or nest deeper).
bool parse_message(google::protobuf::MessageLite& message, const std::string& bytes);

/// Parses the model in `source` as described above. Returns false, having
/// parsed nothing, when the bytes are not well-formed protobuf or hold a shape
/// this reader leaves to protobuf (groups, the graph field given twice, a
/// field with an unexpected wire type): the caller then parses the whole
/// model the ordinary way, which gives protobuf's verdict and errors.
bool parse_model_skipping_raw_data(const ByteSource& source, ModelWithoutRawData& out);

}  // namespace graft::frontend
