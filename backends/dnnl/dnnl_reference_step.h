/// \file
/// A step of a dnnl program that runs one node on graft's reference kernel
/// instead of a oneDNN primitive: the few nodes oneDNN has no primitive for
/// that lie between a training step's forward and backward (the loss and
/// its gradient). Taking them keeps the whole step one dnnl subgraph, so the
/// activations the backward reads stay in the forward's blocked layouts
/// rather than being written plain at a subgraph boundary and converted
/// back (docs/dnnl.md, "A training step in one subgraph"). Internal to
/// backends/dnnl.
#pragma once

#include <memory>
#include <span>

#include "graft/ir/graph.h"
#include "graft/ops/op_context.h"

namespace graft::dnnl_backend {

/// The node a reference step runs: a copy in a graph of its own (an Input
/// per present input, carrying its type), so that the program does not
/// depend on the subgraph it was built from. Its float32 inputs are read
/// plain; other inputs (a loss's integer targets) as the bytes they are;
/// its outputs are written plain.
struct ReferenceStep {
  std::shared_ptr<const ir::Graph> graph;
  const ir::Node* node = nullptr;
};

/// Step arguments of a reference step: input i is argument i, output k is
/// argument kReferenceOutputArgument + k.
inline constexpr int kReferenceOutputArgument = 1 << 16;

/// Runs `step` on the bytes of its inputs (nullptr for an absent optional
/// input) and writes its outputs into `outputs`; the kernel's own buffers come
/// from `allocator`. Throws internal when the kernel returns another type
/// than the node's.
void run_reference_step(const ReferenceStep& step, std::span<void* const> inputs, std::span<void* const> outputs,
                        ops::OutputAllocator& allocator, int num_threads);

}  // namespace graft::dnnl_backend
