#include "graft/core/kernel_interrupt.h"

namespace graft {

namespace {
thread_local KernelInterrupt tls_kernel_interrupt;
}  // namespace

KernelInterrupt current_kernel_interrupt() { return tls_kernel_interrupt; }

ScopedKernelInterrupt::ScopedKernelInterrupt(KernelInterrupt interrupt) : previous_(tls_kernel_interrupt) {
  tls_kernel_interrupt = interrupt;
}

ScopedKernelInterrupt::~ScopedKernelInterrupt() { tls_kernel_interrupt = previous_; }

void check_kernel_interrupt() {
  const KernelInterrupt& interrupt = tls_kernel_interrupt;
  if (interrupt.check) interrupt.check(interrupt.state);
}

}  // namespace graft
