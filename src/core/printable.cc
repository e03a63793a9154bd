#include "graft/core/printable.h"

namespace graft {

std::string printable_excerpt(std::string_view text, size_t max_chars) {
  std::string shown(text.substr(0, max_chars));
  for (char& c : shown)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  if (text.size() > max_chars) shown += "...";
  return shown;
}

}  // namespace graft
