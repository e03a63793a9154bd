// MeanVarianceNormalization: (x - mean) / (sqrt(variance) + 1e-9), with mean
// and (biased) variance taken over `axes` (default [0, 2, 3]), as in the
// op's ONNX function definition. The input is walked through a
// ReductionLayout: one task per kept position, two passes for the
// statistics and one to write.
#include <cmath>

#include "graft/core/parallel.h"
#include "graft/ops/infer_util.h"
#include "graft/ops/op_context.h"
#include "math_common.h"

namespace graft::ops {
namespace {

void infer_mvn(InferContext& ctx) {
  const ir::ValueType& x = ctx.input_type(0);
  if (x.has_rank)
    normalize_axes(ctx.attrs().get_ints("axes", {0, 2, 3}), static_cast<int64_t>(x.dims.size()), ctx.node().describe());
  infer_same_as_input(ctx);
}

void mvn_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const std::vector<int64_t> axes =
      normalize_axes(ctx.attrs().get_ints("axes", {0, 2, 3}), x.rank(), ctx.node().describe());
  Tensor& y = ctx.allocate_output_in_place(0, x.dtype(), x.shape(), 0);
  if (x.numel() == 0) return;
  // After the empty case: the offset tables multiply extents that a zero extent elsewhere leaves unbounded.
  const ReductionLayout layout = make_reduction_layout(x.shape(), axes);
  const int64_t kept = layout.kept_count(), reduced = layout.reduced_count();
  auto offset = [&](int64_t k, int64_t r) -> int64_t {
    switch (layout.kind) {
      case ReductionLayout::Kind::rows:
        return k * reduced + r;
      case ReductionLayout::Kind::columns:
        return ((k / layout.inner) * reduced + r) * layout.inner + k % layout.inner;
      default:
        return layout.kept_offsets[static_cast<size_t>(k)] + layout.reduced_offsets[static_cast<size_t>(r)];
    }
  };
  visit_float_dtype(x.dtype(), ctx.node().describe(), [&]<typename T>() {
    using W = std::conditional_t<std::is_same_v<T, double>, double, float>;
    const T* in = x.data<T>();
    T* out = y.data<T>();
    auto load = [&](int64_t i) { return static_cast<W>(static_cast<compute_t<T>>(in[i])); };
    parallel_for(kept, std::max<int64_t>(1, 16384 / std::max<int64_t>(reduced, 1)), [&](int64_t begin, int64_t end) {
      for (int64_t k = begin; k < end; ++k) {
        W sum = 0;
        for (int64_t r = 0; r < reduced; ++r) sum += load(offset(k, r));
        const W mean = sum / static_cast<W>(reduced);
        W squares = 0;
        for (int64_t r = 0; r < reduced; ++r) {
          const W d = load(offset(k, r)) - mean;
          squares += d * d;
        }
        const W denominator = std::sqrt(squares / static_cast<W>(reduced)) + static_cast<W>(1e-9);
        for (int64_t r = 0; r < reduced; ++r) {
          const int64_t i = offset(k, r);
          out[i] = static_cast<T>((load(i) - mean) / denominator);
        }
      }
    });
  });
}

}  // namespace

GRAFT_REGISTER_OP("", "MeanVarianceNormalization", infer_mvn, mvn_kernel);

}  // namespace graft::ops
