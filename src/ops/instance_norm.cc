// InstanceNormalization: every (n, c) plane of X (N, C, D1, ..., Dn) is
// normalized with its own mean and biased variance, then scaled by scale[c]
// and shifted by B[c].
#include "graft/ops/infer_util.h"
#include "graft/ops/op_context.h"
#include "math_common.h"

namespace graft::ops {
namespace {

void infer_instance_norm(InferContext& ctx) {
  const ir::ValueType& x = ctx.input_type(0);
  if (x.has_rank && x.dims.size() < 2) ctx.fail("input must have rank >= 2, got ", x.to_string());
  infer_same_as_input(ctx);
}

void instance_norm_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.rank() < 2) ctx.fail("input must have rank >= 2, got ", x.type_string());
  const int64_t batch = x.dim(0), channels = x.dim(1);
  const int64_t plane = channels == 0 || batch == 0 ? 0 : x.numel() / (batch * channels);
  for (size_t i = 1; i <= 2; ++i)
    if (ctx.input(i).numel() != channels)
      ctx.fail(i == 1 ? "scale " : "B ", ctx.input(i).type_string(), " must hold one value per channel (", channels,
               ")");
  const float epsilon = ctx.attrs().get_float("epsilon", 1e-5f);
  Tensor& y = ctx.allocate_output_in_place(0, x.dtype(), x.shape(), 0);
  visit_float_dtype(x.dtype(), ctx.node().describe(), [&]<typename T>() {
    using W = std::conditional_t<std::is_same_v<T, double>, double, float>;
    normalize_groups<T, W>(x.data<T>(), y.data<T>(), batch, channels, 1, plane, tensor_to_vector<W>(ctx.input(1)),
                           tensor_to_vector<W>(ctx.input(2)), static_cast<W>(epsilon));
  });
}

}  // namespace

GRAFT_REGISTER_OP("", "InstanceNormalization", infer_instance_norm, instance_norm_kernel);

}  // namespace graft::ops
