// graft's own linker for the CPU emitter's object code (private to
// src/codegen): what lets a process run kernels from GRAFT_CACHE_DIR without
// loading LLVM (libLLVM costs 80-100 ms to map and relocate, and about
// 58 MiB of resident memory).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

namespace graft::codegen {

/// Relocatable object code linked into this process: its sections copied
/// into fresh pages, relocated, code pages made read + execute and the rest
/// read-only (writable sections stay writable). Only what the CPU emitter
/// produces is accepted: ELF64, little endian, x86-64, ET_REL, RELA
/// relocations of the small and large code models (absolute 64-bit,
/// PC-relative, GOT-relative and GOT entries), undefined symbols found in
/// the process (libm's sin, cos, erf). Anything else throws
/// Error(unsupported) naming it, and the caller links through LLJIT instead.
/// Malformed input (bounds, sizes, indices, names) throws
/// Error(invalid_model); it never reads outside `object`.
class LinkedObject {
 public:
  /// Links `object`. Callers pass only bytes whose checksum they verified
  /// (the compile cache's entries): linked code runs with the process's rights.
  static std::shared_ptr<const LinkedObject> link(std::string_view object);

  LinkedObject(const LinkedObject&) = delete;
  LinkedObject& operator=(const LinkedObject&) = delete;
  ~LinkedObject();

  /// Address of the global symbol `name` defined by the object, or nullptr
  /// (also when the object declares it smaller than `bytes`: a caller that
  /// reads a constant through it asks for the constant's size).
  const void* symbol(const std::string& name, uint64_t bytes = 1) const;

 private:
  LinkedObject() = default;

  void* pages_ = nullptr;  // one mapping: code, then read-only data (with the GOT), then writable data
  size_t size_ = 0;
  struct Symbol {
    const void* address;
    uint64_t size;  // st_size, checked to lie inside its section
  };
  std::unordered_map<std::string, Symbol> symbols_;
};

/// Whether this build links the emitter's object code itself (x86-64 Linux).
bool object_linker_available();

}  // namespace graft::codegen
