// Profile reports. Aggregation keys nodes by (name, op type, backend) so the
// same node in several runs of one plan adds up; the text report divides every
// total by the number of runs, so it reads as "time per inference". The Chrome
// trace keeps every execution on the real timeline (steady_clock), one row
// (tid) per backend, so gaps between nodes (executor overhead) stay visible.
#include "graft/runtime/profile_report.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "graft/core/error.h"

namespace graft::runtime {

namespace {

std::vector<ProfileRow> sorted_rows(std::map<std::string, ProfileRow>& rows, size_t runs) {
  std::vector<ProfileRow> result;
  result.reserve(rows.size());
  for (auto& [key, row] : rows) {
    row.microseconds /= static_cast<double>(runs);
    row.count = (row.count + static_cast<int64_t>(runs) / 2) / static_cast<int64_t>(runs);
    row.model_nodes = (row.model_nodes + static_cast<int64_t>(runs) / 2) / static_cast<int64_t>(runs);
    result.push_back(std::move(row));
  }
  std::stable_sort(result.begin(), result.end(), [](const ProfileRow& a, const ProfileRow& b) {
    if (a.microseconds != b.microseconds) return a.microseconds > b.microseconds;
    return a.name < b.name;
  });
  return result;
}

std::string node_label(const backend::NodeTiming& t, size_t position) {
  return t.node_name.empty() ? "#" + std::to_string(position) : t.node_name;
}

std::string format_ms(double microseconds) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.3f", microseconds / 1000.0);
  return buffer;
}

std::string format_share(double part, double whole) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.1f%%", whole > 0 ? 100.0 * part / whole : 0.0);
  return buffer;
}

/// Renders rows as left-aligned text columns separated by two spaces.
std::string render_table(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> widths;
  for (const auto& row : rows)
    for (size_t c = 0; c < row.size(); ++c) {
      if (widths.size() <= c) widths.push_back(0);
      widths[c] = std::max(widths[c], row[c].size());
    }
  std::string out;
  for (const auto& row : rows) {
    std::string line = " ";
    for (size_t c = 0; c < row.size(); ++c) {
      line += " " + row[c];
      if (c + 1 < row.size()) line += std::string(widths[c] - row[c].size() + 1, ' ');
    }
    out += line + "\n";
  }
  return out;
}

}  // namespace

ProfileSummary summarize_profile(std::span<const ProfiledRun> runs) {
  if (runs.empty()) fail(ErrorKind::invalid_argument, "a profile summary needs at least one run");
  ProfileSummary summary;
  summary.runs = runs.size();
  summary.nodes_per_run = runs.front().timings.size();
  std::map<std::string, ProfileRow> nodes, op_types, backends;
  double wall = 0, node_total = 0;
  for (const ProfiledRun& run : runs) {
    wall += run.microseconds;
    for (size_t i = 0; i < run.timings.size(); ++i) {
      const backend::NodeTiming& t = run.timings[i];
      node_total += t.microseconds;
      std::string label = node_label(t, i);
      ProfileRow& node = nodes[label + '\n' + t.op_type + '\n' + t.backend];
      node.name = label;
      node.op_type = t.op_type;
      node.backend = t.backend;
      node.count += 1;
      node.model_nodes += t.model_nodes;
      node.microseconds += t.microseconds;
      ProfileRow& op = op_types[t.op_type];
      op.name = t.op_type;
      op.count += 1;
      op.model_nodes += t.model_nodes;
      op.microseconds += t.microseconds;
      ProfileRow& backend = backends[t.backend];
      backend.name = t.backend;
      backend.count += 1;
      backend.model_nodes += t.model_nodes;
      backend.microseconds += t.microseconds;
    }
  }
  summary.wall_microseconds = wall / static_cast<double>(runs.size());
  summary.node_microseconds = node_total / static_cast<double>(runs.size());
  summary.by_node = sorted_rows(nodes, runs.size());
  summary.by_op_type = sorted_rows(op_types, runs.size());
  summary.by_backend = sorted_rows(backends, runs.size());
  return summary;
}

