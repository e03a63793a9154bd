// Hand-written CUDA sources of the backend compiled for the host (see
// cuda_host_emulation_test.cc): the host C++ compiler behind a shim that
// makes CUDA's thread indices thread-locals, runs every thread of a block as
// a std::thread, and turns __syncthreads and warp shuffles into barriers.
// Each kernel also gets an entry `graft_call_<name>(void** params)` taking
// cuLaunchKernel's argument array, so that the stand-in driver
// (fake_libcuda.cc) can launch it from cuLaunchKernel.
#pragma once

#include <dlfcn.h>
#include <unistd.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <functional>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "cuda/cuda_kernel.h"
#include "graft/codegen/compile_cache.h"
#include "graft/codegen/cuda_emitter.h"
#include "graft/ir/kernel_ir.h"

namespace graft::testing {

inline const char* const kCudaHostShim = R"(
#include <barrier>
#include <cmath>
#include <cstring>
#include <thread>
#include <vector>
struct graft_dim3 { unsigned x, y, z; };
thread_local graft_dim3 threadIdx{0, 0, 0}, blockIdx{0, 0, 0};
graft_dim3 blockDim{1, 1, 1}, gridDim{1, 1, 1};
thread_local std::barrier<>* graft_block_barrier = nullptr;
thread_local std::barrier<>* graft_warp_barrier = nullptr;
thread_local float* graft_warp_slots = nullptr;
#define __global__
#define __device__
#define __forceinline__ inline
#define __shared__ static
inline float __int_as_float(unsigned u) { float f; std::memcpy(&f, &u, 4); return f; }
inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
inline unsigned __umulhi(unsigned a, unsigned b) { return static_cast<unsigned>((static_cast<unsigned long long>(a) * b) >> 32); }
inline double __longlong_as_double(long long i) { double d; std::memcpy(&d, &i, 8); return d; }
inline void __syncthreads() { graft_block_barrier->arrive_and_wait(); }
inline float __shfl_xor_sync(unsigned, float v, int offset) {
  const unsigned lane = threadIdx.x & 31;
  graft_warp_slots[lane] = v;
  graft_warp_barrier->arrive_and_wait();
  const float r = graft_warp_slots[lane ^ offset];
  graft_warp_barrier->arrive_and_wait();
  return r;
}
// Runs body() as every thread of a grid of `blocks` x `threads` (threads a
// multiple of 32): one std::thread per thread of a block, each running its
// part of every block in turn, with a barrier between blocks (so that
// __shared__ memory is one block's at a time).
extern "C" void graft_host_launch(unsigned blocks, unsigned threads, void (*body)(void*), void* context) {
  blockDim.x = threads;
  gridDim.x = blocks;
  std::barrier<> block(threads);
  std::vector<std::barrier<>*> warps;
  std::vector<std::vector<float>> slots;
  for (unsigned w = 0; w < threads / 32; ++w) {
    warps.push_back(new std::barrier<>(32));
    slots.emplace_back(32);
  }
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      threadIdx.x = t;
      graft_block_barrier = &block;
      graft_warp_barrier = warps[t / 32];
      graft_warp_slots = slots[t / 32].data();
      for (unsigned b = 0; b < blocks; ++b) {
        blockIdx.x = b;
        body(context);
        block.arrive_and_wait();
      }
    });
  for (auto& thread : pool) thread.join();
  for (auto* w : warps) delete w;
}
)";

/// After the source: a caller per kernel taking cuLaunchKernel's arguments.
inline const char* const kCudaHostCallers = R"(
#include <type_traits>
#include <utility>
template <typename... A, size_t... I>
void graft_invoke(void (*f)(A...), void** p, std::index_sequence<I...>) {
  f(*static_cast<std::remove_cv_t<std::remove_reference_t<A>>*>(p[I])...);
}
template <typename... A>
void graft_invoke(void (*f)(A...), void** p) {
  graft_invoke(f, p, std::index_sequence_for<A...>{});
}
)";

/// The kernels (extern "C" __global__ functions) of a CUDA source, also those
/// a macro defines (GRAFT_STRIDED(graft_strided_copy_4, ...)).
inline std::set<std::string> cuda_kernel_names(const std::string& source) {
  std::set<std::string> names;
  std::regex direct(R"re(extern "C" __global__ void (graft_\w+)\()re"), macro(R"re(\n(GRAFT_[A-Z_]+)\((graft_\w+),)re");
  for (std::sregex_iterator i(source.begin(), source.end(), direct), end; i != end; ++i) names.insert((*i)[1]);
  for (std::sregex_iterator i(source.begin(), source.end(), macro), end; i != end; ++i) names.insert((*i)[2]);
  return names;
}

/// A registered source compiled for the host and loaded.
class CudaHostProgram {
 public:
  /// The registered source whose name starts with `name_prefix`.
  explicit CudaHostProgram(const std::string& name_prefix) {
    const char* source = nullptr;
    for (const auto& [name, text] : cuda::registered_sources())
      if (name.rfind(name_prefix, 0) == 0) source = text;
    if (!source) {
      error_ = "no registered source " + name_prefix;
      return;
    }
    std::string callers;
    for (const std::string& kernel : cuda_kernel_names(source))
      callers += "extern \"C\" void graft_call_" + kernel + "(void** p) { graft_invoke(&" + kernel + ", p); }\n";
    build(name_prefix, source, callers);
  }
  /// Host text already adapted (body) with its callers: see CudaHostPointwise.
  CudaHostProgram(const std::string& label, const std::string& body, const std::string& callers) {
    build(label, body, callers);
  }
  ~CudaHostProgram() {
    if (handle_) dlclose(handle_);
  }
  const std::string& error() const { return error_; }
  /// The shared object it was compiled into.
  const std::string& path() const { return path_; }
  template <typename F>
  F function(const char* name) const {
    auto f = reinterpret_cast<F>(dlsym(handle_, name));
    EXPECT_NE(f, nullptr) << name;
    return f;
  }
  /// Runs `kernel()` as every thread of blocks x threads.
  void run(uint64_t blocks, unsigned threads, const std::function<void()>& kernel) const {
    launch_(static_cast<unsigned>(blocks), threads, [](void* c) { (*static_cast<const std::function<void()>*>(c))(); },
            const_cast<std::function<void()>*>(&kernel));
  }

