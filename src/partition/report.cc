#include "graft/partition/report.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <sstream>
#include <unordered_map>

#include "graft/ir/graph.h"

namespace graft::partition {

const char* to_string(DeclineKind kind) {
  switch (kind) {
    case DeclineKind::unsupported: return "unsupported";
    case DeclineKind::filtered: return "filtered";
    case DeclineKind::convexity: return "convexity";
    case DeclineKind::below_min_size: return "below_min_size";
    case DeclineKind::taken: return "taken";
    case DeclineKind::forbidden: return "forbidden";
    case DeclineKind::pinned_elsewhere: return "pinned_elsewhere";
    case DeclineKind::unavailable: return "unavailable";
  }
  return "unknown";
}

std::map<std::string, size_t> PartitionReport::nodes_per_backend() const {
  std::map<std::string, size_t> counts;
  for (const BackendSummary& s : summaries) counts[s.backend] = s.nodes;
  return counts;
}

size_t PartitionReport::record_claimed_subgraphs(const ir::Graph& graph, const std::string& backend) {
  // Nodes still on the fallback, by name; a name may repeat (exporters leave some empty).
  std::unordered_map<std::string, std::vector<size_t>> on_ref;
  for (size_t i = nodes.size(); i-- > 0;)
    if (!nodes[i].is_source && nodes[i].backend == fallback) on_ref[nodes[i].name].push_back(i);
  auto summary_of = [&](const std::string& backend) -> BackendSummary& {
    for (BackendSummary& s : summaries)
      if (s.backend == backend) return s;
    BackendSummary added;
    added.backend = backend;
    auto fallback_summary =
        std::find_if(summaries.begin(), summaries.end(), [&](const BackendSummary& s) { return s.backend == fallback; });
    return *summaries.insert(fallback_summary, added);
  };
  size_t moved = 0;
  for (const auto& node : graph.nodes()) {
    if (node->backend != backend || !node->subgraph) continue;
    SubgraphInfo info;
    info.backend = backend;
    info.id = static_cast<int>(subgraphs.size());
    info.node_name = node->name;
    for (const auto& member : node->subgraph->nodes()) {
      if (member->op() == ir::OpId::Input || member->op() == ir::OpId::Constant) continue;
      const std::string op = member->op_type();
      auto it = on_ref.find(member->name);
      if (it == on_ref.end()) continue;
      auto& candidates = it->second;
      auto match =
          std::find_if(candidates.rbegin(), candidates.rend(), [&](size_t i) { return nodes[i].op_type == op; });
      if (match == candidates.rend()) continue;
      NodePlacement& placement = nodes[*match];
      candidates.erase(std::next(match).base());
      placement.backend = backend;
      placement.subgraph = info.id;
      info.nodes.push_back(placement.name);
    }
    if (info.nodes.empty()) continue;
    info.size = info.nodes.size();
    moved += info.size;
    subgraphs.push_back(std::move(info));
    BackendSummary& claimed = summary_of(backend);
    claimed.nodes += subgraphs.back().size;
    claimed.subgraph_sizes.push_back(subgraphs.back().size);
    summary_of(fallback).nodes -= subgraphs.back().size;
  }
  return moved;
}

bool PartitionReport::record_decline(const std::string& name, const std::string& op_type, Decline decline) {
  for (NodePlacement& placement : nodes) {
    if (placement.is_source || placement.backend != fallback || placement.name != name || placement.op_type != op_type)
      continue;
    bool already = std::any_of(placement.declined.begin(), placement.declined.end(),
                               [&](const Decline& d) { return d.backend == decline.backend; });
    if (already) continue;
    placement.declined.push_back(std::move(decline));
    return true;
  }
  return false;
}

std::string PartitionReport::summary_line() const {
  std::ostringstream os;
  os << "partition:";
  bool first = true;
  for (const BackendSummary& s : summaries) {
    if (s.nodes == 0 && s.backend != fallback) continue;
    os << (first ? " " : ", ") << s.backend << " " << s.nodes << (s.nodes == 1 ? " node" : " nodes");
    if (!s.subgraph_sizes.empty())
      os << " in " << s.subgraph_sizes.size() << (s.subgraph_sizes.size() == 1 ? " subgraph" : " subgraphs");
    first = false;
  }
  if (!copies.empty()) os << "; " << copies.size() << (copies.size() == 1 ? " device copy" : " device copies");
  return os.str();
}

std::string PartitionReport::to_text() const {
  std::ostringstream os;
  os << summary_line() << "\n";
  os << "backend order:";
  for (const std::string& b : backends) os << " " << b;
  if (backends.empty()) os << " (none)";
  os << "\n";
  for (const BackendSummary& s : summaries) {
    os << "  " << s.backend << ": " << s.nodes << " nodes";
    if (!s.subgraph_sizes.empty()) {
      os << " in " << s.subgraph_sizes.size() << " subgraphs (sizes";
      for (size_t size : s.subgraph_sizes) os << " " << size;
      os << ")";
    }
    if (!s.unavailable.empty()) os << " [unavailable: " << s.unavailable << "]";
    else if (!s.has_property && s.backend != fallback && s.nodes > 0) os << " [claimed after partitioning]";
    else if (!s.has_property && s.backend != fallback) os << " [no SubgraphProperty: claims nothing when partitioning]";
    os << "\n";
  }
  if (!copies.empty()) {
    os << "device copies:\n";
    for (const DeviceCopy& c : copies)
      os << "  " << c.value << ": " << c.from << " -> " << c.to << " [" << c.node << "]\n";
  }
  os << "nodes:\n";
  for (const NodePlacement& p : nodes) {
    if (p.is_source) continue;
    os << "  " << p.name << " (" << p.op_type << ") -> " << p.backend;
    if (p.subgraph >= 0) os << " [" << subgraphs[static_cast<size_t>(p.subgraph)].node_name << "]";
    os << "\n";
    for (const Decline& d : p.declined) {
      if (d.kind == DeclineKind::taken) continue;
      os << "      not " << d.backend << ": " << to_string(d.kind) << (d.detail.empty() ? "" : ": ") << d.detail << "\n";
    }
  }
  return os.str();
}

std::string PartitionReport::to_json() const {
  nlohmann::json doc;
  doc["backends"] = backends;
  doc["milliseconds"] = milliseconds;
  doc["timings_ms"] = {{"index", timings.index}, {"select", timings.select}, {"report", timings.report},
                       {"rebuild", timings.rebuild}};
  doc["summary"] = summary_line();
  nlohmann::json summary = nlohmann::json::array();
  for (const BackendSummary& s : summaries)
    summary.push_back({{"backend", s.backend},
                       {"nodes", s.nodes},
                       {"subgraph_sizes", s.subgraph_sizes},
                       {"has_property", s.has_property},
                       {"unavailable", s.unavailable}});
  doc["per_backend"] = summary;
  nlohmann::json subs = nlohmann::json::array();
  for (const SubgraphInfo& info : subgraphs)
    subs.push_back({{"backend", info.backend},
                    {"id", info.id},
                    {"node", info.node_name},
                    {"nodes", info.nodes},
                    {"from_annotation", info.from_annotation}});
  doc["subgraphs"] = subs;
  nlohmann::json copy_list = nlohmann::json::array();
  for (const DeviceCopy& c : copies)
    copy_list.push_back({{"value", c.value}, {"from", c.from}, {"to", c.to}, {"node", c.node}});
  doc["device_copies"] = copy_list;
  nlohmann::json list = nlohmann::json::array();
  for (const NodePlacement& p : nodes) {
    nlohmann::json entry = {{"name", p.name}, {"op", p.op_type}, {"backend", p.backend}, {"source", p.is_source}};
    if (p.subgraph >= 0) entry["subgraph"] = p.subgraph;
    nlohmann::json declined = nlohmann::json::array();
    for (const Decline& d : p.declined)
      declined.push_back({{"backend", d.backend}, {"reason", to_string(d.kind)}, {"detail", d.detail}});
    entry["declined"] = declined;
    list.push_back(std::move(entry));
  }
  doc["nodes"] = list;
  return doc.dump(2);
}

namespace {
std::string dot_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}
}  // namespace

