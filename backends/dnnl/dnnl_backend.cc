// The `dnnl` backend: registration, compile() and the statistics tests read.
#include "dnnl_backend.h"

#include <omp.h>

#include <atomic>
#include <istream>
#include <string>

#include "dnnl_int8.h"
#include "dnnl_module.h"
#include "dnnl_support.h"
#include "graft/backend/backend.h"
#include "graft/backend/module_stream.h"
#include "graft/core/parallel.h"

namespace graft::dnnl_backend {
namespace {

std::atomic<int64_t> compile_count{0};

// Builds the module of `subgraph` with OpenMP set to `num_threads` (when
// positive): some implementations size their work split at creation.
std::unique_ptr<DnnlModule> compile_module(const ir::Graph& subgraph, int num_threads) {
  int previous = omp_get_max_threads();
  if (num_threads > 0) omp_set_num_threads(num_threads);
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

class DnnlBackend final : public backend::Backend {
 public:
  std::string name() const override { return "dnnl"; }
  int default_rank() const override { return 10; }
  // Only where its products run in int8: the float32 ones would dequantize
  // the weights themselves, as fold-constants does.
  bool takes_quantized_weights() const override { return int8_runs_without_saturation(); }
  std::shared_ptr<const partition::SubgraphProperty> property() const override {
    static const std::shared_ptr<const partition::SubgraphProperty> property = make_dnnl_property();
    return property;
  }
  std::unique_ptr<backend::CompiledModule> compile(const ir::Graph& subgraph,
                                                   const backend::CompileOptions& options) const override {
    return compile_module(subgraph, options.num_threads);
  }
};

// Rebuilds the primitives from the subgraph the artifact stored and takes
// the converted weights it stored (format 2) instead of converting them.
std::unique_ptr<backend::CompiledModule> load_dnnl_module(std::istream& in, const ir::Graph& subgraph,
                                                          std::span<const Tensor> tensors) {
  static_assert(sizeof(kSavedFormat) == sizeof(kSavedFormat1));
  std::string tag(sizeof(kSavedFormat) - 1, '\0');
  in.read(tag.data(), static_cast<std::streamsize>(tag.size()));
  if (!in || (tag != kSavedFormat && tag != kSavedFormat1))
    fail(ErrorKind::invalid_model, "dnnl module: unknown saved format");
  std::vector<uint32_t> indices;
  if (tag == kSavedFormat) {
    backend::ModuleReader reader(in, "dnnl module");
    uint32_t count = reader.u32("converted weight count");
    if (count != tensors.size())
      fail(ErrorKind::invalid_model, "dnnl module: lists ", count, " converted weights but ", tensors.size(),
           " are stored");
    for (uint32_t i = 0; i < count; ++i) indices.push_back(reader.u32("converted weight index"));
  } else if (!tensors.empty()) {
    fail(ErrorKind::invalid_model, "dnnl module: format 1 stores no tensors, got ", tensors.size());
  }
  // graft's thread count (Session scopes it around loading an artifact), not
  // OpenMP's default: primitives sized for more threads than they run on are slow.
  auto module = compile_module(subgraph, current_num_threads());
  module->restore_converted(indices, tensors);
  return module;
}

}  // namespace

DnnlModuleStats dnnl_module_stats(const backend::CompiledModule& module) {
  const auto* dnnl_module = dynamic_cast<const DnnlModule*>(&module);
  if (!dnnl_module) fail(ErrorKind::invalid_argument, "module of type '", module.type_key(), "' is not a dnnl module");
  return dnnl_module->stats();
}

int64_t dnnl_compile_count() { return compile_count.load(); }

GRAFT_REGISTER_BACKEND(DnnlBackend);
GRAFT_REGISTER_MODULE_LOADER("dnnl", load_dnnl_module);

}  // namespace graft::dnnl_backend
