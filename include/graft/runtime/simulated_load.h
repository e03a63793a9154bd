/// \file
/// Core availability on a made-up machine, for the tests and benchmarks of
/// thread adaptation: it says what a loaded or a quiet machine would,
/// without one.
#pragma once

#include <memory>

#include "graft/runtime/core_availability.h"

namespace graft::runtime {

/// A CoreAvailability (for SessionOptions::core_availability) that samples
/// at every run and whose every counter read is one more second in which
/// other processes kept `busy_elsewhere` of `cores` cores busy and, when
/// that is at least half a core, this process's threads waited for a core
/// half the time (as they do beside a busy co-tenant).
std::shared_ptr<CoreAvailability> simulated_load(int cores, double busy_elsewhere);

}  // namespace graft::runtime
