/// \file
/// Small helpers shared by the CLI's commands: parsing NAME=VALUE flags,
/// dimension lists and thread counts (each bad value is a one-line
/// Error(invalid_argument) naming the flag), and formatting sizes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <map>
#include <utility>
#include <vector>

namespace graft::cli {

/// Splits "NAME=VALUE" given to `flag`; NAME must be non-empty, and VALUE
/// too unless `empty_value_allowed` ("x=" is a scalar's shape).
std::pair<std::string, std::string> split_assignment(const std::string& text, const std::string& flag,
                                                     bool empty_value_allowed = false);

/// Parses "1,3,224,224" (non-negative integers, comma-separated, optionally
/// in brackets: "[1,3,224,224]"; "" and "[]" are a scalar's empty shape) for
/// `flag`.
std::vector<int64_t> parse_dims(const std::string& text, const std::string& flag);

/// Parses repeated `--shape NAME=D0,D1,...` values into shapes by input name;
/// a name given twice is an error.
std::map<std::string, std::vector<int64_t>> parse_shape_flags(const std::vector<std::string>& texts);

/// Parses a thread count given to `flag`: an integer in 1..1024.
int parse_thread_count(const std::string& text, const std::string& flag);

/// Parses a non-negative integer no larger than `max` given to `flag`.
int64_t parse_count(const std::string& text, const std::string& flag, int64_t max);

/// Parses "a,b,c" given to `flag` into non-empty names ("a,,b" and "" are errors).
std::vector<std::string> parse_name_list(const std::string& text, const std::string& flag);

/// Parses an on|off flag: nullopt when `text` is empty (not given), else
/// true or false; anything else is Error(invalid_argument) naming `flag`.
std::optional<bool> parse_on_off(const std::string& text, const std::string& flag);

/// "1.50 MiB", "312 B".
std::string format_bytes(uint64_t bytes);

/// Reads a whole file; Error(io) naming it when it cannot be read.
std::string read_file(const std::string& path);

/// A file name made from a value name: characters other than letters, digits,
/// '.', '-' and '_' become '_' (ONNX names often hold '/' and ':').
std::string file_name_for(const std::string& value_name);

/// A message as one printable line: names read from a damaged model may hold
/// newlines and other control characters, which become \n and \xNN.
std::string one_line(const std::string& message);

}  // namespace graft::cli
