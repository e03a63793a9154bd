// LpNormalization: x divided by its L1 (p = 1) or L2 (p = 2) norm along `axis`
// (default -1). A zero vector stays zero.
#include <cmath>
#include <vector>

#include "graft/core/parallel.h"
#include "graft/ops/gradient.h"
#include "graft/ops/infer_util.h"
#include "graft/ops/op_context.h"

namespace graft::ops {
namespace {

void infer_lp_normalization(InferContext& ctx) {
  const int64_t p = ctx.attrs().get_int("p", 2);
  if (p != 1 && p != 2) ctx.fail("p must be 1 or 2, got ", p);
  const ir::ValueType& x = ctx.input_type(0);
  if (x.has_rank)
    normalize_axis(ctx.attrs().get_int("axis", -1), static_cast<int64_t>(x.dims.size()), ctx.node().describe());
  infer_same_as_input(ctx);
}

void lp_normalization_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t p = ctx.attrs().get_int("p", 2);
  if (p != 1 && p != 2) ctx.fail("p must be 1 or 2, got ", p);
  const int64_t axis = normalize_axis(ctx.attrs().get_int("axis", -1), x.rank(), ctx.node().describe());
  int64_t outer = 1, n = x.rank() == 0 ? 1 : x.dim(axis), inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x.dim(d);
  for (int64_t d = axis + 1; d < x.rank(); ++d) inner *= x.dim(d);
  Tensor& y = ctx.allocate_output_in_place(0, x.dtype(), x.shape(), 0);
  visit_float_dtype(x.dtype(), ctx.node().describe(), [&]<typename T>() {
    using W = std::conditional_t<std::is_same_v<T, double>, double, float>;
    const T* in = x.data<T>();
    T* out = y.data<T>();
    parallel_for(outer, std::max<int64_t>(1, 16384 / std::max<int64_t>(n * inner, 1)), [&](int64_t begin, int64_t end) {
      std::vector<W> norms(static_cast<size_t>(inner));
      for (int64_t o = begin; o < end; ++o) {
        const int64_t base = o * n * inner;
        std::fill(norms.begin(), norms.end(), W(0));
        for (int64_t k = 0; k < n; ++k)
          for (int64_t i = 0; i < inner; ++i) {
            const W v = static_cast<W>(static_cast<compute_t<T>>(in[base + k * inner + i]));
            norms[static_cast<size_t>(i)] += p == 1 ? std::abs(v) : v * v;
          }
        for (W& norm : norms) norm = p == 1 ? norm : std::sqrt(norm);
        for (int64_t k = 0; k < n; ++k)
          for (int64_t i = 0; i < inner; ++i) {
            const W norm = norms[static_cast<size_t>(i)];
            const W v = static_cast<W>(static_cast<compute_t<T>>(in[base + k * inner + i]));
            out[base + k * inner + i] = static_cast<T>(norm == W(0) ? W(0) : v / norm);
          }
      }
    });
  });
}

}  // namespace

GRAFT_REGISTER_OP("", "LpNormalization", infer_lp_normalization, lp_normalization_kernel);

// Gradient builder (graft/ops/gradient.h): with n the norm (axis kept) and
// y = x / n, d_x = (d_y - s sum(d_y y)) / n along the axis, s = y for p = 2
// and sign(x) for p = 1 (a zero vector has no gradient: it divides by 0).
namespace {

void lp_normalization_gradient(GradientContext& g) {
  using enum ir::OpId;
  const ir::ValueType& xt = g.input_type(0);
  if (!xt.has_rank) g.unsupported("the input's rank is not known");
  const int64_t p = g.attrs().get_int("p", 2);
  const int64_t axis =
      normalize_axis(g.attrs().get_int("axis", -1), static_cast<int64_t>(xt.dims.size()), g.node().describe());
  ir::Value x = g.input(0), y = g.output(0), dy = g.output_gradient(0);
  ir::Value axes = g.int64s({axis});
  ir::Value norm = g.add(p == 1 ? ReduceL1 : ReduceL2, {x, axes}, {{"keepdims", int64_t{1}}});
  ir::Value dot = g.add(ReduceSum, {g.add(Mul, {dy, y}), axes}, {{"keepdims", int64_t{1}}});
  ir::Value s = p == 1 ? g.add(Sign, {x}) : y;
  g.set_input_gradient(0, g.add(Div, {g.add(Sub, {dy, g.add(Mul, {s, dot})}), norm}));
}

}  // namespace

GRAFT_REGISTER_GRADIENT(LpNormalization, lp_normalization_gradient);

}  // namespace graft::ops
