#include "executor_backend.h"

#include "graft/ir/graph.h"
#include "graft/runtime/backend.h"
#include "graft/runtime/executor.h"

namespace graft::partition {
namespace {

class ExecutorModule final : public runtime::CompiledModule {
 public:
  explicit ExecutorModule(const ir::Graph& subgraph) : graph_(subgraph.clone()), executor_(*graph_) {}
  // Restored by the `ref` loader: it needs nothing but the stored subgraph.
  std::string type_key() const override { return "ref"; }
  std::vector<Tensor> run(std::span<const Tensor> inputs, runtime::ModuleRunContext& context) const override {
    runtime::RunOptions options;
    options.num_threads = context.num_threads;
    options.nested = true;
    return executor_.run(inputs, context.pool, options);
  }
  void save(std::ostream&) const override {}

 private:
  std::unique_ptr<ir::Graph> graph_;
  runtime::Executor executor_;
};

class ExecutorBackend final : public runtime::Backend {
 public:
  explicit ExecutorBackend(std::string name) : name_(std::move(name)) {}
  std::string name() const override { return name_; }
  std::unique_ptr<runtime::CompiledModule> compile(const ir::Graph& subgraph,
                                                   const runtime::CompileOptions&) const override {
    return std::make_unique<ExecutorModule>(subgraph);
  }

 private:
  std::string name_;
};

}  // namespace

bool register_executor_backend(const std::string& name) {
  return runtime::register_default_backend(std::make_shared<ExecutorBackend>(name));
}

}  // namespace graft::partition
