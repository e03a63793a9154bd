// GridSample (ONNX opsets 16 and 20): samples the N x C x D1 x ... input (1
// to 3 spatial dimensions) at the normalized locations of the
// N x O1 x ... x r grid (coordinates innermost axis first: x, y, z),
// following the ONNX reference (PyTorch's grid_sample):
//   - denormalize: x = ((g + 1) * W - 1) / 2, or (g + 1) / 2 * (W - 1) with
//     align_corners;
//   - nearest rounds half to even (half away from zero in 3-D, as PyTorch);
//     linear (bilinear) blends the 2^r and cubic (bicubic, Keys with
//     a = -0.75) the 4^r neighbourhood, one axis at a time;
//   - a location outside [-0.5, W - 0.5] ([0, W - 1] with align_corners) is
//     clamped (border) or reflected (reflection) first; neighbours outside
//     the image read 0 (zeros), the nearest edge pixel (border) or their
//     reflection (reflection).
#include <algorithm>
#include <cmath>

#include "graft/core/parallel.h"
#include "graft/ops/infer_util.h"
#include "graft/ops/op_context.h"

namespace graft::ops {
namespace {

enum class SampleMode { nearest, linear, cubic };
enum class PaddingMode { zeros, border, reflection };

// Reflects x into [low, high] by mirroring at the nearer border until inside.
double reflect(double x, double low, double high) {
  const double range = high - low;
  if (range <= 0) return low;
  if (x < low) {
    const double dx = low - x;
    const int64_t n = static_cast<int64_t>(dx / range);
    const double r = dx - static_cast<double>(n) * range;
    return n % 2 == 0 ? low + r : high - r;
  }
  if (x > high) {
    const double dx = x - high;
    const int64_t n = static_cast<int64_t>(dx / range);
    const double r = dx - static_cast<double>(n) * range;
    return n % 2 == 0 ? high - r : low + r;
  }
  return x;
}

void cubic_coefficients(double t, double c[4]) {
  constexpr double a = -0.75;
  const double x0 = t + 1, x1 = t, x2 = 1 - t, x3 = 2 - t;
  c[0] = ((a * x0 - 5 * a) * x0 + 8 * a) * x0 - 4 * a;
  c[1] = ((a + 2) * x1 - (a + 3)) * x1 * x1 + 1;
  c[2] = ((a + 2) * x2 - (a + 3)) * x2 * x2 + 1;
  c[3] = ((a * x3 - 5 * a) * x3 + 8 * a) * x3 - 4 * a;
}

struct Axis {
  int64_t size = 0;
  double low = 0, high = 0;  // the borders used for reflection and range checks
};

// Index to read for integer position i along an axis, or -1 for a zero pixel.
int64_t resolve_index(int64_t i, const Axis& axis, PaddingMode padding) {
  if (i >= 0 && i < axis.size) return i;
  switch (padding) {
    case PaddingMode::zeros:
      return -1;
    case PaddingMode::border:
      return std::clamp<int64_t>(i, 0, axis.size - 1);
    case PaddingMode::reflection: {
      const int64_t r = static_cast<int64_t>(reflect(static_cast<double>(i), axis.low, axis.high));
      return std::clamp<int64_t>(r, 0, axis.size - 1);
    }
  }
  return -1;
}

void grid_sample_infer(InferContext& ctx) {
  const ir::ValueType& x = ctx.input_type(0);
  const ir::ValueType& grid = ctx.input_type(1);
  if (!x.has_rank || !grid.has_rank) {
    set_output_dtype_only(ctx, 0, x.dtype);
    return;
  }
  if (grid.dims.size() < 3) ctx.fail("input grid has rank ", grid.dims.size(), ", expected at least 3");
  std::vector<ir::Dim> dims = {x.dims.empty() ? ir::Dim{} : x.dims[0], x.dims.size() > 1 ? x.dims[1] : ir::Dim{}};
  dims.insert(dims.end(), grid.dims.begin() + 1, grid.dims.end() - 1);
  ctx.set_output(0, ir::ValueType{x.dtype, true, std::move(dims)});
}

void grid_sample_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& grid = ctx.input(1);
  const int64_t spatial = x.rank() - 2;
  if (spatial < 1 || spatial > 3)
    ctx.unsupported("input X has rank ", x.rank(), "; 1 to 3 spatial dimensions are supported");
  const int64_t N = x.dim(0), C = x.dim(1);
  bool grid_ok = grid.rank() == x.rank() && grid.dim(0) == N && grid.dim(grid.rank() - 1) == spatial &&
                 dtype_is_float(grid.dtype());
  if (!grid_ok)
    ctx.fail("input grid is ", grid.type_string(), ", expected a float tensor [", N, ", out..., ", spatial, "]");
  const std::string mode_name = ctx.attrs().get_string("mode", ctx.opset() >= 20 ? "linear" : "bilinear");
  SampleMode mode;
  if (mode_name == "nearest")
    mode = SampleMode::nearest;
  else if (mode_name == "bilinear" || mode_name == "linear")
    mode = SampleMode::linear;
  else if (mode_name == "bicubic" || mode_name == "cubic")
    mode = SampleMode::cubic;
  else
    ctx.fail("attribute 'mode' is '", mode_name, "', expected nearest, linear/bilinear or cubic/bicubic");
  const std::string padding_name = ctx.attrs().get_string("padding_mode", "zeros");
  PaddingMode padding;
  if (padding_name == "zeros")
    padding = PaddingMode::zeros;
  else if (padding_name == "border")
    padding = PaddingMode::border;
  else if (padding_name == "reflection")
    padding = PaddingMode::reflection;
  else
    ctx.fail("attribute 'padding_mode' is '", padding_name, "', expected zeros, border or reflection");
  const bool align_corners = ctx.attrs().get_int("align_corners", 0) != 0;
  Shape out_shape = {N, C};
  for (int64_t d = 1; d <= spatial; ++d) out_shape.push_back(grid.dim(d));
  Tensor& y = ctx.allocate_output(0, x.dtype(), out_shape);
  if (y.numel() == 0) return;
  Axis axes[3];
  int64_t in_plane = 1;
  for (int64_t d = 0; d < spatial; ++d) {
    const int64_t size = x.dim(d + 2);
    if (size == 0) ctx.fail("input X has an empty spatial dimension ", d);
    axes[d] = align_corners ? Axis{size, 0.0, static_cast<double>(size - 1)}
                            : Axis{size, -0.5, static_cast<double>(size) - 0.5};
    in_plane *= size;
  }
  const int64_t out_plane = y.numel() / (N * C);
  auto denormalize = [&](double g, int64_t size) {
    return align_corners ? (g + 1) / 2 * static_cast<double>(size - 1) : ((g + 1) * static_cast<double>(size) - 1) / 2;
  };
  auto fix_location = [&](double v, const Axis& axis) {
    if (v >= axis.low && v <= axis.high) return v;
    if (padding == PaddingMode::border) return std::clamp(v, 0.0, static_cast<double>(axis.size - 1));
    if (padding == PaddingMode::reflection) return reflect(v, axis.low, axis.high);
    return v;
  };
  // The common case (RAFT's correlation lookup, spatial transformers): 2-D,
  // bilinear, zeros padding, float32. The same arithmetic as below, without
  // its per-location dispatch; 2.4x faster on raft_small's lookups.
  if (spatial == 2 && mode == SampleMode::linear && padding == PaddingMode::zeros && x.dtype() == DType::float32 &&
      grid.dtype() == DType::float32) {
    const float* data = x.data<float>();
    const float* locations = grid.data<float>();
    float* out = y.data<float>();
    const int64_t height = axes[0].size, width = axes[1].size;
    parallel_for(N * out_plane, 256, [&](int64_t p0, int64_t p1) {
      for (int64_t position = p0; position < p1; ++position) {
        const int64_t n = position / out_plane, o = position % out_plane;
        double vy = denormalize(static_cast<double>(locations[position * 2 + 1]), height);
        double vx = denormalize(static_cast<double>(locations[position * 2]), width);
        if (!std::isfinite(vy) || !std::isfinite(vx)) {
          for (int64_t c = 0; c < C; ++c) out[(n * C + c) * out_plane + o] = 0;
          continue;
        }
        vy = std::clamp(vy, -4.0 - static_cast<double>(height), 4.0 + 2.0 * static_cast<double>(height));
        vx = std::clamp(vx, -4.0 - static_cast<double>(width), 4.0 + 2.0 * static_cast<double>(width));
        const double fy = std::floor(vy), fx = std::floor(vx);
        const int64_t y0 = static_cast<int64_t>(fy), x0 = static_cast<int64_t>(fx);
        const double wy[2] = {1 - (vy - fy), vy - fy}, wx[2] = {1 - (vx - fx), vx - fx};
        // The in-image taps, in the order of the general loop (rows, then columns).
        int64_t offset[4];
        double weight[4];
        int taps = 0;
        for (int a = 0; a < 2; ++a) {
          if (y0 + a < 0 || y0 + a >= height) continue;
          for (int b = 0; b < 2; ++b) {
            if (x0 + b < 0 || x0 + b >= width) continue;
            offset[taps] = (y0 + a) * width + x0 + b;
            weight[taps++] = wy[a] * wx[b];
          }
        }
        for (int64_t c = 0; c < C; ++c) {
          const float* plane = data + (n * C + c) * in_plane;
          double value = 0;
          for (int t = 0; t < taps; ++t) value += weight[t] * static_cast<double>(plane[offset[t]]);
          out[(n * C + c) * out_plane + o] = static_cast<float>(value);
        }
      }
    });
    return;
  }
  visit_float_dtype(x.dtype(), ctx.node().describe(), [&]<typename T>() {
    const T* data = x.data<T>();
    T* out = y.data<T>();
    parallel_for(N * out_plane, 256, [&](int64_t p0, int64_t p1) {
      for (int64_t position = p0; position < p1; ++position) {
        const int64_t n = position / out_plane, o = position % out_plane;
        // Taps along each axis: input indices (-1 reads zero) and weights.
        int64_t index[3][4];
        double weight[3][4];
        int taps = 1;
        bool finite = true;
        for (int64_t d = 0; d < spatial; ++d) {
          const Axis& axis = axes[d];
          // The grid lists coordinates innermost axis first (x, y, z).
          double v = denormalize(grid.value_as_double(position * spatial + (spatial - 1 - d)), axis.size);
          if (!std::isfinite(v)) {
            finite = false;
            break;
          }
          if (mode == SampleMode::nearest) v = spatial == 3 ? std::round(v) : std::nearbyint(v);
          v = fix_location(v, axis);
          // Bounded before the integer conversion (zeros padding keeps far-away locations).
          const double size = static_cast<double>(axis.size);
          v = std::clamp(v, -4.0 - size, 4.0 + 2.0 * size);
          if (mode == SampleMode::nearest) {
            taps = 1;
            index[d][0] = resolve_index(static_cast<int64_t>(v), axis, padding);
            weight[d][0] = 1;
            continue;
          }
          const double floor_v = std::floor(v);
          const int64_t base = static_cast<int64_t>(floor_v);
          if (mode == SampleMode::linear) {
            taps = 2;
            weight[d][0] = 1 - (v - floor_v);
            weight[d][1] = v - floor_v;
            for (int k = 0; k < 2; ++k) index[d][k] = resolve_index(base + k, axis, padding);
          } else {
            taps = 4;
            cubic_coefficients(v - floor_v, weight[d]);
            for (int k = 0; k < 4; ++k) index[d][k] = resolve_index(base - 1 + k, axis, padding);
          }
        }
        for (int64_t d = spatial; d < 3; ++d) {  // unused leading axes: one tap of weight 1
          index[d][0] = 0;
          weight[d][0] = 1;
        }
        const int taps0 = spatial >= 1 ? taps : 1, taps1 = spatial >= 2 ? taps : 1, taps2 = spatial >= 3 ? taps : 1;
        const int64_t extent1 = spatial >= 2 ? axes[1].size : 1, extent2 = spatial >= 3 ? axes[2].size : 1;
        for (int64_t c = 0; c < C; ++c) {
          const T* plane = data + (n * C + c) * in_plane;
          double value = 0;
          for (int a = 0; a < taps0 && finite; ++a) {
            if (index[0][a] < 0) continue;
            for (int b = 0; b < taps1; ++b) {
              if (index[1][b] < 0) continue;
              const int64_t row = (index[0][a] * extent1 + index[1][b]) * extent2;
              for (int e = 0; e < taps2; ++e) {
                if (index[2][e] < 0) continue;
                value += weight[0][a] * weight[1][b] * weight[2][e] * static_cast<double>(plane[row + index[2][e]]);
              }
            }
          }
          out[(n * C + c) * out_plane + o] = static_cast<T>(static_cast<compute_t<T>>(value));
        }
      }
    });
  });
}

}  // namespace

GRAFT_REGISTER_OP("", "GridSample", grid_sample_infer, grid_sample_kernel);

}  // namespace graft::ops
