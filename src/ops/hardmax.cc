// Hardmax: 1 at the first maximum of each lane, 0 elsewhere. From opset 13
// a lane is one axis (default -1); before, the input is flattened to 2-D at
// `axis` (default 1) and a lane is a whole row.
#include <algorithm>
#include <cstring>

#include "data_movement.h"
#include "graft/core/parallel.h"
#include "graft/ops/infer_util.h"

namespace graft::ops {
namespace {

void hardmax_infer(InferContext& ctx) {
  const ir::ValueType& x = ctx.input_type(0);
  if (x.has_rank) {
    const int64_t rank = static_cast<int64_t>(x.dims.size());
    if (ctx.opset() >= 13) {
      checked_axis(ctx, ctx.attrs().get_int("axis", -1), rank);
    } else {
      const int64_t axis = ctx.attrs().get_int("axis", 1);
      if (axis < -rank || axis > rank) ctx.fail("axis ", axis, " is out of range for rank ", rank);
    }
  }
  infer_same_as_input(ctx);
}

void hardmax_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t rank = x.rank();
  int64_t outer = 1, n = 1, inner = 1;
  if (ctx.opset() >= 13) {
    if (rank == 0) ctx.fail("input must have rank >= 1");
    const int64_t axis = checked_axis(ctx, ctx.attrs().get_int("axis", -1), rank);
    n = x.dim(axis);
    for (int64_t d = 0; d < axis; ++d) outer *= x.dim(d);
    for (int64_t d = axis + 1; d < rank; ++d) inner *= x.dim(d);
  } else {
    int64_t axis = ctx.attrs().get_int("axis", 1);
    if (axis < -rank || axis > rank) ctx.fail("axis ", axis, " is out of range for rank ", rank);
    if (axis < 0) axis += rank;
    for (int64_t d = 0; d < axis; ++d) outer *= x.dim(d);
    for (int64_t d = axis; d < rank; ++d) n *= x.dim(d);
  }
  Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
  if (n == 0) return;
  visit_float_dtype(x.dtype(), "Hardmax", [&]<typename T>() {
    using C = compute_t<T>;
    const T* in = x.data<T>();
    T* out = y.data<T>();
    std::memset(static_cast<void*>(out), 0, y.nbytes());
    parallel_for(outer * inner, std::max<int64_t>(1, 4096 / n), [&](int64_t begin, int64_t end) {
      for (int64_t w = begin; w < end; ++w) {
        const int64_t base = (w / inner) * n * inner + w % inner;
        int64_t best = 0;
        C best_value = static_cast<C>(in[base]);
        for (int64_t j = 1; j < n; ++j) {
          const C v = static_cast<C>(in[base + j * inner]);
          if (v > best_value) {
            best_value = v;
            best = j;
          }
        }
        out[base + best * inner] = static_cast<T>(C(1));
      }
    });
  });
}

}  // namespace

GRAFT_REGISTER_OP("", "Hardmax", hardmax_infer, hardmax_kernel);

}  // namespace graft::ops
