/// \file
/// Stopping a long kernel from inside: the run that calls a kernel installs
/// a check (its deadline and cancellation flag, backend::RunLimits), and the
/// reference kernels that can run long (convolutions, pools, matrix products,
/// recurrent steps) call check_kernel_interrupt() in their outer loops. With
/// no check installed the call is one thread-local load.
#pragma once

namespace graft {

/// Throws (a `cancelled` Error) when the run that `state` describes must stop.
using KernelInterruptCheck = void (*)(const void* state);

/// The check installed on the calling thread, if any.
struct KernelInterrupt {
  KernelInterruptCheck check = nullptr;
  const void* state = nullptr;
};

/// The calling thread's check (parallel_for hands it to its worker threads).
KernelInterrupt current_kernel_interrupt();

/// Installs a check on the calling thread until the guard is destroyed (the
/// previous one is restored then).
class ScopedKernelInterrupt {
 public:
  explicit ScopedKernelInterrupt(KernelInterrupt interrupt);
  ~ScopedKernelInterrupt();
  ScopedKernelInterrupt(const ScopedKernelInterrupt&) = delete;
  ScopedKernelInterrupt& operator=(const ScopedKernelInterrupt&) = delete;

 private:
  KernelInterrupt previous_;
};

/// Throws the installed check's `cancelled` Error when the run must stop;
/// nothing when no check is installed.
void check_kernel_interrupt();

}  // namespace graft
