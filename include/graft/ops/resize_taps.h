/// \file
/// The interpolation of Resize (opsets 10-19) and Upsample (7-9), one axis at
/// a time: the settings a node's attributes give, and the taps (the input
/// points and their weights) of every output coordinate, computed in double
/// precision with the ONNX reference implementation's formulas. The
/// reference kernel (src/ops/resize.cc) and device kernels that upload the
/// taps as tables (backends/opencl/opencl_resize.cc) share them, so both
/// read the same points.
///
/// Along an axis, output coordinate x maps back to an input coordinate
/// x_original by the coordinate_transformation_mode (with output_width =
/// scale * input_width, a real number when scales are given). With x_int =
/// floor(x_original) (x_original - 1 when it is an integer) and ratio =
/// x_original - x_int in (0, 1], a mode yields n coefficients for the points
/// x_int + start .. x_int + start + n - 1: nearest (n = 2, one of them 1 by
/// nearest_mode), linear (1 - ratio, ratio), cubic (n = 4, Keys kernel with
/// cubic_coeff_a), and the antialiased linear and cubic filters, which widen
/// by 1 / scale when downscaling. Points outside the input take the border
/// value (edge padding), or weight 0 with exclude_outside (the rest
/// renormalized); tf_crop_and_resize marks coordinates outside the roi.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "graft/ir/attribute.h"

namespace graft::ops {

enum class ResizeMode { nearest, linear, cubic };
enum class ResizeCoordinate {
  half_pixel,
  half_pixel_symmetric,
  pytorch_half_pixel,
  align_corners,
  asymmetric,
  tf_half_pixel_for_nn,
  tf_crop_and_resize,
};
/// How nearest rounds; `simple` is Upsample's and Resize-10's: down when
/// upsampling, up when downsampling (as ONNX Runtime does).
enum class ResizeNearest { round_prefer_floor, round_prefer_ceil, floor, ceil, simple };
enum class ResizeAspectPolicy { stretch, not_larger, not_smaller };

/// A Resize or Upsample node's attributes, with the ONNX defaults.
struct ResizeSettings {
  ResizeMode mode = ResizeMode::nearest;
  ResizeCoordinate coordinate = ResizeCoordinate::half_pixel;
  ResizeNearest nearest = ResizeNearest::round_prefer_floor;
  double cubic_a = -0.75;
  bool exclude_outside = false;
  double extrapolation = 0;
  bool antialias = false;
  ResizeAspectPolicy policy = ResizeAspectPolicy::stretch;
  std::vector<int64_t> axes;  ///< opset 18; empty = every axis
  bool upsample = false;      ///< the Upsample op
};

/// Reads the attributes of a Resize (`upsample` false) or Upsample node of
/// `opset` into `settings`. Returns what is not valid at that opset (e.g.
/// "mode 'area' is not supported at opset 13"), or "" when everything is.
std::string read_resize_settings(const ir::Attributes& attributes, int opset, bool upsample,
                                 ResizeSettings* settings);

/// The taps of one axis: output coordinate o reads points index[o * n + t]
/// with weights weight[o * n + t] (t < n; unused taps have weight 0);
/// outside[o] marks a tf_crop_and_resize coordinate outside the roi, which
/// takes the extrapolation value.
struct ResizeTaps {
  int64_t n = 1;
  std::vector<int64_t> index;
  std::vector<double> weight;
  std::vector<bool> outside;
  /// Every output o reads input o alone with weight 1 (the axis is left as it is).
  bool identity = false;
};

/// The taps of an axis of `in` input and `out` output extents at `scale`;
/// roi_start and roi_end (fractions of the axis) matter to
/// tf_crop_and_resize only.
ResizeTaps compute_resize_taps(const ResizeSettings& settings, int64_t in, int64_t out, double scale,
                               double roi_start = 0.0, double roi_end = 1.0);

}  // namespace graft::ops
