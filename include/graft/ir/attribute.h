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

/// One attribute value: an int, float, string, tensor, graph or a list of those.
using AttributeValue =
    std::variant<int64_t, float, std::string, Tensor, std::shared_ptr<Graph>, std::vector<int64_t>,
                 std::vector<float>, std::vector<std::string>, std::vector<Tensor>>;

/// A node's attributes by name. Typed getters throw invalid_model naming the
/// attribute when it has another type; `owner` names the node in messages.
class Attributes {
 public:
  bool has(const std::string& name) const { return values_.count(name) != 0; }
  void set(const std::string& name, AttributeValue value) { values_[name] = std::move(value); }
  void erase(const std::string& name) { values_.erase(name); }
  const std::map<std::string, AttributeValue>& all() const { return values_; }
  /// Used in error messages ("node 'conv1' (Conv)").
  void set_owner(std::string owner) { owner_ = std::move(owner); }

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

  std::map<std::string, AttributeValue> values_;
  std::string owner_;
};

}  // namespace graft::ir
