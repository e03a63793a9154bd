/// \file
/// Vectorized float32 row primitives for Softmax, LayerNormalization, the
/// losses and the recurrent layers' gates. Private to src/ops. Each runs on the widest vector unit the CPU
/// has (AVX2+FMA or baseline SSE2 on x86-64), chosen once at run time.
#pragma once

#include <cstdint>

namespace graft::ops::vector_math {

/// Largest element of x[0..n) (-inf for n == 0).
float max(const float* x, int64_t n);
/// Sum of x[0..n).
float sum(const float* x, int64_t n);
/// Sum of (x[i] - mean)^2.
float squared_deviation_sum(const float* x, int64_t n, float mean);
/// out[i] = exp(x[i] - shift) (out may be null, or equal to x) and returns
/// the sum of those values. Meant for shift >= every x[i] (softmax after the
/// maximum): arguments below -87.3 give 0; relative error below 1e-7.
float exp_shifted_sum(const float* x, float* out, int64_t n, float shift);
/// y[i] = (x[i] - mean) * inv_std * scale[i] + (bias ? bias[i] : 0); y may equal x.
void normalize(const float* x, float* y, int64_t n, float mean, float inv_std, const float* scale, const float* bias);
/// y[i] = x[i] * factor + offset; y may equal x.
void affine(const float* x, float* y, int64_t n, float factor, float offset);
/// y[i] = 1 / (1 + exp(-x[i])); y may equal x. Error below 4e-7 relative
/// (exp's, then one division); NaN stays NaN.
void sigmoid(const float* x, float* y, int64_t n);
/// y[i] = tanh(x[i]); y may equal x. Error below 4e-7 absolute and 1e-6
/// relative; NaN stays NaN.
void tanh(const float* x, float* y, int64_t n);

}  // namespace graft::ops::vector_math
