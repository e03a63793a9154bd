#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "graft/core/error.h"
#include "graft/runtime/backend.h"

namespace graft::runtime {

namespace {
std::vector<std::shared_ptr<const Backend>>& registry() {
  static std::vector<std::shared_ptr<const Backend>> backends;
  return backends;
}
}  // namespace

bool register_backend(std::shared_ptr<const Backend> backend) {
  if (find_backend(backend->name())) {
    std::fprintf(stderr, "graft: backend '%s' registered twice\n", backend->name().c_str());
    std::abort();
  }
  auto& backends = registry();
  backends.push_back(std::move(backend));
  std::stable_sort(backends.begin(), backends.end(),
                   [](const auto& a, const auto& b) { return a->default_rank() < b->default_rank(); });
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
