// RoiAlign (ONNX): pools each region of interest [x1, y1, x2, y2] (scaled by
// spatial_scale) of its batch image into output_height x output_width bins.
// Each bin samples a grid of sampling_ratio^2 points (or ceil(bin extent)
// per axis when sampling_ratio is 0), each point bilinearly interpolated,
// and averages them (mode avg) or takes the largest weighted corner value
// (mode max, as the ONNX reference and ONNX Runtime do).
// coordinate_transformation_mode half_pixel (the default from opset 16)
// shifts the region by -0.5 pixel; output_half_pixel (opset 10 behaviour)
// does not and makes degenerate regions at least 1x1.
//
// The sampling points and their interpolation weights of a bin are computed
// once and reused for every channel. Regions run in parallel.
#include <algorithm>
#include <cmath>
#include <vector>

#include "graft/core/parallel.h"
#include "graft/ops/infer_util.h"
#include "graft/ops/op_context.h"

namespace graft::ops {
namespace {

// Bilinear sample: four plane offsets and weights (all zero outside the image).
struct Sample {
  int64_t offset[4] = {0, 0, 0, 0};
  double weight[4] = {0, 0, 0, 0};
};

Sample bilinear_sample(double y, double x, int64_t height, int64_t width) {
  Sample s;
  if (y < -1.0 || y > static_cast<double>(height) || x < -1.0 || x > static_cast<double>(width)) return s;
  y = std::max(y, 0.0);
  x = std::max(x, 0.0);
  int64_t y_low = static_cast<int64_t>(y), x_low = static_cast<int64_t>(x), y_high, x_high;
  if (y_low >= height - 1) {
    y_high = y_low = height - 1;
    y = static_cast<double>(y_low);
  } else {
    y_high = y_low + 1;
  }
  if (x_low >= width - 1) {
    x_high = x_low = width - 1;
    x = static_cast<double>(x_low);
  } else {
    x_high = x_low + 1;
  }
  const double ly = y - static_cast<double>(y_low), lx = x - static_cast<double>(x_low);
  const double hy = 1 - ly, hx = 1 - lx;
  s.offset[0] = y_low * width + x_low;
  s.offset[1] = y_low * width + x_high;
  s.offset[2] = y_high * width + x_low;
  s.offset[3] = y_high * width + x_high;
  s.weight[0] = hy * hx;
  s.weight[1] = hy * lx;
  s.weight[2] = ly * hx;
  s.weight[3] = ly * lx;
  return s;
}

int64_t positive_attr(const KernelContext& ctx, const char* name, int64_t fallback) {
  int64_t v = ctx.attrs().get_int(name, fallback);
  if (v < 1) ctx.fail("attribute '", name, "' is ", v, ", expected at least 1");
  return v;
}

void roi_align_infer(InferContext& ctx) {
  const ir::ValueType& x = ctx.input_type(0);
  ir::Dim rois;
  if (ctx.input_type(1).has_rank && !ctx.input_type(1).dims.empty()) rois = ctx.input_type(1).dims[0];
  ir::Dim channels = x.has_rank && x.dims.size() == 4 ? x.dims[1] : ir::Dim{};
  ctx.set_output(0, ir::ValueType{x.dtype,
                                  true,
                                  {rois, channels, ir::Dim::known(ctx.attrs().get_int("output_height", 1)),
                                   ir::Dim::known(ctx.attrs().get_int("output_width", 1))}});
}

void roi_align_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& rois = ctx.input(1);
  const Tensor& batch_indices = ctx.input(2);
  if (x.rank() != 4) ctx.fail("input X has rank ", x.rank(), ", expected 4 (N, C, H, W)");
  if (rois.rank() != 2 || rois.dim(1) != 4 || rois.dtype() != x.dtype())
    ctx.fail("input rois is ", rois.type_string(), ", expected ", dtype_name(x.dtype()), "[num_rois, 4]");
  const int64_t num_rois = rois.dim(0);
  if (batch_indices.rank() != 1 || batch_indices.dim(0) != num_rois || !dtype_is_integer(batch_indices.dtype()))
    ctx.fail("input batch_indices is ", batch_indices.type_string(), ", expected int64[", num_rois, "]");
  const int64_t out_h = positive_attr(ctx, "output_height", 1), out_w = positive_attr(ctx, "output_width", 1);
  const int64_t sampling_ratio = ctx.attrs().get_int("sampling_ratio", 0);
  if (sampling_ratio < 0) ctx.fail("attribute 'sampling_ratio' is negative");
  if (sampling_ratio > 1024) ctx.unsupported("sampling_ratio ", sampling_ratio, " is above 1024");
  const double spatial_scale = ctx.attrs().get_float("spatial_scale", 1.0f);
  const std::string mode = ctx.attrs().get_string("mode", "avg");
  if (mode != "avg" && mode != "max") ctx.fail("attribute 'mode' is '", mode, "', expected avg or max");
  const std::string transform =
      ctx.attrs().get_string("coordinate_transformation_mode", ctx.opset() >= 16 ? "half_pixel" : "output_half_pixel");
  if (transform != "half_pixel" && transform != "output_half_pixel")
    ctx.fail("attribute 'coordinate_transformation_mode' is '", transform,
             "', expected half_pixel or output_half_pixel");
  const bool half_pixel = transform == "half_pixel";
  const bool average = mode == "avg";
  const int64_t batch = x.dim(0), channels = x.dim(1), height = x.dim(2), width = x.dim(3);
  std::vector<int64_t> indices = batch_indices.to_int64_vector();
  for (int64_t b : indices)
    if (b < 0 || b >= batch) ctx.fail("batch index ", b, " is outside [0, ", batch, ")");
  Tensor& y = ctx.allocate_output(0, x.dtype(), {num_rois, channels, out_h, out_w});
  if (y.numel() == 0) return;
  if (height == 0 || width == 0) ctx.fail("input X has an empty image (", height, "x", width, ")");
  visit_float_dtype(x.dtype(), ctx.node().describe(), [&]<typename T>() {
    const T* data = x.data<T>();
    const T* boxes = rois.data<T>();
    T* out = y.data<T>();
    parallel_for(num_rois, 1, [&](int64_t r0, int64_t r1) {
      std::vector<Sample> samples;
      for (int64_t r = r0; r < r1; ++r) {
        const double offset = half_pixel ? 0.5 : 0.0;
        const double start_w = static_cast<double>(boxes[r * 4 + 0]) * spatial_scale - offset;
        const double start_h = static_cast<double>(boxes[r * 4 + 1]) * spatial_scale - offset;
        const double end_w = static_cast<double>(boxes[r * 4 + 2]) * spatial_scale - offset;
        const double end_h = static_cast<double>(boxes[r * 4 + 3]) * spatial_scale - offset;
        double roi_w = end_w - start_w, roi_h = end_h - start_h;
        if (!half_pixel) {
          roi_w = std::max(roi_w, 1.0);
          roi_h = std::max(roi_h, 1.0);
        }
        const double bin_h = roi_h / static_cast<double>(out_h), bin_w = roi_w / static_cast<double>(out_w);
        // At most 1024 samples per axis and bin, so that a huge region cannot demand an unbounded grid.
        auto grid_of = [&](double bin) {
          return sampling_ratio > 0 ? sampling_ratio : static_cast<int64_t>(std::clamp(std::ceil(bin), 0.0, 1024.0));
        };
        const int64_t grid_h = grid_of(bin_h), grid_w = grid_of(bin_w);
        const double count = static_cast<double>(std::max<int64_t>(grid_h * grid_w, 1));
        for (int64_t ph = 0; ph < out_h; ++ph)
          for (int64_t pw = 0; pw < out_w; ++pw) {
            samples.clear();
            for (int64_t iy = 0; iy < grid_h; ++iy) {
              const double yy = start_h + static_cast<double>(ph) * bin_h +
                                (static_cast<double>(iy) + 0.5) * bin_h / static_cast<double>(grid_h);
              for (int64_t ix = 0; ix < grid_w; ++ix) {
                const double xx = start_w + static_cast<double>(pw) * bin_w +
                                  (static_cast<double>(ix) + 0.5) * bin_w / static_cast<double>(grid_w);
                samples.push_back(bilinear_sample(yy, xx, height, width));
              }
            }
            for (int64_t c = 0; c < channels; ++c) {
              const T* plane = data + (indices[static_cast<size_t>(r)] * channels + c) * height * width;
              double value = 0;
              bool first = true;
              for (const Sample& sample : samples) {
                if (average) {
                  for (int q = 0; q < 4; ++q) value += sample.weight[q] * static_cast<double>(plane[sample.offset[q]]);
                } else {
                  double best = sample.weight[0] * static_cast<double>(plane[sample.offset[0]]);
                  for (int q = 1; q < 4; ++q)
                    best = std::max(best, sample.weight[q] * static_cast<double>(plane[sample.offset[q]]));
                  value = first ? best : std::max(value, best);
                  first = false;
                }
              }
              if (average) value /= count;
              out[((r * channels + c) * out_h + ph) * out_w + pw] = static_cast<T>(static_cast<compute_t<T>>(value));
            }
          }
      }
    });
  });
}

}  // namespace

GRAFT_REGISTER_OP("", "RoiAlign", roi_align_infer, roi_align_kernel);

}  // namespace graft::ops
