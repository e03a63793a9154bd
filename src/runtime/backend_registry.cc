#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "graft/core/error.h"
#include "graft/runtime/backend.h"

namespace graft::runtime {

namespace {
std::vector<std::shared_ptr<const Backend>>& registry() {
  static std::vector<std::shared_ptr<const Backend>> backends;
  return backends;
}
// Names whose registered backend is a default stand-in (register_default_backend).
std::vector<std::string>& default_names() {
  static std::vector<std::string> names;
  return names;
}

void insert_sorted(std::shared_ptr<const Backend> backend) {
  auto& backends = registry();
  backends.push_back(std::move(backend));
  std::stable_sort(backends.begin(), backends.end(),
                   [](const auto& a, const auto& b) { return a->default_rank() < b->default_rank(); });
}
}  // namespace

bool register_backend(std::shared_ptr<const Backend> backend) {
  auto& defaults = default_names();
  auto stand_in = std::find(defaults.begin(), defaults.end(), backend->name());
  if (stand_in != defaults.end()) {
    defaults.erase(stand_in);
    auto& backends = registry();
    std::erase_if(backends, [&](const auto& b) { return b->name() == backend->name(); });
  } else if (find_backend(backend->name())) {
    std::fprintf(stderr, "graft: backend '%s' registered twice\n", backend->name().c_str());
    std::abort();
  }
  insert_sorted(std::move(backend));
  return true;
}

bool register_default_backend(std::shared_ptr<const Backend> backend) {
  if (find_backend(backend->name())) return true;
  default_names().push_back(backend->name());
  insert_sorted(std::move(backend));
  return true;
}

const Backend* find_backend(std::string_view name) {
  for (const auto& b : registry())
    if (b->name() == name) return b.get();
  return nullptr;
}

const Backend& get_backend(std::string_view name) {
  const Backend* b = find_backend(name);
  if (!b) fail(ErrorKind::invalid_argument, "unknown backend '", name, "' (available: ", backend_names(), ")");
  return *b;
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

}  // namespace graft::runtime
