/// \file
/// Shared by the convolution and pooling ops: reading the sliding-window
/// attributes (kernel_shape, strides, dilations, pads, auto_pad, ceil_mode),
/// resolving them against an input's spatial extents into per-dimension
/// padding and output extents, and the im2col / col2im transforms.
///
/// Output extents follow the ONNX operator documents:
///   NOTSET      out = floor_or_ceil((in + pad_begin + pad_end - window) / stride) + 1,
///               window = (kernel - 1) * dilation + 1; with ceil_mode the last
///               window must still start inside the input or its left padding.
///   VALID       out = floor((in - window) / stride) + 1, no padding.
///   SAME_UPPER  out = ceil(in / stride); total padding max(0, (out - 1) * stride + window - in),
///   SAME_LOWER  the odd pixel at the end (UPPER) or at the beginning (LOWER).
///
/// Kernels work on a normalized 3-D geometry: 1-D and 2-D problems get leading
/// extents of 1 (kernel 1, stride 1, no padding), so one loop nest serves all.
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "graft/core/dtype.h"
#include "graft/ir/graph.h"
#include "graft/ops/gemm.h"
#include "graft/ops/op_context.h"

namespace graft::ops::conv {

/// Bound on the im2col buffer (elements) per image and group of Conv and
/// ConvTranspose; larger problems are cut into row chunks.
inline constexpr int64_t kColumnBudget = int64_t{1} << 21;

/// The auto_pad attribute.
enum class AutoPad { notset, same_upper, same_lower, valid };

/// Sliding-window attributes of one node, with defaults filled in for
/// `spatial_rank` dimensions.
struct WindowAttributes {
  std::vector<int64_t> kernel;     ///< kernel extents
  std::vector<int64_t> strides;    ///< default 1
  std::vector<int64_t> dilations;  ///< default 1
  std::vector<int64_t> pads;       ///< begin pads then end pads; default 0
  AutoPad auto_pad = AutoPad::notset;
  bool ceil_mode = false;
};

/// Reads the attributes of `node`. `kernel` is the kernel shape taken from the
/// weight (Conv) or empty to require the kernel_shape attribute (pools); when
/// both are present they must agree. Fails naming the node on malformed values.
WindowAttributes read_window_attributes(const ir::Node& node, size_t spatial_rank, const std::vector<int64_t>& kernel,
                                        bool allow_ceil_mode);

/// Padding and output extent of one spatial dimension.
struct ResolvedDim {
  int64_t pad_begin = 0;  ///< padding before the input
  int64_t pad_end = 0;    ///< padding after the input
  int64_t output = 0;     ///< output extent
};

/// Resolves dimension `d` for an input extent `input`. Fails naming the node
/// when the output would be empty or negative.
ResolvedDim resolve_dim(const ir::Node& node, const WindowAttributes& attrs, size_t d, int64_t input);

/// Output dims for inference: one per spatial dim of `input_dims`, unknown
/// where the input extent is unknown.
std::vector<ir::Dim> infer_spatial_dims(const ir::Node& node, const WindowAttributes& attrs,
                                        const std::vector<ir::Dim>& input_spatial);

/// A window problem normalized to three spatial dimensions (depth, height,
/// width). Lower-rank problems have leading extents of 1.
struct Geometry3d {
  int64_t input[3] = {1, 1, 1};      ///< input extents
  int64_t output[3] = {1, 1, 1};     ///< output extents
  int64_t kernel[3] = {1, 1, 1};     ///< kernel extents
  int64_t stride[3] = {1, 1, 1};     ///< strides
  int64_t dilation[3] = {1, 1, 1};   ///< dilations (1: none)
  int64_t pad_begin[3] = {0, 0, 0};  ///< padding before the input
  int64_t pad_end[3] = {0, 0, 0};    ///< padding after the input

