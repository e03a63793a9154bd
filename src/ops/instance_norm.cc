// InstanceNormalization: every (n, c) plane of X (N, C, D1, ..., Dn) is
// normalized with its own mean and biased variance, then scaled by scale[c]
// and shifted by B[c].
#include "graft/ops/gradient.h"
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

// Gradient builder (graft/ops/gradient.h), in standard ops: with the
// statistics of each plane recomputed, x^ = (x - mean) / sqrt(var + epsilon)
// and g = d_y scale,
//   d_x = (g - mean(g) - x^ mean(g x^)) / sqrt(var + epsilon) per plane,
//   d_scale = sum of d_y x^ and d_B = sum of d_y over N and the planes.
namespace {

void instance_norm_gradient(GradientContext& g) {
  using enum ir::OpId;
  const ir::ValueType& xt = g.input_type(0);
  if (!xt.has_rank || xt.dims.size() < 3) g.unsupported("the input needs a known rank of at least 3");
  const DType dtype = xt.dtype;
  std::vector<int64_t> plane_axes, channel_axes{0}, per_channel(xt.dims.size() - 1, 1);
  for (size_t d = 2; d < xt.dims.size(); ++d) {
    plane_axes.push_back(static_cast<int64_t>(d));
    channel_axes.push_back(static_cast<int64_t>(d));
  }
  per_channel[0] = -1;
  auto mean_over_planes = [&](ir::Value v) {
    return g.add(ReduceMean, {v, g.int64s(plane_axes)}, {{"keepdims", int64_t{1}}});
  };
  ir::Value x = g.input(0), dy = g.output_gradient(0);
  ir::Value centered = g.add(Sub, {x, mean_over_planes(x)});
  ir::Value var = mean_over_planes(g.add(Mul, {centered, centered}));
  ir::Value inv =
      g.add(Reciprocal, {g.add(Sqrt, {g.add(Add, {var, g.scalar(g.attrs().get_float("epsilon", 1e-5f), dtype)})})});
  ir::Value xhat = g.add(Mul, {centered, inv});
  if (g.needs_input_gradient(0)) {
    ir::Value gs = g.add(Mul, {dy, g.add(Reshape, {g.input(1), g.int64s(per_channel)})});
    ir::Value inner = g.add(
        Sub, {g.add(Sub, {gs, mean_over_planes(gs)}), g.add(Mul, {xhat, mean_over_planes(g.add(Mul, {gs, xhat}))})});
    g.set_input_gradient(0, g.add(Mul, {inner, inv}));
  }
  if (g.needs_input_gradient(1))
    g.set_input_gradient(
        1, g.add(ReduceSum, {g.add(Mul, {dy, xhat}), g.int64s(channel_axes)}, {{"keepdims", int64_t{0}}}));
  if (g.needs_input_gradient(2))
    g.set_input_gradient(2, g.add(ReduceSum, {dy, g.int64s(channel_axes)}, {{"keepdims", int64_t{0}}}));
}

}  // namespace

GRAFT_REGISTER_GRADIENT(InstanceNormalization, instance_norm_gradient);

}  // namespace graft::ops
