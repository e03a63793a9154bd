#include "graft/core/shape.h"

#include <limits>

#include "graft/core/error.h"

namespace graft {

int64_t shape_numel(const Shape& shape, const std::string& what) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) fail(ErrorKind::invalid_argument, what, ": negative dimension in shape ", shape_to_string(shape));
    if (d != 0 && n > std::numeric_limits<int64_t>::max() / d)
      fail(ErrorKind::invalid_argument, what, ": shape ", shape_to_string(shape), " has more than 2^63 elements");
    n *= d;
  }
  return n;
}

size_t shape_nbytes(const Shape& shape, size_t element_size, const std::string& what) {
  int64_t n = shape_numel(shape, what);
  if (element_size != 0 && static_cast<uint64_t>(n) > std::numeric_limits<int64_t>::max() / element_size)
    fail(ErrorKind::resource_exhausted, what, ": shape ", shape_to_string(shape), " needs more than 2^63 bytes (",
         element_size, " bytes per element)");
  return static_cast<size_t>(n) * element_size;
}

std::vector<int64_t> shape_strides(const Shape& shape) {
  std::vector<int64_t> strides(shape.size());
  int64_t s = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = s;
    s *= shape[i];
  }
  return strides;
}

std::string shape_to_string(const Shape& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ",";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

int64_t normalize_axis(int64_t axis, int64_t rank, const std::string& what) {
  if (axis < -rank || axis >= rank || (rank == 0 && axis != 0 && axis != -1))
    fail(ErrorKind::invalid_model, what, ": axis ", axis, " is out of range for rank ", rank);
  return axis < 0 ? axis + rank : axis;
}

Shape broadcast_shapes(const Shape& a, const Shape& b, const std::string& what) {
  size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da == db || db == 1) out[i] = da;
    else if (da == 1) out[i] = db;
    else fail(ErrorKind::invalid_model, what, ": shapes ", shape_to_string(a), " and ", shape_to_string(b),
              " cannot be broadcast");
  }
  return out;
}

}  // namespace graft
