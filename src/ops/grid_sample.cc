// GridSample (ONNX opset 16, and the 2-D case of opset 20): samples the
// N x C x H x W input at the normalized (x, y) locations of the
// N x H_out x W_out x 2 grid, following the ONNX reference (PyTorch's
// grid_sample):
//   - denormalize: x = ((g + 1) * W - 1) / 2, or (g + 1) / 2 * (W - 1) with
//     align_corners;
//   - nearest rounds half to even; linear (bilinear) blends the 2x2 and
//     cubic (bicubic, Keys with a = -0.75) the 4x4 neighbourhood;
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
  if (x.rank() != 4) ctx.unsupported("input X has rank ", x.rank(), "; only 2-D sampling (rank 4) is supported");
  const int64_t N = x.dim(0), C = x.dim(1), H = x.dim(2), W = x.dim(3);
  if (grid.rank() != 4 || grid.dim(0) != N || grid.dim(3) != 2 || !dtype_is_float(grid.dtype()))
    ctx.fail("input grid is ", grid.type_string(), ", expected float[", N, ", H_out, W_out, 2]");
  const int64_t out_h = grid.dim(1), out_w = grid.dim(2);
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
  Tensor& y = ctx.allocate_output(0, x.dtype(), {N, C, out_h, out_w});
  if (y.numel() == 0) return;
  if (H == 0 || W == 0) ctx.fail("input X has an empty image (", H, "x", W, ")");
  auto axis_of = [&](int64_t size) {
    return align_corners ? Axis{size, 0.0, static_cast<double>(size - 1)}
                         : Axis{size, -0.5, static_cast<double>(size) - 0.5};
  };
  const Axis axis_x = axis_of(W), axis_y = axis_of(H);
  auto denormalize = [&](double g, int64_t size) {
    return align_corners ? (g + 1) / 2 * static_cast<double>(size - 1) : ((g + 1) * static_cast<double>(size) - 1) / 2;
  };
  auto fix_location = [&](double v, const Axis& axis) {
    if (v >= axis.low && v <= axis.high) return v;
    if (padding == PaddingMode::border) return std::clamp(v, 0.0, static_cast<double>(axis.size - 1));
    if (padding == PaddingMode::reflection) return reflect(v, axis.low, axis.high);
    return v;
  };
  visit_float_dtype(x.dtype(), ctx.node().describe(), [&]<typename T>() {
    const T* data = x.data<T>();
    T* out = y.data<T>();
    parallel_for(N * out_h, 1, [&](int64_t r0, int64_t r1) {
      for (int64_t row = r0; row < r1; ++row) {
        const int64_t n = row / out_h, oh = row % out_h;
        for (int64_t ow = 0; ow < out_w; ++ow) {
          const int64_t g = ((n * out_h + oh) * out_w + ow) * 2;
          double px = denormalize(grid.value_as_double(g), W);
          double py = denormalize(grid.value_as_double(g + 1), H);
          if (!std::isfinite(px) || !std::isfinite(py)) {
            for (int64_t c = 0; c < C; ++c) out[((n * C + c) * out_h + oh) * out_w + ow] = static_cast<T>(0.0f);
            continue;
          }
          if (mode == SampleMode::nearest) {
            px = std::nearbyint(px);
            py = std::nearbyint(py);
          }
          px = fix_location(px, axis_x);
          py = fix_location(py, axis_y);
          // Taps along each axis: indices (-1 = zero) and weights.
          int64_t xi[4], yi[4];
          double xw[4], yw[4];
          int taps = 0;
          // Bounded before the integer conversion (zeros padding keeps far-away locations).
          px = std::clamp(px, -4.0 - static_cast<double>(W), 4.0 + 2.0 * static_cast<double>(W));
          py = std::clamp(py, -4.0 - static_cast<double>(H), 4.0 + 2.0 * static_cast<double>(H));
          if (mode == SampleMode::nearest) {
            taps = 1;
            xi[0] = resolve_index(static_cast<int64_t>(px), axis_x, padding);
            yi[0] = resolve_index(static_cast<int64_t>(py), axis_y, padding);
            xw[0] = yw[0] = 1;
          } else {
            const double fx = std::floor(px), fy = std::floor(py);
            const int64_t x0 = static_cast<int64_t>(fx), y0 = static_cast<int64_t>(fy);
            if (mode == SampleMode::linear) {
              taps = 2;
              xw[0] = 1 - (px - fx), xw[1] = px - fx;
              yw[0] = 1 - (py - fy), yw[1] = py - fy;
              for (int k = 0; k < 2; ++k) {
                xi[k] = resolve_index(x0 + k, axis_x, padding);
                yi[k] = resolve_index(y0 + k, axis_y, padding);
              }
            } else {
              taps = 4;
              cubic_coefficients(px - fx, xw);
              cubic_coefficients(py - fy, yw);
              for (int k = 0; k < 4; ++k) {
                xi[k] = resolve_index(x0 - 1 + k, axis_x, padding);
                yi[k] = resolve_index(y0 - 1 + k, axis_y, padding);
              }
            }
          }
          for (int64_t c = 0; c < C; ++c) {
            const T* plane = data + (n * C + c) * H * W;
            double value = 0;
            for (int a = 0; a < taps; ++a) {
              if (yi[a] < 0) continue;
              double row_value = 0;
              for (int b = 0; b < taps; ++b)
                if (xi[b] >= 0) row_value += xw[b] * static_cast<double>(plane[yi[a] * W + xi[b]]);
              value += yw[a] * row_value;
            }
            out[((n * C + c) * out_h + oh) * out_w + ow] = static_cast<T>(static_cast<compute_t<T>>(value));
          }
        }
      }
    });
  });
}

}  // namespace

GRAFT_REGISTER_OP("", "GridSample", grid_sample_infer, grid_sample_kernel);

}  // namespace graft::ops
