/// \file
/// Profile reports: per-node timings of one or more runs (backend::RunStats::timings,
/// recorded when SessionOptions::profile is on) summarized by node, by op type
/// and by backend as a text table, and laid out on a timeline as a Chrome
/// trace (the JSON that chrome://tracing and ui.perfetto.dev open).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "graft/backend/executor.h"

namespace graft::runtime {

/// One profiled run: when it started, how long it took end to end, and the
/// timing of every node it ran.
struct ProfiledRun {
  std::chrono::steady_clock::time_point start{};
  double microseconds = 0;  ///< wall time of the whole run (Session::run)
  std::vector<backend::NodeTiming> timings;
};

/// One line of a summary: a node, an op type or a backend, with its time
/// averaged per run.
struct ProfileRow {
  std::string name;         ///< node name (or "#position" when empty), op type or backend
  std::string op_type;      ///< for node rows: the node's op; else empty
  std::string backend;      ///< for node rows: the backend that ran it; else empty
  int64_t count = 0;        ///< nodes (or node executions) per run in this row
  int64_t model_nodes = 0;  ///< model nodes they stand for per run (backend::NodeTiming::model_nodes)
  double microseconds = 0;  ///< mean time per run
};

/// Timings of a set of runs aggregated three ways. Every row list is sorted by
/// time, largest first (ties by name).
struct ProfileSummary {
  size_t runs = 0;
  size_t nodes_per_run = 0;      ///< node executions in the first run
  double wall_microseconds = 0;  ///< mean wall time per run
  double node_microseconds = 0;  ///< mean of the summed node times per run
  std::vector<ProfileRow> by_node;
  std::vector<ProfileRow> by_op_type;
  std::vector<ProfileRow> by_backend;
};

/// Aggregates `runs` (at least one). Nodes are matched across runs by name,
/// op type and backend (by position when unnamed).
ProfileSummary summarize_profile(std::span<const ProfiledRun> runs);

/// The summary as text: a header line, then tables by backend, by op type and
/// the `top_nodes` slowest nodes (0 = all), each with times in ms and shares
/// of the node total.
std::string format_profile(const ProfileSummary& summary, size_t top_nodes);

/// The runs as a Chrome trace (JSON object format): one complete ("X") event
/// per node execution, category "node", on one row per backend, plus one
/// "run" event per run on its own row; times in microseconds from the first
/// run's start.
std::string chrome_trace_json(std::span<const ProfiledRun> runs);

/// Writes chrome_trace_json(runs) to `path`; Error(io) naming it on failure.
void write_chrome_trace(std::span<const ProfiledRun> runs, const std::string& path);

}  // namespace graft::runtime
