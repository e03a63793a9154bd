/// \file
/// OpenMP thread counts for oneDNN primitives. oneDNN (built on OpenMP, like
/// graft) reads omp_get_max_threads() both when a primitive is created (many
/// implementations fix their thread count then, so a run on fewer threads
/// uses every forward primitive made again for its count:
/// dnnl_thread_variants.h) and when it runs. Internal to backends/dnnl.
#pragma once

#include <omp.h>

#include <cctype>
#include <cstdlib>
#include <cstring>

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
/// thread alone, without a parallel region. Starting a parallel region costs
/// a few microseconds while the other OpenMP threads spin-wait (libgomp's
/// default), so only tiny steps run serially then; when they sleep between
/// regions (OMP_WAIT_POLICY=PASSIVE, or GOMP_SPINCOUNT=0) each region pays a
/// futex wake-up and a sleeping barrier, tens to hundreds of microseconds on
/// a virtual machine, and steps estimated at up to a millisecond are faster
/// on one thread (the estimates below run a few times above measured times on
/// AVX-512). Figures in docs/dnnl.md.
inline constexpr double kSerialStepMicroseconds = 20.0;
inline constexpr double kSerialStepMicrosecondsPassive = 1000.0;

/// kSerialStepMicrosecondsPassive when the OpenMP runtime's idle threads
/// sleep (read from the environment libgomp reads), else kSerialStepMicroseconds.
inline double serial_step_microseconds() {
  auto equals_ignoring_case = [](const char* value, const char* word) {
    for (; *value && *word; ++value, ++word)
      if (std::tolower(static_cast<unsigned char>(*value)) != *word) return false;
    return *value == *word;
  };
  const char* policy = std::getenv("OMP_WAIT_POLICY");
  const char* spin_count = std::getenv("GOMP_SPINCOUNT");
  bool passive = (policy && equals_ignoring_case(policy, "passive")) || (spin_count && std::strcmp(spin_count, "0") == 0);
  return passive ? kSerialStepMicrosecondsPassive : kSerialStepMicroseconds;
}

/// Threads of oneDNN 2.6's batch normalization over batch statistics
/// (training mode: the forward and the backward). Its jit implementation
/// synchronizes its threads with a spin barrier of its own between the
/// passes over the data, whatever OMP_WAIT_POLICY says; on a machine whose
/// cores other processes share, a thread that loses its core holds the other
/// at the barrier for a scheduler time slice, and a call over [16,64,112,112]
/// took 15-95 ms on two threads against 10-15 ms on one (figures in
/// docs/training.md). One thread has no barrier to wait at.
inline constexpr int kBatchStatisticsThreads = 1;

/// Throughputs of one core the estimates assume: convolution and matmul
/// arithmetic (small shapes, far below peak) and bytes moved by memory-bound
/// steps.
inline constexpr double kFlopsPerMicrosecond = 30e3;
inline constexpr double kBytesPerMicrosecond = 10e3;

}  // namespace graft::dnnl_backend
