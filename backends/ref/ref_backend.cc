// The `ref` backend: runs a subgraph with graft's own executor and reference
// kernels. Always available; the fallback for every node nobody else takes.
// Its saved form is empty: the artifact stores the subgraph, which is all it needs.
#include <istream>
#include <ostream>

#include "graft/ir/graph.h"
#include "graft/backend/backend.h"
#include "graft/backend/executor.h"

namespace graft::backends {

using namespace graft::backend;
namespace {

class RefModule final : public CompiledModule {
 public:
  explicit RefModule(const ir::Graph& subgraph) : graph_(subgraph.clone()), executor_(*graph_) {}
  std::string type_key() const override { return "ref"; }
  std::vector<Tensor> run(std::span<const Tensor> inputs, ModuleRunContext& context) const override {
    RunOptions options;
    options.num_threads = context.num_threads;
    options.nested = true;
    if (context.limits) options.limits = *context.limits;
    return executor_.run(inputs, context.pool, options);
  }
  void save(std::ostream&) const override {}

 private:
  std::unique_ptr<ir::Graph> graph_;
  Executor executor_;
};

class RefBackend final : public Backend {
 public:
  std::string name() const override { return "ref"; }
  int default_rank() const override { return 1000; }
  bool runs_the_rest() const override { return true; }
  std::unique_ptr<CompiledModule> compile(const ir::Graph& subgraph, const CompileOptions&) const override {
    return std::make_unique<RefModule>(subgraph);
  }
};

std::unique_ptr<CompiledModule> load_ref_module(std::istream&, const ir::Graph& subgraph, std::span<const Tensor> tensors) {
  if (!tensors.empty()) fail(ErrorKind::invalid_model, "ref module: stores no tensors, got ", tensors.size());
  return std::make_unique<RefModule>(subgraph);
}

}  // namespace

GRAFT_REGISTER_BACKEND(RefBackend);
GRAFT_REGISTER_MODULE_LOADER("ref", load_ref_module);

}  // namespace graft::backends
