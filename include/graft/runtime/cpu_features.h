/// \file
/// The CPU features an artifact's native code may rely on, as a bit mask
/// stored in the artifact header and compared with the loading machine's.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace graft::runtime {

/// One bit per feature; values are part of the artifact format (never renumber).
enum class CpuFeature : uint64_t {
  sse4_2 = 1u << 0,
  avx = 1u << 1,
  avx2 = 1u << 2,
  fma = 1u << 3,
  avx512f = 1u << 4,
  avx512bw = 1u << 5,
  avx512vl = 1u << 6,
  avx512vnni = 1u << 7,
  f16c = 1u << 8,
};

/// The features of the machine running this process (0 on non-x86 machines).
uint64_t host_cpu_features();

/// "sse4.2, avx, avx2"; bits this graft does not know read "feature bit 40".
std::string cpu_feature_names(uint64_t mask);

/// The machine's architecture as the compiler saw it: "x86_64", "aarch64", ...
std::string_view host_architecture();

}  // namespace graft::runtime
