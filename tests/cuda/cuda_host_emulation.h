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

#include "cuda/cuda_kernel.h"

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
inline void __syncthreads() { graft_block_barrier->arrive_and_wait(); }
inline float __shfl_xor_sync(unsigned, float v, int offset) {
  const unsigned lane = threadIdx.x & 31;
  graft_warp_slots[lane] = v;
  graft_warp_barrier->arrive_and_wait();
  const float r = graft_warp_slots[lane ^ offset];
  graft_warp_barrier->arrive_and_wait();
  return r;
}
// Runs body() as every thread of a grid of `blocks` x `threads` (blocks one
// after another, the threads of a block at once; threads a multiple of 32).
extern "C" void graft_host_launch(unsigned blocks, unsigned threads, void (*body)(void*), void* context) {
  blockDim.x = threads;
  gridDim.x = blocks;
  for (unsigned b = 0; b < blocks; ++b) {
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
        blockIdx.x = b;
        graft_block_barrier = &block;
        graft_warp_barrier = warps[t / 32];
        graft_warp_slots = slots[t / 32].data();
        body(context);
      });
    for (auto& thread : pool) thread.join();
    for (auto* w : warps) delete w;
  }
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
  explicit CudaHostProgram(const std::string& name_prefix) {
    const char* source = nullptr;
    for (const auto& [name, text] : cuda::registered_sources())
      if (name.rfind(name_prefix, 0) == 0) source = text;
    if (!source) {
      error_ = "no registered source " + name_prefix;
      return;
    }
    const std::string dir = ::testing::TempDir();
    static int serial = 0;  // a new file each time: a loaded one may stay mapped
    const std::string stem = dir + "/graft_host_" + name_prefix + "_" + std::to_string(getpid()) + "_" +
                             std::to_string(serial++);
    const std::string cc = stem + ".cc", so = stem + ".so";
    std::ofstream file(cc);
    file << kCudaHostShim << source << kCudaHostCallers;
    for (const std::string& kernel : cuda_kernel_names(source))
      file << "extern \"C\" void graft_call_" << kernel << "(void** p) { graft_invoke(&" << kernel << ", p); }\n";
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
  using Launch = void (*)(unsigned, unsigned, void (*)(void*), void*);
  void* handle_ = nullptr;
  Launch launch_ = nullptr;
  std::string error_;
  std::string path_;
};

/// Skips without a host C++ compiler; else `var` is the compiled `prefix` source.
#define GRAFT_HOST_PROGRAM(var, prefix)                                                             \
  if (std::system("c++ --version > /dev/null 2>&1") != 0) GTEST_SKIP() << "no host C++ compiler"; \
  CudaHostProgram var(prefix);                                                                      \
  ASSERT_EQ(var.error(), "")

}  // namespace graft::testing