  /// Elements of one input plane (depth * height * width).
  int64_t input_size() const { return input[0] * input[1] * input[2]; }
  /// Elements of one output plane.
  int64_t output_size() const { return output[0] * output[1] * output[2]; }
  /// Elements of one kernel window.
  int64_t kernel_size() const { return kernel[0] * kernel[1] * kernel[2]; }
};

/// Resolves all spatial dimensions of `input_spatial` into a Geometry3d.
/// Fails (unsupported) for more than three spatial dimensions.
Geometry3d make_geometry(const ir::Node& node, const WindowAttributes& attrs, const Shape& input_spatial);

/// The spatial output extents of a geometry for `spatial_rank` dimensions.
Shape geometry_output_shape(const Geometry3d& g, size_t spatial_rank);

/// A convolution's sizes (Conv, ConvInteger, QLinearConv).
struct ConvProblem {
  int64_t batch = 0;         ///< N
  int64_t in_channels = 0;   ///< C (all groups)
  int64_t out_channels = 0;  ///< M (all groups)
  int64_t group = 1;         ///< the group attribute
  size_t spatial_rank = 0;   ///< spatial dimensions of the data (1 to 3)
  Geometry3d geometry;       ///< the window problem of one plane

  /// Output shape [N, M, spatial...].
  Shape output_shape() const;
};

/// Sets output 0 of a convolution node to `dtype` with the shape computed from
/// input `x_index` (data) and `w_index` (weight); symbolic dims pass through.
void infer_conv_output(InferContext& ctx, size_t x_index, size_t w_index, DType dtype);

/// Validates the ranks and channel counts of data `x` and weight `w` and
/// resolves the window attributes of ctx's node (dtypes are the caller's).
ConvProblem prepare_conv(const KernelContext& ctx, const Tensor& x, const Tensor& w);

/// The outputs o in [lo, hi) of a window row whose input index o * stride +
/// offset falls inside [0, limit); o ranges over [0, extent).
void valid_range(int64_t offset, int64_t stride, int64_t limit, int64_t extent, int64_t& lo, int64_t& hi);

/// Fills columns [column_begin, column_end) of the im2col matrix of one group
/// of `channels` input planes: row (c * kernel_size + kernel offset), column
/// an output position; entries that fall into padding are zero. `column_begin`
/// must be a multiple of the innermost output extent. The matrix has leading
/// dimension `ld`.
template <typename T>
void im2col(const T* input, int64_t channels, const Geometry3d& g, int64_t column_begin, int64_t column_end, T* col,
            int64_t ld);

/// The transpose of im2col for ConvTranspose: adds each entry of columns
/// [column_begin, column_end) (leading dimension `ld`, row c * kernel_size +
/// kernel offset) into the output position it came from; entries that fall
/// into padding are dropped. `output` holds `channels` planes of g.input
/// extents, where g describes the forward convolution (output plane = g.input).
/// `column_begin` must be a multiple of the innermost extent of g.output.
template <typename T>
void col2im_add(const T* col, int64_t channels, const Geometry3d& g, int64_t column_begin, int64_t column_end,
                int64_t ld, T* output);

/// C = A * B (+ C when accumulate) through gemm_f32 / gemm_f64 for float and
/// double, a plain loop otherwise (integer convolutions).
template <typename T>
void matmul(bool trans_a, int64_t M, int64_t N, int64_t K, const T* A, int64_t lda, const T* B, int64_t ldb,
            bool accumulate, T* C, int64_t ldc) {
  if constexpr (std::is_same_v<T, float>) {
    gemm_f32(trans_a, false, M, N, K, 1.0f, A, lda, B, ldb, accumulate ? 1.0f : 0.0f, C, ldc);
  } else if constexpr (std::is_same_v<T, double>) {
    gemm_f64(trans_a, false, M, N, K, 1.0, A, lda, B, ldb, accumulate ? 1.0 : 0.0, C, ldc);
  } else {
    for (int64_t i = 0; i < M; ++i) {
      T* c = C + i * ldc;
      if (!accumulate)
        for (int64_t j = 0; j < N; ++j) c[j] = T(0);
      for (int64_t k = 0; k < K; ++k) {
        T a = trans_a ? A[k * lda + i] : A[i * lda + k];
        if (a == T(0)) continue;
        const T* b = B + k * ldb;
        for (int64_t j = 0; j < N; ++j) c[j] += a * b[j];
      }
    }
  }
}

/// The order p of LpPool / GlobalLpPool: an int attribute (a float one
/// before opset 2), default 2; fails unless it is a positive integer.
int64_t read_lp_order(const ir::Node& node);

/// Converts a float16/bfloat16 tensor to float32 (other dtypes unchanged).
Tensor to_float32(const Tensor& t);
/// Converts float32 `values` into `out` of dtype float16/bfloat16.
void from_float32(const Tensor& values, Tensor& out);

}  // namespace graft::ops::conv
