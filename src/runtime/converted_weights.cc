// The walk of mark_weights_only_converted: every tensor the graph holds
// (Constant values and tensor attributes, in bodies too) is an occurrence of
// its storage; a storage qualifies when every occurrence is a Constant of the
// body of one compiled node (one module converts it, so it can release it)
// whose module supersedes exactly that tensor.
#include "converted_weights.h"

#include "graft/core/tensor_bytes_key.h"

#include <cstdint>
#include <map>
#include <set>
#include <variant>

namespace graft::runtime {

namespace {


class OccurrenceWalk {
 public:
  explicit OccurrenceWalk(const ModuleTable& modules) : modules_(modules) {}

  /// `owner`: the compiled node whose body `g` is (nullptr elsewhere), and
  /// `superseded` what its module supersedes.
  void graph(const ir::Graph& g, const ir::Node* owner, const std::set<TensorBytesKey>* superseded, int depth) {
    for (const auto& node : g.nodes()) {
      if (node->constant_value.is_defined()) {
        const Tensor& t = node->constant_value;
        bool whole = t.byte_offset() == 0 && t.nbytes() == t.storage()->nbytes();
        occurrence(t, superseded && whole && superseded->count(tensor_bytes_key(t)) ? owner : nullptr);
      }
      for (const auto& [name, value] : node->attributes.all()) attribute(value, depth);
      if (!node->subgraph) continue;
      const std::set<TensorBytesKey>* body_superseded = nullptr;
      std::set<TensorBytesKey> keys;
      if (depth == 0 && is_compiled_node(*node) && node->index() < modules_.size() && modules_[node->index()]) {
        for (const Tensor& t : modules_[node->index()]->superseded_constants()) keys.insert(tensor_bytes_key(t));
        body_superseded = &keys;
      }
      graph(*node->subgraph, body_superseded ? node.get() : nullptr, body_superseded, depth + 1);
    }
  }

  size_t mark() {
    size_t marked = 0;
    for (auto& [storage, owner] : storages_)
      if (owner != nullptr && owner != kMixed) {
        storage->set_releasable(true);
        ++marked;
      }
    return marked;
  }

 private:
  /// `owner`: the compiled node whose module supersedes this occurrence, or
  /// nullptr for an occurrence something reads as it is.
  void occurrence(const Tensor& t, const ir::Node* owner) {
    auto [it, inserted] = storages_.emplace(t.storage().get(), owner ? owner : kMixed);
    if (!inserted && it->second != owner) it->second = kMixed;
  }

  void attribute(const ir::AttributeValue& value, int depth) {
    if (const auto* t = std::get_if<Tensor>(&value)) {
      if (t->is_defined()) occurrence(*t, nullptr);
    } else if (const auto* list = std::get_if<std::vector<Tensor>>(&value)) {
      for (const Tensor& t : *list)
        if (t.is_defined()) occurrence(t, nullptr);
    } else if (const auto* body = std::get_if<std::shared_ptr<ir::Graph>>(&value)) {
      if (*body) graph(**body, nullptr, nullptr, depth + 1);
    }
  }

  /// Marks a storage some occurrence of which is not superseded by its one owner.
  static inline const ir::Node* const kMixed = reinterpret_cast<const ir::Node*>(uintptr_t{1});
  const ModuleTable& modules_;
  std::map<Storage*, const ir::Node*> storages_;  // storage -> the one module owner of every occurrence, or kMixed
};

}  // namespace

size_t mark_weights_only_converted(const ir::Graph& planned, const ModuleTable& modules) {
  OccurrenceWalk walk(modules);
  walk.graph(planned, nullptr, nullptr, 0);
  return walk.mark();
}

}  // namespace graft::runtime
