#include "graft/ir/attribute.h"

namespace graft::ir {

template <typename T>
const T& Attributes::get_typed(const std::string& name, const char* type_name) const {
  auto it = values_.find(name);
  if (it == values_.end()) fail(ErrorKind::invalid_model, owner_, ": missing required attribute '", name, "'");
  const T* v = std::get_if<T>(&it->second);
  if (!v) fail(ErrorKind::invalid_model, owner_, ": attribute '", name, "' is not of type ", type_name);
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
