// Softmax and LogSoftmax, numerically stable (the maximum is subtracted
// before exponentiating).
//
// Opset < 13 coerces the input to 2-D at `axis` (default 1): every row of
// prod(dims[axis:]) elements is normalized as one vector. Opset >= 13
// normalizes along the single dimension `axis` (default -1). Both reduce to a
// view [outer, n, inner] normalized along n: inner == 1 gives contiguous rows,
// otherwise the n values of one vector are `inner` apart and the kernel walks
// n with running per-column maxima and sums so every access stays contiguous.
#include <cmath>
#include <limits>
#include <vector>

#include "graft/core/parallel.h"
#include "graft/ops/gradient.h"
#include "graft/ops/infer_util.h"
#include "graft/ops/op_context.h"
#include "vector_math.h"

namespace graft::ops {
namespace {

/// The [outer, n, inner] view of the node's input.
struct SoftmaxView {
  int64_t outer = 1, n = 1, inner = 1;
};

SoftmaxView softmax_view(const ir::Node& node, int opset, const Shape& shape, const ir::Attributes& attributes) {
  const int64_t rank = static_cast<int64_t>(shape.size());
  const int64_t axis = normalize_axis(attributes.get_int("axis", opset < 13 ? 1 : -1), rank, node.describe());
  SoftmaxView v;
  for (int64_t d = 0; d < axis; ++d) v.outer *= shape[static_cast<size_t>(d)];
  if (opset < 13) {
    for (int64_t d = axis; d < rank; ++d) v.n *= shape[static_cast<size_t>(d)];
  } else {
    v.n = rank == 0 ? 1 : shape[static_cast<size_t>(axis)];
    for (int64_t d = axis + 1; d < rank; ++d) v.inner *= shape[static_cast<size_t>(d)];
  }
  return v;
}

void infer_softmax(InferContext& ctx) {
  const ir::ValueType& x = ctx.input_type(0);
  if (x.has_rank) {
    const int64_t rank = static_cast<int64_t>(x.dims.size());
    normalize_axis(ctx.attrs().get_int("axis", ctx.opset() < 13 ? 1 : -1), rank, ctx.node().describe());
  }
  infer_same_as_input(ctx);
}

/// Normalizes one contiguous row of n values (in the compute type W).
template <typename W, bool kLog>
void softmax_row(W* row, int64_t n) {
  if constexpr (std::is_same_v<W, float>) {
    const float max_value = vector_math::max(row, n);
    if constexpr (kLog) {
      const float log_sum = std::log(vector_math::exp_shifted_sum(row, nullptr, n, max_value));
      // (x - max) - log_sum, in two steps: x - (max + log_sum) would lose x's low bits.
      vector_math::affine(row, row, n, 1.0f, -max_value);
      vector_math::affine(row, row, n, 1.0f, -log_sum);
    } else {
      const float sum = vector_math::exp_shifted_sum(row, row, n, max_value);
      vector_math::affine(row, row, n, 1.0f / sum, 0.0f);
    }
    return;
  }
  W max_value = -std::numeric_limits<W>::infinity();
  for (int64_t i = 0; i < n; ++i) max_value = std::max(max_value, row[i]);
  W sum = 0;
  if constexpr (kLog) {
    for (int64_t i = 0; i < n; ++i) sum += std::exp(row[i] - max_value);
    const W log_sum = std::log(sum);
    for (int64_t i = 0; i < n; ++i) row[i] = (row[i] - max_value) - log_sum;
  } else {
    for (int64_t i = 0; i < n; ++i) {
      row[i] = std::exp(row[i] - max_value);
      sum += row[i];
    }
    const W scale = W(1) / sum;
    for (int64_t i = 0; i < n; ++i) row[i] *= scale;
  }
}

/// Normalizes `width` columns of an n x inner block (column stride `inner`):
/// block[k * inner + c] for k < n, c < width.
template <typename W, bool kLog>
void softmax_columns(W* block, int64_t n, int64_t inner, int64_t width, W* max_values, W* sums) {
  for (int64_t c = 0; c < width; ++c) {
    max_values[c] = -std::numeric_limits<W>::infinity();
    sums[c] = 0;
  }
  for (int64_t k = 0; k < n; ++k) {
    const W* row = block + k * inner;
    for (int64_t c = 0; c < width; ++c) max_values[c] = std::max(max_values[c], row[c]);
  }
  for (int64_t k = 0; k < n; ++k) {
    W* row = block + k * inner;
    if constexpr (kLog) {
      for (int64_t c = 0; c < width; ++c) sums[c] += std::exp(row[c] - max_values[c]);
    } else {
      for (int64_t c = 0; c < width; ++c) {
        row[c] = std::exp(row[c] - max_values[c]);
        sums[c] += row[c];
      }
    }
  }
  if constexpr (kLog) {
    for (int64_t c = 0; c < width; ++c) sums[c] = std::log(sums[c]);
    for (int64_t k = 0; k < n; ++k)
      for (int64_t c = 0; c < width; ++c) block[k * inner + c] = (block[k * inner + c] - max_values[c]) - sums[c];
  } else {
    for (int64_t c = 0; c < width; ++c) sums[c] = W(1) / sums[c];
    for (int64_t k = 0; k < n; ++k)
      for (int64_t c = 0; c < width; ++c) block[k * inner + c] *= sums[c];
  }
}

template <typename T, bool kLog>
void softmax_typed(const Tensor& x, Tensor& y, const SoftmaxView& v) {
  using W = compute_t<T>;
  constexpr bool kSameType = std::is_same_v<T, W>;
  const T* in = x.data<T>();
  T* out = y.data<T>();
  const int64_t row_elements = v.n * v.inner;
  if (v.inner == 1) {
    const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(v.n, 1));
    parallel_for(v.outer, grain, [&](int64_t begin, int64_t end) {
      std::vector<W> buffer(kSameType ? 0 : static_cast<size_t>(v.n));
      for (int64_t o = begin; o < end; ++o) {
        W* row;
        if constexpr (kSameType) {
          row = out + o * v.n;
          if (row != in + o * v.n) std::copy(in + o * v.n, in + (o + 1) * v.n, row);
        } else {
          row = buffer.data();
          for (int64_t i = 0; i < v.n; ++i) row[i] = static_cast<W>(in[o * v.n + i]);
        }
        softmax_row<W, kLog>(row, v.n);
        if constexpr (!kSameType)
          for (int64_t i = 0; i < v.n; ++i) out[o * v.n + i] = T(row[i]);
      }
    });
    return;
  }
  // Strided: tasks are (outer index, chunk of columns).
  constexpr int64_t kChunk = 256;
  const int64_t chunks = (v.inner + kChunk - 1) / kChunk;
  const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(v.n * std::min(kChunk, v.inner), 1));
  parallel_for(v.outer * chunks, grain, [&](int64_t begin, int64_t end) {
    std::vector<W> max_values(kChunk), sums(kChunk);
    std::vector<W> buffer(kSameType ? 0 : static_cast<size_t>(v.n * kChunk));
    for (int64_t task = begin; task < end; ++task) {
      const int64_t o = task / chunks, c0 = (task % chunks) * kChunk;
      const int64_t width = std::min(kChunk, v.inner - c0);
      const int64_t base = o * row_elements + c0;
      if constexpr (kSameType) {
        W* block = out + base;
        if (block != in + base)
          for (int64_t k = 0; k < v.n; ++k)
            std::copy(in + base + k * v.inner, in + base + k * v.inner + width, block + k * v.inner);
        softmax_columns<W, kLog>(block, v.n, v.inner, width, max_values.data(), sums.data());
      } else {
        for (int64_t k = 0; k < v.n; ++k)
          for (int64_t c = 0; c < width; ++c) buffer[k * width + c] = static_cast<W>(in[base + k * v.inner + c]);
        softmax_columns<W, kLog>(buffer.data(), v.n, width, width, max_values.data(), sums.data());
        for (int64_t k = 0; k < v.n; ++k)
          for (int64_t c = 0; c < width; ++c) out[base + k * v.inner + c] = T(buffer[k * width + c]);
      }
    }
  });
}

