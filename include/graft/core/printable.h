/// \file
/// Text from outside graft (an environment variable, a command-line value)
/// quoted in an error message. A message is one printable line (DESIGN.md
/// section 10): a value holding a newline or an escape sequence must not
/// break it, nor a long one flood it.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace graft {

/// `text` as an error message may quote it: control characters (newlines,
/// escapes, DEL) become '?', and past `max_chars` characters it is cut and
/// ends in "...".
std::string printable_excerpt(std::string_view text, size_t max_chars = 64);

}  // namespace graft
