// Kernel IR as C99 (see c_kernel_source.h): the shared C-family renderer
// (c_source.cc) in its C dialect, and the prelude that dialect calls.
#include "graft/codegen/c_kernel_source.h"

#include "c_source.h"

namespace graft::codegen {

namespace {

// exp, erf and tanh without libm calls, branch-free so that -O3 vectorizes
// the loops around them (glibc's vector math is only declared under
// -ffast-math, which would also change NaN and rounding semantics).
constexpr const char* kFloatHelpers =
    "/* cond ? a : b on the bits: GCC if-converts (and so vectorizes) this where it keeps a branch for ?:. */\n"
    "static inline float graft_select(int cond, float a, float b) {\n"
    "  union { float f; int32_t i; } ua, ub, r;\n"
    "  ua.f = a;\n"
    "  ub.f = b;\n"
    "  const int32_t mask = -cond;\n"
    "  r.i = (ua.i & mask) | (ub.i & ~mask);\n"
    "  return r.f;\n"
    "}\n"
    "/* exp: Cephes range reduction and degree-6 polynomial (about 1 ulp); the power of two is applied in\n"
    " * two halves so that results near the top of the range and denormals come out right. */\n"
    "static inline float graft_expf(float x) {\n"
    "  float c = graft_select(x > 88.7228394f, 88.7228394f, x);\n"
    "  c = graft_select(c < -103.972084f, -103.972084f, c);\n"
    "  const float t = c * 1.44269504088896341f;\n"
    "  const int32_t n = (int32_t)(t + (t < 0.0f ? -0.5f : 0.5f));  /* round to nearest */\n"
    "  const float r = c - (float)n * 0.693359375f + (float)n * 2.12194440e-4f;\n"
    "  float p = 1.9875691500e-4f;\n"
    "  p = p * r + 1.3981999507e-3f;\n"
    "  p = p * r + 8.3334519073e-3f;\n"
    "  p = p * r + 4.1665795894e-2f;\n"
    "  p = p * r + 1.6666665459e-1f;\n"
    "  p = p * r + 5.0000001201e-1f;\n"
    "  p = p * r * r + r + 1.0f;\n"
    "  const int32_t half = n >> 1;\n"
    "  union { int32_t i; float f; } s1, s2;\n"
    "  s1.i = (half + 127) << 23;\n"
    "  s2.i = (n - half + 127) << 23;\n"
    "  const float y = p * s1.f * s2.f;\n"
    "  return graft_select(x > 88.7228394f, INFINITY, graft_select(x < -103.972084f, 0.0f, y));\n"
    "}\n"
    "/* erf: Abramowitz and Stegun 7.1.26 (absolute error below 1.5e-7). */\n"
    "static inline float graft_erff(float x) {\n"
    "  const float a = fabsf(x);\n"
    "  const float t = 1.0f / (1.0f + 0.3275911f * a);\n"
    "  const float poly = t * (0.254829592f + t * (-0.284496736f + t * (1.421413741f + t * (-1.453152027f + t * "
    "1.061405429f))));\n"
    "  const float y = 1.0f - poly * graft_expf(-a * a);\n"
    "  return copysignf(y, x);\n"
    "}\n"
    "/* tanh from exp; a cubic near 0 keeps the relative error small there. */\n"
    "static inline float graft_tanhf(float x) {\n"
    "  const float a = fabsf(x);\n"
    "  const float big = 1.0f - 2.0f / (graft_expf(2.0f * a) + 1.0f);\n"
    "  const float y = graft_select(a < 0.004f, a * (1.0f - a * a * (1.0f / 3.0f)), big);\n"
    "  return copysignf(y, x);\n"
    "}\n";

}  // namespace

std::string c_kernel_prelude() {
  return std::string("#include <math.h>\n#include <stdbool.h>\n#include <stdint.h>\n\n") + kFloatHelpers +
         "/* Integer rules of the reference kernels: wrapping, x / 0 = 0, exact powers, saturating float to int. */\n" +
         integer_helpers(kC99Dialect) + "\n";
}

std::string c_kernel_type(DType t) { return c_type(t, kC99Dialect); }

void emit_c_kernel_values(std::ostream& out, const ir::KernelIR& ir, const std::string& indent,
                          const std::string& prefix, const std::function<std::string(const ir::Expr&)>& load) {
  emit_values(out, ir, kC99Dialect, indent, load, prefix);
}

}  // namespace graft::codegen
