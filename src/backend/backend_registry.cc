// The backend registry: filled at static-initialization time, read-only after.
// Op support checkers registered under a name that no backend has become a
// backend of that name on the first lookup (all of static initialization
// has run by then).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>

#include "graft/backend/backend.h"
#include "graft/core/error.h"
#include "graft/core/printable.h"
#include "graft/partition/op_support.h"
#include "property_backend.h"

namespace graft::backend {

namespace {

std::vector<std::shared_ptr<const Backend>>& registered() {
  static std::vector<std::shared_ptr<const Backend>> backends;
  return backends;
}

const Backend* find_registered(std::string_view name) {
  for (const auto& b : registered())
    if (b->name() == name) return b.get();
  return nullptr;
}

void insert_sorted(std::shared_ptr<const Backend> backend) {
  auto& backends = registered();
  backends.push_back(std::move(backend));
  std::stable_sort(backends.begin(), backends.end(),
                   [](const auto& a, const auto& b) { return a->default_rank() < b->default_rank(); });
}

/// The registry once static initialization is over, with a backend for every
/// name that only op support checkers were registered under.
const std::vector<std::shared_ptr<const Backend>>& registry() {
  static std::once_flag completed;
  std::call_once(completed, [] {
    for (const std::string& name : partition::op_support_backends())
      if (!find_registered(name)) insert_sorted(make_property_backend(name, nullptr));
  });
  return registered();
}

}  // namespace

std::shared_ptr<const partition::SubgraphProperty> Backend::property() const {
  return partition::op_support_property(name());
}

bool register_backend(std::shared_ptr<const Backend> backend) {
  if (find_registered(backend->name())) {
    std::fprintf(stderr, "graft: backend '%s' registered twice\n", backend->name().c_str());
    std::abort();
  }
  insert_sorted(std::move(backend));
  return true;
}

bool register_subgraph_property(std::string name,
                                std::function<std::unique_ptr<partition::SubgraphProperty>()> factory) {
  return register_backend(make_property_backend(name, factory()));
}

const Backend* find_backend(std::string_view name) {
  for (const auto& b : registry())
    if (b->name() == name) return b.get();
  return nullptr;
}

const Backend& get_backend(std::string_view name) {
  const Backend* b = find_backend(name);
  if (!b) fail(ErrorKind::invalid_argument, "unknown backend '", printable_excerpt(name), "' (available: ", backend_names(), ")");
  return *b;
}

const Backend& fallback_backend() {
  static const Backend& fallback = [] () -> const Backend& {
    for (const auto& b : registry())
      if (b->runs_the_rest()) return *b;
    fail(ErrorKind::internal, "no registered backend runs what the others do not take");
  }();
  return fallback;
}

std::vector<const Backend*> all_backends() {
  std::vector<const Backend*> out;
  for (const auto& b : registry()) out.push_back(b.get());
  return out;
}

std::string backend_names() {
  std::string names;
  for (const auto& b : registry()) names += (names.empty() ? "" : ", ") + b->name();
  return names;
}

std::vector<std::string> resolve_backend_order(const std::vector<std::string>& requested) {
  std::vector<std::string> names = requested;
  std::string origin = "the backend list";
  if (names.empty()) {
    const char* env = std::getenv("GRAFT_BACKENDS");
    if (env && *env) {
      origin = "GRAFT_BACKENDS";
      std::string text = env;
      size_t start = 0;
      while (true) {
        size_t comma = text.find(',', start);
        names.push_back(text.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
        if (comma == std::string::npos) break;
        start = comma + 1;
      }
    } else {
      // in_default_order() first: asking a device backend whether it is available
      // probes its driver (OpenCL's ICD loader maps PoCL and its libLLVM, 25-45 ms
      // of a CPU model's first inference and 20+ MiB), which the default order never uses.
      for (const Backend* b : all_backends())
        if (b->in_default_order() && b->unavailable_reason().empty()) names.push_back(b->name());
      return names;
    }
  }
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i].empty())
      fail(ErrorKind::invalid_argument, origin, " has an empty backend name (available: ", backend_names(), ")");
    get_backend(names[i]);  // throws naming the available backends
    for (size_t j = 0; j < i; ++j)
      if (names[j] == names[i]) fail(ErrorKind::invalid_argument, origin, " names backend '", printable_excerpt(names[i]), "' twice");
  }
  return names;
}

}  // namespace graft::backend
