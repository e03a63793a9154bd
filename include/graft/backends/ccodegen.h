/// \file
/// The `ccodegen` backend: the "external C compiler" of TVM's bring-your-own-
/// codegen design made real. For each subgraph it emits one readable C file
/// with every shape baked in (compilation happens at plan time, when shapes
/// are concrete), compiles it with the system C compiler into a shared object
/// and calls its entry function. Its CompiledModule saves the shared object's
/// bytes, so an artifact restores it without running the compiler again.
///
/// Float32 only. Ops: every op with a pointwise expression (its kernel IR
/// rendered as C, graft/codegen/c_kernel_source.h), MatMul, Gemm,
/// Softmax/LogSoftmax, ReduceSum/Mean/Max/Min, LayerNormalization, Reshape,
/// Flatten, Squeeze, Unsqueeze, Identity and Transpose.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "graft/core/shape.h"

namespace graft::ir {
class Graph;
class Node;
}  // namespace graft::ir

namespace graft::backends {

/// Whether ccodegen takes a node, and why not when it does not.
struct CcodegenSupport {
  bool supported = false;
  std::string reason;  ///< empty when supported
};

/// ccodegen's op support checker: op, dtypes (float32 only, where known) and
/// the attributes and constant inputs its emitter needs. Declines every node
/// with the compiler's unavailability reason when no C compiler was found.
CcodegenSupport ccodegen_supports(const ir::Node& node);

/// One generated C translation unit.
struct GeneratedC {
  std::string source;         ///< the C file
  std::string entry;          ///< name of the entry function
  std::vector<Shape> input_shapes;   ///< subgraph inputs, in order
  std::vector<Shape> output_shapes;  ///< subgraph outputs, in order
  /// Topological ids (ir::IndexedGraph of the subgraph) of the Constant
  /// nodes whose data the entry function reads, in argument order.
  std::vector<uint32_t> constant_ids;
  size_t scratch_floats = 0;  ///< size of the scratch buffer the entry needs
};

/// Emits C for a subgraph whose values all have concrete float32 types. The
/// entry function is
///   void ENTRY(const float* const* inputs, float* const* outputs,
///              const float* const* constants, float* scratch, int num_threads);
/// (`num_threads` bounds its OpenMP loops: the session's intra-op thread count).
/// Throws Error(unsupported) naming the node it cannot emit.
GeneratedC generate_c(const ir::Graph& subgraph);

/// The C compiler ccodegen runs: $CC when set (an absolute path or a name on
/// PATH), else the first of cc, gcc, clang on PATH. Empty when none is found.
std::string find_c_compiler();

/// Compiles C source into a shared object with
/// `CC -O3 -march=native -shared -fPIC -std=c99 -fno-math-errno -fno-trapping-math [-fopenmp] -o OUT.so IN.c -lm`, run
/// without a shell in a private temporary folder; returns the shared
/// object's bytes. Throws Error(unsupported) when no compiler is found and
/// Error(internal) with the compiler's stderr when it fails.
std::string compile_c_to_shared_object(const std::string& source, const std::string& what);

}  // namespace graft::backends
