#include "graft/runtime/cpu_features.h"

#include <utility>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace graft::runtime {

namespace {

#if defined(__x86_64__) || defined(__i386__)
/// F16C: CPUID leaf 1, ECX bit 29, usable where AVX is (its VEX encoding);
/// clang's __builtin_cpu_supports does not know the name "f16c".
bool host_has_f16c() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return __builtin_cpu_supports("avx") && __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_F16C) != 0;
}
#endif

constexpr std::pair<CpuFeature, const char*> kNames[] = {
    {CpuFeature::sse4_2, "sse4.2"},     {CpuFeature::avx, "avx"},           {CpuFeature::avx2, "avx2"},
    {CpuFeature::fma, "fma"},           {CpuFeature::avx512f, "avx512f"},   {CpuFeature::avx512bw, "avx512bw"},
    {CpuFeature::avx512vl, "avx512vl"}, {CpuFeature::avx512vnni, "avx512vnni"}, {CpuFeature::f16c, "f16c"},
};
}  // namespace

uint64_t host_cpu_features() {
  uint64_t mask = 0;
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  auto add = [&](bool present, CpuFeature f) {
    if (present) mask |= static_cast<uint64_t>(f);
  };
  add(__builtin_cpu_supports("sse4.2"), CpuFeature::sse4_2);
  add(__builtin_cpu_supports("avx"), CpuFeature::avx);
  add(__builtin_cpu_supports("avx2"), CpuFeature::avx2);
  add(__builtin_cpu_supports("fma"), CpuFeature::fma);
  add(__builtin_cpu_supports("avx512f"), CpuFeature::avx512f);
  add(__builtin_cpu_supports("avx512bw"), CpuFeature::avx512bw);
  add(__builtin_cpu_supports("avx512vl"), CpuFeature::avx512vl);
  add(__builtin_cpu_supports("avx512vnni"), CpuFeature::avx512vnni);
  add(host_has_f16c(), CpuFeature::f16c);
#endif
  return mask;
}

std::string cpu_feature_names(uint64_t mask) {
  std::string out;
  for (const auto& [feature, name] : kNames) {
    if (!(mask & static_cast<uint64_t>(feature))) continue;
    out += (out.empty() ? "" : ", ") + std::string(name);
    mask &= ~static_cast<uint64_t>(feature);
  }
  for (int bit = 0; bit < 64; ++bit)
    if (mask & (uint64_t{1} << bit)) out += (out.empty() ? "" : ", ") + std::string("feature bit ") + std::to_string(bit);
  return out.empty() ? "none" : out;
}

std::string_view host_architecture() {
#if defined(__x86_64__)
  return "x86_64";
#elif defined(__aarch64__)
  return "aarch64";
#elif defined(__i386__)
  return "i386";
#else
  return "unknown";
#endif
}

}  // namespace graft::runtime
