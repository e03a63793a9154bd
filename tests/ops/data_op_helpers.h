// Test helpers for the data-movement, shape and index op tests: building small
// tensors and reading their values back.
#pragma once

#include <numeric>
#include <vector>

#include "ops/math_op_runner.h"

namespace graft::testing {

/// The elements of `t` (whose dtype must be T) as a vector.
template <typename T>
std::vector<T> values_of(const Tensor& t) {
  auto span = t.values<T>();
  return std::vector<T>(span.begin(), span.end());
}

/// An int64 tensor; 1-D of the values' length unless a shape is given.
inline Tensor ints(std::vector<int64_t> values, Shape shape = {-1}) {
  if (shape == Shape{-1}) shape = {static_cast<int64_t>(values.size())};
  return Tensor::from_vector<int64_t>(values, shape);
}

/// A float32 tensor; 1-D of the values' length unless a shape is given.
inline Tensor floats(std::vector<float> values, Shape shape = {-1}) {
  if (shape == Shape{-1}) shape = {static_cast<int64_t>(values.size())};
  return Tensor::from_vector<float>(values, shape);
}

/// A float32 tensor holding 0, 1, 2, ... in row-major order.
inline Tensor iota_floats(const Shape& shape) {
  std::vector<float> v(static_cast<size_t>(shape_numel(shape)));
  std::iota(v.begin(), v.end(), 0.0f);
  return Tensor::from_vector<float>(v, shape);
}

/// Expects `run` to throw graft::Error of `kind`.
template <typename Fn>
void expect_error(ErrorKind kind, Fn&& run) {
  try {
    run();
    ADD_FAILURE() << "expected graft::Error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), kind) << e.what();
  }
}

}  // namespace graft::testing
