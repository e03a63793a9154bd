// The wire-format walk of model_bytes.h. Protobuf's encoding: a message is a
// sequence of fields, each a varint tag (field number << 3 | wire type) and a
// payload: a varint (type 0), 8 bytes (1), a varint length and that many
// bytes (2: strings, bytes, sub-messages, packed repeated fields) or 4 bytes
// (5). Parsing the concatenation of some of a message's fields gives the
// message with only those fields, so each level keeps the fields it does not
// look into as one byte string for protobuf, in their order.
#include "model_bytes.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <google/protobuf/io/coded_stream.h>

#include "graft/core/error.h"

namespace graft::frontend {

void MemoryByteSource::read(uint64_t offset, void* dst, size_t n) const {
  GRAFT_CHECK(offset <= size_ && n <= size_ - offset, "read past the end of a model buffer");
  if (n) std::memcpy(dst, data_ + offset, n);
}

FileByteSource::FileByteSource(const std::string& path) : path_(path) {
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) fail(ErrorKind::io, path, ": cannot open file (", std::strerror(errno), ")");
  struct stat st {};
  if (::fstat(fd_, &st) != 0) {
    ::close(fd_);
    fail(ErrorKind::io, path, ": cannot read file size");
  }
  if (S_ISDIR(st.st_mode)) {
    ::close(fd_);
    fail(ErrorKind::io, path, ": is a directory, not a file");
  }
  size_ = static_cast<uint64_t>(st.st_size);
}

FileByteSource::~FileByteSource() {
  if (fd_ >= 0) ::close(fd_);
}

void FileByteSource::read(uint64_t offset, void* dst, size_t n) const {
  GRAFT_CHECK(offset <= size_ && n <= size_ - offset, "read past the end of '", path_, "'");
  char* out = static_cast<char*>(dst);
  while (n > 0) {
    ssize_t got = ::pread(fd_, out, n, static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) fail(ErrorKind::io, path_, ": read failed (", std::strerror(errno), ")");
    if (got == 0) fail(ErrorKind::io, path_, ": the file became shorter while it was read");
    out += got;
    n -= static_cast<size_t>(got);
    offset += static_cast<uint64_t>(got);
  }
}