 private:
  void build(const std::string& label, const std::string& body, const std::string& callers) {
    const std::string dir = ::testing::TempDir();
    static int serial = 0;  // a new file each time: a loaded one may stay mapped
    const std::string stem =
        dir + "/graft_host_" + label + "_" + std::to_string(getpid()) + "_" + std::to_string(serial++);
    const std::string cc = stem + ".cc", so = stem + ".so";
    std::ofstream file(cc);
    file << kCudaHostShim << body << kCudaHostCallers << callers;
    file.close();
    path_ = so;
    const std::string command = "c++ -std=c++20 -O1 -shared -fPIC -pthread -w -o " + so + " " + cc + " 2>&1";
    if (std::system(command.c_str()) != 0) {
      error_ = "the host compiler failed: " + command;
      return;
    }
    handle_ = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle_) error_ = dlerror();
    launch_ = reinterpret_cast<Launch>(handle_ ? dlsym(handle_, "graft_host_launch") : nullptr);
  }
  using Launch = void (*)(unsigned, unsigned, void (*)(void*), void*);
  void* handle_ = nullptr;
  Launch launch_ = nullptr;
  std::string error_;
  std::string path_;
};

/// FNV-1a of a NUL-terminated text: how the stand-in driver recognizes the
/// PTX of a pointwise kernel (GRAFT_FAKE_CUDA_MODULES, fake_libcuda.cc).
inline uint64_t fake_cuda_ptx_hash(const char* text) {
  uint64_t h = 1469598103934665603ULL;
  for (; *text; ++text) h = (h ^ static_cast<unsigned char>(*text)) * 1099511628211ULL;
  return h;
}

/// Pointwise kernels of the CUDA emitter built for the host: the emitted
/// source with the prelude's PTX-assembly helpers (NaN tests, float16
/// conversions) replaced by host ones, each kernel in a namespace of its own
/// and named graft_kernel_<n>. add() gives the GRAFT_FAKE_CUDA_MODULES entry
/// mapping the kernel's PTX to it; build() compiles them all at once.
class CudaHostPointwise {
 public:
  /// Adds `ir` (as the backend compiles it, for `architecture`).
  void add(const ir::KernelIR& ir, const std::string& architecture) {
    std::shared_ptr<const std::string> ptx = codegen::CompileCache::global().cuda_ptx(ir, architecture);
    const uint64_t hash = fake_cuda_ptx_hash(ptx->c_str());
    if (!seen_.insert(hash).second) return;
    const std::string name = "graft_kernel_" + std::to_string(count_++);
    std::string source = codegen::emit_cuda_source(ir, name);
    const std::string from = "// NaN tests that the compilers cannot see through";
    const std::string to = "__device__ __forceinline__ float graft_round_half";
    size_t a = source.find(from), b = source.find(to);
    ASSERT_NE(a, std::string::npos);
    ASSERT_NE(b, std::string::npos);
    source.replace(a, b - a, R"(
inline bool graft_isnan(float x) { return x != x; }
inline bool graft_isnan(double x) { return x != x; }
inline float graft_h2f(unsigned short h) { _Float16 v; std::memcpy(&v, &h, 2); return (float)v; }
inline unsigned short graft_f2h(float f) { _Float16 v = (_Float16)f; unsigned short h; std::memcpy(&h, &v, 2); return h; }
)");
    body_ += "namespace graft_k" + std::to_string(count_) + " {\n" + source + "}\n";
    callers_ += "extern \"C\" void graft_call_" + name + "(void** p) { graft_invoke(&graft_k" +
                std::to_string(count_) + "::" + name + ", p); }\n";
    entries_.push_back(std::to_string(hash) + "=" + name);
  }
  /// Compiles what was added; GRAFT_FAKE_CUDA_MODULES is then `modules()`.
  std::unique_ptr<CudaHostProgram> build() const {
    return std::make_unique<CudaHostProgram>("pointwise", body_, callers_);
  }
  /// "hash=path#kernel:..." for the program `built` compiled.
  std::string modules(const CudaHostProgram& built) const {
    std::string list;
    for (const std::string& e : entries_) {
      size_t eq = e.find('=');
      list += (list.empty() ? "" : ":") + e.substr(0, eq) + "=" + built.path() + "#" + e.substr(eq + 1);
    }
    return list;
  }
  size_t size() const { return entries_.size(); }

 private:
  std::set<uint64_t> seen_;
  size_t count_ = 0;
  std::string body_, callers_;
  std::vector<std::string> entries_;
};

/// Skips without a host C++ compiler; else `var` is the compiled `prefix` source.
#define GRAFT_HOST_PROGRAM(var, prefix)                                                             \
  if (std::system("c++ --version > /dev/null 2>&1") != 0) GTEST_SKIP() << "no host C++ compiler"; \
  CudaHostProgram var(prefix);                                                                      \
  ASSERT_EQ(var.error(), "")

}  // namespace graft::testing
