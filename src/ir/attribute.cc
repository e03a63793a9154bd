#include "graft/ir/attribute.h"

#include "graft/ir/graph.h"

namespace graft::ir {

Attributes::Attributes(const Attributes& other) : values_(other.values_), owner_(other.owner()) {}

Attributes::Attributes(Attributes&& other) noexcept : values_(std::move(other.values_)) {
  try {
    owner_ = other.owner();
  } catch (...) {  // a description that cannot be allocated: messages name no owner
  }
}

Attributes& Attributes::operator=(const Attributes& other) {
  if (this == &other) return *this;
  values_ = other.values_;
  owner_ = node_ ? std::string() : other.owner();
  return *this;
}

Attributes& Attributes::operator=(Attributes&& other) noexcept {
  if (this == &other) return *this;
  values_ = std::move(other.values_);
  if (node_) {
    owner_.clear();
  } else {
    try {
      owner_ = other.owner();
    } catch (...) {
      owner_.clear();
    }
  }
  return *this;
}

std::string Attributes::owner() const {
  if (!owner_.empty() || !node_) return owner_;
  return node_->describe();
}

template <typename T>
const T& Attributes::get_typed(const std::string& name, const char* type_name) const {
  auto it = values_.find(name);
  if (it == values_.end()) fail(ErrorKind::invalid_model, owner(), ": missing required attribute '", name, "'");
  const T* v = std::get_if<T>(&it->second);
  if (!v) fail(ErrorKind::invalid_model, owner(), ": attribute '", name, "' is not of type ", type_name);
  return *v;
}

int64_t Attributes::get_int(const std::string& name) const { return get_typed<int64_t>(name, "int"); }
int64_t Attributes::get_int(const std::string& name, int64_t fallback) const {
  return has(name) ? get_int(name) : fallback;
}
float Attributes::get_float(const std::string& name) const {
  auto it = values_.find(name);
  if (it != values_.end())
    if (const int64_t* i = std::get_if<int64_t>(&it->second)) return static_cast<float>(*i);
  return get_typed<float>(name, "float");
}
float Attributes::get_float(const std::string& name, float fallback) const {
  return has(name) ? get_float(name) : fallback;
}
const std::string& Attributes::get_string(const std::string& name) const {
  return get_typed<std::string>(name, "string");
}
std::string Attributes::get_string(const std::string& name, const std::string& fallback) const {
  return has(name) ? get_string(name) : fallback;
}
const std::vector<int64_t>& Attributes::get_ints(const std::string& name) const {
  return get_typed<std::vector<int64_t>>(name, "ints");
}
std::vector<int64_t> Attributes::get_ints(const std::string& name, std::vector<int64_t> fallback) const {
  return has(name) ? get_ints(name) : fallback;
}
const std::vector<float>& Attributes::get_floats(const std::string& name) const {
  return get_typed<std::vector<float>>(name, "floats");
}
std::vector<float> Attributes::get_floats(const std::string& name, std::vector<float> fallback) const {
  return has(name) ? get_floats(name) : fallback;
}
const std::vector<std::string>& Attributes::get_strings(const std::string& name) const {
  return get_typed<std::vector<std::string>>(name, "strings");
}
const Tensor& Attributes::get_tensor(const std::string& name) const { return get_typed<Tensor>(name, "tensor"); }
const std::shared_ptr<Graph>& Attributes::get_graph(const std::string& name) const {
  return get_typed<std::shared_ptr<Graph>>(name, "graph");
}

}  // namespace graft::ir
