// LayerNormalization (opset 17): each row of prod(X.shape[axis:]) elements is
// normalized to zero mean and unit variance (two passes: mean, then the mean
// squared deviation), then scaled and shifted by Scale and B, which broadcast
// to X.shape[axis:]. The statistics are computed in the stash type (float32
// by default; float64 when stash_type is DOUBLE or X is float64); the optional outputs Mean
// and InvStdDev (of the stash type) have X's shape with the normalized dimensions set to 1.
#include <cmath>
#include <vector>

#include "graft/core/parallel.h"
#include "graft/ops/broadcast.h"
#include "graft/ops/gradient.h"
#include "graft/ops/op_context.h"
#include "math_common.h"
#include "vector_math.h"

namespace graft::ops {
namespace {

DType stash_dtype(const ir::Node& node, const ir::Attributes& attributes) {
  const int64_t stash = attributes.get_int("stash_type", 1);
  if (stash != static_cast<int64_t>(DType::float32) && stash != static_cast<int64_t>(DType::float64) &&
      stash != static_cast<int64_t>(DType::float16) && stash != static_cast<int64_t>(DType::bfloat16))
    fail(ErrorKind::invalid_model, node.describe(), ": stash_type ", stash, " is not a float type");
  return static_cast<DType>(stash);
}

void infer_layer_norm(InferContext& ctx) {
  const ir::ValueType& x = ctx.input_type(0);
  ctx.set_output(0, x);
  const DType stash = stash_dtype(ctx.node(), ctx.attrs());
  ir::ValueType stats = ir::ValueType::of_dtype(stash);
  if (x.has_rank) {
    const int64_t rank = static_cast<int64_t>(x.dims.size());
    const int64_t axis = normalize_axis(ctx.attrs().get_int("axis", -1), rank, ctx.node().describe());
    stats.has_rank = true;
    stats.dims = x.dims;
    for (int64_t d = axis; d < rank; ++d) stats.dims[static_cast<size_t>(d)] = ir::Dim::known(1);
  }
  for (size_t i = 1; i < ctx.num_outputs(); ++i) ctx.set_output(i, stats);
}

/// A parameter (Scale or B) expanded to the normalized shape, in W.
template <typename W>
std::vector<W> expand_parameter(const KernelContext& ctx, const Tensor& p, const Shape& normalized, const char* what) {
  const Shape broadcast = broadcast_shapes(p.shape(), normalized, ctx.node().describe());
  if (broadcast != normalized || p.rank() > static_cast<int64_t>(normalized.size()))
    ctx.fail(what, " ", p.type_string(), " does not broadcast to the normalized shape ", shape_to_string(normalized));
  const std::vector<W> values = tensor_to_vector<W>(p);
  const int64_t n = shape_numel(normalized);
  if (static_cast<int64_t>(values.size()) == n) return values;
  std::vector<W> out(static_cast<size_t>(n));
  const std::vector<int64_t> strides = broadcast_strides(p.shape(), normalized);
  const std::vector<int64_t> out_strides = shape_strides(normalized);
  for (int64_t i = 0; i < n; ++i) {
    int64_t src = 0, rest = i;
    for (size_t d = 0; d < normalized.size(); ++d) {
      src += rest / out_strides[d] * strides[d];
      rest %= out_strides[d];
    }
    out[static_cast<size_t>(i)] = values[static_cast<size_t>(src)];
  }
  return out;
}

/// Normalizes rows in the stash precision S, writes Y (T) and the statistics (U).
template <typename T, typename S>
void layer_norm_typed(KernelContext& ctx, const Tensor& x, int64_t rows, int64_t width, const Shape& normalized,
                      float epsilon, Tensor& y, Tensor* mean_out, Tensor* inv_std_out) {
  const std::vector<S> scale = expand_parameter<S>(ctx, ctx.input(1), normalized, "Scale");
  std::vector<S> bias;
  if (ctx.has_input(2)) bias = expand_parameter<S>(ctx, ctx.input(2), normalized, "B");
  const T* in = x.data<T>();
  T* out = y.data<T>();
  std::vector<S> means(mean_out ? static_cast<size_t>(rows) : 0), inv_stds(inv_std_out ? static_cast<size_t>(rows) : 0);
  const int64_t grain = std::max<int64_t>(1, 8192 / std::max<int64_t>(width, 1));
  parallel_for(rows, grain, [&](int64_t begin, int64_t end) {
    std::vector<S> row(static_cast<size_t>(width));
    for (int64_t r = begin; r < end; ++r) {
      if constexpr (std::is_same_v<T, float> && std::is_same_v<S, float>) {
        const float* src = in + r * width;
        const float mean = vector_math::sum(src, width) / static_cast<float>(width);
        const float variance = vector_math::squared_deviation_sum(src, width, mean) / static_cast<float>(width);
        const float inv_std = 1.0f / std::sqrt(variance + epsilon);
        vector_math::normalize(src, out + r * width, width, mean, inv_std, scale.data(),
                               bias.empty() ? nullptr : bias.data());
        if (mean_out) means[static_cast<size_t>(r)] = mean;
        if (inv_std_out) inv_stds[static_cast<size_t>(r)] = inv_std;
        continue;
      }
      const T* src = in + r * width;
      S sum = 0;
      for (int64_t i = 0; i < width; ++i) {
        row[static_cast<size_t>(i)] = static_cast<S>(static_cast<compute_t<T>>(src[i]));
        sum += row[static_cast<size_t>(i)];
      }
      const S mean = sum / static_cast<S>(width);
      S squares = 0;
      for (int64_t i = 0; i < width; ++i) {
        const S d = row[static_cast<size_t>(i)] - mean;
        squares += d * d;
      }
      const S inv_std = S(1) / std::sqrt(squares / static_cast<S>(width) + static_cast<S>(epsilon));
      T* dst = out + r * width;
      if (bias.empty()) {
        for (int64_t i = 0; i < width; ++i)
          dst[i] = static_cast<T>((row[static_cast<size_t>(i)] - mean) * inv_std * scale[static_cast<size_t>(i)]);
      } else {
        for (int64_t i = 0; i < width; ++i)
          dst[i] = static_cast<T>((row[static_cast<size_t>(i)] - mean) * inv_std * scale[static_cast<size_t>(i)] +
                                  bias[static_cast<size_t>(i)]);
      }
      if (mean_out) means[static_cast<size_t>(r)] = mean;
      if (inv_std_out) inv_stds[static_cast<size_t>(r)] = inv_std;
    }
  });
  auto store = [&](Tensor* t, const std::vector<S>& values) {
    if (!t) return;
    visit_float_dtype(t->dtype(), "LayerNormalization", [&]<typename U>() {
      U* p = t->data<U>();
      for (size_t i = 0; i < values.size(); ++i) p[i] = static_cast<U>(static_cast<compute_t<U>>(values[i]));
    });
  };
  store(mean_out, means);
  store(inv_std_out, inv_stds);
}

void layer_norm_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t rank = x.rank();
  const int64_t axis = normalize_axis(ctx.attrs().get_int("axis", -1), rank, ctx.node().describe());
  const float epsilon = ctx.attrs().get_float("epsilon", 1e-5f);
  const DType stash = stash_dtype(ctx.node(), ctx.attrs());
  const Shape normalized(x.shape().begin() + axis, x.shape().end());
  const int64_t width = shape_numel(normalized);
  const int64_t rows = width == 0 ? 0 : x.numel() / width;
  Shape stats_shape = x.shape();
  for (int64_t d = axis; d < rank; ++d) stats_shape[static_cast<size_t>(d)] = 1;
  if (ctx.input(1).dtype() != x.dtype()) ctx.fail("Scale dtype differs from X: ", ctx.input(1).type_string());
  Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
  Tensor* mean_out = nullptr;
  Tensor* inv_std_out = nullptr;
  if (ctx.num_outputs() > 1) mean_out = &ctx.allocate_output(1, stash, stats_shape);
  if (ctx.num_outputs() > 2) inv_std_out = &ctx.allocate_output(2, stash, stats_shape);
  visit_float_dtype(x.dtype(), ctx.node().describe(), [&]<typename T>() {
    if (stash == DType::float64 || std::is_same_v<T, double>)
      layer_norm_typed<T, double>(ctx, x, rows, width, normalized, epsilon, y, mean_out, inv_std_out);
    else
      layer_norm_typed<T, float>(ctx, x, rows, width, normalized, epsilon, y, mean_out, inv_std_out);
  });
}

}  // namespace

