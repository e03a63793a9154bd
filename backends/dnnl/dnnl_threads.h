/// \file
/// OpenMP thread counts for oneDNN primitives. oneDNN (built on OpenMP, like
/// graft) reads omp_get_max_threads() both when a primitive is created (some
/// implementations fix their work split then) and when it runs. Internal to
/// backends/dnnl.
#pragma once

#include <omp.h>

namespace graft::dnnl_backend {

/// Sets the calling thread's OpenMP thread count for the scope; n <= 0 keeps it.
class ScopedOmpThreads {
 public:
  explicit ScopedOmpThreads(int n) : previous_(omp_get_max_threads()) {
    if (n > 0) omp_set_num_threads(n);
  }
  ~ScopedOmpThreads() { omp_set_num_threads(previous_); }
  ScopedOmpThreads(const ScopedOmpThreads&) = delete;
  ScopedOmpThreads& operator=(const ScopedOmpThreads&) = delete;

 private:
  int previous_;
};

/// Estimated single-thread time of a step below which it runs on the calling
/// thread alone. Waking the other OpenMP threads for a parallel region costs
/// tens of microseconds when they sleep between regions (OMP_WAIT_POLICY=
/// PASSIVE, or a busy machine), more than splitting a small step saves; a
/// model such as EfficientNet has dozens of such steps (squeeze-excitation
/// convolutions on 1x1 maps, pooling and reorders of small tensors).
inline constexpr double kSerialStepMicroseconds = 20.0;

/// Throughputs of one core the estimates assume: convolution and matmul
/// arithmetic (small shapes, far below peak) and bytes moved by memory-bound
/// steps.
inline constexpr double kFlopsPerMicrosecond = 30e3;
inline constexpr double kBytesPerMicrosecond = 10e3;

}  // namespace graft::dnnl_backend
