/// \file
/// The JIT compile cache of fused pointwise kernels, for both targets: CPU
/// object code (LLVM) and CUDA PTX (NVRTC).
///
/// Key: hash of the canonical kernel IR (which holds the input dtypes), the
/// target, and for "cpu" the LLVM version, target triple, host CPU name and
/// features and the emitter version; for "cuda" the virtual architecture,
/// the NVRTC version and the generated source (so an emitter change is a new
/// key). Never shapes: a kernel compiled once runs at every shape.
///
/// Levels: in memory, always; on disk when GRAFT_CACHE_DIR names a directory
/// (created when missing). A disk entry is the object code with a header and a
/// checksum, written to a temporary file and renamed into place, so readers
/// never see a partial entry and concurrent writers (threads or processes)
/// both succeed; an entry that is corrupt or truncated is a miss (counted in
/// disk_rejects) and is rewritten.
///
/// Without LLVM: beside the entries, a record (<fingerprint hash>.gkt, same
/// header and checksum) holds the target LLVM reported for this host (its
/// fingerprint: plugin file, CPUID, GRAFT_JIT_LANES). A process that finds
/// it computes keys without loading the LLVM plugin, and graft's own object
/// linker (x86-64 Linux) links the checksummed entries into the process, so
/// a process whose kernels are all cached never maps libLLVM (80-100 ms and
/// about 58 MiB). The plugin loads only when a kernel must be compiled.
///
/// Environment: GRAFT_JIT=0 forces the interpreter, GRAFT_JIT=1 (default)
/// uses the LLVM JIT when built in. A JIT failure never fails a run: graft
/// warns once on stderr and interprets the kernel.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "graft/codegen/kernel_runner.h"

namespace graft::codegen {

/// Counters of the cache (public for tests and benchmarks).
struct CompileCounters {
  std::atomic<uint64_t> compiles{0};       ///< kernels compiled by LLVM
  std::atomic<uint64_t> memory_hits{0};    ///< served from memory
  std::atomic<uint64_t> disk_hits{0};      ///< loaded from GRAFT_CACHE_DIR
  std::atomic<uint64_t> disk_rejects{0};   ///< corrupt or truncated disk entries replaced
  std::atomic<uint64_t> interpreted{0};    ///< kernels handed to the interpreter
  std::atomic<uint64_t> native_links{0};   ///< kernels (compiled or from disk) linked by graft's object linker, not LLJIT
  std::atomic<uint64_t> cuda_compiles{0};  ///< CUDA kernels compiled to PTX by NVRTC
  std::atomic<uint64_t> cuda_memory_hits{0};  ///< PTX served from memory
  std::atomic<uint64_t> cuda_disk_hits{0};    ///< PTX loaded from GRAFT_CACHE_DIR
  std::atomic<uint64_t> opencl_builds{0};     ///< OpenCL programs built by the device's compiler
  std::atomic<uint64_t> opencl_memory_hits{0};  ///< OpenCL kernels made from a program built before
  std::atomic<uint64_t> opencl_disk_hits{0};    ///< OpenCL programs loaded from binaries in GRAFT_CACHE_DIR
};

/// Whether GRAFT_JIT allows the JIT: unset or "1" -> true, "0" -> false;
/// anything else throws invalid_argument naming GRAFT_JIT.
bool jit_enabled_by_environment();
/// The disk cache directory from GRAFT_CACHE_DIR (nullopt when unset or
/// empty). Creates it when missing; throws invalid_argument naming
/// GRAFT_CACHE_DIR when it is not a directory or cannot be created. A
/// directory that cannot be written is used read-only, with one warning.
std::optional<std::string> cache_directory_from_environment();

/// Empty when the LLVM JIT compiles fused kernels on this machine (it loads
/// the plugin); otherwise why not (built without LLVM, the plugin missing).
std::string cpu_jit_unavailable_reason();
/// What CPU object code is compiled for: LLVM version, target triple, host
/// CPU name and features (throws unsupported without the JIT).
std::string cpu_jit_target();
/// Whether this process has loaded the LLVM JIT plugin (libLLVM); never
/// loads it. False in a process whose fused kernels all came from the disk
/// cache.
bool cpu_jit_loaded();

/// The process-wide cache of compiled CPU kernels.
class CompileCache {
 public:
  /// The one cache of the process.
  static CompileCache& global();

