#include "math_common.h"

#include <algorithm>

namespace graft::ops {

std::optional<std::vector<int64_t>> constant_ints(const InferContext& ctx, size_t i) {
  if (!ctx.has_input(i)) return std::nullopt;
  const Tensor* t = ctx.input_constant(i);
  if (!t) return std::nullopt;
  if (!dtype_is_integer(t->dtype())) ctx.fail("input ", i, " must hold integers, got ", t->type_string());
  return t->to_int64_vector();
}

std::vector<ir::Dim> reduced_dims(const std::vector<ir::Dim>& input, const std::vector<int64_t>& axes, bool keepdims) {
  std::vector<ir::Dim> out;
  for (size_t d = 0; d < input.size(); ++d) {
    bool reduced = std::binary_search(axes.begin(), axes.end(), static_cast<int64_t>(d));
    if (!reduced)
      out.push_back(input[d]);
    else if (keepdims)
      out.push_back(ir::Dim::known(1));
  }
  return out;
}

std::vector<int64_t> normalize_axes(std::vector<int64_t> axes, int64_t rank, const std::string& node_description) {
  for (int64_t& a : axes) a = normalize_axis(a, rank, node_description);
  std::sort(axes.begin(), axes.end());
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end())
    fail(ErrorKind::invalid_model, node_description, ": axes contain a duplicate");
  return axes;
}

}  // namespace graft::ops
