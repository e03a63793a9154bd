/// \file
/// Numpy-style broadcasting iteration shared by the broadcast kernels.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "graft/core/parallel.h"
#include "graft/core/shape.h"

namespace graft::ops {

/// Strides (in elements) of `in` viewed in the index space of `out`: 0 along
/// broadcast dimensions. `in` must be broadcastable to `out`.
std::vector<int64_t> broadcast_strides(const Shape& in, const Shape& out);

/// Calls fn(out_offset, in_offsets, count, in_inner_strides) for contiguous
/// runs of the output's innermost dimension: element k of the run is
/// out[out_offset + k] and input j's element in_offsets[j] + k * in_inner_strides[j].
/// Runs in parallel over rows.
template <size_t N, typename Fn>
void broadcast_for_each(const Shape& out, const std::array<const Shape*, N>& ins, Fn&& fn) {
  int64_t total = shape_numel(out);
  if (total == 0) return;
  std::array<int64_t, N> inner{};
  bool all_same = true;
  for (size_t j = 0; j < N; ++j)
    if (*ins[j] != out) all_same = false;
  if (all_same) {
    inner.fill(1);
    parallel_for(total, 16384, [&](int64_t b, int64_t e) {
      std::array<int64_t, N> offs;
      offs.fill(b);
      fn(b, offs, e - b, inner);
    });
    return;
  }
  size_t rank = out.size();
  std::array<std::vector<int64_t>, N> strides;
  for (size_t j = 0; j < N; ++j) strides[j] = broadcast_strides(*ins[j], out);
  int64_t row = rank ? out[rank - 1] : 1;
  int64_t rows = total / row;
  for (size_t j = 0; j < N; ++j) inner[j] = rank ? strides[j][rank - 1] : 0;
  int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(row, 1));
  parallel_for(rows, grain, [&](int64_t rb, int64_t re) {
    std::vector<int64_t> idx(rank ? rank - 1 : 0);
    // Decompose the first row index into the outer multi-index.
    int64_t r = rb;
    for (size_t d = idx.size(); d-- > 0;) {
      idx[d] = r % out[d];
      r /= out[d];
    }
    for (int64_t rr = rb; rr < re; ++rr) {
      std::array<int64_t, N> offs{};
      for (size_t j = 0; j < N; ++j)
        for (size_t d = 0; d < idx.size(); ++d) offs[j] += idx[d] * strides[j][d];
      fn(rr * row, offs, row, inner);
      for (size_t d = idx.size(); d-- > 0;) {
        if (++idx[d] < out[d]) break;
        idx[d] = 0;
      }
    }
  });
}

}  // namespace graft::ops
