#include "graft/partition/annotations.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "graft/core/error.h"

namespace graft::partition {

void Annotations::merge(const Annotations& other) {
  for (const auto& [name, backend] : other.pinned) {
    auto [it, inserted] = pinned.emplace(name, backend);
    if (!inserted && it->second != backend)
      fail(ErrorKind::invalid_argument, "node '", name, "' is pinned to both '", it->second, "' and '", backend, "'");
  }
  for (const auto& [name, backends] : other.forbidden) forbidden[name].insert(backends.begin(), backends.end());
  regions.insert(regions.end(), other.regions.begin(), other.regions.end());
}

Annotations parse_annotations(const std::string& json_text, const std::string& source) {
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(json_text);
  } catch (const nlohmann::json::exception& e) {
    fail(ErrorKind::invalid_argument, source, ": not valid JSON (", e.what(), ")");
  }
  auto expect = [&](bool ok, const std::string& what) {
    if (!ok) fail(ErrorKind::invalid_argument, source, ": ", what);
  };
  expect(doc.is_object(), "expected a JSON object with \"pin\", \"forbid\" and/or \"regions\"");
  Annotations out;
  for (const auto& [key, value] : doc.items()) {
    if (key == "pin") {
      expect(value.is_object(), "\"pin\" must map node names to backend names");
      for (const auto& [node, backend] : value.items()) {
        expect(backend.is_string(), "\"pin\": the backend of node '" + node + "' must be a string");
        out.pinned[node] = backend.get<std::string>();
      }
    } else if (key == "forbid") {
      expect(value.is_object(), "\"forbid\" must map node names to lists of backend names");
      for (const auto& [node, backends] : value.items()) {
        expect(backends.is_array() || backends.is_string(),
               "\"forbid\": the entry of node '" + node + "' must be a backend name or a list of them");
        if (backends.is_string()) {
          out.forbidden[node].insert(backends.get<std::string>());
          continue;
        }
        for (const auto& b : backends) {
          expect(b.is_string(), "\"forbid\": the list of node '" + node + "' must hold strings");
          out.forbidden[node].insert(b.get<std::string>());
        }
      }
    } else if (key == "regions") {
      expect(value.is_array(), "\"regions\" must be a list of {\"backend\": ..., \"nodes\": [...]}");
      for (const auto& r : value) {
        size_t index = out.regions.size();
        std::string what = "region " + std::to_string(index);
        expect(r.is_object(), what + " must be an object with \"backend\" and \"nodes\"");
        Region region;
        for (const auto& [field, v] : r.items()) {
          if (field == "backend") {
            expect(v.is_string(), what + ": \"backend\" must be a string");
            region.backend = v.get<std::string>();
          } else if (field == "name") {
            expect(v.is_string(), what + ": \"name\" must be a string");
            region.name = v.get<std::string>();
          } else if (field == "nodes") {
            expect(v.is_array(), what + ": \"nodes\" must be a list of node names");
            for (const auto& node : v) {
              expect(node.is_string(), what + ": \"nodes\" must hold strings");
              region.nodes.push_back(node.get<std::string>());
            }
          } else {
            expect(false, what + ": unknown field \"" + field + "\" (expected backend, name, nodes)");
          }
        }
        expect(!region.backend.empty(), what + " names no \"backend\"");
        expect(!region.nodes.empty(), what + " has no \"nodes\"");
        out.regions.push_back(std::move(region));
      }
    } else {
      expect(false, "unknown key \"" + key + "\" (expected pin, forbid, regions)");
    }
  }
  return out;
}

Annotations load_annotations(const std::string& path) {
  std::error_code error;
  if (std::filesystem::is_directory(path, error))
    fail(ErrorKind::io, "annotation file '", path, "' is a directory, not a file");
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(ErrorKind::io, "cannot read annotation file '", path, "'");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) fail(ErrorKind::io, "error reading annotation file '", path, "'");
  return parse_annotations(text.str(), path);
}

Annotations annotations_from_attributes(const ir::Graph& graph) {
  Annotations out;
  std::map<std::string, size_t> region_index;
  auto string_attribute = [](const ir::Node& node, const char* name) -> std::string {
    if (!node.attributes.has(name)) return {};
    const auto& value = node.attributes.all().at(name);
    if (!std::holds_alternative<std::string>(value))
      fail(ErrorKind::invalid_model, node.describe(), ": attribute ", name, " must be a string");
    return std::get<std::string>(value);
  };
  for (const auto& node : graph.nodes()) {
    bool annotated = false;
    for (const auto& [name, value] : node->attributes.all()) annotated = annotated || name.starts_with("graft_");
    if (!annotated) continue;
    std::string backend = string_attribute(*node, "graft_backend");
    std::string forbid = string_attribute(*node, "graft_forbid");
    std::string region = string_attribute(*node, "graft_region");
    if (backend.empty() && forbid.empty() && region.empty()) continue;
    if (node->name.empty())
      fail(ErrorKind::invalid_model, node->describe(), " carries partition annotations but has no name");
    if (!forbid.empty()) {
      size_t start = 0;
      while (true) {
        size_t comma = forbid.find(',', start);
        std::string b = forbid.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
        if (!b.empty()) out.forbidden[node->name].insert(b);
        if (comma == std::string::npos) break;
        start = comma + 1;
      }
    }
    if (region.empty()) {
      if (!backend.empty()) out.pinned[node->name] = backend;
      continue;
    }
    if (backend.empty())
      fail(ErrorKind::invalid_model, node->describe(), " is in region '", region, "' but has no graft_backend attribute");
    auto [it, inserted] = region_index.emplace(region, out.regions.size());
    if (inserted) out.regions.push_back(Region{region, backend, {}});
    Region& r = out.regions[it->second];
    if (r.backend != backend)
      fail(ErrorKind::invalid_model, "region '", region, "' names backends '", r.backend, "' and '", backend,
           "' (at ", node->describe(), ")");
    r.nodes.push_back(node->name);
  }
  return out;
}

}  // namespace graft::partition
