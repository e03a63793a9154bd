#include "cli_support.h"

#include <cctype>
#include <charconv>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "graft/core/error.h"

namespace graft::cli {

std::pair<std::string, std::string> split_assignment(const std::string& text, const std::string& flag,
                                                     bool empty_value_allowed) {
  size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || (eq + 1 == text.size() && !empty_value_allowed))
    fail(ErrorKind::invalid_argument, flag, " '", text, "' is not of the form NAME=VALUE");
  return {text.substr(0, eq), text.substr(eq + 1)};
}

namespace {

bool parse_int64(const std::string& text, int64_t& value) {
  if (text.empty()) return false;
  const char* begin = text.data();
  const char* end = begin + text.size();
  auto [ptr, error] = std::from_chars(begin, end, value);
  return error == std::errc() && ptr == end;
}

}  // namespace

std::vector<int64_t> parse_dims(const std::string& given, const std::string& flag) {
  std::vector<int64_t> dims;
  // The brackets of shape_to_string's "[1,3]" are accepted, so that a shape
  // graft printed can be given back.
  std::string text = given;
  if (text.size() >= 2 && text.front() == '[' && text.back() == ']') text = text.substr(1, text.size() - 2);
  if (text.empty()) return dims;
  std::stringstream parts(text);
  std::string part;
  while (std::getline(parts, part, ',')) {
    int64_t d = 0;
    if (!parse_int64(part, d) || d < 0)
      fail(ErrorKind::invalid_argument, flag, " '", given, "': '", part,
           "' is not a dimension (expected non-negative integers separated by commas)");
    dims.push_back(d);
  }
  if (text.back() == ',')
    fail(ErrorKind::invalid_argument, flag, " '", given, "': trailing comma (expected e.g. 1,3,224,224)");
  return dims;
}

std::map<std::string, std::vector<int64_t>> parse_shape_flags(const std::vector<std::string>& texts) {
  std::map<std::string, std::vector<int64_t>> shapes;
  for (const std::string& text : texts) {
    auto [name, dims] = split_assignment(text, "--shape", true);
    if (!shapes.emplace(name, parse_dims(dims, "--shape " + name)).second)
      fail(ErrorKind::invalid_argument, "--shape given twice for '", name, "'");
  }
  return shapes;
}

int parse_thread_count(const std::string& text, const std::string& flag) {
  int64_t v = 0;
  if (!parse_int64(text, v) || v < 1 || v > 1024)
    fail(ErrorKind::invalid_argument, flag, " '", text, "' is not a thread count (expected an integer in 1..1024)");
  return static_cast<int>(v);
}

int64_t parse_count(const std::string& text, const std::string& flag, int64_t max) {
  int64_t v = 0;
  if (!parse_int64(text, v) || v < 0 || v > max)
    fail(ErrorKind::invalid_argument, flag, " '", text, "' is not a count (expected an integer in 0..", max, ")");
  return v;
}

std::string format_bytes(uint64_t bytes) {
  char buffer[64];
  if (bytes < 1024) {
    std::snprintf(buffer, sizeof(buffer), "%llu B", static_cast<unsigned long long>(bytes));
  } else if (bytes < 1024ull * 1024) {
    std::snprintf(buffer, sizeof(buffer), "%.2f KiB", static_cast<double>(bytes) / 1024);
  } else if (bytes < 1024ull * 1024 * 1024) {
    std::snprintf(buffer, sizeof(buffer), "%.2f MiB", static_cast<double>(bytes) / (1024.0 * 1024));
  } else {
    std::snprintf(buffer, sizeof(buffer), "%.2f GiB", static_cast<double>(bytes) / (1024.0 * 1024 * 1024));
  }
  return buffer;
}

std::vector<std::string> parse_name_list(const std::string& text, const std::string& flag) {
  std::vector<std::string> names;
  size_t start = 0;
  while (true) {
    size_t comma = text.find(',', start);
    std::string name = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (name.empty()) fail(ErrorKind::invalid_argument, flag, " '", text, "' has an empty name (expected a,b,c)");
    names.push_back(name);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return names;
}

std::optional<bool> parse_on_off(const std::string& text, const std::string& flag) {
  if (text.empty()) return std::nullopt;
  if (text == "on") return true;
  if (text == "off") return false;
  fail(ErrorKind::invalid_argument, flag, " '", text, "' is not valid (expected on or off)");
}

std::string read_file(const std::string& path) {
  std::error_code error;
  if (std::filesystem::is_directory(path, error)) fail(ErrorKind::io, "'", path, "' is a directory, not a file");
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(ErrorKind::io, "cannot open '", path, "'");
  std::ostringstream contents;
  contents << in.rdbuf();
  if (in.bad()) fail(ErrorKind::io, "cannot read '", path, "'");
  return contents.str();
}

std::string file_name_for(const std::string& value_name) {
  std::string name = value_name;
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-' && c != '_') c = '_';
  if (name.empty() || name == "." || name == "..") name = "output";
  return name;
}

std::string one_line(const std::string& message) {
  static const char* hex = "0123456789abcdef";
  std::string line;
  for (char c : message) {
    auto byte = static_cast<unsigned char>(c);
    if (c == '\n') {
      line += "\\n";
    } else if (byte < 0x20 || byte == 0x7f) {
      line += "\\x";
      line += hex[byte >> 4];
      line += hex[byte & 15];
    } else {
      line += c;
    }
  }
  return line;
}

}  // namespace graft::cli
