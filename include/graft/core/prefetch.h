/// \file
/// Software prefetch that the compiler keeps.
#pragma once

namespace graft {

/// Asks the CPU to start fetching the cache line holding `address`, for
/// reading soon. `__builtin_prefetch` alone has no side effect in GCC's eyes,
/// so a loop whose only work is prefetching (over a node's inputs, a fused
/// node's members) is deleted as dead code; the empty asm statement that uses
/// the address is a side effect that keeps the loop and the prefetch, and
/// costs nothing else (no instruction, no memory clobber).
inline void prefetch(const void* address) {
  __builtin_prefetch(address);
#if defined(__GNUC__)
  asm volatile("" : : "r"(address));
#endif
}

}  // namespace graft
