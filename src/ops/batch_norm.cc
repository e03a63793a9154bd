// BatchNormalization over X of shape (N, C, D1, ..., Dn).
//
// Inference: per channel, y = x * a + b with a = scale / sqrt(var + epsilon)
// and b = B - mean * a, folded once per channel. Training mode (opset >= 14:
// training_mode = 1; before 14: the node asks for the extra outputs)
// normalizes with the batch statistics (mean and biased variance over N and
// the spatial dimensions) and outputs the running statistics
// input_mean * momentum + batch_mean * (1 - momentum), likewise for var.
// spatial = 0 (opsets 7-8) treats every (C, D1, ..., Dn) position as its own
// channel.
#include <cmath>
#include <vector>

#include "graft/core/parallel.h"
#include "graft/ops/gradient.h"
#include "graft/ops/infer_util.h"
#include "graft/ops/op_context.h"
#include "math_common.h"
#include "vector_math.h"

namespace graft::ops {
namespace {

bool is_training(const ir::Node& node, const ir::Attributes& attributes, size_t num_outputs) {
  if (node.opset_version >= 14) return attributes.get_int("training_mode", 0) != 0;
  return num_outputs > 1;
}

void infer_batch_norm(InferContext& ctx) {
  const ir::ValueType& x = ctx.input_type(0);
  if (x.has_rank && x.dims.size() < 2) ctx.fail("X must have rank >= 2, got ", x.to_string());
  ctx.set_output(0, x);
  for (size_t i = 1; i < ctx.num_outputs(); ++i) ctx.set_output(i, ctx.input_type(i == 1 ? 3 : 4));
}

/// Channel layout of X: N, channels, and the elements per (n, channel) plane.
struct ChannelView {
  int64_t batch = 1, channels = 1, plane = 1;
};

ChannelView channel_view(const KernelContext& ctx, const Tensor& x) {
  if (x.rank() < 2) ctx.fail("X must have rank >= 2, got ", x.type_string());
  ChannelView v;
  v.batch = x.dim(0);
  const bool spatial = ctx.opset() >= 9 || ctx.attrs().get_int("spatial", 1) != 0;
  v.channels = x.dim(1);
  for (int64_t d = 2; d < x.rank(); ++d) (spatial ? v.plane : v.channels) *= x.dim(d);
  return v;
}

template <typename T>
void batch_norm_typed(KernelContext& ctx, const Tensor& x, const ChannelView& v, bool training, Tensor& y) {
  using W = std::conditional_t<std::is_same_v<T, double>, double, float>;
  float epsilon = ctx.attrs().get_float("epsilon", 1e-5f);
  float momentum = ctx.attrs().get_float("momentum", 0.9f);
  std::vector<W> scale = tensor_to_vector<W>(ctx.input(1)), bias = tensor_to_vector<W>(ctx.input(2));
  std::vector<W> mean = tensor_to_vector<W>(ctx.input(3)), var = tensor_to_vector<W>(ctx.input(4));
  for (size_t i = 1; i <= 4; ++i)
    if (ctx.input(i).numel() != v.channels)
      ctx.fail("input ", i, " ", ctx.input(i).type_string(), " must hold one value per channel (", v.channels, ")");
  const T* in = x.data<T>();
  T* out = y.data<T>();
  std::vector<W> batch_mean, batch_var;
  if (training) {
    batch_mean.assign(static_cast<size_t>(v.channels), W(0));
    batch_var.assign(static_cast<size_t>(v.channels), W(0));
    const double count = static_cast<double>(v.batch) * static_cast<double>(v.plane);
    parallel_for(v.channels, 1, [&](int64_t begin, int64_t end) {
      for (int64_t c = begin; c < end; ++c) {
        double sum = 0;
        for (int64_t n = 0; n < v.batch; ++n) {
          const T* p = in + (n * v.channels + c) * v.plane;
          for (int64_t i = 0; i < v.plane; ++i) sum += static_cast<double>(static_cast<compute_t<T>>(p[i]));
        }
        const double m = count > 0 ? sum / count : 0.0;
        double squares = 0;
        for (int64_t n = 0; n < v.batch; ++n) {
          const T* p = in + (n * v.channels + c) * v.plane;
          for (int64_t i = 0; i < v.plane; ++i) {
            const double d = static_cast<double>(static_cast<compute_t<T>>(p[i])) - m;
            squares += d * d;
          }
        }
        batch_mean[static_cast<size_t>(c)] = static_cast<W>(m);
        batch_var[static_cast<size_t>(c)] = static_cast<W>(count > 0 ? squares / count : 0.0);
      }
    });
  }
  const std::vector<W>& use_mean = training ? batch_mean : mean;
  const std::vector<W>& use_var = training ? batch_var : var;
  std::vector<W> a(static_cast<size_t>(v.channels)), b(static_cast<size_t>(v.channels));
  for (size_t c = 0; c < a.size(); ++c) {
    a[c] = scale[c] / std::sqrt(use_var[c] + static_cast<W>(epsilon));
    b[c] = bias[c] - use_mean[c] * a[c];
  }
  const int64_t planes = v.batch * v.channels;
  parallel_for(planes, std::max<int64_t>(1, 16384 / std::max<int64_t>(v.plane, 1)), [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p) {
      const size_t c = static_cast<size_t>(p % v.channels);
      const T* src = in + p * v.plane;
      T* dst = out + p * v.plane;
      if constexpr (std::is_same_v<T, float>) {
        vector_math::affine(src, dst, v.plane, a[c], b[c]);
        continue;
      }
      for (int64_t i = 0; i < v.plane; ++i)
        dst[i] = static_cast<T>(static_cast<W>(static_cast<compute_t<T>>(src[i])) * a[c] + b[c]);
    }
  });
  if (!training) return;
  for (size_t k = 1; k < ctx.num_outputs() && k <= 2; ++k) {
    const Tensor& running_in = ctx.input(k == 1 ? 3 : 4);
    const std::vector<W>& current = k == 1 ? batch_mean : batch_var;
    const std::vector<W>& previous = k == 1 ? mean : var;
    Tensor& running = ctx.allocate_output(k, running_in.dtype(), running_in.shape());
    visit_float_dtype(running.dtype(), ctx.node().describe(), [&]<typename U>() {
      U* r = running.data<U>();
      for (size_t c = 0; c < current.size(); ++c)
        r[c] = static_cast<U>(previous[c] * static_cast<W>(momentum) + current[c] * static_cast<W>(1 - momentum));
    });
  }
}

void batch_norm_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const ChannelView v = channel_view(ctx, x);
  const bool training = is_training(ctx.node(), ctx.attrs(), ctx.num_outputs());
  Tensor& y = ctx.allocate_output_in_place(0, x.dtype(), x.shape(), 0);
  visit_float_dtype(x.dtype(), ctx.node().describe(),
                    [&]<typename T>() { batch_norm_typed<T>(ctx, x, v, training, y); });
}

}  // namespace

