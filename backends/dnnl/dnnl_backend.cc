// The `dnnl` backend: registration, compile() and the statistics tests read.
#include "dnnl_backend.h"

#include <omp.h>

#include <atomic>
#include <istream>
#include <string>

#include "dnnl_module.h"
#include "graft/runtime/backend.h"

namespace graft::dnnl_backend {
namespace {

std::atomic<int64_t> compile_count{0};

class DnnlBackend final : public runtime::Backend {
 public:
  std::string name() const override { return "dnnl"; }
  int default_rank() const override { return 10; }
  std::unique_ptr<runtime::CompiledModule> compile(const ir::Graph& subgraph,
                                                   const runtime::CompileOptions& options) const override {
    // Some implementations size their work split at creation from the thread count.
    int previous = omp_get_max_threads();
    if (options.num_threads > 0) omp_set_num_threads(options.num_threads);
    try {
      auto module = std::make_unique<DnnlModule>(build_program(subgraph));
      omp_set_num_threads(previous);
      compile_count.fetch_add(1);
      return module;
    } catch (...) {
      omp_set_num_threads(previous);
      throw;
    }
  }
};

// Rebuilds the primitives from the subgraph the artifact stored.
std::unique_ptr<runtime::CompiledModule> load_dnnl_module(std::istream& in, const ir::Graph& subgraph) {
  std::string tag(sizeof(kSavedFormat) - 1, '\0');
  in.read(tag.data(), static_cast<std::streamsize>(tag.size()));
  if (!in || tag != kSavedFormat) fail(ErrorKind::invalid_model, "dnnl module: unknown saved format");
  runtime::CompileOptions options;
  options.num_threads = omp_get_max_threads();
  return DnnlBackend().compile(subgraph, options);
}

}  // namespace

DnnlModuleStats dnnl_module_stats(const runtime::CompiledModule& module) {
  const auto* dnnl_module = dynamic_cast<const DnnlModule*>(&module);
  if (!dnnl_module) fail(ErrorKind::invalid_argument, "module of type '", module.type_key(), "' is not a dnnl module");
  return dnnl_module->stats();
}

int64_t dnnl_compile_count() { return compile_count.load(); }

GRAFT_REGISTER_BACKEND(DnnlBackend);
GRAFT_REGISTER_MODULE_LOADER("dnnl", load_dnnl_module);

}  // namespace graft::dnnl_backend
