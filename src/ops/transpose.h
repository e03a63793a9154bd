/// \file
/// The strided copy behind Transpose, DepthToSpace and SpaceToDepth.
/// Private to src/ops.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "graft/core/shape.h"

namespace graft::ops {

/// Writes to `out` (dense, row-major) the transpose of the dense row-major
/// tensor `in` of shape `in_shape`: output dimension i is input dimension
/// perm[i]. `perm` must be a permutation of [0, rank). Elements are copied as
/// `element_size` bytes (1, 2, 4 or 8). Parallel over the outer dimensions.
void transpose_bytes(const void* in, void* out, const Shape& in_shape, const std::vector<int64_t>& perm,
                     size_t element_size);

}  // namespace graft::ops