template <bool kLog>
void softmax_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const SoftmaxView v = softmax_view(ctx.node(), ctx.opset(), x.shape(), ctx.attrs());
  Tensor& y = ctx.allocate_output_in_place(0, x.dtype(), x.shape(), 0);
  if (x.numel() == 0) return;
  visit_float_dtype(x.dtype(), ctx.node().describe(), [&]<typename T>() { softmax_typed<T, kLog>(x, y, v); });
}

}  // namespace

GRAFT_REGISTER_OP("", "Softmax", infer_softmax, softmax_kernel<false>);
GRAFT_REGISTER_OP("", "LogSoftmax", infer_softmax, softmax_kernel<true>);

// Gradient builders (graft/ops/gradient.h), along the normalized axis (for
// opsets before 13, along the rows of the 2-D view [outer, n]):
// Softmax dx = y (dy - sum(dy y)); LogSoftmax dx = dy - exp(y) sum(dy).
namespace {

/// The output and its gradient as the gradient formulas see them, and the
/// axis they run along.
struct NormalizedValues {
  ir::Value y, dy;
  int64_t axis;
  bool reshaped = false;  ///< viewed [outer, n]: the result is reshaped back
};

NormalizedValues normalized_values(GradientContext& g) {
  using enum ir::OpId;
  const ir::ValueType& x = g.input_type(0);
  if (!x.has_rank) g.unsupported("the input's rank is not known");
  const int64_t rank = static_cast<int64_t>(x.dims.size());
  const bool old = g.node().opset_version > 0 && g.node().opset_version < 13;
  const int64_t axis = normalize_axis(g.attrs().get_int("axis", old ? 1 : -1), rank, g.node().describe());
  if (!old || axis == rank - 1) return NormalizedValues{g.output(0), g.output_gradient(0), axis};
  std::vector<int64_t> dims = g.known_dims(g.input(0));
  int64_t outer = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= dims[static_cast<size_t>(d)];
  ir::Value view = g.int64s({outer, -1});
  return NormalizedValues{g.add(Reshape, {g.output(0), view}), g.add(Reshape, {g.output_gradient(0), view}), 1, true};
}

ir::Value sum_along(GradientContext& g, ir::Value v, int64_t axis) {
  using enum ir::OpId;
  return g.add(ReduceSum, {v, g.int64s({axis})}, {{"keepdims", int64_t{1}}});
}

void set_dx(GradientContext& g, const NormalizedValues& v, ir::Value dx) {
  using enum ir::OpId;
  g.set_input_gradient(0, v.reshaped ? g.add(Reshape, {dx, g.shape_of(g.input(0))}) : dx);
}

void softmax_gradient(GradientContext& g) {
  using enum ir::OpId;
  NormalizedValues v = normalized_values(g);
  ir::Value dot = sum_along(g, g.add(Mul, {v.dy, v.y}), v.axis);
  set_dx(g, v, g.add(Mul, {v.y, g.add(Sub, {v.dy, dot})}));
}

void log_softmax_gradient(GradientContext& g) {
  using enum ir::OpId;
  NormalizedValues v = normalized_values(g);
  set_dx(g, v, g.add(Sub, {v.dy, g.add(Mul, {g.add(Exp, {v.y}), sum_along(g, v.dy, v.axis)})}));
}

}  // namespace

GRAFT_REGISTER_GRADIENT(Softmax, softmax_gradient);
GRAFT_REGISTER_GRADIENT(LogSoftmax, log_softmax_gradient);

}  // namespace graft::ops
