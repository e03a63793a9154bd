// Vectorized float32 row primitives, written once on GCC/Clang vector types
// and compiled twice on x86-64: for AVX2+FMA (8 lanes) behind a target
// attribute, and for the baseline (4 lanes, SSE2). The set is chosen once at
// run time from the CPU's features, so the library runs on any x86-64.
//
// exp uses the Cephes single-precision scheme: x = n*ln2 + r with |r| <=
// ln2/2 (n rounded with the 1.5*2^23 trick, ln2 split in two for an exact
// product), exp(r) by a degree-6 minimax polynomial, and 2^n built in the
// exponent bits.
#include "vector_math.h"

#include <cmath>
#include <cstring>
#include <limits>

#if defined(__GNUC__)
#define GRAFT_ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define GRAFT_ALWAYS_INLINE inline
#endif

// The vector helpers below take and return vectors by value; they are always
// inlined into functions of a single target, so no call crosses an ABI.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace graft::ops::vector_math {
namespace {

typedef float Float4 __attribute__((vector_size(16)));
typedef int32_t Int4 __attribute__((vector_size(16)));
typedef float Float8 __attribute__((vector_size(32)));
typedef int32_t Int8 __attribute__((vector_size(32)));

template <typename V>
struct IntOf;
template <>
struct IntOf<Float4> {
  using type = Int4;
};
template <>
struct IntOf<Float8> {
  using type = Int8;
};

template <typename V>
constexpr int kLanes = static_cast<int>(sizeof(V) / sizeof(float));

template <typename V>
GRAFT_ALWAYS_INLINE V load(const float* p) {
  V v;
  std::memcpy(&v, p, sizeof(V));
  return v;
}
template <typename V>
GRAFT_ALWAYS_INLINE void store(float* p, V v) {
  std::memcpy(p, &v, sizeof(V));
}
/// The first `count` lanes from p, the rest `fill`.
template <typename V>
GRAFT_ALWAYS_INLINE V load_partial(const float* p, int64_t count, float fill) {
  V v = V{} + fill;
  for (int64_t i = 0; i < count; ++i) v[i] = p[i];
  return v;
}
template <typename V>
GRAFT_ALWAYS_INLINE float horizontal_sum(V v) {
  float s = 0.0f;
  for (int i = 0; i < kLanes<V>; ++i) s += v[i];
  return s;
}

template <typename V>
GRAFT_ALWAYS_INLINE V exp_nonpositive(V x) {
  using I = typename IntOf<V>::type;
  constexpr float kLowest = -87.3365478515625f;       // exp below is under FLT_MIN
  const V clamped = x < kLowest ? V{} + kLowest : x;  // NaN stays NaN
  const V shifter = V{} + 12582912.0f;                // 1.5 * 2^23: adding rounds to an integer
  const V n = (clamped * 1.44269504088896341f + shifter) - shifter;
  V r = clamped - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  V p = V{} + 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  const I exponent = (__builtin_convertvector(n, I) + 127) << 23;
  V scale;
  std::memcpy(&scale, &exponent, sizeof(V));
  const V y = p * scale;
  return x < kLowest ? V{} : y;
}

template <typename V>
GRAFT_ALWAYS_INLINE float max_impl(const float* x, int64_t n) {
  constexpr int W = kLanes<V>;
  const float lowest = -std::numeric_limits<float>::infinity();
  V m0 = V{} + lowest, m1 = m0;
  int64_t i = 0;
  for (; i + 2 * W <= n; i += 2 * W) {
    const V a = load<V>(x + i), b = load<V>(x + i + W);
    m0 = a > m0 ? a : m0;
    m1 = b > m1 ? b : m1;
  }
  m0 = m1 > m0 ? m1 : m0;
  float m = lowest;
  for (int l = 0; l < W; ++l) m = std::max(m, m0[l]);
  for (; i < n; ++i) m = std::max(m, x[i]);
  return m;
}

template <typename V>
GRAFT_ALWAYS_INLINE float sum_impl(const float* x, int64_t n) {
  constexpr int W = kLanes<V>;
  V s0{}, s1{};
  int64_t i = 0;
  for (; i + 2 * W <= n; i += 2 * W) {
    s0 += load<V>(x + i);
    s1 += load<V>(x + i + W);
  }
  for (; i + W <= n; i += W) s0 += load<V>(x + i);
  float s = horizontal_sum(s0 + s1);
  for (; i < n; ++i) s += x[i];
  return s;
}

template <typename V>
GRAFT_ALWAYS_INLINE float squared_deviation_sum_impl(const float* x, int64_t n, float mean) {
  constexpr int W = kLanes<V>;
  V s0{}, s1{};
  int64_t i = 0;
  for (; i + 2 * W <= n; i += 2 * W) {
    const V a = load<V>(x + i) - mean, b = load<V>(x + i + W) - mean;
    s0 += a * a;
    s1 += b * b;
  }
  for (; i + W <= n; i += W) {
    const V a = load<V>(x + i) - mean;
    s0 += a * a;
  }
  float s = horizontal_sum(s0 + s1);
  for (; i < n; ++i) s += (x[i] - mean) * (x[i] - mean);
  return s;
}

template <typename V>
GRAFT_ALWAYS_INLINE float exp_shifted_sum_impl(const float* x, float* out, int64_t n, float shift) {
  constexpr int W = kLanes<V>;
  V s{};
  int64_t i = 0;
  for (; i + W <= n; i += W) {
    const V e = exp_nonpositive(load<V>(x + i) - shift);
    s += e;
    if (out) store(out + i, e);
  }
  if (i < n) {
    // The tail with padding lanes at -inf, which contribute 0.
    const V e = exp_nonpositive(load_partial<V>(x + i, n - i, -std::numeric_limits<float>::infinity()) - shift);
    s += e;
    if (out)
      for (int64_t j = 0; j < n - i; ++j) out[i + j] = e[j];
  }
  return horizontal_sum(s);
}

template <typename V>
GRAFT_ALWAYS_INLINE void normalize_impl(const float* x, float* y, int64_t n, float mean, float inv_std,
                                        const float* scale, const float* bias) {
  constexpr int W = kLanes<V>;
  int64_t i = 0;
  for (; i + W <= n; i += W) {
    V v = (load<V>(x + i) - mean) * inv_std * load<V>(scale + i);
    if (bias) v += load<V>(bias + i);
    store(y + i, v);
  }
  for (; i < n; ++i) y[i] = (x[i] - mean) * inv_std * scale[i] + (bias ? bias[i] : 0.0f);
}

template <typename V>
GRAFT_ALWAYS_INLINE void affine_impl(const float* x, float* y, int64_t n, float factor, float offset) {
  constexpr int W = kLanes<V>;
  int64_t i = 0;
  for (; i + W <= n; i += W) store(y + i, load<V>(x + i) * factor + offset);
  for (; i < n; ++i) y[i] = x[i] * factor + offset;
}

template <typename V>
GRAFT_ALWAYS_INLINE V sigmoid_vec(V v) {
  const V magnitude = v < 0.0f ? -v : v;
  const V e = exp_nonpositive(-magnitude);  // exp(-|x|), in (0, 1]
  const V s = 1.0f / (1.0f + e);
  return v >= 0.0f ? s : e * s;  // 1 / (1 + e^-x), or e^x / (1 + e^x); NaN stays NaN
}

template <typename V>
GRAFT_ALWAYS_INLINE V tanh_vec(V v) {
  const V magnitude = v < 0.0f ? -v : v;
  const V t = exp_nonpositive(-2.0f * magnitude);
  const V large = (1.0f - t) / (1.0f + t);  // tanh(|x|)
  // Near 0, 1 - t cancels: the Taylor series to x^7 instead (error below
  // 2^-24 relative for |x| < 1/16).
  const V x2 = v * v;
  const V series = v * (1.0f + x2 * (-1.0f / 3.0f + x2 * (2.0f / 15.0f + x2 * (-17.0f / 315.0f))));
  return magnitude < 0.0625f ? series : (v < 0.0f ? -large : large);
}

template <typename V, V (*F)(V)>
GRAFT_ALWAYS_INLINE void map_impl(const float* x, float* y, int64_t n) {
  constexpr int W = kLanes<V>;
  int64_t i = 0;
  for (; i + W <= n; i += W) store(y + i, F(load<V>(x + i)));
  if (i < n) {
    alignas(64) float lanes[W];
    const V v = F(load_partial<V>(x + i, n - i, 0.0f));
    std::memcpy(lanes, &v, sizeof(V));
    std::copy(lanes, lanes + (n - i), y + i);
  }
}

/// One implementation of every primitive.
struct Primitives {
  float (*max)(const float*, int64_t);
  float (*sum)(const float*, int64_t);
  float (*squared_deviation_sum)(const float*, int64_t, float);
  float (*exp_shifted_sum)(const float*, float*, int64_t, float);
  void (*normalize)(const float*, float*, int64_t, float, float, const float*, const float*);
  void (*affine)(const float*, float*, int64_t, float, float);
  void (*sigmoid)(const float*, float*, int64_t);
  void (*tanh)(const float*, float*, int64_t);
};

#define GRAFT_VECTOR_MATH_SET(ATTRIBUTES, SUFFIX, V)                                                              \
  ATTRIBUTES float max_##SUFFIX(const float* x, int64_t n) { return max_impl<V>(x, n); }                          \
  ATTRIBUTES float sum_##SUFFIX(const float* x, int64_t n) { return sum_impl<V>(x, n); }                          \
  ATTRIBUTES float squared_deviation_sum_##SUFFIX(const float* x, int64_t n, float mean) {                        \
    return squared_deviation_sum_impl<V>(x, n, mean);                                                             \
  }                                                                                                               \
  ATTRIBUTES float exp_shifted_sum_##SUFFIX(const float* x, float* out, int64_t n, float shift) {                 \
    return exp_shifted_sum_impl<V>(x, out, n, shift);                                                             \
  }                                                                                                               \
  ATTRIBUTES void normalize_##SUFFIX(const float* x, float* y, int64_t n, float mean, float inv_std,              \
                                     const float* scale, const float* bias) {                                     \
    normalize_impl<V>(x, y, n, mean, inv_std, scale, bias);                                                       \
  }                                                                                                               \
  ATTRIBUTES void affine_##SUFFIX(const float* x, float* y, int64_t n, float factor, float offset) {              \
    affine_impl<V>(x, y, n, factor, offset);                                                                      \
  }                                                                                                               \
  GRAFT_ALWAYS_INLINE V sigmoid_vec_##SUFFIX(V v) { return sigmoid_vec<V>(v); }                                   \
  GRAFT_ALWAYS_INLINE V tanh_vec_##SUFFIX(V v) { return tanh_vec<V>(v); }                                         \
  ATTRIBUTES void sigmoid_##SUFFIX(const float* x, float* y, int64_t n) {                                         \
    map_impl<V, sigmoid_vec_##SUFFIX>(x, y, n);                                                                   \
  }                                                                                                               \
  ATTRIBUTES void tanh_##SUFFIX(const float* x, float* y, int64_t n) { map_impl<V, tanh_vec_##SUFFIX>(x, y, n); } \
  const Primitives primitives_##SUFFIX = {max_##SUFFIX,                                                           \
                                          sum_##SUFFIX,                                                           \
                                          squared_deviation_sum_##SUFFIX,                                         \
                                          exp_shifted_sum_##SUFFIX,                                               \
                                          normalize_##SUFFIX,                                                     \
                                          affine_##SUFFIX,                                                        \
                                          sigmoid_##SUFFIX,                                                       \
                                          tanh_##SUFFIX};

