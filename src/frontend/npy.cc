// NumPy .npy reader and writer. The header is a Python dict literal; we parse
// only the three keys numpy writes ('descr', 'fortran_order', 'shape') and
// check the promised data size against the file before allocating.
#include "graft/frontend/npy.h"

#include <cstring>
#include <fstream>

#include "tensor_proto.h"

namespace graft::frontend {

namespace {

struct NpyType {
  const char* descr;
  DType dtype;
};
constexpr NpyType kTypes[] = {
    {"<f4", DType::float32}, {"<f8", DType::float64}, {"<f2", DType::float16}, {"|i1", DType::int8},
    {"<i1", DType::int8},    {"<i2", DType::int16},   {"<i4", DType::int32},   {"<i8", DType::int64},
    {"|u1", DType::uint8},   {"<u1", DType::uint8},   {"<u2", DType::uint16},  {"<u4", DType::uint32},
    {"<u8", DType::uint64},  {"|b1", DType::boolean},
};

std::string header_value(const std::string& header, const std::string& key, const std::string& path) {
  size_t k = header.find("'" + key + "'");
  if (k == std::string::npos) fail(ErrorKind::invalid_argument, path, ": .npy header has no '", key, "'");
  size_t colon = header.find(':', k);
  if (colon == std::string::npos) fail(ErrorKind::invalid_argument, path, ": malformed .npy header");
  size_t start = header.find_first_not_of(' ', colon + 1);
  if (start == std::string::npos) fail(ErrorKind::invalid_argument, path, ": malformed .npy header");
  size_t end;
  if (header[start] == '(') end = header.find(')', start) + 1;
  else if (header[start] == '\'') end = header.find('\'', start + 1) + 1;
  else end = header.find_first_of(",}", start);
  if (end == std::string::npos || end == 0 || end <= start)
    fail(ErrorKind::invalid_argument, path, ": malformed .npy header");
  return header.substr(start, end - start);
}

}  // namespace

Tensor load_npy(const std::string& path) { return parse_npy(read_file_bytes(path, size_t{1} << 34), path); }

Tensor parse_npy(const std::string& bytes, const std::string& path) {
  if (bytes.size() < 10 || std::memcmp(bytes.data(), "\x93NUMPY", 6) != 0)
    fail(ErrorKind::invalid_argument, path, ": not an .npy file");
  int major = static_cast<unsigned char>(bytes[6]);
  size_t header_len, offset;
  if (major == 1) {
    header_len = static_cast<unsigned char>(bytes[8]) | (static_cast<size_t>(static_cast<unsigned char>(bytes[9])) << 8);
    offset = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) fail(ErrorKind::invalid_argument, path, ": truncated .npy header");
    header_len = 0;
    for (int i = 0; i < 4; ++i) header_len |= static_cast<size_t>(static_cast<unsigned char>(bytes[8 + i])) << (8 * i);
    offset = 12;
  } else {
    fail(ErrorKind::invalid_argument, path, ": unsupported .npy version ", major);
  }
  if (header_len > 1 << 20 || offset + header_len > bytes.size())
    fail(ErrorKind::invalid_argument, path, ": .npy header length ", header_len, " exceeds the file");
  std::string header = bytes.substr(offset, header_len);
  std::string descr = header_value(header, "descr", path);
  std::string fortran = header_value(header, "fortran_order", path);
  std::string shape_text = header_value(header, "shape", path);
  if (fortran != "False") fail(ErrorKind::invalid_argument, path, ": Fortran-order .npy files are not supported");
  DType dtype = DType::undefined;
  for (const auto& t : kTypes)
    if (descr == std::string("'") + t.descr + "'") dtype = t.dtype;
  if (dtype == DType::undefined) fail(ErrorKind::invalid_argument, path, ": unsupported .npy dtype ", descr);
  Shape shape;
  if (shape_text.size() < 2 || shape_text.front() != '(' || shape_text.back() != ')')
    fail(ErrorKind::invalid_argument, path, ": malformed .npy shape ", shape_text);
  std::string inner = shape_text.substr(1, shape_text.size() - 2);
  size_t pos = 0;
  while (pos < inner.size()) {
    size_t comma = inner.find(',', pos);
    std::string item = inner.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    size_t a = item.find_first_not_of(' '), b = item.find_last_not_of(' ');
    if (a != std::string::npos) {
      item = item.substr(a, b - a + 1);
      if (item.empty() || item.size() > 18 || item.find_first_not_of("0123456789") != std::string::npos)
        fail(ErrorKind::invalid_argument, path, ": malformed .npy shape ", shape_text);
      shape.push_back(std::stoll(item));
    }
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  size_t nbytes = shape_nbytes(shape, dtype_size(dtype), path);
  size_t data_offset = offset + header_len;
  if (bytes.size() - data_offset != nbytes)
    fail(ErrorKind::invalid_argument, path, ": .npy header promises shape ", shape_to_string(shape), " of ",
         dtype_name(dtype), " (", nbytes, " bytes) but the file holds ", bytes.size() - data_offset, " bytes of data");
  Tensor t(dtype, shape);
  if (nbytes) std::memcpy(t.raw_data(), bytes.data() + data_offset, nbytes);
  return t;
}

void save_npy(const Tensor& tensor, const std::string& path) {
  const char* descr = nullptr;
  for (const auto& t : kTypes)
    if (t.dtype == tensor.dtype() && !descr) descr = t.descr;
  if (!descr) fail(ErrorKind::unsupported, path, ": cannot write dtype ", dtype_name(tensor.dtype()), " to .npy");
  std::string shape = "(";
  for (int64_t d : tensor.shape()) shape += std::to_string(d) + ",";
  if (tensor.rank() > 1) shape.pop_back();
  shape += ")";
  std::string header = std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::ofstream out(path, std::ios::binary);
  if (!out) fail(ErrorKind::io, path, ": cannot open for writing");
  out.write("\x93NUMPY\x01\x00", 8);
  char len[2] = {static_cast<char>(header.size() & 0xff), static_cast<char>(header.size() >> 8)};
  out.write(len, 2);
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  out.write(static_cast<const char*>(tensor.raw_data()), static_cast<std::streamsize>(tensor.nbytes()));
  if (!out) fail(ErrorKind::io, path, ": write failed");
}

}  // namespace graft::frontend
