/// \file
/// Node attributes (ONNX attribute semantics).
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "graft/core/tensor.h"

namespace graft::ir {

class Graph;
class Node;

/// One attribute value: an int, float, string, tensor, graph or a list of those.
using AttributeValue =
    std::variant<int64_t, float, std::string, Tensor, std::shared_ptr<Graph>, std::vector<int64_t>,
                 std::vector<float>, std::vector<std::string>, std::vector<Tensor>>;

/// A node's attributes by name. Typed getters throw invalid_model naming the
/// attribute when it has another type, and the owner: the node that holds
/// these attributes (described when a message is written, so it costs
/// nothing up front and follows renames), or the name given by set_owner.
class Attributes {
 public:
  Attributes() = default;
  /// Copies the values and the owner's description (not the owning node).
  Attributes(const Attributes& other);
  Attributes(Attributes&& other) noexcept;
  /// Replaces the values; a node's attributes keep naming that node, others
  /// take the owner of `other`.
  Attributes& operator=(const Attributes& other);
  Attributes& operator=(Attributes&& other) noexcept;

  bool has(const std::string& name) const { return values_.count(name) != 0; }
  void set(const std::string& name, AttributeValue value) { values_[name] = std::move(value); }
  void erase(const std::string& name) { values_.erase(name); }
  const std::map<std::string, AttributeValue>& all() const { return values_; }
  /// Used in error messages ("node 'conv1' (Conv)") instead of the owning node.
  void set_owner(std::string owner) { owner_ = std::move(owner); }
  /// How messages name the owner: set_owner's name, else the owning node's
  /// description, else "".
  std::string owner() const;

  int64_t get_int(const std::string& name) const;
  int64_t get_int(const std::string& name, int64_t fallback) const;
  float get_float(const std::string& name) const;
  float get_float(const std::string& name, float fallback) const;
  const std::string& get_string(const std::string& name) const;
  std::string get_string(const std::string& name, const std::string& fallback) const;
  const std::vector<int64_t>& get_ints(const std::string& name) const;
  std::vector<int64_t> get_ints(const std::string& name, std::vector<int64_t> fallback) const;
  const std::vector<float>& get_floats(const std::string& name) const;
  std::vector<float> get_floats(const std::string& name, std::vector<float> fallback) const;
  const std::vector<std::string>& get_strings(const std::string& name) const;
  const Tensor& get_tensor(const std::string& name) const;
  const std::shared_ptr<Graph>& get_graph(const std::string& name) const;

 private:
  template <typename T> const T& get_typed(const std::string& name, const char* type_name) const;

  friend class Node;

  std::map<std::string, AttributeValue> values_;
  std::string owner_;
  const Node* node_ = nullptr;  // the node holding these attributes, set by Node
};

}  // namespace graft::ir