  /// A runner for `ir` (canonical form expected) on the CPU: the JIT-compiled
  /// kernel from memory, disk or a fresh compile, or the interpreter when the
  /// JIT is disabled, unavailable or fails.
  std::shared_ptr<const KernelRunner> cpu_runner(const ir::KernelIR& ir);
  /// What fused modules use: a runner that interprets `ir` until cpu_runner()
  /// has produced its kernel on a background thread (loading LLVM and
  /// compiling: 5-30 ms the first run of a process would otherwise wait for),
  /// and runs that kernel from then on. Background compiles start once
  /// start_background_compiles() was called (Session::run calls it when a
  /// run has finished: the first run has the cores to itself). Environment
  /// errors (GRAFT_JIT, GRAFT_CACHE_DIR) are thrown here, not in the
  /// background. Destroying the runner cancels its compile if it has not
  /// started and waits for it if it has.
  std::shared_ptr<const KernelRunner> cpu_runner_in_background(const ir::KernelIR& ir);
  /// Lets queued and future background compiles run (from now on, for the
  /// rest of the process).
  void start_background_compiles();
  /// Starts background compiles and blocks until every one queued so far has
  /// finished (tests and benchmarks that count compiles or need the kernel).
  void wait_for_background_compiles();
  /// The cache key of `ir` on the CPU target (hex), or "" without a JIT
  /// (loads the plugin).
  std::string cpu_key(const ir::KernelIR& ir) const;

  /// PTX of `ir` for the CUDA virtual architecture `architecture`
  /// ("compute_90"), from memory, GRAFT_CACHE_DIR or a fresh NVRTC compile
  /// (then kept in both). What CudaKernel loads. Throws unsupported without
  /// NVRTC and internal with NVRTC's log when the kernel does not compile
  /// (there is no interpreter to fall back to on a GPU).
  std::shared_ptr<const std::string> cuda_ptx(const ir::KernelIR& ir, const std::string& architecture);
  /// The cache key of `ir` on the CUDA target (hex); throws unsupported
  /// without NVRTC (its version is part of the key).
  std::string cuda_key(const ir::KernelIR& ir, const std::string& architecture) const;

  CompileCounters& counters() { return counters_; }
  /// Drops the in-memory entries, CPU and CUDA (tests: forces disk or compile
  /// next time).
  void clear_memory();
  /// Test hook: make every compile throw, as a broken code generator would.
  void set_fail_compiles_for_testing(bool fail) { fail_compiles_ = fail; }
  /// Test hook: forget that the JIT-failure warning was printed.
  void reset_warning_for_testing() { warned_ = false; }

 private:
  std::shared_ptr<const KernelRunner> compile_or_load(const ir::KernelIR& ir, const std::string& key);
  /// The kernel from memory or a valid disk entry, linked without LLVM when
  /// the plugin is not loaded (the target from this host's record); nullptr
  /// when neither holds it or it does not link. Never loads the plugin.
  std::shared_ptr<const KernelRunner> cached_cpu_runner(const ir::KernelIR& ir);
  /// A runner for the object code of `key`: linked by graft's linker, or by
  /// LLJIT when that refuses it (then the plugin must be loaded).
  std::shared_ptr<const KernelRunner> link(const ir::KernelIR& ir, const std::string& object, const std::string& key,
                                           const std::string& target, bool llvm_fallback);
  /// Writes this host's target record into `dir` unless it holds it (once
  /// per folder and process; the plugin is loaded).
  void record_cpu_target(const std::string& dir);
  void warn_once(const std::string& message);

  std::mutex mutex_;
  std::unordered_map<std::string, std::shared_ptr<const KernelRunner>> memory_;
  std::unordered_map<std::string, std::shared_ptr<const std::string>> ptx_memory_;
  std::unordered_set<std::string> recorded_folders_;  // folders whose target record this process checked
  CompileCounters counters_;
  std::atomic<bool> fail_compiles_{false};
  std::atomic<bool> warned_{false};
};

}  // namespace graft::codegen
