/// \file
/// Estimates of a step's single-thread time, from which the driver decides
/// whether it runs on one OpenMP thread (dnnl_threads.h). Internal to
/// backends/dnnl.
#pragma once

#include "dnnl_post_ops.h"

namespace graft::dnnl_backend {

/// A memory-bound node: the bytes of its outputs and of its non-constant inputs.
double node_microseconds(const ir::IndexedGraph& graph, const ir::Node& node);

/// A group: the multiply-adds of its anchor (convolution, matmul) plus the
/// bytes its post-ops move.
double group_microseconds(const ir::IndexedGraph& graph, const Group& g);

}  // namespace graft::dnnl_backend
