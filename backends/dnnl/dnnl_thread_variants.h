/// \file
/// Primitives re-created for fewer OpenMP threads than a program was built
/// for, so that a run that gets fewer cores (runtime::CoreAvailability: a
/// busy co-tenant process) runs on that many threads. Most oneDNN primitives
/// split their work when they run (parallel_nd over the current thread
/// count), but convolutions, matmuls and inner products fix their split when
/// they are created and then start that many threads whatever the run's
/// count: with one of two cores taken, every region waits for the thread
/// that has none. Internal to backends/dnnl.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>
#include <vector>

#include "dnnl_program.h"

namespace graft::dnnl_backend {

/// For each step of `program`, its primitive created again with `threads`
/// OpenMP threads, or an empty primitive where the step keeps its own: steps
/// that split their work at run time or run on one thread already, backward
/// steps (their creation needs the forward primitive), and steps whose
/// re-created form would read or write another layout or need a larger
/// scratchpad than the program's.
std::vector<dnnl::primitive> primitives_for_threads(const DnnlProgram& program, int threads);

}  // namespace graft::dnnl_backend
