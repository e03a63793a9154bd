// The process-wide table of interned symbol names. Names are never removed:
// a model has few distinct symbolic dimensions, and a Symbol must stay valid
// in every graph and artifact that copied it.
#include "graft/ir/symbol.h"

#include <mutex>
#include <unordered_set>

namespace graft::ir {

namespace {

struct SymbolTable {
  std::mutex mutex;
  std::unordered_set<std::string> names;  // node-based: element addresses are stable
};

SymbolTable& symbol_table() {
  static SymbolTable* t = new SymbolTable;  // never destroyed: symbols may outlive static destruction
  return *t;
}

const std::string& empty_name() {
  static const std::string empty;
  return empty;
}

}  // namespace

Symbol::Symbol(std::string_view name) {
  if (name.empty()) return;
  SymbolTable& t = symbol_table();
  std::lock_guard<std::mutex> lock(t.mutex);
  name_ = &*t.names.emplace(name).first;
}

const std::string& Symbol::str() const { return name_ ? *name_ : empty_name(); }

}  // namespace graft::ir
