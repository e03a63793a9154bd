/// \file
/// Concrete shapes and the checked arithmetic on them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace graft {

/// A concrete tensor shape: one non-negative extent per dimension.
using Shape = std::vector<int64_t>;

/// Number of elements; throws invalid_argument if an extent is negative or the
/// product overflows int64 (`what` names the tensor in the message).
int64_t shape_numel(const Shape& shape, const std::string& what = "tensor");
/// numel * element size in bytes, with the same overflow checks.
size_t shape_nbytes(const Shape& shape, size_t element_size, const std::string& what = "tensor");
/// Row-major strides in elements.
std::vector<int64_t> shape_strides(const Shape& shape);
/// "[1,3,224,224]".
std::string shape_to_string(const Shape& shape);
/// Normalizes a possibly negative axis against rank; throws invalid_model naming
/// `what` if it is out of range.
int64_t normalize_axis(int64_t axis, int64_t rank, const std::string& what);
/// Numpy-style broadcast of two shapes; throws invalid_model naming `what` when
/// they are incompatible.
Shape broadcast_shapes(const Shape& a, const Shape& b, const std::string& what);

}  // namespace graft