GRAFT_VECTOR_MATH_SET(, baseline, Float4)
#if defined(__x86_64__) && defined(__GNUC__)
GRAFT_VECTOR_MATH_SET(__attribute__((target("avx2,fma"))), avx2, Float8)
#endif

const Primitives& primitives() {
  static const Primitives& chosen = [&]() -> const Primitives& {
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return primitives_avx2;
#endif
    return primitives_baseline;
  }();
  return chosen;
}

}  // namespace

float max(const float* x, int64_t n) { return primitives().max(x, n); }
float sum(const float* x, int64_t n) { return primitives().sum(x, n); }
float squared_deviation_sum(const float* x, int64_t n, float mean) {
  return primitives().squared_deviation_sum(x, n, mean);
}
float exp_shifted_sum(const float* x, float* out, int64_t n, float shift) {
  return primitives().exp_shifted_sum(x, out, n, shift);
}
void normalize(const float* x, float* y, int64_t n, float mean, float inv_std, const float* scale, const float* bias) {
  primitives().normalize(x, y, n, mean, inv_std, scale, bias);
}
void affine(const float* x, float* y, int64_t n, float factor, float offset) {
  primitives().affine(x, y, n, factor, offset);
}
void sigmoid(const float* x, float* y, int64_t n) { primitives().sigmoid(x, y, n); }
void tanh(const float* x, float* y, int64_t n) { primitives().tanh(x, y, n); }

}  // namespace graft::ops::vector_math
