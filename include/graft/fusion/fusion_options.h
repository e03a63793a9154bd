/// \file
/// Whether pointwise fusion runs: a Session option, else the environment
/// variable GRAFT_FUSION, else on.
#pragma once

#include <optional>

namespace graft::fusion {

/// The value of GRAFT_FUSION: nullopt when unset or empty, true for "1",
/// false for "0". Any other value throws Error(invalid_argument) naming the
/// variable and the value.
std::optional<bool> fusion_from_environment();

/// `option` when it holds a value, else GRAFT_FUSION, else true.
bool fusion_enabled(std::optional<bool> option);

}  // namespace graft::fusion
