#include "graft/backend/compiled_module.h"

#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>

#include "graft/core/error.h"

namespace graft::backend {

void CompiledModule::save(std::ostream&) const {
  fail(ErrorKind::unsupported, "modules of type '", type_key(), "' cannot be saved");
}

namespace {
std::map<std::string, ModuleLoader, std::less<>>& loaders() {
  static std::map<std::string, ModuleLoader, std::less<>> table;
  return table;
}
}  // namespace

bool register_module_loader(std::string_view type_key, ModuleLoader loader) {
  if (!loaders().emplace(std::string(type_key), loader).second) {
    std::fprintf(stderr, "graft: module loader '%.*s' registered twice\n", static_cast<int>(type_key.size()),
                 type_key.data());
    std::abort();
  }
  return true;
}

ModuleLoader find_module_loader(std::string_view type_key) {
  auto it = loaders().find(type_key);
  return it == loaders().end() ? nullptr : it->second;
}

std::unique_ptr<CompiledModule> load_module(std::string_view type_key, std::istream& in, const ir::Graph& subgraph,
                                            std::span<const Tensor> tensors) {
  ModuleLoader loader = find_module_loader(type_key);
  if (!loader) fail(ErrorKind::invalid_model, "no loader for modules of type '", type_key, "' in this build of graft");
  return loader(in, subgraph, tensors);
}

}  // namespace graft::backend
