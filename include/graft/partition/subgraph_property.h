/// \file
/// SubgraphProperty: what a backend takes from a graph (MXNet's subgraph API),
/// and its registry. A property is registered under the name of the backend
/// that compiles its subgraphs:
///
///   class MyProperty : public graft::partition::SubgraphProperty {
///     std::unique_ptr<SubgraphSelector> CreateSubgraphSelector() const override { ... }
///   };
///   GRAFT_REGISTER_SUBGRAPH_PROPERTY("mine", MyProperty);
///
/// When no runtime::Backend of that name is registered, graft registers a
/// default one whose modules run the subgraph with graft's executor (like
/// `ref`), so a property alone is enough to try a partitioning.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "graft/ir/graph.h"
#include "graft/partition/subgraph_selector.h"

namespace graft::partition {

class SubgraphProperty {
 public:
  virtual ~SubgraphProperty() = default;
  /// A new selector; the partitioner asks for one per subgraph it grows.
  virtual std::unique_ptr<SubgraphSelector> CreateSubgraphSelector() const = 0;
  /// Adds to `target` the node standing for `subgraph`, reading `inputs` (one
  /// per subgraph input, in order) and producing one output per subgraph
  /// output. `subgraph`'s Input nodes carry the boundary values' dtypes and
  /// shapes. The default makes a `graft.Subgraph` node with attributes
  /// `backend` (string) and `id` (int), Node::backend set and the body owned.
  virtual ir::Node* CreateSubgraphNode(ir::Graph& target, std::shared_ptr<ir::Graph> subgraph,
                                       const std::vector<ir::Value>& inputs, int id) const;
  /// Subgraphs with fewer nodes are left to later backends (reported as such).
  virtual size_t MinSubgraphSize() const { return 1; }
  /// Why this backend does not take `n` when its selector never selected it;
  /// shown in the partition report. The default says the selector declined.
  virtual std::string ExplainRejection(const ir::Node& n) const;

  /// The backend this property belongs to (set by create_subgraph_property).
  const std::string& backend_name() const { return backend_name_; }
  void set_backend_name(std::string name) { backend_name_ = std::move(name); }

 private:
  std::string backend_name_;
};

using SubgraphPropertyFactory = std::function<std::unique_ptr<SubgraphProperty>()>;

/// Registers the property of backend `backend`; returns true. Aborts start-up
/// on a duplicate name. Registers a default executor backend of that name
/// unless a real one is (or gets) registered.
bool register_subgraph_property(std::string backend, SubgraphPropertyFactory factory);
/// A new property for `backend`: the registered one, else one built from the
/// backend's op support checkers (graft/partition/op_support.h), else nullptr.
std::unique_ptr<SubgraphProperty> create_subgraph_property(std::string_view backend);

}  // namespace graft::partition

/// GRAFT_REGISTER_SUBGRAPH_PROPERTY("dnnl", DnnlProperty): registers a
/// default-constructible SubgraphProperty class under a backend name.
#define GRAFT_REGISTER_SUBGRAPH_PROPERTY(backend, PropertyClass)                                       \
  [[maybe_unused]] static const bool GRAFT_CONCAT(graft_subgraph_property_registered_, __COUNTER__) = \
      ::graft::partition::register_subgraph_property(backend, [] { return std::make_unique<PropertyClass>(); })
