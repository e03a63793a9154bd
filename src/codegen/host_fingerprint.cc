// The host fingerprint of the CPU JIT (see host_fingerprint.h). The CPUID
// leaves are those LLVM 14's sys::getHostCPUName and getHostCPUFeatures
// read (vendor, family/model/stepping, feature flags of leaves 1, 7.0, 7.1,
// 0xd.1, 0x14, 0x19, 0x80000001, 0x80000008) plus the brand string, without
// the registers that differ between the cores of one machine (leaf 1 EBX:
// the APIC id) or between runs.
#include "host_fingerprint.h"

#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>

#include "llvm_jit.h"

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace graft::codegen {

#if defined(__x86_64__) && defined(GRAFT_LLVM_JIT_PLUGIN)

namespace {

std::string cpu_identity() {
  std::string text;
  auto append = [&](unsigned value) {
    char hex[10];
    std::snprintf(hex, sizeof hex, "%08x.", value);
    text += hex;
  };
  unsigned a, b, c, d;
  __cpuid(0, a, b, c, d);
  unsigned max_leaf = a;
  append(a), append(b), append(c), append(d);
  __cpuid(1, a, b, c, d);
  append(a), append(c), append(d);
  auto leaf = [&](unsigned number, unsigned sub) {
    if (number > max_leaf) return append(0), append(0), append(0), append(0);
    __cpuid_count(number, sub, a, b, c, d);
    append(a), append(b), append(c), append(d);
  };
  leaf(7, 0), leaf(7, 1), leaf(0xd, 1), leaf(0x14, 0), leaf(0x19, 0);
  __cpuid(0x80000000, a, b, c, d);
  unsigned max_extended = a;
  append(a);
  for (unsigned number : {0x80000001u, 0x80000002u, 0x80000003u, 0x80000004u, 0x80000008u}) {
    if (number > max_extended) {
      append(0);
      continue;
    }
    __cpuid(number, a, b, c, d);
    append(a), append(b), append(c), append(d);
  }
  __cpuid(1, a, b, c, d);
  if (c & (1u << 27)) {  // OSXSAVE: XCR0 says which register states the OS saves
    unsigned low, high;
    __asm__ volatile("xgetbv" : "=a"(low), "=d"(high) : "c"(0));
    append(low), append(high);
  }
  return text;
}

}  // namespace

std::optional<std::string> cpu_host_fingerprint() {
  static const std::string cpu = cpu_identity();
  static const std::optional<std::string> plugin = []() -> std::optional<std::string> {
    std::string path = llvm_jit_plugin_path();
    struct stat info {};
    if (path.empty() || ::stat(path.c_str(), &info) != 0) return std::nullopt;
    return path + "|" + std::to_string(info.st_size) + "|" + std::to_string(info.st_mtim.tv_sec) + "." +
           std::to_string(info.st_mtim.tv_nsec);
  }();
  if (!plugin) return std::nullopt;
  const char* lanes = std::getenv("GRAFT_JIT_LANES");
  return "graft-cpu-host-1|" + *plugin + "|cpuid " + cpu + "|lanes " + (lanes ? lanes : "-");
}

#else

std::optional<std::string> cpu_host_fingerprint() { return std::nullopt; }

#endif

}  // namespace graft::codegen
