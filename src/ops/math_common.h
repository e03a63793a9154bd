/// \file
/// Helpers shared by the math op families (matmul, einsum, reductions,
/// normalizations). Private to src/ops.
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>
#include <vector>

#include "graft/core/parallel.h"
#include "graft/core/tensor.h"
#include "graft/ops/op_context.h"
#include "vector_math.h"

namespace graft::ops {

/// C[b] = op(A[b]) * op(B[b]) for every index b of `out_batch`. Each A matrix
/// is M x K (K x M when trans_a) and each B matrix K x N (N x K when trans_b),
/// stored densely one after another in the order of `a_batch` / `b_batch`,
/// which broadcast (numpy rules, aligned right) to `out_batch`. C is dense,
/// out_batch x M x N. float uses gemm_f32, double gemm_f64, integers a plain
/// loop (wrapping arithmetic). Parallel over batches or inside each product.
template <typename T>
void batched_matmul(const T* A, const Shape& a_batch, const T* B, const Shape& b_batch, const Shape& out_batch,
                    int64_t M, int64_t N, int64_t K, bool trans_a, bool trans_b, T* C);

/// int8 or uint8: the operand dtypes of the integer ops (MatMulInteger, ConvInteger).
inline bool is_8bit(DType t) { return t == DType::int8 || t == DType::uint8; }

/// Every element of `t` (any numeric dtype) converted to W.
template <typename W>
std::vector<W> tensor_to_vector(const Tensor& t) {
  std::vector<W> out(static_cast<size_t>(t.numel()));
  visit_numeric_dtype(t.dtype(), "tensor_to_vector", [&]<typename T>() {
    const T* p = t.data<T>();
    for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<W>(static_cast<compute_t<T>>(p[i]));
  });
  return out;
}

/// The constant integer list held by input `i` (nullopt when absent or not
/// constant).
std::optional<std::vector<int64_t>> constant_ints(const InferContext& ctx, size_t i);

/// Output dims for a reduction of `input` over `axes` (already normalized and
/// sorted, no duplicates): reduced dims become 1 with keepdims, else vanish.
std::vector<ir::Dim> reduced_dims(const std::vector<ir::Dim>& input, const std::vector<int64_t>& axes, bool keepdims);

/// Normalizes (negative allowed), sorts and checks for duplicates; `ctx`-style
/// failure through `fail_node` naming the node.
std::vector<int64_t> normalize_axes(std::vector<int64_t> axes, int64_t rank, const std::string& node_description);

/// A tensor viewed for a reduction over some of its axes. Output (kept)
/// positions are numbered in row-major order of the kept dimensions.
///  - Kind::rows: [outer, reduced] (each output reduces a contiguous row);
///  - Kind::columns: [outer, reduced, inner] (contiguous runs of `inner`
///    outputs reduce together, `inner` apart);
///  - Kind::general: element (k, r) sits at kept_offsets[k] + reduced_offsets[r].
struct ReductionLayout {
  enum class Kind { rows, columns, general };
  Kind kind = Kind::rows;
  int64_t outer = 1, reduced = 1, inner = 1;
  std::vector<int64_t> kept_offsets, reduced_offsets;
  /// Number of outputs.
  int64_t kept_count() const {
    return kind == Kind::general ? static_cast<int64_t>(kept_offsets.size()) : outer * inner;
  }
  /// Elements reduced into each output.
  int64_t reduced_count() const {
    return kind == Kind::general ? static_cast<int64_t>(reduced_offsets.size()) : reduced;
  }
};

/// The layout of `shape` reduced over `axes` (normalized, sorted, unique).
ReductionLayout make_reduction_layout(const Shape& shape, const std::vector<int64_t>& axes);

/// Group normalization of X viewed as (N, groups * channels_per_group, plane):
/// each (n, group) span of channels_per_group * plane contiguous elements is
/// normalized with its mean and biased variance (computed in W, two passes),
/// then channel c is scaled by scale[c] and shifted by bias[c]. InstanceNorm is
/// the case channels_per_group == 1. `in` and `out` may alias.
template <typename T, typename W>
void normalize_groups(const T* in, T* out, int64_t batch, int64_t groups, int64_t channels_per_group, int64_t plane,
                      const std::vector<W>& scale, const std::vector<W>& bias, W epsilon) {
  const int64_t spans = batch * groups, span = channels_per_group * plane;
  parallel_for(spans, std::max<int64_t>(1, 16384 / std::max<int64_t>(span, 1)), [&](int64_t begin, int64_t end) {
    for (int64_t s = begin; s < end; ++s) {
      const T* src = in + s * span;
      T* dst = out + s * span;
      if constexpr (std::is_same_v<T, float> && std::is_same_v<W, float>) {
        const float mean = span > 0 ? vector_math::sum(src, span) / static_cast<float>(span) : 0.0f;
        const float variance =
            span > 0 ? vector_math::squared_deviation_sum(src, span, mean) / static_cast<float>(span) : 0.0f;
        const float inv_std = 1.0f / std::sqrt(variance + epsilon);
        for (int64_t j = 0; j < channels_per_group; ++j) {
          const size_t c = static_cast<size_t>((s % groups) * channels_per_group + j);
          const float a = scale[c] * inv_std;
          vector_math::affine(src + j * plane, dst + j * plane, plane, a, bias[c] - mean * a);
        }
        continue;
      }
      W sum = 0;
      for (int64_t i = 0; i < span; ++i) sum += static_cast<W>(static_cast<compute_t<T>>(src[i]));
      const W mean = span > 0 ? sum / static_cast<W>(span) : W(0);
      W squares = 0;
      for (int64_t i = 0; i < span; ++i) {
        const W d = static_cast<W>(static_cast<compute_t<T>>(src[i])) - mean;
        squares += d * d;
      }
      const W inv_std = W(1) / std::sqrt((span > 0 ? squares / static_cast<W>(span) : W(0)) + epsilon);
      for (int64_t j = 0; j < channels_per_group; ++j) {
        const size_t c = static_cast<size_t>((s % groups) * channels_per_group + j);
        const W a = scale[c] * inv_std, b = bias[c] - mean * a;
        for (int64_t i = j * plane; i < (j + 1) * plane; ++i)
          dst[i] = static_cast<T>(static_cast<W>(static_cast<compute_t<T>>(src[i])) * a + b);
      }
    }
  });
}

}  // namespace graft::ops
