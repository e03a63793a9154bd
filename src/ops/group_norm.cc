// GroupNormalization (opset 18): the C channels of X (N, C, D1, ..., Dn) are
// split into num_groups groups of C / num_groups consecutive channels; each
// (n, group) is normalized with its mean and biased variance, then scaled and
// shifted. Opset 18 declares scale and bias per group, while exporters (and
// opset 21) give them per channel: both lengths are accepted.
#include "graft/ops/infer_util.h"
#include "graft/ops/op_context.h"
#include "math_common.h"

namespace graft::ops {
namespace {

void infer_group_norm(InferContext& ctx) {
  const ir::ValueType& x = ctx.input_type(0);
  if (x.has_rank && x.dims.size() < 2) ctx.fail("X must have rank >= 2, got ", x.to_string());
  infer_same_as_input(ctx);
}

/// A per-group or per-channel parameter expanded to one value per channel.
template <typename W>
std::vector<W> per_channel(const KernelContext& ctx, const Tensor& p, int64_t channels, int64_t groups,
                           const char* what) {
  std::vector<W> values = tensor_to_vector<W>(p);
  if (p.numel() == channels) return values;
  if (p.numel() != groups)
    ctx.fail(what, " ", p.type_string(), " must hold one value per channel (", channels, ") or per group (", groups,
             ")");
  std::vector<W> out(static_cast<size_t>(channels));
  for (int64_t c = 0; c < channels; ++c)
    out[static_cast<size_t>(c)] = values[static_cast<size_t>(c / (channels / groups))];
  return out;
}

void group_norm_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.rank() < 2) ctx.fail("X must have rank >= 2, got ", x.type_string());
  const int64_t groups = ctx.attrs().get_int("num_groups");
  const int64_t batch = x.dim(0), channels = x.dim(1);
  if (groups <= 0 || channels % groups != 0)
    ctx.fail("num_groups ", groups, " must be positive and divide the channel count ", channels);
  const int64_t plane = channels == 0 || batch == 0 ? 0 : x.numel() / (batch * channels);
  const float epsilon = ctx.attrs().get_float("epsilon", 1e-5f);
  Tensor& y = ctx.allocate_output_in_place(0, x.dtype(), x.shape(), 0);
  visit_float_dtype(x.dtype(), ctx.node().describe(), [&]<typename T>() {
    using W = std::conditional_t<std::is_same_v<T, double>, double, float>;
    normalize_groups<T, W>(x.data<T>(), y.data<T>(), batch, groups, channels / groups, plane,
                           per_channel<W>(ctx, ctx.input(1), channels, groups, "scale"),
                           per_channel<W>(ctx, ctx.input(2), channels, groups, "bias"), static_cast<W>(epsilon));
  });
}

}  // namespace

GRAFT_REGISTER_OP("", "GroupNormalization", infer_group_norm, group_norm_kernel);

}  // namespace graft::ops
