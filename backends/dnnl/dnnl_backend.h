/// \file
/// The `dnnl` backend (oneDNN 2.6): compiles subgraphs of convolutions,
/// matmuls, pools, norms and pointwise ops into oneDNN primitives that keep
/// activations in the blocked layouts oneDNN picks, converting layouts only at
/// the subgraph boundary. See docs/dnnl.md. This header exposes what tests and
/// tools inspect; the backend itself registers as "dnnl".
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "graft/backend/compiled_module.h"

namespace graft::dnnl_backend {

/// What one compiled dnnl module holds and has done.
struct DnnlModuleStats {
  int primitives = 0;              ///< primitive executions per run (reorders included)
  int reference_kernel_steps = 0;  ///< nodes run on graft's reference kernels inside the program (a loss, its gradient)
  int activation_reorders = 0;     ///< of those, reorders that change an activation's layout
  int fused_nodes = 0;             ///< nodes attached to a conv/matmul (post-ops, folded BatchNormalization)
  int weights = 0;                 ///< prepared weights (converted or read in place)
  int64_t weight_conversions = 0;  ///< weight conversions done so far (first run, then on version changes)
  int64_t shared_conversions = 0;  ///< weights taken converted from another module instead (SharedConversions)
  size_t arena_bytes = 0;          ///< activation bytes one run takes from the pool
  int serial_primitives = 0;       ///< primitives small enough to run on one thread (no parallel region)
  int reference_primitives = 0;    ///< primitives oneDNN runs with its slow reference code ("ref:" implementations)
  int jit_gemm_matmuls = 0;        ///< matmuls on oneDNN's jit gemm fallback ("gemm:jit"), whose kernels are generated on first use
  int winograd_convolutions = 0;   ///< convolutions on a Winograd implementation ("jit_wino_...", "jit_fp32_wino_...")
  int gemm_convolutions = 0;       ///< convolutions on oneDNN's im2col + gemm fallback ("x64:gemm:jit", plain layouts)
  int deconvolutions = 0;          ///< deconvolution primitives (a ConvTranspose whose kernel equals its stride is a matmul)
  int int8_convolutions = 0;       ///< convolutions computing in int8 (u8 source, s8 weights: dnnl_int8.cc)
  int int8_matmuls = 0;            ///< matmuls computing in int8 (u8 source, s8 weights: dnnl_int8.cc)
  int requantizing_products = 0;   ///< of those and the int8 convolutions, the ones writing uint8 (requantizing)
  int uint8_pools = 0;             ///< pools on uint8 values (a MaxPool between fake quantizations: dnnl_int8.cc)
  int uint8_concats = 0;           ///< concats of uint8 values (a Concat between fake quantizations: dnnl_int8.cc)
  int uint8_adds = 0;              ///< adds of uint8 values (a residual Add between fake quantizations: dnnl_int8.cc)
  int built_threads = 0;           ///< OpenMP threads the primitives were created for
  /// Thread counts below built_threads that runs have used (cores taken by
  /// other processes: runtime::CoreAvailability), and for each, how many
  /// primitives were created again for it (dnnl_thread_variants.h).
  std::vector<int> fewer_thread_counts;
  std::vector<int> recreated_primitives;
};

/// The statistics of a module the dnnl backend compiled. Throws
/// invalid_argument when `module` comes from another backend.
DnnlModuleStats dnnl_module_stats(const backend::CompiledModule& module);

/// How many subgraphs the dnnl backend has compiled in this process (each
/// builds its primitives once; a new input shape compiles a new module).
int64_t dnnl_compile_count();

}  // namespace graft::dnnl_backend
