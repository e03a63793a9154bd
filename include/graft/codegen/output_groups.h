/// \file
/// Splitting a fused kernel whose outputs share no iteration space.
///
/// A fused kernel computes all its outputs in one loop over the broadcast of
/// their shapes. The fusion pass groups pointwise nodes by the graph's
/// structure, not by shapes (which may be symbolic or unknown until run
/// time), so one fused node can have outputs whose shapes do not broadcast
/// together: a scalar `y = -s` read by `Max(y, x[2,3])` and by
/// `Sub(z[4,5], y)` fuses into one node with outputs [2,3] and [4,5]. Such a
/// kernel runs as one kernel per group of outputs that do share an
/// iteration space, each computing only what its outputs read.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "graft/ir/kernel_ir.h"
#include "graft/core/shape.h"

namespace graft::codegen {

/// Groups the outputs of a kernel (positions in `output_shapes`) so that the
/// shapes in each group broadcast together: one group holding every output
/// when they all do (the usual case), else greedily, each output joining the
/// first group it broadcasts with. Groups and their members are in output
/// order.
std::vector<std::vector<int32_t>> group_outputs_by_iteration_space(std::span<const Shape> output_shapes);

/// The kernel that computes only outputs `outputs` (positions in
/// `ir.outputs`, in the order given) of `ir`, in canonical form (see
/// canonicalize): the expressions they read, and every input slot of `ir`
/// (an input no expression reads is never touched, so it may have any shape).
ir::KernelIR kernel_for_outputs(const ir::KernelIR& ir, std::span<const int32_t> outputs);

/// The kernels `ir` runs as when its outputs have `output_shapes`: `ir`
/// itself when they share one iteration space, else one kernel per group.
struct GroupedKernels {
  std::vector<std::vector<int32_t>> groups;  ///< as group_outputs_by_iteration_space
  std::vector<ir::KernelIR> kernels;         ///< per group (kernel_for_outputs)
};
GroupedKernels kernels_by_output_group(const ir::KernelIR& ir, std::span<const Shape> output_shapes);

}  // namespace graft::codegen
