#include "tensor_proto.h"

#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <limits>

namespace graft::frontend {

namespace fs = std::filesystem;

std::string read_file_bytes(const std::string& path, size_t max_bytes) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) fail(ErrorKind::io, path, ": is a directory, not a file");
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) fail(ErrorKind::io, path, ": cannot open file");
  std::streamoff size = in.tellg();
  if (size < 0) fail(ErrorKind::io, path, ": cannot read file size");
  if (static_cast<uint64_t>(size) > max_bytes)
    fail(ErrorKind::invalid_model, path, ": file is ", size, " bytes, more than the ", max_bytes, " bytes allowed");
  std::string bytes(static_cast<size_t>(size), '\0');
  in.seekg(0);
  if (size > 0 && !in.read(bytes.data(), size)) fail(ErrorKind::io, path, ": read failed");
  return bytes;
}

namespace {

/// Resolves an external data location inside base_dir; refuses anything that leaves it.
fs::path resolve_external(const std::string& location, const std::string& base_dir, const std::string& what) {
  if (base_dir.empty()) fail(ErrorKind::invalid_model, what, ": external data is not allowed here");
  fs::path rel(location);
  if (location.empty() || rel.is_absolute() || rel.has_root_name() || rel.has_root_directory())
    fail(ErrorKind::invalid_model, what, ": external data location '", location, "' must be a relative path");
  for (const auto& part : rel)
    if (part == "..") fail(ErrorKind::invalid_model, what, ": external data location '", location, "' contains '..'");
  std::error_code ec;
  fs::path base = fs::canonical(base_dir, ec);
  if (ec) fail(ErrorKind::io, what, ": cannot resolve model folder '", base_dir, "'");
  fs::path full = fs::canonical(base / rel, ec);
  if (ec) fail(ErrorKind::io, what, ": external data file '", location, "' not found next to the model");
  auto [b, f] = std::mismatch(base.begin(), base.end(), full.begin(), full.end());
  if (b != base.end())
    fail(ErrorKind::invalid_model, what, ": external data file '", location, "' resolves outside the model folder");
  if (!fs::is_regular_file(full, ec)) fail(ErrorKind::invalid_model, what, ": external data '", location, "' is not a file");
  return full;
}

/// Validates an external data reference and returns where its bytes lie.
struct ExternalSlice {
  fs::path file;
  std::string location;
  uint64_t offset = 0;
};

ExternalSlice locate_external(const onnx::TensorProto& proto, const std::string& what, const std::string& base_dir,
                              size_t expected) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto& kv : proto.external_data()) {
    auto parse = [&](const std::string& v) -> int64_t {
      try {
        size_t pos = 0;
        long long x = std::stoll(v, &pos);
        if (pos != v.size() || x < 0) throw std::invalid_argument(v);
        return x;
      } catch (const std::exception&) {
        fail(ErrorKind::invalid_model, what, ": external data ", kv.key(), " '", v, "' is not a non-negative integer");
      }
    };
    if (kv.key() == "location") location = kv.value();
    else if (kv.key() == "offset") offset = parse(kv.value());
    else if (kv.key() == "length") length = parse(kv.value());
  }
  fs::path file = resolve_external(location, base_dir, what);
  uint64_t size = fs::file_size(file);
  if (static_cast<uint64_t>(offset) > size)
    fail(ErrorKind::invalid_model, what, ": external data offset ", offset, " is past the end of '", location, "'");
  uint64_t available = size - static_cast<uint64_t>(offset);
  uint64_t want = length >= 0 ? static_cast<uint64_t>(length) : expected;
  if (want != expected)
    fail(ErrorKind::invalid_model, what, ": external data length ", want, " does not match the tensor's ", expected,
         " bytes");
  if (want > available)
    fail(ErrorKind::invalid_model, what, ": external data needs ", want, " bytes at offset ", offset, " but '",
         location, "' has only ", available);
  return {file, location, static_cast<uint64_t>(offset)};
}

template <typename Field>
void check_count(const Field& field, int64_t numel, const std::string& what, const char* name) {
  if (static_cast<int64_t>(field.size()) != numel)
    fail(ErrorKind::invalid_model, what, ": ", name, " holds ", field.size(), " values, the shape needs ", numel);
}

}  // namespace

