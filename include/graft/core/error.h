/// \file
/// graft::Error, the one exception type that crosses graft's public API,
/// and GRAFT_CHECK for internal invariants.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>

namespace graft {

/// What went wrong, in the terms a caller can act on.
enum class ErrorKind {
  invalid_model,     ///< the model or artifact is malformed or inconsistent
  unsupported,       ///< valid input that graft cannot run (op, dtype, feature)
  invalid_argument,  ///< a caller-supplied value (input, option, env var) is wrong
  io,                ///< a file could not be read or written
  internal,          ///< a broken invariant inside graft (a bug)
  resource_exhausted,  ///< a memory limit was reached, or the host ran out of memory
  cancelled,           ///< a run was cancelled or passed its deadline
};

/// Short lowercase name of an ErrorKind ("invalid_model", ...).
std::string_view to_string(ErrorKind kind);

/// The exception thrown by every public graft function. The message names the
/// node, file or argument at fault and what was expected.
class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& message)
      : std::runtime_error(message), kind_(kind) {}
  /// The category of the failure.
  ErrorKind kind() const { return kind_; }

 private:
  ErrorKind kind_;
};

namespace detail {
/// Concatenates any streamable arguments into one string.
template <typename... Args>
std::string concat(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}
[[noreturn]] void throw_check_failure(const char* condition, const char* file, int line,
                                      const std::string& message);
}  // namespace detail

/// Throws graft::Error of the given kind with the streamed arguments as message.
template <typename... Args>
[[noreturn]] void fail(ErrorKind kind, const Args&... args) {
  throw Error(kind, detail::concat(args...));
}

}  // namespace graft

/// Checks an internal invariant; on failure throws Error(internal) naming the
/// source location. Extra arguments are streamed into the message.
#define GRAFT_CHECK(cond, ...)                                                              \
  do {                                                                                      \
    if (!(cond))                                                                            \
      ::graft::detail::throw_check_failure(#cond, __FILE__, __LINE__,                       \
                                           ::graft::detail::concat("" __VA_OPT__(, ) __VA_ARGS__)); \
  } while (0)