GRAFT_REGISTER_OP("", "BatchNormalization", infer_batch_norm, batch_norm_kernel);

// Backward op and gradient builder (graft/ops/gradient.h). Training mode:
// graft.BatchNormalizationGrad(d_y, x, scale) -> d_x, d_scale, d_bias with the
// forward's epsilon, over the batch statistics; per channel, over its M
// elements, with x^ the normalized input:
//   d_bias = sum d_y, d_scale = sum d_y x^,
//   d_x = scale / sqrt(var + epsilon) (d_y - d_bias / M - x^ d_scale / M).
// Inference mode uses the given mean and variance, in standard ops. The
// running statistics get no gradient.
namespace {

void infer_batch_norm_grad(InferContext& ctx) {
  ctx.set_output(0, ctx.input_type(1));
  for (size_t i = 1; i < ctx.num_outputs(); ++i) ctx.set_output(i, ctx.input_type(2));
}

void batch_norm_grad_kernel(KernelContext& ctx) {
  const Tensor& dy = ctx.input(0);
  const Tensor& x = ctx.input(1);
  const Tensor& scale = ctx.input(2);
  if (x.rank() < 2) ctx.fail("X must have rank >= 2, got ", x.type_string());
  if (dy.shape() != x.shape()) ctx.fail("d_y ", dy.type_string(), " must have X's shape ", x.type_string());
  const int64_t n = x.dim(0), channels = x.dim(1);
  if (scale.numel() != channels) ctx.fail("scale ", scale.type_string(), " must have one value per channel");
  const int64_t plane = n * channels == 0 ? 0 : x.numel() / (n * channels);
  const double epsilon = ctx.attrs().get_float("epsilon", 1e-5f);
  visit_float_dtype(x.dtype(), ctx.node().describe(), [&]<typename T>() {
    using W = double;
    const std::vector<W> xs = tensor_to_vector<W>(x), dys = tensor_to_vector<W>(dy), s = tensor_to_vector<W>(scale);
    std::vector<W> dx(xs.size()), dscale(static_cast<size_t>(channels)), dbias(static_cast<size_t>(channels));
    const W m = static_cast<W>(n * plane);
    parallel_for(channels, 1, [&](int64_t begin, int64_t end) {
      for (int64_t c = begin; c < end; ++c) {
        auto at = [&](int64_t b, int64_t i) { return static_cast<size_t>((b * channels + c) * plane + i); };
        W mean = 0, var = 0;
        for (int64_t b = 0; b < n; ++b)
          for (int64_t i = 0; i < plane; ++i) mean += xs[at(b, i)];
        mean /= m;
        for (int64_t b = 0; b < n; ++b)
          for (int64_t i = 0; i < plane; ++i) var += (xs[at(b, i)] - mean) * (xs[at(b, i)] - mean);
        var /= m;
        const W inv = 1 / std::sqrt(var + epsilon);
        W sum_dy = 0, sum_dy_xhat = 0;
        for (int64_t b = 0; b < n; ++b)
          for (int64_t i = 0; i < plane; ++i) {
            sum_dy += dys[at(b, i)];
            sum_dy_xhat += dys[at(b, i)] * (xs[at(b, i)] - mean) * inv;
          }
        dbias[static_cast<size_t>(c)] = sum_dy;
        dscale[static_cast<size_t>(c)] = sum_dy_xhat;
        const W k = s[static_cast<size_t>(c)] * inv;
        for (int64_t b = 0; b < n; ++b)
          for (int64_t i = 0; i < plane; ++i) {
            const W xhat = (xs[at(b, i)] - mean) * inv;
            dx[at(b, i)] = k * (dys[at(b, i)] - sum_dy / m - xhat * sum_dy_xhat / m);
          }
      }
    });
    auto store = [&](size_t i, const std::vector<W>& values, const Shape& shape) {
      if (i >= ctx.num_outputs()) return;
      T* o = ctx.allocate_output(i, x.dtype(), shape).template data<T>();
      for (size_t k = 0; k < values.size(); ++k) o[k] = static_cast<T>(values[k]);
    };
    store(0, dx, x.shape());
    store(1, dscale, scale.shape());
    store(2, dbias, scale.shape());
  });
}

void batch_norm_gradient(GradientContext& g) {
  using enum ir::OpId;
  for (size_t k = 1; k < g.num_outputs(); ++k)
    if (g.output_gradient(k)) g.unsupported("a gradient through the running statistics");
  if (g.node().opset_version > 0 && g.node().opset_version < 9 && g.attrs().get_int("spatial", 1) == 0)
    g.unsupported("spatial = 0");
  const float epsilon = g.attrs().get_float("epsilon", 1e-5f);
  ir::Value dy = g.output_gradient(0), x = g.input(0);
  if (is_training(g.node(), g.attrs(), g.num_outputs())) {
    ir::Node* grad = g.add_node(BatchNormalizationGrad, {dy, x, g.input(1)}, 3, {{"epsilon", epsilon}});
    g.set_input_gradient(0, grad->output(0));
    if (g.needs_input_gradient(1)) g.set_input_gradient(1, grad->output(1));
    if (g.needs_input_gradient(2)) g.set_input_gradient(2, grad->output(2));
    return;
  }
  const ir::ValueType& xt = g.input_type(0);
  if (!xt.has_rank) g.unsupported("the input's rank is not known");
  const DType dtype = xt.dtype;
  std::vector<int64_t> per_channel_shape(xt.dims.size() - 1, 1), axes{0};
  per_channel_shape[0] = -1;
  for (size_t d = 2; d < xt.dims.size(); ++d) axes.push_back(static_cast<int64_t>(d));
  ir::Value shape = g.int64s(per_channel_shape);
  ir::Value inv = g.add(Reciprocal, {g.add(Sqrt, {g.add(Add, {g.input(4), g.scalar(epsilon, dtype)})})});
  if (g.needs_input_gradient(0))
    g.set_input_gradient(0, g.add(Mul, {dy, g.add(Reshape, {g.add(Mul, {g.input(1), inv}), shape})}));
  if (g.needs_input_gradient(1)) {
    ir::Value xhat = g.add(Mul, {g.add(Sub, {x, g.add(Reshape, {g.input(3), shape})}), g.add(Reshape, {inv, shape})});
    g.set_input_gradient(1, g.add(ReduceSum, {g.add(Mul, {dy, xhat}), g.int64s(axes)}, {{"keepdims", int64_t{0}}}));
  }
  if (g.needs_input_gradient(2))
    g.set_input_gradient(2, g.add(ReduceSum, {dy, g.int64s(axes)}, {{"keepdims", int64_t{0}}}));
}

}  // namespace

GRAFT_REGISTER_OP("graft", "BatchNormalizationGrad", infer_batch_norm_grad, batch_norm_grad_kernel);
GRAFT_REGISTER_GRADIENT(BatchNormalization, batch_norm_gradient);

}  // namespace graft::ops
