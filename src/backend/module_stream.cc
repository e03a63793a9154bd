#include "graft/backend/module_stream.h"

#include <bit>
#include <istream>
#include <ostream>

#include "graft/core/error.h"

namespace graft::backend {

static_assert(std::endian::native == std::endian::little, "module streams are written little-endian");

void ModuleWriter::u32(uint32_t value) { out_.write(reinterpret_cast<const char*>(&value), sizeof(value)); }
void ModuleWriter::u64(uint64_t value) { out_.write(reinterpret_cast<const char*>(&value), sizeof(value)); }
void ModuleWriter::i64(int64_t value) { out_.write(reinterpret_cast<const char*>(&value), sizeof(value)); }
void ModuleWriter::bytes(std::string_view data) {
  u64(data.size());
  out_.write(data.data(), static_cast<std::streamsize>(data.size()));
}
void ModuleWriter::i64s(const std::vector<int64_t>& values) {
  u64(values.size());
  for (int64_t v : values) i64(v);
}

ModuleReader::ModuleReader(std::istream& in, std::string what) : in_(in), what_(std::move(what)) {}

uint64_t ModuleReader::remaining() {
  std::streampos here = in_.tellg();
  if (here < 0) return 0;
  in_.seekg(0, std::ios::end);
  std::streampos end = in_.tellg();
  in_.seekg(here);
  return end > here ? static_cast<uint64_t>(end - here) : 0;
}

void ModuleReader::read(void* data, size_t size, std::string_view field) {
  if (size > remaining() || !in_.read(static_cast<char*>(data), static_cast<std::streamsize>(size)))
    fail(ErrorKind::invalid_model, what_, ": saved module ends inside field '", field, "'");
}

uint32_t ModuleReader::u32(std::string_view field) {
  uint32_t v = 0;
  read(&v, sizeof(v), field);
  return v;
}
uint64_t ModuleReader::u64(std::string_view field) {
  uint64_t v = 0;
  read(&v, sizeof(v), field);
  return v;
}
int64_t ModuleReader::i64(std::string_view field) {
  int64_t v = 0;
  read(&v, sizeof(v), field);
  return v;
}

std::string ModuleReader::bytes(std::string_view field, uint64_t max_size) {
  uint64_t size = u64(field);
  if (size > max_size || size > remaining())
    fail(ErrorKind::invalid_model, what_, ": field '", field, "' claims ", size, " bytes, ", remaining(),
         " are left");
  std::string data(static_cast<size_t>(size), '\0');
  read(data.data(), data.size(), field);
  return data;
}

std::vector<int64_t> ModuleReader::i64s(std::string_view field, uint64_t max_count) {
  uint64_t count = u64(field);
  if (count > max_count || count > remaining() / sizeof(int64_t))
    fail(ErrorKind::invalid_model, what_, ": field '", field, "' claims ", count, " values");
  std::vector<int64_t> values(static_cast<size_t>(count));
  for (auto& v : values) v = i64(field);
  return values;
}

}  // namespace graft::backend
