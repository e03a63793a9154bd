// Trilu: keeps the upper (j - i >= k) or lower (j - i <= k) triangle of the
// last two dimensions of every matrix in the batch and zeroes the rest.
#include <algorithm>
#include <cstring>

#include "data_movement.h"
#include "graft/core/parallel.h"
#include "graft/ops/gradient.h"
#include "graft/ops/infer_util.h"

namespace graft::ops {
namespace {

void trilu_infer(InferContext& ctx) {
  const ir::ValueType& x = ctx.input_type(0);
  if (x.has_rank && x.dims.size() < 2) ctx.fail("input must have rank >= 2, got ", x.to_string());
  infer_same_as_input(ctx);
}

void trilu_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.rank() < 2) ctx.fail("input must have rank >= 2, got ", x.type_string());
  int64_t k = 0;
  if (ctx.has_input(1)) {
    const Tensor& kt = ctx.input(1);
    if (kt.numel() != 1) ctx.fail("k must be a scalar, got ", kt.type_string());
    k = read_indices(ctx, kt, "k")[0];
  }
  const bool upper = ctx.attrs().get_int("upper", 1) != 0;
  const int64_t rows = x.dim(x.rank() - 2), cols = x.dim(x.rank() - 1);
  const int64_t matrices = rows * cols == 0 ? 0 : x.numel() / (rows * cols);
  Tensor& y = ctx.allocate_output_in_place(0, x.dtype(), x.shape(), 0);
  visit_element_type(x.dtype(), "Trilu", [&]<typename U>() {
    const U* in = static_cast<const U*>(x.raw_data());
    U* out = static_cast<U*>(y.raw_data());
    parallel_for(matrices * rows, std::max<int64_t>(1, 16384 / std::max<int64_t>(cols, 1)), [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) {
        const int64_t i = r % rows;
        // Columns kept: [i + k, cols) for upper, [0, i + k] for lower.
        const int64_t keep_begin = upper ? std::clamp<int64_t>(i + k, 0, cols) : 0;
        const int64_t keep_end = upper ? cols : std::clamp<int64_t>(i + k + 1, 0, cols);
        const U* s = in + r * cols;
        U* o = out + r * cols;
        std::fill(o, o + keep_begin, U{0});
        if (o != s && keep_end > keep_begin)
          std::memcpy(o + keep_begin, s + keep_begin, static_cast<size_t>(keep_end - keep_begin) * sizeof(U));
        std::fill(o + std::max(keep_begin, keep_end), o + cols, U{0});
      }
    });
  });
}

}  // namespace

GRAFT_REGISTER_OP("", "Trilu", trilu_infer, trilu_kernel);

// Gradient builder (graft/ops/gradient.h): d_y masked by the same triangle.
namespace {

void trilu_gradient(GradientContext& g) {
  std::vector<ir::Value> inputs{g.output_gradient(0)};
  if (g.has_input(1)) inputs.push_back(g.input(1));
  g.set_input_gradient(0, g.add(ir::OpId::Trilu, inputs, {{"upper", g.attrs().get_int("upper", 1)}}));
}

}  // namespace

GRAFT_REGISTER_GRADIENT(Trilu, trilu_gradient);

}  // namespace graft::ops
