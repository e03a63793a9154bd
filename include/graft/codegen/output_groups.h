/// \file
/// Splitting a fused kernel whose outputs have different iteration spaces.
///
/// A fused kernel computes all its outputs in one loop over the broadcast of
/// their shapes. The fusion pass groups pointwise nodes by the graph's
/// structure, not by shapes (which may be symbolic or unknown until run
/// time), so one fused node can have outputs of different shapes: a scalar
/// `y = -s` read by `Max(y, x[2,3])` and by `Sub(z[4,5], y)` fuses into one
/// node with outputs [2,3] and [4,5], and an optimizer's update of every
/// parameter of a network into one node with outputs [512,256,1,1] and [256].
/// One loop over the broadcast of such shapes would be wrong where they do
/// not broadcast, and wasteful where they do: an output smaller than the loop
/// is computed and stored again at every step of the dimensions it lacks
/// (the [256] output 512 x 256 times over a [512,256,1,256] loop, and, its
/// innermost stride being 0, through the runner's strided path that copies
/// operands through scratch blocks). Such a kernel runs as one kernel per
/// group of outputs of one shape, each computing only what its outputs read.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "graft/ir/kernel_ir.h"
#include "graft/core/shape.h"

namespace graft::codegen {

/// Groups the outputs of a kernel (positions in `output_shapes`) by
/// iteration space: outputs of equal shapes (leading extent-1 dimensions
/// aside: [1,3] and [3] are one space) share a group. One group holding every
/// output when they all have one shape (the usual case). Groups are in the
/// order of their first output, members in output order.
std::vector<std::vector<int32_t>> group_outputs_by_iteration_space(std::span<const Shape> output_shapes);

/// The kernel that computes only outputs `outputs` (positions in
/// `ir.outputs`, in the order given) of `ir`, in canonical form (see
/// canonicalize): the expressions they read, and every input slot of `ir`
/// (an input no expression reads is never touched, so it may have any shape).
ir::KernelIR kernel_for_outputs(const ir::KernelIR& ir, std::span<const int32_t> outputs);

/// The kernels `ir` runs as when its outputs have `output_shapes`: `ir`
/// itself when they have one iteration space, else one kernel per group.
struct GroupedKernels {
  std::vector<std::vector<int32_t>> groups;  ///< as group_outputs_by_iteration_space
  std::vector<ir::KernelIR> kernels;         ///< per group (kernel_for_outputs)
};
GroupedKernels kernels_by_output_group(const ir::KernelIR& ir, std::span<const Shape> output_shapes);

}  // namespace graft::codegen
