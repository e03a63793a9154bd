// The concrete input types of a plan made ahead of time (graft compile,
// graft partition --shape, graft run's generated inputs): the model's, with
// the shapes given where it leaves dimensions open. The one place that
// checks a given shape against a model input.
#include <algorithm>

#include "graft/runtime/artifact.h"

namespace graft::runtime {

namespace {

/// "--shape x" or "the shape of input 'x'": how messages name a given shape.
std::string given_shape_name(const std::string& input, std::string_view shape_flag) {
  if (shape_flag.empty()) return "the shape given for input '" + input + "'";
  return std::string(shape_flag) + " " + input;
}

}  // namespace

void check_shape_fits(const ValueInfo& input, const Shape& shape, std::string_view shape_flag) {
  if (!input.type.has_rank) return;
  if (shape.size() != input.type.dims.size())
    fail(ErrorKind::invalid_argument, given_shape_name(input.name, shape_flag), ": rank ", shape.size(),
         " given, the model declares ", input.type.to_string(), " (rank ", input.type.dims.size(), ")");
  int64_t elements = 1;
  for (int64_t extent : shape)
    if (extent < 0 || __builtin_mul_overflow(elements, extent, &elements) ||
        elements > (int64_t{1} << 62) / static_cast<int64_t>(std::max<size_t>(1, dtype_size(input.type.dtype))))
      fail(ErrorKind::invalid_argument, given_shape_name(input.name, shape_flag), "=", shape_to_string(shape),
           " has more bytes than any memory holds");
  for (size_t d = 0; d < shape.size(); ++d)
    if (input.type.dims[d].is_known() && input.type.dims[d].value != shape[d])
      fail(ErrorKind::invalid_argument, given_shape_name(input.name, shape_flag), "=", shape_to_string(shape),
           " does not fit the model's ", input.type.to_string(), " (dimension ", d, ")");
}

std::vector<ir::ValueType> concrete_input_types(const std::vector<ValueInfo>& inputs,
                                                const std::map<std::string, Shape>& shapes,
                                                std::string_view shape_flag) {
  for (const auto& [name, shape] : shapes) {
    bool known = false;
    for (const ValueInfo& info : inputs) known = known || info.name == name;
    if (!known) {
      std::string names;
      for (const ValueInfo& info : inputs) names += (names.empty() ? "'" : ", '") + info.name + "'";
      fail(ErrorKind::invalid_argument, shape_flag.empty() ? "a shape is" : std::string(shape_flag) + " is",
           " given for '", name, "', which is not an input of the model (inputs: ", names.empty() ? "none" : names,
           ")");
    }
  }
  std::vector<ir::ValueType> types;
  for (const ValueInfo& info : inputs) {
    auto given = shapes.find(info.name);
    if (given != shapes.end()) {
      check_shape_fits(info, given->second, shape_flag);
      types.push_back(ir::ValueType::of(info.type.dtype, given->second));
      continue;
    }
    if (!info.type.is_concrete())
      fail(ErrorKind::invalid_argument, "input '", info.name, "' has shape ", info.type.to_string(),
           "; a plan made ahead of time is for concrete shapes: give ",
           shape_flag.empty() ? "its shape" : std::string(shape_flag) + " " + info.name + "=D0,D1,...");
    types.push_back(info.type);
  }
  return types;
}

}  // namespace graft::runtime
