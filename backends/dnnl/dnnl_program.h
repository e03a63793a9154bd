/// \file
/// DnnlProgram: what compile() turns a subgraph into. A list of oneDNN
/// primitives with, for each argument, a slot: a memory descriptor (possibly
/// a blocked layout oneDNN picked) and where its bytes live at run time (the
/// per-run arena, a module input, a module output, or a prepared weight).
/// Internal to backends/dnnl.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <utility>
#include <vector>

#include "graft/core/tensor.h"

namespace graft::ir {
class Graph;
}

namespace graft::dnnl_backend {

struct ReferenceStep;  // dnnl_reference_step.h

/// Where a slot's bytes live during a run.
enum class SlotKind {
  arena,   ///< the run's arena, at the offset of its root slot
  input,   ///< module input `index` (read only)
  output,  ///< module output `index` (allocated from the run's pool)
  weight,  ///< prepared weight `index`
};

/// One memory argument. A view (root >= 0) reinterprets the bytes of its root
/// slot, from `byte_offset` on, with another descriptor (a reshape of a plain
/// layout, a slice, a transpose, an input placed in a Concat's destination).
/// Descriptors of views carry no offset of their own (offset0 is 0): where a
/// view starts is `byte_offset`, so that primitives see ordinary descriptors.
struct Slot {
  dnnl::memory::desc desc;
  SlotKind kind = SlotKind::arena;
  int index = -1;          ///< input, output or weight index (of the root)
  int root = -1;           ///< the slot whose bytes this one views, or -1
  bool has_views = false;
  size_t offset = 0;       ///< arena offset of a root arena slot
  size_t byte_offset = 0;  ///< where a view starts in its root's bytes
};

/// One primitive execution, or one node on graft's reference kernel.
struct Step {
  dnnl::primitive primitive;  ///< empty for a reference step
  /// Set instead of `primitive`: a node oneDNN has no primitive for, run on
  /// graft's reference kernel over plain buffers (dnnl_reference_step.h).
  std::shared_ptr<const ReferenceStep> reference;
  std::vector<std::pair<int, int>> args;  ///< (DNNL_ARG_*, slot); a reference step's are its own
  dnnl::memory::desc scratchpad;          ///< user-mode scratchpad (may be empty)
  std::string label;                      ///< the node(s) it runs, for messages
  int threads = 0;                        ///< OpenMP threads it was created for and runs with; 0: the run's
  std::string implementation;             ///< oneDNN's implementation name ("brg:avx512_core", "ref:any", ...)
};

/// Where a weight's source tensor comes from: a constant of the subgraph or a
/// module input (a weight the partitioner left outside the subgraph).
struct WeightSource {
  Tensor constant;  ///< defined for a constant (shares the graph's storage)
  int input = -1;   ///< else the module input index
};

/// A weight prepared once and cached: `fill` writes the plain-layout form
/// (BatchNormalization folded in, Gemm's beta applied, ...) from the sources
/// into a buffer described by `plain`, of plain's data type (float32, or
/// the s8 values of an int8 weight); without `fill`, source 0's bytes are
/// `plain` as they are. `convert` (a reorder) then writes `desc`, the layout
/// the primitive chose. Identity weights are read straight from source 0.
struct Weight {
  std::vector<WeightSource> sources;
  dnnl::memory::desc plain;
  dnnl::memory::desc desc;
  std::function<void(const std::vector<Tensor>& sources, void* plain_out)> fill;
  dnnl::primitive convert;  ///< plain -> desc reorder (absent for identity weights)
  bool identity = false;
  /// The program builder reads the sources' values (an int8 convolution's
  /// weight scales, dnnl_int8.cc): they are never released or left out of
  /// an artifact (superseded_constants), so that loading builds it again.
  bool builder_reads_sources = false;
  std::string label;
};

/// The compiled form of one subgraph.
struct DnnlProgram {
  dnnl::engine engine;
  std::vector<Slot> slots;
  std::vector<Step> steps;
  std::vector<Weight> weights;
  std::vector<int> input_slots;  ///< plain slot of each module input
  /// The dtype of each module input: float32, or what a reference step
  /// reads as bytes (a loss's integer targets).
  std::vector<DType> input_dtypes;
  std::vector<Shape> output_shapes;
  size_t arena_bytes = 0;        ///< activations
  size_t scratchpad_bytes = 0;   ///< the largest step scratchpad
  int activation_reorders = 0;   ///< steps that convert an activation from one layout to another
  int fused_nodes = 0;           ///< nodes attached to a conv/matmul as post-ops or folded into its weights
};

/// Builds the program of `subgraph` (Input nodes with concrete float32 types).
/// Throws unsupported naming the node for anything dnnl_supports refuses.
DnnlProgram build_program(const ir::Graph& subgraph);

/// Assigns arena offsets to root arena slots from their lifetimes over the
/// steps (slots used in disjoint step ranges share bytes); sets arena_bytes
/// and scratchpad_bytes.
void plan_arena(DnnlProgram& program);

}  // namespace graft::dnnl_backend
