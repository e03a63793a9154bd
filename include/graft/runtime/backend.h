/// \file
/// Backend: a name, a device, and compile(subgraph with concrete shapes) ->
/// CompiledModule. What a backend *takes* from a graph is its
/// SubgraphProperty (graft/partition/subgraph_property.h), registered under
/// the same name; the fusion pass plays that role for `fuse`.
#pragma once
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "graft/core/device.h"
#include "graft/runtime/compiled_module.h"

namespace graft::ir {
class Graph;
}

namespace graft::runtime {

/// What compile() may take into account.
struct CompileOptions {
  int num_threads = 1;  ///< intra-op threads the module will run with
  /// Where a backend that generates source (ccodegen) also writes it, one file
  /// per subgraph; empty: nowhere.
  std::string emit_source_dir;
};

class Backend {
 public:
  virtual ~Backend() = default;
  /// "ref", "fuse", "dnnl", "ccodegen".
  virtual std::string name() const = 0;
  /// Where the backend's modules run.
  virtual Device device() const { return Device{}; }
  /// Position in the default priority order (lower first). `ref` is last.
  virtual int default_rank() const { return 100; }
  /// Empty when usable on this machine; otherwise why not ("no C compiler
  /// found"). An unavailable backend declines every node with this reason.
  virtual std::string unavailable_reason() const { return {}; }
  /// Compiles one subgraph whose Input nodes carry concrete dtypes and shapes.
  /// The subgraph's inputs are the module's inputs, its outputs the module's
  /// outputs, in order.
  virtual std::unique_ptr<CompiledModule> compile(const ir::Graph& subgraph, const CompileOptions& options) const = 0;
};

/// Adds a backend to the registry; returns true. Aborts start-up on a duplicate name.
bool register_backend(std::shared_ptr<const Backend> backend);
/// Adds `backend` unless one of that name is registered; a later
/// register_backend() of the same name replaces it. Used for the executor
/// backend graft supplies to a SubgraphProperty registered without a Backend.
bool register_default_backend(std::shared_ptr<const Backend> backend);
/// The backend of this name, or nullptr.
const Backend* find_backend(std::string_view name);
/// The backend of this name; throws invalid_argument listing the registered
/// backends when there is none.
const Backend& get_backend(std::string_view name);
/// Every registered backend, in default priority order.
std::vector<const Backend*> all_backends();
/// Names of every registered backend, in default priority order, comma-separated.
std::string backend_names();

}  // namespace graft::runtime

/// Registers a backend class with a default constructor:
///   GRAFT_REGISTER_BACKEND(DnnlBackend);
#define GRAFT_REGISTER_BACKEND(BackendClass)                                                 \
  [[maybe_unused]] static const bool GRAFT_CONCAT(graft_backend_registered_, __COUNTER__) = \
      ::graft::runtime::register_backend(std::make_shared<BackendClass>())
