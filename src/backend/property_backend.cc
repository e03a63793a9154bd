// The backend graft makes for a SubgraphProperty registered alone
// (GRAFT_REGISTER_SUBGRAPH_PROPERTY) or for op support checkers registered
// under a name no backend has: it takes what the property selects and its
// modules run the subgraph with graft's executor, as `ref`'s do, under the
// property's name, so that reports and plans name the backend that took the nodes.
#include "property_backend.h"

namespace graft::backend {

namespace {

class PropertyBackend final : public Backend {
 public:
  PropertyBackend(std::string name, std::shared_ptr<const partition::SubgraphProperty> property)
      : name_(std::move(name)), property_(std::move(property)) {}
  std::string name() const override { return name_; }
  std::shared_ptr<const partition::SubgraphProperty> property() const override {
    return property_ ? property_ : Backend::property();
  }
  std::unique_ptr<CompiledModule> compile(const ir::Graph& subgraph, const CompileOptions& options) const override {
    return fallback_backend().compile(subgraph, options);
  }

 private:
  std::string name_;
  std::shared_ptr<const partition::SubgraphProperty> property_;
};

}  // namespace

std::shared_ptr<const Backend> make_property_backend(std::string name,
                                                     std::shared_ptr<partition::SubgraphProperty> property) {
  if (property) property->set_backend_name(name);
  return std::make_shared<PropertyBackend>(std::move(name), std::move(property));
}

}  // namespace graft::backend
