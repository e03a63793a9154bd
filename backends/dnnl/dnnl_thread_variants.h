/// \file
/// Primitives re-created for fewer OpenMP threads than a program was built
/// for, so that a run that gets fewer cores (runtime::CoreAvailability: a
/// busy co-tenant process) runs on that many threads. Many oneDNN primitives
/// fix their thread count when they are created and then start that many
/// threads whatever the run's count: convolutions, matmuls and inner
/// products (their work split), and in oneDNN 2.6 also the jit reorders and
/// softmaxes (`parallel(pd()->nthr_, ...)`). A run that kept any of those
/// started two-thread regions on a core that a co-tenant holds, and waited
/// for it at each (an adapted resnet18 took 1.7x, BERT 2x the time of a
/// 1-thread session: docs/performance.md). So every forward primitive is
/// created again; those that split their work at run time lose nothing by
/// it. Internal to backends/dnnl.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>
#include <vector>

#include "dnnl_program.h"

namespace graft::dnnl_backend {

/// For each step of `program`, its primitive created again with `threads`
/// OpenMP threads, or an empty primitive where the step keeps its own: steps
/// made for one thread already, steps on graft's reference kernels (no
/// primitive), backward steps (their creation needs the forward primitive),
/// steps that cannot be made from their descriptor alone (concat, sum), and
/// steps whose re-created form would read or write another layout or need a
/// larger scratchpad than the program's.
std::vector<dnnl::primitive> primitives_for_threads(const DnnlProgram& program, int threads);

}  // namespace graft::dnnl_backend
