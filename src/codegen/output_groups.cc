#include "graft/codegen/output_groups.h"

#include <algorithm>
#include <ranges>

#include "graft/core/error.h"

namespace graft::codegen {

namespace {

/// Whether `a` and `b` are one iteration space: equal once their leading
/// extent-1 dimensions are dropped ([1,3,4] and [3,4] are, [3,4] and [4] are
/// not).
bool same_iteration_space(const Shape& a, const Shape& b) {
  auto significant = [](const Shape& s) {
    size_t first = 0;
    while (first < s.size() && s[first] == 1) ++first;
    return std::span<const int64_t>(s).subspan(first);
  };
  return std::ranges::equal(significant(a), significant(b));
}

}  // namespace

std::vector<std::vector<int32_t>> group_outputs_by_iteration_space(std::span<const Shape> output_shapes) {
  std::vector<std::vector<int32_t>> groups;
  std::vector<Shape> spaces;
  for (size_t o = 0; o < output_shapes.size(); ++o) {
    size_t g = 0;
    while (g < groups.size() && !same_iteration_space(spaces[g], output_shapes[o])) ++g;
    if (g == groups.size()) {
      groups.emplace_back();
      spaces.push_back(output_shapes[o]);
    }
    groups[g].push_back(static_cast<int32_t>(o));
  }
  return groups;
}

ir::KernelIR kernel_for_outputs(const ir::KernelIR& ir, std::span<const int32_t> outputs) {
  ir::KernelIR part = ir;
  part.outputs.clear();
  for (int32_t o : outputs) {
    GRAFT_CHECK(o >= 0 && static_cast<size_t>(o) < ir.outputs.size(), "kernel output ", o, " out of range");
    part.outputs.push_back(ir.outputs[static_cast<size_t>(o)]);
  }
  return canonicalize(part);  // drops what these outputs do not read
}

GroupedKernels kernels_by_output_group(const ir::KernelIR& ir, std::span<const Shape> output_shapes) {
  GroupedKernels grouped;
  grouped.groups = group_outputs_by_iteration_space(output_shapes);
  if (grouped.groups.size() == 1) {
    grouped.kernels.push_back(ir);
    return grouped;
  }
  for (const std::vector<int32_t>& group : grouped.groups) grouped.kernels.push_back(kernel_for_outputs(ir, group));
  return grouped;
}

}  // namespace graft::codegen
