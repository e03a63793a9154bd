// What the CPU JIT's target depends on, read without loading LLVM (private
// to src/codegen). The compile cache records, per fingerprint, the target id
// that LLVM reported (llvm_target_id), so that a later process computes its
// cache keys, and runs cached kernels, without loading the plugin.
#pragma once

#include <optional>
#include <string>

namespace graft::codegen {

/// Everything llvm_target_id() is a function of, as text: the plugin file
/// (path, size, modification time: a rebuilt or upgraded plugin, or another
/// LLVM, is another fingerprint), the CPU's identification and feature bits
/// (CPUID leaves that LLVM's host detection reads, and XCR0: which vector
/// registers the OS saves) and GRAFT_JIT_LANES. nullopt where graft cannot
/// tell without LLVM (not x86-64, built without LLVM, no plugin file).
std::optional<std::string> cpu_host_fingerprint();

}  // namespace graft::codegen