std::string format_profile(const ProfileSummary& summary, size_t top_nodes) {
  const double total = summary.node_microseconds;
  std::string out = "profile: " + std::to_string(summary.runs) + " run" + (summary.runs == 1 ? "" : "s") + ", " +
                    std::to_string(summary.nodes_per_run) + " nodes per run; per run: wall " +
                    format_ms(summary.wall_microseconds) + " ms, in nodes " + format_ms(total) + " ms (" +
                    format_share(total, summary.wall_microseconds) + " of wall)\n";

  // "nodes" counts what the executor ran (a subgraph is one); "model nodes" what they stand for.
  std::vector<std::vector<std::string>> rows{{"backend", "nodes", "model nodes", "ms", "share"}};
  for (const ProfileRow& r : summary.by_backend)
    rows.push_back({r.name, std::to_string(r.count), std::to_string(r.model_nodes), format_ms(r.microseconds),
                    format_share(r.microseconds, total)});
  out += "by backend:\n" + render_table(rows);

  rows = {{"op", "nodes", "ms", "mean ms", "share"}};
  for (const ProfileRow& r : summary.by_op_type)
    rows.push_back({r.name, std::to_string(r.count), format_ms(r.microseconds),
                    format_ms(r.count ? r.microseconds / static_cast<double>(r.count) : 0.0),
                    format_share(r.microseconds, total)});
  out += "by op type:\n" + render_table(rows);

  size_t shown = top_nodes == 0 ? summary.by_node.size() : std::min(top_nodes, summary.by_node.size());
  rows = {{"node", "op", "backend", "model nodes", "ms", "share"}};
  for (size_t i = 0; i < shown; ++i) {
    const ProfileRow& r = summary.by_node[i];
    rows.push_back({r.name, r.op_type, r.backend, std::to_string(r.model_nodes), format_ms(r.microseconds),
                    format_share(r.microseconds, total)});
  }
  out += "slowest nodes (" + std::to_string(shown) + " of " + std::to_string(summary.by_node.size()) + "):\n" +
         render_table(rows);
  return out;
}

std::string chrome_trace_json(std::span<const ProfiledRun> runs) {
  using nlohmann::json;
  json events = json::array();
  if (runs.empty()) return json{{"traceEvents", events}}.dump();
  const auto origin = runs.front().start;
  auto since_origin = [&](std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double, std::micro>(t - origin).count();
  };
  // Row 0 holds the runs; rows 1.. one backend each, in order of first appearance.
  std::map<std::string, int> rows;
  std::vector<std::string> row_names{"runs"};
  for (const ProfiledRun& run : runs)
    for (const backend::NodeTiming& t : run.timings)
      if (rows.emplace(t.backend, static_cast<int>(row_names.size())).second) row_names.push_back(t.backend);

  events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", 1}, {"tid", 0}, {"args", {{"name", "graft"}}}});
  for (size_t row = 0; row < row_names.size(); ++row) {
    std::string label = row == 0 ? "runs" : "backend " + row_names[row];
    events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", 1}, {"tid", row}, {"args", {{"name", label}}}});
    events.push_back(
        {{"name", "thread_sort_index"}, {"ph", "M"}, {"pid", 1}, {"tid", row}, {"args", {{"sort_index", row}}}});
  }
  for (size_t r = 0; r < runs.size(); ++r) {
    const ProfiledRun& run = runs[r];
    events.push_back({{"name", "run " + std::to_string(r)},
                      {"cat", "run"},
                      {"ph", "X"},
                      {"ts", since_origin(run.start)},
                      {"dur", run.microseconds},
                      {"pid", 1},
                      {"tid", 0},
                      {"args", {{"run", r}, {"nodes", run.timings.size()}}}});
    for (size_t i = 0; i < run.timings.size(); ++i) {
      const backend::NodeTiming& t = run.timings[i];
      events.push_back({{"name", t.op_type},
                        {"cat", "node"},
                        {"ph", "X"},
                        {"ts", since_origin(t.start)},
                        {"dur", t.microseconds},
                        {"pid", 1},
                        {"tid", rows.at(t.backend)},
                        {"args",
                         {{"node", node_label(t, i)},
                          {"op", t.op_type},
                          {"backend", t.backend},
                          {"model_nodes", t.model_nodes},
                          {"run", r}}}});
    }
  }
  json trace{{"traceEvents", std::move(events)}, {"displayTimeUnit", "ms"}};
  return trace.dump(1);
}

void write_chrome_trace(std::span<const ProfiledRun> runs, const std::string& path) {
  std::string text = chrome_trace_json(runs);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) fail(ErrorKind::io, "cannot open trace file '", path, "' for writing");
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  out.close();
  if (!out) fail(ErrorKind::io, "cannot write trace file '", path, "'");
}

}  // namespace graft::runtime