GRAFT_REGISTER_OP("", "LayerNormalization", infer_layer_norm, layer_norm_kernel);

// Backward op and gradient builder (graft/ops/gradient.h):
// graft.LayerNormalizationGrad(d_y, x, scale) -> d_x, d_scale, d_bias with the
// forward's axis and epsilon; per row of D elements, with x^ the normalized
// input and g = d_y scale:
//   d_x = (g - mean(g) - x^ mean(g x^)) / sqrt(var + epsilon),
//   d_scale = sum over rows of d_y x^, d_bias = sum over rows of d_y.
namespace {

void infer_layer_norm_grad(InferContext& ctx) {
  ctx.set_output(0, ctx.input_type(1));
  for (size_t i = 1; i < ctx.num_outputs(); ++i) ctx.set_output(i, ctx.input_type(2));
}

void layer_norm_grad_kernel(KernelContext& ctx) {
  const Tensor& dy = ctx.input(0);
  const Tensor& x = ctx.input(1);
  const Tensor& scale = ctx.input(2);
  if (dy.shape() != x.shape()) ctx.fail("d_y ", dy.type_string(), " must have X's shape ", x.type_string());
  const int64_t axis = normalize_axis(ctx.attrs().get_int("axis", -1), x.rank(), ctx.node().describe());
  const double epsilon = ctx.attrs().get_float("epsilon", 1e-5f);
  int64_t rows = 1, width = 1;
  for (int64_t d = 0; d < axis; ++d) rows *= x.dim(d);
  for (int64_t d = axis; d < x.rank(); ++d) width *= x.dim(d);
  if (scale.numel() != width)
    ctx.unsupported("a scale of ", scale.numel(), " elements that does not cover a row of ", width);
  visit_float_dtype(x.dtype(), ctx.node().describe(), [&]<typename T>() {
    using W = double;
    const std::vector<W> xs = tensor_to_vector<W>(x), dys = tensor_to_vector<W>(dy), s = tensor_to_vector<W>(scale);
    std::vector<W> dx(xs.size()), dscale(static_cast<size_t>(width)), dbias(static_cast<size_t>(width));
    std::vector<W> xhat(static_cast<size_t>(width)), gs(static_cast<size_t>(width));
    for (int64_t r = 0; r < rows; ++r) {
      const W* xr = xs.data() + r * width;
      const W* dyr = dys.data() + r * width;
      W mean = 0, var = 0;
      for (int64_t i = 0; i < width; ++i) mean += xr[i];
      mean /= static_cast<W>(width);
      for (int64_t i = 0; i < width; ++i) var += (xr[i] - mean) * (xr[i] - mean);
      var /= static_cast<W>(width);
      const W inv = 1 / std::sqrt(var + epsilon);
      W mean_g = 0, mean_gx = 0;
      for (int64_t i = 0; i < width; ++i) {
        const size_t k = static_cast<size_t>(i);
        xhat[k] = (xr[i] - mean) * inv;
        gs[k] = dyr[i] * s[k];
        mean_g += gs[k];
        mean_gx += gs[k] * xhat[k];
        dscale[k] += dyr[i] * xhat[k];
        dbias[k] += dyr[i];
      }
      mean_g /= static_cast<W>(width);
      mean_gx /= static_cast<W>(width);
      for (int64_t i = 0; i < width; ++i) {
        const size_t k = static_cast<size_t>(i);
        dx[static_cast<size_t>(r * width + i)] = (gs[k] - mean_g - xhat[k] * mean_gx) * inv;
      }
    }
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

void layer_norm_gradient(GradientContext& g) {
  for (size_t k = 1; k < g.num_outputs(); ++k)
    if (g.output_gradient(k)) g.unsupported("a gradient through the Mean or InvStdDev output");
  ir::Node* grad =
      g.add_node(ir::OpId::LayerNormalizationGrad, {g.output_gradient(0), g.input(0), g.input(1)}, 3,
                 {{"axis", g.attrs().get_int("axis", -1)}, {"epsilon", g.attrs().get_float("epsilon", 1e-5f)}});
  g.set_input_gradient(0, grad->output(0));
  if (g.needs_input_gradient(1)) g.set_input_gradient(1, grad->output(1));
  if (g.needs_input_gradient(2)) g.set_input_gradient(2, grad->output(2));
}

}  // namespace

GRAFT_REGISTER_OP("graft", "LayerNormalizationGrad", infer_layer_norm_grad, layer_norm_grad_kernel);
GRAFT_REGISTER_GRADIENT(LayerNormalization, layer_norm_gradient);

}  // namespace graft::ops
