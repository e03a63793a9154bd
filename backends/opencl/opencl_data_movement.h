// Shared pieces of the OpenCL data-movement kernels (Reshape and friends,
// Transpose, Concat/Split/Slice/Pad, Gather/Expand/Tile, Resize/Upsample).
//
// What: one OpenCL program holding every data-movement kernel, and a
// strided-copy plan that most of these ops reduce to.
// Why: data movement is dtype-agnostic, so each kernel exists once per element
// size (uchar/ushort/uint/ulong: every storable dtype of 1, 2, 4 or 8 bytes),
// and all of them live in ONE program so that PoCL builds it once per process
// (sources never embed a shape; shapes, strides and offsets are arguments).
// How: a CopyPlan is an iteration shape with a source and a destination stride
// per dimension plus base offsets, in elements. Transpose, Slice, Concat,
// Split, Expand and Tile each build one (or one per input/output); simplify()
// drops extent-1 dimensions and merges dimensions that are contiguous on both
// sides, and enqueue_copy() runs a plan as one clEnqueueCopyBuffer when it is
// contiguous on both sides, else as the graft_strided_copy kernel.
#pragma once

#include "opencl_kernel.h"

#ifdef GRAFT_HAVE_OPENCL_HEADERS

#include <array>
#include <optional>
#include <string>
#include <vector>

namespace graft::opencl::data_movement {

/// The largest rank the kernels take (the geometry structs hold this many dims).
constexpr int kMaxRank = 8;

/// The program with every data-movement kernel, built once per device.
cl_program program(ClDevice& device);

/// One kernel per element size (1, 2, 4, 8 bytes) of a program: `base` + "_1"..."_8".
class SizedKernels {
 public:
  SizedKernels() = default;
  SizedKernels(ClDevice& device, cl_program program, const std::string& base);
  /// The kernel moving elements of `element_size` bytes.
  const ClKernel& of(size_t element_size) const;

 private:
  std::array<ClKernel, 4> kernels_;
};

/// "" when elements of `dtype` can be moved as raw bytes (1, 2, 4 or 8 bytes), else why not.
std::string check_movable(DType dtype);

/// Row-major element strides of `shape`.
std::vector<int64_t> strides_of(const Shape& shape);
int64_t numel_of(const Shape& shape);

/// An element copy: for every coordinate c of `shape`,
/// dst[dst_base + sum c_k * dst_stride_k] = src[src_base + sum c_k * src_stride_k].
struct CopyPlan {
  std::vector<int64_t> shape, src_stride, dst_stride;
  int64_t src_base = 0, dst_base = 0;
  /// Drops extent-1 dimensions and merges dimensions contiguous on both sides.
  void simplify();
  int64_t total() const { return numel_of(shape); }
};

/// A plan's geometry as the kernel reads it (must match the OpenCL struct).
struct CopyGeometry {
  int64_t shape[kMaxRank];
  int64_t src_stride[kMaxRank];
  int64_t dst_stride[kMaxRank];
  int64_t src_base;
  int64_t dst_base;
  int64_t total;
  int32_t rank;
  int32_t unused;
};

/// Queues `plan` (simplified, rank <= kMaxRank) moving elements of
/// `element_size` bytes from `src` to `dst`: a buffer copy when contiguous,
/// else the strided-copy kernel. Nothing when the plan is empty.
void enqueue_copy(ClLaunchContext& context, const SizedKernels& strided, cl_mem src, cl_mem dst, size_t element_size,
                  CopyPlan plan);

/// The values of a constant integer input (int32/int64), or nullopt.
std::optional<std::vector<int64_t>> constant_ints(const KernelRequest& request, size_t input);

/// Normalizes `axis` against `rank`, nullopt when out of range.
std::optional<int64_t> normalized_axis(int64_t axis, int64_t rank);

/// Device memory holding host bytes, uploaded once at compile time (tables).
class DeviceTable {
 public:
  void upload(ClDevice& device, const void* data, size_t bytes);
  cl_mem buffer() const;

 private:
  backend::DeviceBuffer buffer_;
};

}  // namespace graft::opencl::data_movement

#endif  // GRAFT_HAVE_OPENCL_HEADERS
