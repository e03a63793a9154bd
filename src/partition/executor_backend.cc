#include "executor_backend.h"

#include "graft/runtime/backend.h"

namespace graft::partition {
namespace {

// Compiles as `ref` does (the subgraph runs with graft's executor), under the
// property's name, so reports and plans name the backend that took the nodes.
class ExecutorBackend final : public runtime::Backend {
 public:
  explicit ExecutorBackend(std::string name) : name_(std::move(name)) {}
  std::string name() const override { return name_; }
  std::unique_ptr<runtime::CompiledModule> compile(const ir::Graph& subgraph,
                                                   const runtime::CompileOptions& options) const override {
    return runtime::get_backend("ref").compile(subgraph, options);
  }

 private:
  std::string name_;
};

}  // namespace

bool register_executor_backend(const std::string& name) {
  return runtime::register_default_backend(std::make_shared<ExecutorBackend>(name));
}

}  // namespace graft::partition
