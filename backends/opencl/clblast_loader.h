// CLBlast, the tuned OpenCL BLAS, as the OpenCL backend's matrix kernels
// (MatMul, Gemm, Conv) use it: single-precision row-major GEMMs queued on a
// run's command queue.
//
// Why a loader: graft has no link-time OpenCL dependency (the ICD loader is
// opened with dlopen, codegen/opencl_runtime.h), so CLBlast is opened the
// same way at run time, dlopen("libclblast.so.1"), and the few C entry
// points used here are looked up by name. <clblast_c.h> is used only for the
// function types, when the build machine has it. Without the library (or
// built without its header) unavailable_reason() says so and the kernels
// that need it refuse their nodes for the partition report.
//
// How: CLBlast enqueues asynchronously on the queue it is given (no event is
// requested, nothing waits). It builds and caches its own programs on first
// use per context, device, precision and routine, which blocks the caller:
// prepare() runs both routines once on a 1x1 problem from a kernel's
// compile(), so that no run's enqueue pays (or waits on) that build. A
// non-success status code becomes an internal error naming the routine and
// the code.
#pragma once

#include <cstddef>
#include <string>

#include "graft/codegen/opencl_runtime.h"

#ifdef GRAFT_HAVE_OPENCL_HEADERS

namespace graft::opencl::clblast {

/// Empty when CLBlast is loaded and usable, else why not ("CLBlast
/// (libclblast.so.1) not found").
std::string unavailable_reason();

/// Builds CLBlast's single-precision GEMM programs for device
/// opencl:`device_index` (once per process and device; later calls return at
/// once). Waits for the device: call it from NodeKernel::compile, never from
/// enqueue.
void prepare(int device_index);

/// One row-major product C = alpha * op(A) * op(B) + beta * C: op(A) is
/// m x k, op(B) k x n, C m x n; offsets and leading dimensions in elements.
/// With beta == 0, C is not read.
struct SgemmArgs {
  bool trans_a = false, trans_b = false;
  size_t m = 0, n = 0, k = 0;
  float alpha = 1.0f;
  cl_mem a = nullptr;
  size_t a_offset = 0, a_ld = 0;
  cl_mem b = nullptr;
  size_t b_offset = 0, b_ld = 0;
  float beta = 0.0f;
  cl_mem c = nullptr;
  size_t c_offset = 0, c_ld = 0;
};

/// Queues one product on `queue` (CLBlastSgemm). Throws internal on a
/// CLBlast error, unsupported when CLBlast is not there.
void sgemm(cl_command_queue queue, const SgemmArgs& args);

/// Queues `batch` products on `queue` (CLBlastSgemmStridedBatched): product i
/// uses the offsets of `args` plus i times the strides (a stride may be 0 for
/// an operand shared by the batch).
void sgemm_strided_batched(cl_command_queue queue, const SgemmArgs& args, size_t a_stride, size_t b_stride,
                           size_t c_stride, size_t batch);

}  // namespace graft::opencl::clblast

#endif  // GRAFT_HAVE_OPENCL_HEADERS