std::string PartitionReport::to_dot(const std::vector<std::pair<size_t, size_t>>& graph_edges) const {
  static const char* palette[] = {"#8dd3c7", "#fdb462", "#bebada", "#fb8072", "#80b1d3", "#b3de69", "#fccde5", "#ffffb3"};
  std::map<std::string, const char*> colour;
  size_t next = 0;
  for (const std::string& b : backends)
    if (b != fallback) colour[b] = palette[next++ % 8];
  std::ostringstream os;
  os << "digraph partition {\n  rankdir=TB;\n  node [shape=box, style=filled, fillcolor=white, fontsize=10];\n";
  std::vector<std::vector<size_t>> members(subgraphs.size());
  for (size_t i = 0; i < nodes.size(); ++i)
    if (nodes[i].subgraph >= 0) members[static_cast<size_t>(nodes[i].subgraph)].push_back(i);
  auto emit_node = [&](size_t i, const char* indent) {
    const NodePlacement& p = nodes[i];
    auto it = colour.find(p.backend);
    os << indent << "n" << i << " [label=\"" << dot_escape(p.name) << "\\n" << dot_escape(p.op_type) << "\"";
    if (p.is_source) os << ", shape=ellipse, fillcolor=\"#eeeeee\"";
    else if (it != colour.end()) os << ", fillcolor=\"" << it->second << "\"";
    os << "];\n";
  };
  for (size_t s = 0; s < subgraphs.size(); ++s) {
    os << "  subgraph cluster_" << s << " {\n    label=\"" << dot_escape(subgraphs[s].node_name) << "\";\n";
    for (size_t i : members[s]) emit_node(i, "    ");
    os << "  }\n";
  }
  for (size_t i = 0; i < nodes.size(); ++i)
    if (nodes[i].subgraph < 0) emit_node(i, "  ");
  for (const auto& [from, to] : graph_edges) os << "  n" << from << " -> n" << to << ";\n";
  os << "}\n";
  return os.str();
}

}  // namespace graft::partition
