// LRN (local response normalization across channels), for X (N, C, D1, ...):
//   y[n, c, s] = x[n, c, s] / (bias + alpha / size * sum_{c' in window(c)} x[n, c', s]^2) ^ beta
// with window(c) = [c - floor((size - 1) / 2), c + ceil((size - 1) / 2)]
// clipped to the channels. Work is split over (n, block of spatial positions)
// so the channel window is summed over contiguous rows.
#include <cmath>
#include <vector>

#include "graft/core/parallel.h"
#include "graft/ops/infer_util.h"
#include "graft/ops/op_context.h"

namespace graft::ops {
namespace {

void infer_lrn(InferContext& ctx) {
  const ir::ValueType& x = ctx.input_type(0);
  if (x.has_rank && x.dims.size() < 2) ctx.fail("X must have rank >= 2, got ", x.to_string());
  if (ctx.attrs().get_int("size") <= 0) ctx.fail("size must be positive");
  infer_same_as_input(ctx);
}

void lrn_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.rank() < 2) ctx.fail("X must have rank >= 2, got ", x.type_string());
  const int64_t size = ctx.attrs().get_int("size");
  if (size <= 0) ctx.fail("size must be positive, got ", size);
  const double alpha = ctx.attrs().get_float("alpha", 1e-4f), beta = ctx.attrs().get_float("beta", 0.75f);
  const double bias = ctx.attrs().get_float("bias", 1.0f);
  const int64_t batch = x.dim(0), channels = x.dim(1);
  const int64_t plane = batch * channels == 0 ? 0 : x.numel() / (batch * channels);
  const int64_t before = (size - 1) / 2, after = size - 1 - before;
  Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
  visit_float_dtype(x.dtype(), ctx.node().describe(), [&]<typename T>() {
    using W = std::conditional_t<std::is_same_v<T, double>, double, float>;
    const T* in = x.data<T>();
    T* out = y.data<T>();
    // Tasks: (n, chunk of spatial positions).
    constexpr int64_t kChunk = 256;
    const int64_t chunks = (plane + kChunk - 1) / kChunk;
    parallel_for(batch * chunks, 1, [&](int64_t begin, int64_t end) {
      std::vector<W> window(kChunk);
      for (int64_t task = begin; task < end; ++task) {
        const int64_t n = task / chunks, s0 = (task % chunks) * kChunk;
        const int64_t width = std::min(kChunk, plane - s0);
        const T* base = in + n * channels * plane + s0;
        auto square = [&](int64_t c, int64_t i) {
          const W v = static_cast<W>(static_cast<compute_t<T>>(base[c * plane + i]));
          return v * v;
        };
        for (int64_t c = 0; c < channels; ++c) {
          std::fill(window.begin(), window.begin() + width, W(0));
          for (int64_t w = std::max<int64_t>(0, c - before); w <= std::min(channels - 1, c + after); ++w)
            for (int64_t i = 0; i < width; ++i) window[static_cast<size_t>(i)] += square(w, i);
          T* dst = out + (n * channels + c) * plane + s0;
          for (int64_t i = 0; i < width; ++i) {
            const W sum = window[static_cast<size_t>(i)];
            const W v = static_cast<W>(static_cast<compute_t<T>>(base[c * plane + i]));
            dst[i] = static_cast<T>(
                v / std::pow(static_cast<W>(bias + alpha / static_cast<double>(size) * sum), static_cast<W>(beta)));
          }
        }
      }
    });
  });
}

}  // namespace

GRAFT_REGISTER_OP("", "LRN", infer_lrn, lrn_kernel);

}  // namespace graft::ops
