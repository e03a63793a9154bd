/// \file
/// Backend: the one registration of a backend (DESIGN.md section 7): a name,
/// a device, what it takes from a graph (property(), or a claim of its own
/// that runs after the partitioner), and compile(subgraph with concrete
/// shapes) -> CompiledModule. The partitioner and the compiler read backends
/// only through this component; runtime and tools sit above it.
///
///   class MyBackend : public graft::backend::Backend {
///     std::string name() const override { return "mine"; }
///     std::unique_ptr<CompiledModule> compile(const ir::Graph&, const CompileOptions&) const override;
///   };
///   GRAFT_REGISTER_BACKEND(MyBackend);
///
/// What a backend takes is, by default, the property made from the op support
/// checkers registered under its name (GRAFT_REGISTER_OP_SUPPORT, TVM style);
/// a backend may return a SubgraphProperty of its own instead (MXNet style).
/// A property registered alone (GRAFT_REGISTER_SUBGRAPH_PROPERTY) is a backend
/// whose modules run the subgraph with graft's executor, like `ref`; so are
/// op support checkers registered under a name no backend has.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "graft/backend/compiled_module.h"
#include "graft/core/device.h"
#include "graft/partition/report.h"
#include "graft/partition/subgraph_property.h"

namespace graft::ir {
class Graph;
}

namespace graft::backend {

/// What compile() may take into account.
struct CompileOptions {
  int num_threads = 1;  ///< intra-op threads the module will run with
  /// Where a backend that generates source (ccodegen) also writes it, one file
  /// per subgraph; empty: nowhere.
  std::string emit_source_dir;
  /// The device id a device backend's module runs on (its device() type, this id).
  int device_id = 0;
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
  /// False for backends used only when named (SessionOptions::backends,
  /// GRAFT_BACKENDS, --backends) or by ahead-of-time compiles (graft compile):
  /// those whose compile() is slow enough (a C compiler run per subgraph) that
  /// a Session should not pay it unasked.
  virtual bool in_default_order() const { return true; }
  /// True for the backend that runs what no other backend takes (`ref`): it
  /// takes nothing through the partitioner and is the last resort of the
  /// compiler. Exactly one registered backend says so.
  virtual bool runs_the_rest() const { return false; }
  /// True when the backend takes int8 weights as stored: a DequantizeLinear
  /// of int8 constants that a convolution or matrix product reads as its
  /// weights (ops/quantized_weight.h), unevaluated, with the product. With
  /// such a backend in its order the compiler has fold-constants keep those
  /// nodes, and folds after partitioning the ones no backend took.
  virtual bool takes_quantized_weights() const { return false; }
  /// What the backend takes from a graph through the partitioner (MXNet's
  /// SubgraphProperty). The default: the property made from the op support
  /// checkers registered under name() (partition/op_support.h), or nullptr
  /// when there are none (the backend takes nothing through the partitioner).
  virtual std::shared_ptr<const partition::SubgraphProperty> property() const;
  /// A claim of the backend's own, made after every backend's property has
  /// claimed its subgraphs, on what they left (fuse: the remaining pointwise
  /// chains become graft.FusedPointwise nodes, DESIGN section 6). The nodes
  /// it creates carry Node::backend == name(). When `report` is not null it
  /// records there what it claimed (PartitionReport::record_claimed_subgraphs)
  /// and why it left the rest. Returns whether it changed the graph. The
  /// compiler calls it on every available backend, listed or not, when
  /// pointwise fusion is on. Default: claims nothing.
  virtual bool claim_remaining(std::unique_ptr<ir::Graph>& graph, partition::PartitionReport* report) const {
    return false;
  }
  /// Compiles one subgraph whose Input nodes carry concrete dtypes and shapes.
  /// The subgraph's inputs are the module's inputs, its outputs the module's
  /// outputs, in order.
  virtual std::unique_ptr<CompiledModule> compile(const ir::Graph& subgraph, const CompileOptions& options) const = 0;
};

/// Adds a backend to the registry; returns true. Aborts start-up on a duplicate name.
bool register_backend(std::shared_ptr<const Backend> backend);
/// Registers a backend named `name` whose property is made by `factory` and
/// whose modules run the subgraph with graft's executor; returns true. Aborts
/// start-up on a duplicate name.
bool register_subgraph_property(std::string name, std::function<std::unique_ptr<partition::SubgraphProperty>()> factory);
/// The backend of this name, or nullptr.
const Backend* find_backend(std::string_view name);
/// The backend of this name; throws invalid_argument listing the registered
/// backends when there is none.
const Backend& get_backend(std::string_view name);
/// The backend that runs what no other backend takes (Backend::runs_the_rest()).
const Backend& fallback_backend();
/// Every registered backend, in default priority order.
std::vector<const Backend*> all_backends();
/// Names of every registered backend, in default priority order, comma-separated.
std::string backend_names();

/// The backend priority order: `requested` when not empty, else the
/// comma-separated GRAFT_BACKENDS environment variable when set, else every
/// available backend in default order (except those whose
/// Backend::in_default_order() is false, such as ccodegen). Unknown names are
/// invalid_argument listing the available backends; so are duplicates and
/// empty names.
std::vector<std::string> resolve_backend_order(const std::vector<std::string>& requested);

}  // namespace graft::backend

/// Registers a backend class with a default constructor:
///   GRAFT_REGISTER_BACKEND(DnnlBackend);
#define GRAFT_REGISTER_BACKEND(BackendClass)                                                 \
  [[maybe_unused]] static const bool GRAFT_CONCAT(graft_backend_registered_, __COUNTER__) = \
      ::graft::backend::register_backend(std::make_shared<BackendClass>())

/// GRAFT_REGISTER_SUBGRAPH_PROPERTY("mine", MyProperty): registers a backend
/// named "mine" that takes what the default-constructible SubgraphProperty
/// class selects and runs it with graft's executor (the MXNet spelling).
#define GRAFT_REGISTER_SUBGRAPH_PROPERTY(name, PropertyClass)                                          \
  [[maybe_unused]] static const bool GRAFT_CONCAT(graft_subgraph_property_registered_, __COUNTER__) = \
      ::graft::backend::register_subgraph_property(name, [] { return std::make_unique<PropertyClass>(); })
