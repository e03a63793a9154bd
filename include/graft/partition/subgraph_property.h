/// \file
/// SubgraphProperty: what a backend takes from a graph (MXNet's subgraph API).
/// A backend returns its property from backend::Backend::property(), or a
/// property alone is registered as a backend of its own:
///
///   class MyProperty : public graft::partition::SubgraphProperty {
///     std::unique_ptr<SubgraphSelector> CreateSubgraphSelector() const override { ... }
///   };
///   GRAFT_REGISTER_SUBGRAPH_PROPERTY("mine", MyProperty);  // graft/backend/backend.h
///
/// The partitioner reads properties only as it is handed them; this component
/// keeps no registry of backends.
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

  /// The backend this property belongs to (set by whoever makes the property for a backend).
  const std::string& backend_name() const { return backend_name_; }
  void set_backend_name(std::string name) { backend_name_ = std::move(name); }

 private:
  std::string backend_name_;
};

/// The property made from the op support checkers registered under `backend`
/// (graft/partition/op_support.h), named after it; nullptr when there are none.
std::unique_ptr<SubgraphProperty> op_support_property(std::string_view backend);

}  // namespace graft::partition
