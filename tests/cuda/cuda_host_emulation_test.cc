// The backend's hand-written CUDA kernels run on the host: each registered
// source is compiled by the host C++ compiler behind a small shim (CUDA's
// thread indices as thread-locals, every thread of a block a std::thread,
// __syncthreads and warp shuffles as barriers, __shared__ as static), then
// launched over small problems and compared with plain C++ results. NVRTC
// (cuda_compile_test.cc) checks that the sources compile for the GPU; this
// checks their index arithmetic and reductions without one. The argument
// blocks are built here as the node kernels build them. Skipped without a
// host C++ compiler.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <random>

#include "cuda_host_emulation.h"
#include "cuda_test_util.h"

namespace graft::testing {
namespace {




std::vector<float> randoms(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> d(-2.0f, 2.0f);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

void expect_near_all(const std::vector<float>& got, const std::vector<float>& want, float tol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], tol * (1 + std::abs(want[i]))) << i;
}

using i64 = long long;

TEST(CudaHostEmulation, StridedCopyTransposesAndConcatenates) {
  GRAFT_HOST_PROGRAM(p, "kStridedSource");
  struct Strided {
    i64 extent[8], src[8], dst[8];
  };
  auto copy4 = p.function<void (*)(unsigned*, const unsigned*, i64, int, i64, i64, Strided)>("graft_strided_copy_4");
  // Transpose [2,3,4] with perm (2,0,1): out [4,2,3], source strides (1, 12, 4).
  std::vector<unsigned> x(24), y(24, 0);
  for (unsigned i = 0; i < 24; ++i) x[i] = i;
  Strided s{{4, 2, 3}, {1, 12, 4}, {6, 3, 1}};
  p.run(1, 32, [&] { copy4(y.data(), x.data(), 24, 3, 0, 0, s); });
  for (int a = 0; a < 4; ++a)
    for (int b = 0; b < 2; ++b)
      for (int c = 0; c < 3; ++c) ASSERT_EQ(y[a * 6 + b * 3 + c], x[b * 12 + c * 4 + a]);
  // The second input [2,1,4] of a Concat along axis 1 into [2,5,4] at offset 3.
  std::vector<unsigned> out(40, 0), in(8);
  for (unsigned i = 0; i < 8; ++i) in[i] = 100 + i;
  Strided c{{2, 1, 4}, {4, 4, 1}, {20, 4, 1}};
  p.run(1, 32, [&] { copy4(out.data(), in.data(), 8, 3, 0, 3 * 4, c); });
  for (int n = 0; n < 2; ++n)
    for (int k = 0; k < 4; ++k) ASSERT_EQ(out[n * 20 + 3 * 4 + k], in[n * 4 + k]);
  EXPECT_EQ(out[0], 0u);
}

TEST(CudaHostEmulation, GatherPicksRowsWithNegativeAndOutOfRangeIndices) {
  GRAFT_HOST_PROGRAM(p, "kGatherSource");
  auto gather = p.function<void (*)(unsigned*, const unsigned*, const i64*, i64, i64, i64, i64)>("graft_gather_4_i64");
  // data [2,5,3], axis 1, indices {4, -1, 0, 7}: out [2,4,3].
  std::vector<unsigned> x(30), y(24, 99);
  for (unsigned i = 0; i < 30; ++i) x[i] = i;
  std::vector<i64> index{4, -1, 0, 7};
  p.run(1, 32, [&] { gather(y.data(), x.data(), index.data(), 2, 5, 4, 3); });
  for (int o = 0; o < 2; ++o)
    for (int j = 0; j < 4; ++j)
      for (int k = 0; k < 3; ++k) {
        i64 at = index[j] < 0 ? index[j] + 5 : index[j];
        unsigned want = at >= 5 ? 0 : x[(o * 5 + at) * 3 + k];
        ASSERT_EQ(y[(o * 4 + j) * 3 + k], want) << o << " " << j << " " << k;
      }
}

TEST(CudaHostEmulation, SoftmaxLayerNormReduceAndGlobalPool) {
  GRAFT_HOST_PROGRAM(p, "kNnSource");
  const i64 rows = 3, cols = 77;
  std::vector<float> x = randoms(rows * cols, 1), y(rows * cols);
  // Softmax and log-softmax of rows: a block of 64 threads per row.
  auto rows_fn = p.function<void (*)(float*, const float*, i64, i64, int)>("graft_softmax_rows");
  for (int log_output : {0, 1}) {
    p.run(rows, 64, [&] { rows_fn(y.data(), x.data(), rows, cols, log_output); });
    std::vector<float> want(x.size());
    for (i64 r = 0; r < rows; ++r) {
      float m = -INFINITY, s = 0;
      for (i64 c = 0; c < cols; ++c) m = std::max(m, x[r * cols + c]);
      for (i64 c = 0; c < cols; ++c) s += std::exp(x[r * cols + c] - m);
      for (i64 c = 0; c < cols; ++c)
        want[r * cols + c] = log_output ? x[r * cols + c] - m - std::log(s) : std::exp(x[r * cols + c] - m) / s;
    }
    expect_near_all(y, want, 1e-5f);
  }
  // Softmax along the middle axis of [3, 7, 11]: a thread per (outer, inner).
  auto strided = p.function<void (*)(float*, const float*, i64, i64, i64, int)>("graft_softmax_strided");
  p.run(2, 32, [&] { strided(y.data(), x.data(), 3, 7, 11, 0); });
  for (i64 o = 0; o < 3; ++o)
    for (i64 k = 0; k < 11; ++k) {
      float s = 0;
      for (i64 a = 0; a < 7; ++a) s += y[(o * 7 + a) * 11 + k];
      ASSERT_NEAR(s, 1.0f, 1e-5f);
    }
  // LayerNormalization of each row, with scale and bias, and without bias.
  auto norm = p.function<void (*)(float*, const float*, const float*, const float*, i64, i64, float)>("graft_layer_norm");
  std::vector<float> scale = randoms(cols, 2), bias = randoms(cols, 3);
  for (bool with_bias : {true, false}) {
    p.run(rows, 64, [&] { norm(y.data(), x.data(), scale.data(), with_bias ? bias.data() : nullptr, rows, cols, 1e-5f); });
    std::vector<float> want(x.size());
    for (i64 r = 0; r < rows; ++r) {
      double mean = 0, var = 0;
      for (i64 c = 0; c < cols; ++c) mean += x[r * cols + c];
      mean /= cols;
      for (i64 c = 0; c < cols; ++c) var += (x[r * cols + c] - mean) * (x[r * cols + c] - mean);
      var /= cols;
      for (i64 c = 0; c < cols; ++c)
        want[r * cols + c] = static_cast<float>((x[r * cols + c] - mean) / std::sqrt(var + 1e-5) * scale[c] +
                                                (with_bias ? bias[c] : 0.0f));
    }
    expect_near_all(y, want, 1e-4f);
  }
  // Reductions over the middle of (3, 7, 11).
  auto reduce = p.function<void (*)(float*, const float*, i64, i64, i64, int)>("graft_reduce");
  std::vector<float> r(33);
  for (int op = 0; op < 4; ++op) {
    p.run(2, 32, [&] { reduce(r.data(), x.data(), 3, 7, 11, op); });
    for (i64 o = 0; o < 3; ++o)
      for (i64 k = 0; k < 11; ++k) {
        float acc = op == 2 ? -INFINITY : op == 3 ? INFINITY : 0.0f;
        for (i64 a = 0; a < 7; ++a) {
          float v = x[(o * 7 + a) * 11 + k];
          acc = op == 2 ? std::max(acc, v) : op == 3 ? std::min(acc, v) : acc + v;
        }
        if (op == 1) acc /= 7;
        ASSERT_NEAR(r[o * 11 + k], acc, 1e-5f) << op;
      }
  }
  // Global average and max pooling of 3 planes of 77.
  auto global = p.function<void (*)(float*, const float*, i64, i64, int)>("graft_global_pool");
  std::vector<float> g(3);
  for (int op : {0, 1}) {
    p.run(3, 64, [&] { global(g.data(), x.data(), 3, cols, op); });
    for (i64 q = 0; q < 3; ++q) {
      float acc = op ? -INFINITY : 0.0f;
      for (i64 c = 0; c < cols; ++c) acc = op ? std::max(acc, x[q * cols + c]) : acc + x[q * cols + c];
      ASSERT_NEAR(g[q], op ? acc : acc / cols, 1e-5f) << op;
    }
  }
}

TEST(CudaHostEmulation, PoolingAndIm2col) {
  GRAFT_HOST_PROGRAM(p, "kNnSource");
  struct Pool {
    i64 n_c, h, w, oh, ow;
    int kh, kw, sh, sw, ph, pw, dh, dw, op, count_include_pad;
  };
  auto pool = p.function<void (*)(float*, const float*, Pool)>("graft_pool2d");
  const i64 h = 7, w = 6;
  std::vector<float> x = randoms(2 * h * w, 4);
  // 3x3, stride 2, pad 1: out 4x3.
  for (int op : {0, 1})
    for (int include : {0, 1}) {
      Pool a{2, h, w, 4, 3, 3, 3, 2, 2, 1, 1, 1, 1, op, include};
      std::vector<float> y(2 * 12);
      p.run(1, 32, [&] { pool(y.data(), x.data(), a); });
      for (i64 q = 0; q < 2; ++q)
        for (i64 oy = 0; oy < 4; ++oy)
          for (i64 ox = 0; ox < 3; ++ox) {
            float acc = op ? -INFINITY : 0.0f;
            int count = 0;
            for (i64 ky = 0; ky < 3; ++ky)
              for (i64 kx = 0; kx < 3; ++kx) {
                i64 iy = oy * 2 - 1 + ky, ix = ox * 2 - 1 + kx;
                bool inside = iy >= 0 && iy < h && ix >= 0 && ix < w;
                if (inside) acc = op ? std::max(acc, x[(q * h + iy) * w + ix]) : acc + x[(q * h + iy) * w + ix];
                count += inside || (include && iy < h + 1 && ix < w + 1);
              }
            ASSERT_NEAR(y[(q * 4 + oy) * 3 + ox], op ? acc : acc / count, 1e-5f) << op << include;
          }
    }
  // im2col of 2 images of 2 channels (of 3), 3x2 kernel, stride (1, 2), pad (1, 0), dilation (2, 1).
  struct Im2col {
    i64 c, h, w, oh, ow, image_stride;
    int kh, kw, sh, sw, ph, pw, dh, dw;
  };
  auto im2col = p.function<void (*)(float*, const float*, i64, Im2col)>("graft_im2col");
  std::vector<float> images = randoms(2 * 3 * h * w, 5);
  const i64 oh = (h + 2 - (2 * 2 + 1)) / 1 + 1, ow = (w - 2) / 2 + 1;
  Im2col a{2, h, w, oh, ow, 3 * h * w, 3, 2, 1, 2, 1, 0, 2, 1};
  const i64 per_image = 2 * 3 * 2 * oh * ow;
  std::vector<float> col(2 * per_image, -1);
  const float* second_group = images.data() + 1 * h * w;  // channels 1 and 2
  p.run((2 * per_image + 31) / 32, 32, [&] { im2col(col.data(), second_group, 2, a); });
  for (i64 n = 0; n < 2; ++n)
    for (i64 ci = 0; ci < 2; ++ci)
      for (i64 ky = 0; ky < 3; ++ky)
        for (i64 kx = 0; kx < 2; ++kx)
          for (i64 oy = 0; oy < oh; ++oy)
            for (i64 ox = 0; ox < ow; ++ox) {
              i64 iy = oy - 1 + ky * 2, ix = ox * 2 + kx;
              float want = iy >= 0 && iy < h && ix >= 0 && ix < w ? second_group[n * 3 * h * w + (ci * h + iy) * w + ix] : 0;
              ASSERT_EQ(col[n * per_image + (((ci * 3 + ky) * 2 + kx) * oh + oy) * ow + ox], want);
            }
}

TEST(CudaHostEmulation, FillMatrixBroadcastsC) {
  GRAFT_HOST_PROGRAM(p, "kFillSource");
  auto fill = p.function<void (*)(float*, const float*, i64, i64, i64, i64)>("graft_fill_matrix");
  std::vector<float> c{1, 2, 3}, y(12);
  p.run(1, 32, [&] { fill(y.data(), c.data(), 4, 3, 0, 1); });  // C [3] over [4, 3]
  for (int r = 0; r < 4; ++r)
    for (int k = 0; k < 3; ++k) ASSERT_EQ(y[r * 3 + k], c[k]);
}

}  // namespace
}  // namespace graft::testing
