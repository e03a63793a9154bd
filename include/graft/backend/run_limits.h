/// \file
/// RunLimits: the deadline and the cancellation flag of one run, and the
/// check that the executor makes before every node and that modules running
/// many steps (a dnnl subgraph's primitives) make between their steps.
#pragma once

#include <atomic>
#include <chrono>
#include <string>

namespace graft::backend {

/// Limits of one run: a deadline and a cancellation flag, checked before
/// every node (the nodes of Loop, Scan and If bodies included, so a loop of
/// 2^62 iterations stops too) and between the steps of a module that runs
/// many (a dnnl subgraph). Either ends the run with a `cancelled` Error; the
/// session stays usable.
struct RunLimits {
  /// The run fails once this time has passed; max(): no deadline.
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  /// When set and true (from any thread), the run fails at its next check.
  const std::atomic<bool>* cancel = nullptr;
};

/// True when the run must stop: the flag is set or the deadline has passed
/// (a relaxed load and, with a deadline, one clock read).
inline bool run_limits_reached(const RunLimits& limits) {
  if (limits.cancel && limits.cancel->load(std::memory_order_relaxed)) return true;
  return limits.deadline != std::chrono::steady_clock::time_point::max() &&
         std::chrono::steady_clock::now() > limits.deadline;
}

/// Throws the `cancelled` Error of a run whose limits are reached: "run
/// cancelled" or "run passed its deadline", followed by `where` (" before
/// node 'x' (Conv)").
[[noreturn]] void fail_run_limits(const RunLimits& limits, const std::string& where);

}  // namespace graft::backend