Tensor tensor_from_proto(const onnx::TensorProto& proto, const std::string& what, const std::string& base_dir,
                         const RawDataSlice* raw_slice) {
  if (!proto.has_data_type()) fail(ErrorKind::invalid_model, what, ": tensor has no data type");
  if (proto.data_type() < 0 || proto.data_type() > 16)
    fail(ErrorKind::invalid_model, what, ": data type ", proto.data_type(), " is not an ONNX tensor type");
  DType dtype = dtype_from_onnx(proto.data_type());
  if (!dtype_is_storable(dtype))
    fail(ErrorKind::unsupported, what, ": tensors of type ", dtype_name(dtype), " are not supported");
  if (proto.has_segment()) fail(ErrorKind::unsupported, what, ": segmented tensors are not supported");
  Shape shape(proto.dims().begin(), proto.dims().end());
  for (int64_t d : shape)
    if (d < 0) fail(ErrorKind::invalid_model, what, ": negative dimension in shape ", shape_to_string(shape));
  int64_t numel = shape_numel(shape, what);
  size_t nbytes = shape_nbytes(shape, dtype_size(dtype), what);
  const size_t es = dtype_size(dtype);

  // Validate the data size before allocating the tensor; raw bytes are then
  // read straight into it (no intermediate copy).
  std::function<void(char*)> read_raw;
  std::optional<ExternalSlice> external;
  if (proto.data_location() == onnx::TensorProto::EXTERNAL) {
    external = locate_external(proto, what, base_dir, nbytes);
    read_raw = [&](char* out) {
      std::ifstream in(external->file, std::ios::binary);
      in.seekg(static_cast<std::streamoff>(external->offset));
      if (nbytes && !in.read(out, static_cast<std::streamsize>(nbytes)))
        fail(ErrorKind::io, what, ": cannot read external data from '", external->location, "'");
    };
  } else if (raw_slice || proto.has_raw_data()) {
    uint64_t have = raw_slice ? raw_slice->size : proto.raw_data().size();
    if (have != nbytes)
      fail(ErrorKind::invalid_model, what, ": raw data has ", have, " bytes, shape ", shape_to_string(shape), " of ",
           dtype_name(dtype), " needs ", nbytes);
    if (raw_slice)
      read_raw = [&](char* out) { raw_slice->source->read(raw_slice->offset, out, nbytes); };
    else
      read_raw = [&](char* out) { if (nbytes) std::memcpy(out, proto.raw_data().data(), nbytes); };
  } else {
    switch (dtype) {
      case DType::float32: check_count(proto.float_data(), numel, what, "float_data"); break;
      case DType::float64: check_count(proto.double_data(), numel, what, "double_data"); break;
      case DType::int64: check_count(proto.int64_data(), numel, what, "int64_data"); break;
      case DType::uint32: case DType::uint64: check_count(proto.uint64_data(), numel, what, "uint64_data"); break;
      default: check_count(proto.int32_data(), numel, what, "int32_data"); break;
    }
  }
  // Raw bytes overwrite the whole tensor: no need to zero it first.
  Tensor t = read_raw ? Tensor::uninitialized(dtype, shape) : Tensor(dtype, shape);
  char* out = static_cast<char*>(t.raw_data());
  if (read_raw) {
    read_raw(out);
    if (dtype == DType::boolean)
      for (size_t i = 0; i < nbytes; ++i) out[i] = out[i] != 0;
    return t;
  }
  for (int64_t i = 0; i < numel; ++i) {
    char* dst = out + static_cast<size_t>(i) * es;
    switch (dtype) {
      case DType::float32: { float v = proto.float_data(static_cast<int>(i)); std::memcpy(dst, &v, 4); break; }
      case DType::float64: { double v = proto.double_data(static_cast<int>(i)); std::memcpy(dst, &v, 8); break; }
      case DType::int64: { int64_t v = proto.int64_data(static_cast<int>(i)); std::memcpy(dst, &v, 8); break; }
      case DType::uint64: { uint64_t v = proto.uint64_data(static_cast<int>(i)); std::memcpy(dst, &v, 8); break; }
      case DType::uint32: { uint32_t v = static_cast<uint32_t>(proto.uint64_data(static_cast<int>(i))); std::memcpy(dst, &v, 4); break; }
      case DType::int32: { int32_t v = proto.int32_data(static_cast<int>(i)); std::memcpy(dst, &v, 4); break; }
      case DType::int16: case DType::uint16: case DType::float16: case DType::bfloat16: {
        uint16_t v = static_cast<uint16_t>(proto.int32_data(static_cast<int>(i)));
        std::memcpy(dst, &v, 2);
        break;
      }
      case DType::int8: case DType::uint8: { *dst = static_cast<char>(proto.int32_data(static_cast<int>(i))); break; }
      case DType::boolean: { *dst = proto.int32_data(static_cast<int>(i)) != 0; break; }
      default: fail(ErrorKind::unsupported, what, ": dtype ", dtype_name(dtype));
    }
  }
  return t;
}

void tensor_to_proto(const Tensor& tensor, onnx::TensorProto& proto) {
  proto.set_data_type(static_cast<int32_t>(tensor.dtype()));
  for (int64_t d : tensor.shape()) proto.add_dims(d);
  proto.set_raw_data(std::string(static_cast<const char*>(tensor.raw_data()), tensor.nbytes()));
}

}  // namespace graft::frontend