namespace {

constexpr uint64_t kModelGraphField = 7;         // ModelProto.graph
constexpr uint64_t kGraphInitializerField = 5;   // GraphProto.initializer
constexpr uint64_t kTensorRawDataField = 9;      // TensorProto.raw_data
constexpr int kWireVarint = 0, kWireFixed64 = 1, kWireLengthDelimited = 2, kWireFixed32 = 5;

/// One field: [begin, end) is the whole field, payload its bytes after the
/// tag (after the length too for length-delimited fields).
struct Field {
  uint64_t number = 0;
  int wire = 0;
  uint64_t begin = 0, payload = 0, end = 0;
};

bool read_varint(const ByteSource& source, uint64_t& pos, uint64_t end, uint64_t& value) {
  unsigned char bytes[10];
  size_t n = static_cast<size_t>(std::min<uint64_t>(sizeof bytes, end - pos));
  if (n == 0) return false;
  source.read(pos, bytes, n);
  value = 0;
  for (size_t i = 0; i < n; ++i) {
    value |= static_cast<uint64_t>(bytes[i] & 0x7f) << (7 * i);
    if (!(bytes[i] & 0x80)) {
      if (i == 9 && bytes[i] > 1) return false;  // more than 64 bits
      pos += i + 1;
      return true;
    }
  }
  return false;  // unterminated, or longer than 10 bytes
}

enum class Next { field, end, unreadable };

/// The field at pos in [pos, end); advances pos past it.
Next next_field(const ByteSource& source, uint64_t& pos, uint64_t end, Field& f) {
  if (pos == end) return Next::end;
  f.begin = pos;
  uint64_t tag = 0;
  if (!read_varint(source, pos, end, tag)) return Next::unreadable;
  f.number = tag >> 3;
  f.wire = static_cast<int>(tag & 7);
  if (f.number == 0 || f.number > (uint64_t{1} << 29) - 1) return Next::unreadable;
  uint64_t skip = 0;
  switch (f.wire) {
    case kWireVarint: {
      uint64_t ignored = 0;
      if (!read_varint(source, pos, end, ignored)) return Next::unreadable;
      break;
    }
    case kWireFixed64: skip = 8; break;
    case kWireFixed32: skip = 4; break;
    case kWireLengthDelimited:
      if (!read_varint(source, pos, end, skip)) return Next::unreadable;
      break;
    default: return Next::unreadable;  // groups (3, 4) and invalid types: left to protobuf
  }
  if (skip > end - pos) return Next::unreadable;
  f.payload = pos;
  pos += skip;
  f.end = pos;
  return Next::field;
}

void append(const ByteSource& source, const Field& f, std::string& out) {
  size_t old = out.size();
  out.resize(old + static_cast<size_t>(f.end - f.begin));
  source.read(f.begin, out.data() + old, static_cast<size_t>(f.end - f.begin));
}

/// Splits the message in [begin, end) into the fields numbered `wanted`, each
/// handed to `take`, and the others, appended to `rest` in their order. False
/// when the bytes are unreadable, a wanted field is not length-delimited, or
/// `take` returns false (then the caller leaves the message to protobuf).
template <typename Take>
bool split_fields(const ByteSource& source, uint64_t begin, uint64_t end, uint64_t wanted, std::string& rest, Take take) {
  Field f;
  Next next;
  for (uint64_t pos = begin; (next = next_field(source, pos, end, f)) != Next::end;) {
    if (next == Next::unreadable) return false;
    if (f.number != wanted) {
      append(source, f, rest);
      continue;
    }
    if (f.wire != kWireLengthDelimited || !take(f)) return false;
  }
  return true;
}

}  // namespace

bool parse_message(google::protobuf::MessageLite& message, const std::string& bytes) {
  google::protobuf::io::CodedInputStream input(reinterpret_cast<const uint8_t*>(bytes.data()),
                                               static_cast<int>(bytes.size()));
  input.SetRecursionLimit(kProtobufNestingLimit);
  return message.ParseFromCodedStream(&input) && input.ConsumedEntireMessage();
}

bool parse_model_skipping_raw_data(const ByteSource& source, ModelWithoutRawData& out) {
  std::string model_rest, graph_rest;
  std::vector<std::string> initializers;
  std::vector<std::optional<RawDataSlice>> raw_data;
  bool have_graph = false;
  bool readable = split_fields(source, 0, source.size(), kModelGraphField, model_rest, [&](const Field& graph) {
    if (have_graph) return false;  // a graph given twice would be merged by protobuf: leave that to it
    have_graph = true;
    return split_fields(source, graph.payload, graph.end, kGraphInitializerField, graph_rest, [&](const Field& tensor) {
      std::string rest;
      std::optional<RawDataSlice> raw;
      if (!split_fields(source, tensor.payload, tensor.end, kTensorRawDataField, rest, [&](const Field& bytes) {
            raw = RawDataSlice{&source, bytes.payload, bytes.end - bytes.payload};  // the last one wins, as in protobuf
            return true;
          }))
        return false;
      initializers.push_back(std::move(rest));
      raw_data.push_back(raw);
      return true;
    });
  });
  if (!readable) return false;
  onnx::ModelProto model;
  if (!parse_message(model, model_rest)) return false;
  if (have_graph) {
    onnx::GraphProto* graph = model.mutable_graph();
    if (!parse_message(*graph, graph_rest)) return false;
    for (std::string& bytes : initializers) {
      if (!parse_message(*graph->add_initializer(), bytes)) return false;
      std::string().swap(bytes);
    }
  }
  out.model = std::move(model);
  out.raw_data = std::move(raw_data);
  return true;
}

}  // namespace graft::frontend
