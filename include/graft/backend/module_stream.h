/// \file
/// Little-endian binary fields for CompiledModule::save() and module loaders.
/// The reader checks every length against the bytes the stream really has
/// left before it allocates, and throws Error(invalid_model) naming the field
/// (never crashes) on short or malformed input.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

namespace graft::backend {

/// Writes fields to a module's save stream.
class ModuleWriter {
 public:
  explicit ModuleWriter(std::ostream& out) : out_(out) {}
  void u32(uint32_t value);
  void u64(uint64_t value);
  void i64(int64_t value);
  /// A u64 length followed by the bytes.
  void bytes(std::string_view data);
  void i64s(const std::vector<int64_t>& values);

 private:
  std::ostream& out_;
};

/// Reads fields written by ModuleWriter; `what` names the module in errors.
class ModuleReader {
 public:
  ModuleReader(std::istream& in, std::string what);
  uint32_t u32(std::string_view field);
  uint64_t u64(std::string_view field);
  int64_t i64(std::string_view field);
  /// A length-prefixed byte string of at most `max_size` bytes.
  std::string bytes(std::string_view field, uint64_t max_size = UINT64_MAX);
  /// A count-prefixed list of at most `max_count` values.
  std::vector<int64_t> i64s(std::string_view field, uint64_t max_count);
  /// Bytes left in the stream.
  uint64_t remaining();

 private:
  void read(void* data, size_t size, std::string_view field);
  std::istream& in_;
  std::string what_;
};

}  // namespace graft::backend
