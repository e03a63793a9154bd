#include "graft/core/error.h"

namespace graft {

std::string_view to_string(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::invalid_model: return "invalid_model";
    case ErrorKind::unsupported: return "unsupported";
    case ErrorKind::invalid_argument: return "invalid_argument";
    case ErrorKind::io: return "io";
    case ErrorKind::internal: return "internal";
    case ErrorKind::resource_exhausted: return "resource_exhausted";
    case ErrorKind::cancelled: return "cancelled";
  }
  return "unknown";
}

namespace detail {
void throw_check_failure(const char* condition, const char* file, int line,
                         const std::string& message) {
  std::string text = concat("internal check failed: ", condition, " at ", file, ":", line);
  if (!message.empty()) text += concat(": ", message);
  throw Error(ErrorKind::internal, text);
}
}  // namespace detail

}  // namespace graft
