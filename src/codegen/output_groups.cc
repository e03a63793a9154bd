#include "graft/codegen/output_groups.h"

#include <algorithm>

#include "graft/core/error.h"

namespace graft::codegen {

namespace {

/// Broadcasts `shape` into `space` (right-aligned); false, leaving `space`
/// as it was, when they do not broadcast.
bool broadcast_into(Shape& space, const Shape& shape) {
  const size_t rank = std::max(space.size(), shape.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t a = i < rank - space.size() ? 1 : space[i - (rank - space.size())];
    const int64_t b = i < rank - shape.size() ? 1 : shape[i - (rank - shape.size())];
    if (a != b && a != 1 && b != 1) return false;
    out[i] = a == 1 ? b : a;
  }
  space = std::move(out);
  return true;
}

}  // namespace

std::vector<std::vector<int32_t>> group_outputs_by_iteration_space(std::span<const Shape> output_shapes) {
  std::vector<std::vector<int32_t>> groups;
  std::vector<Shape> spaces;
  for (size_t o = 0; o < output_shapes.size(); ++o) {
    size_t g = 0;
    while (g < groups.size() && !broadcast_into(spaces[g], output_shapes[o])) ++g;
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
