// Det: the determinant of each trailing M x M matrix of X (..., M, M), by LU
// decomposition with partial pivoting, computed in double.
#include <cmath>
#include <utility>
#include <vector>

#include "graft/core/parallel.h"
#include "graft/ops/op_context.h"

namespace graft::ops {
namespace {

void infer_det(InferContext& ctx) {
  const ir::ValueType& x = ctx.input_type(0);
  if (!x.has_rank) return ctx.set_output(0, ir::ValueType::of_dtype(x.dtype));
  if (x.dims.size() < 2) ctx.fail("input must have rank >= 2, got ", x.to_string());
  const ir::Dim& rows = x.dims[x.dims.size() - 2];
  const ir::Dim& cols = x.dims.back();
  if (rows.is_known() && cols.is_known() && rows.value != cols.value)
    ctx.fail("matrices must be square, got ", x.to_string());
  ctx.set_output(0, ir::ValueType{x.dtype, true, std::vector<ir::Dim>(x.dims.begin(), x.dims.end() - 2)});
}

/// Determinant of the n x n row-major matrix `a` (destroyed).
double determinant(std::vector<double>& a, int64_t n) {
  double det = 1.0;
  for (int64_t col = 0; col < n; ++col) {
    int64_t pivot = col;
    for (int64_t r = col + 1; r < n; ++r)
      if (std::abs(a[static_cast<size_t>(r * n + col)]) > std::abs(a[static_cast<size_t>(pivot * n + col)])) pivot = r;
    const double p = a[static_cast<size_t>(pivot * n + col)];
    if (p == 0.0) return 0.0;
    if (pivot != col) {
      for (int64_t c = 0; c < n; ++c)
        std::swap(a[static_cast<size_t>(pivot * n + c)], a[static_cast<size_t>(col * n + c)]);
      det = -det;
    }
    det *= p;
    for (int64_t r = col + 1; r < n; ++r) {
      const double factor = a[static_cast<size_t>(r * n + col)] / p;
      if (factor == 0.0) continue;
      for (int64_t c = col + 1; c < n; ++c)
        a[static_cast<size_t>(r * n + c)] -= factor * a[static_cast<size_t>(col * n + c)];
    }
  }
  return det;
}

void det_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.rank() < 2 || x.dim(x.rank() - 1) != x.dim(x.rank() - 2))
    ctx.fail("input must be a batch of square matrices, got ", x.type_string());
  const int64_t n = x.dim(x.rank() - 1);
  Tensor& y = ctx.allocate_output(0, x.dtype(), Shape(x.shape().begin(), x.shape().end() - 2));
  const int64_t count = y.numel();
  visit_float_dtype(x.dtype(), ctx.node().describe(), [&]<typename T>() {
    const T* in = x.data<T>();
    T* out = y.data<T>();
    parallel_for(count, std::max<int64_t>(1, 4096 / std::max<int64_t>(n * n * n, 1)), [&](int64_t begin, int64_t end) {
      std::vector<double> matrix(static_cast<size_t>(n * n));
      for (int64_t b = begin; b < end; ++b) {
        for (int64_t i = 0; i < n * n; ++i)
          matrix[static_cast<size_t>(i)] = static_cast<double>(static_cast<compute_t<T>>(in[b * n * n + i]));
        out[b] = static_cast<T>(static_cast<compute_t<T>>(determinant(matrix, n)));
      }
    });
  });
}

}  // namespace

GRAFT_REGISTER_OP("", "Det", infer_det, det_kernel);

}  // namespace graft::ops
