#include "graft/backend/run_limits.h"

#include "graft/core/error.h"

namespace graft::backend {

void fail_run_limits(const RunLimits& limits, const std::string& where) {
  if (limits.cancel && limits.cancel->load(std::memory_order_relaxed))
    fail(ErrorKind::cancelled, "run cancelled", where);
  fail(ErrorKind::cancelled, "run passed its deadline", where);
}

}  // namespace graft::backend
