#include "graft/fusion/fusion_options.h"

#include <cstdlib>
#include <string>

#include "graft/core/error.h"
#include "graft/core/printable.h"

namespace graft::fusion {

std::optional<bool> fusion_from_environment() {
  const char* value = std::getenv("GRAFT_FUSION");
  if (!value || !*value) return std::nullopt;
  std::string text(value);
  if (text == "1") return true;
  if (text == "0") return false;
  fail(ErrorKind::invalid_argument, "GRAFT_FUSION='", printable_excerpt(text), "' is not valid (expected 0 or 1)");
}

bool fusion_enabled(std::optional<bool> option) {
  if (option) return *option;
  return fusion_from_environment().value_or(true);
}

}  // namespace graft::fusion
