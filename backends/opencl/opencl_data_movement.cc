// The OpenCL data-movement program and the strided-copy plan
// (opencl_data_movement.h).
//
// What: the OpenCL C source of every data-movement kernel, built as one
// program per device, plus the host helpers the op files share.
// Why: one build of one program serves Transpose, Slice, Concat, Split,
// Expand, Tile, Pad, Gather and Resize for every dtype and shape (PoCL builds
// are slow); the kernels move elements by their byte size, so a float32, an
// int32 and a uint32 tensor take the same kernel.
// How: each kernel is written once as a macro over the element type T and
// instantiated for uchar, ushort, uint and ulong with suffixes _1, _2, _4, _8.
// Geometry (shapes, strides, offsets; rank <= 8) arrives as a struct argument
// passed by value, one work item per output element.
#include "opencl_data_movement.h"

#ifdef GRAFT_HAVE_OPENCL_HEADERS

#include <algorithm>
#include <cstring>

#include "graft/core/error.h"

namespace graft::opencl::data_movement {

namespace {

const char* kSource = R"CLC(
#define MAX_RANK 8

typedef struct {
  long shape[MAX_RANK];
  long src_stride[MAX_RANK];
  long dst_stride[MAX_RANK];
  long src_base;
  long dst_base;
  long total;
  int rank;
  int unused;
} CopyGeometry;

typedef struct {
  long out_shape[MAX_RANK];
  long in_shape[MAX_RANK];
  long in_stride[MAX_RANK];
  long begin[MAX_RANK];
  long total;
  int rank;
  int mode; /* 0 constant, 1 reflect, 2 edge, 3 wrap */
} PadGeometry;

/* Gather viewed as [outer, count, inner]: out[o, k, j] = data[o, indices[k], j];
   a negative index counts from the end; an index still out of range is clamped
   (the device cannot fail; constant indices are checked at plan time). */
#define GATHER_KERNEL(T, S, IT, IS)                                                            \
__kernel void graft_gather##IS##_##S(__global const T* src, __global const IT* indices,        \
                                     __global T* dst, long count, long inner, long extent,     \
                                     long total) {                                             \
  long i = get_global_id(0);                                                                   \
  if (i >= total) return;                                                                      \
  long j = i % inner, t = i / inner;                                                           \
  long k = t % count, o = t / count;                                                           \
  long index = (long)indices[k];                                                               \
  if (index < 0) index += extent;                                                              \
  index = index < 0 ? 0 : (index >= extent ? extent - 1 : index);                              \
  dst[i] = src[(o * extent + index) * inner + j];                                              \
}

#define DATA_MOVEMENT_KERNELS(T, S)                                                            \
__kernel void graft_strided_copy_##S(__global const T* src, __global T* dst, CopyGeometry g) { \
  /* dimension 0 of the range walks the innermost axis, dimension 1 the rows */                \
  const int last = g.rank - 1;                                                                 \
  long x = get_global_id(0), row = get_global_id(1);                                           \
  if (x >= g.shape[last]) return;                                                              \
  long s = g.src_base + x * g.src_stride[last], d = g.dst_base + x * g.dst_stride[last];       \
  if (g.total <= 0xffffffffL) { /* 32-bit divisions when the rows allow */                     \
    uint rem = (uint)row;                                                                      \
    for (int k = last - 1; k >= 0; --k) {                                                      \
      uint extent = (uint)g.shape[k], c = rem % extent;                                        \
      rem /= extent;                                                                           \
      s += (long)c * g.src_stride[k];                                                          \
      d += (long)c * g.dst_stride[k];                                                          \
    }                                                                                          \
  } else {                                                                                     \
    long rem = row;                                                                            \
    for (int k = last - 1; k >= 0; --k) {                                                      \
      long c = rem % g.shape[k];                                                               \
      rem /= g.shape[k];                                                                       \
      s += c * g.src_stride[k];                                                                \
      d += c * g.dst_stride[k];                                                                \
    }                                                                                          \
  }                                                                                            \
  dst[d] = src[s];                                                                             \
}                                                                                              \
__kernel void graft_pad_##S(__global const T* src, __global T* dst, PadGeometry g, ulong fill) { \
  long i = get_global_id(0);                                                                   \
  if (i >= g.total) return;                                                                    \
  long rem = i, s = 0;                                                                         \
  for (int k = g.rank - 1; k >= 0; --k) {                                                      \
    long c = rem % g.out_shape[k];                                                             \
    rem /= g.out_shape[k];                                                                     \
    long x = c - g.begin[k], n = g.in_shape[k];                                                \
    if (x < 0 || x >= n) {                                                                     \
      if (g.mode == 0) { dst[i] = (T)fill; return; }                                          \
      if (g.mode == 2) {                                                                       \
        x = x < 0 ? 0 : n - 1;                                                                 \
      } else if (g.mode == 3) {                                                                \
        x = ((x % n) + n) % n;                                                                 \
      } else if (n == 1) {                                                                     \
        x = 0;                                                                                 \
      } else {                                                                                 \
        long p = 2 * (n - 1);                                                                  \
        x = ((x % p) + p) % p;                                                                 \
        if (x >= n) x = p - x;                                                                 \
      }                                                                                        \
    }                                                                                          \
    s += x * g.in_stride[k];                                                                   \
  }                                                                                            \
  dst[i] = src[s];                                                                             \
}                                                                                              \
GATHER_KERNEL(T, S, long, 64)                                                                   \
GATHER_KERNEL(T, S, int, 32)                                                                    \
__kernel void graft_resize_nearest_##S(__global const T* src, __global T* dst,                 \
                                       __global const long* taps, long hi, long wi, long ho,    \
                                       long wo, long total) {                                  \
  long i = get_global_id(0);                                                                   \
  if (i >= total) return;                                                                      \
  long x = i % wo, t = i / wo;                                                                 \
  long y = t % ho, p = t / ho;                                                                 \
  dst[i] = src[(p * hi + taps[y]) * wi + taps[ho + x]];                                        \
}

DATA_MOVEMENT_KERNELS(uchar, 1)
DATA_MOVEMENT_KERNELS(ushort, 2)
DATA_MOVEMENT_KERNELS(uint, 4)
DATA_MOVEMENT_KERNELS(ulong, 8)

/* Separable interpolation of the last two axes of a float tensor: ny taps per
   output row y (index[y*ny+a], weight[y*ny+a]) and nx per output column x
   (after the ho*ny row taps). */
__kernel void graft_resize_taps_float(__global const float* src, __global float* dst,
                                      __global const long* index, __global const float* weight,
                                      long hi, long wi, long ho, long wo, int ny, int nx, long total) {
  long i = get_global_id(0);
  if (i >= total) return;
  long x = i % wo, t = i / wo;
  long y = t % ho, p = t / ho;
  __global const float* plane = src + p * hi * wi;
  long xt = ho * ny + x * nx;
  float sum = 0.0f;
  for (int a = 0; a < ny; ++a) {
    float wy = weight[y * ny + a];
    __global const float* row = plane + index[y * ny + a] * wi;
    float inner = 0.0f;
    for (int b = 0; b < nx; ++b) inner += weight[xt + b] * row[index[xt + b]];
    sum += wy * inner;
  }
  dst[i] = sum;
}
)CLC";

int size_slot(size_t element_size) {
  switch (element_size) {
    case 1:
      return 0;
    case 2:
      return 1;
    case 4:
      return 2;
    case 8:
      return 3;
    default:
      return -1;
  }
}

}  // namespace

cl_program program(ClDevice& device) { return device.program(kSource); }

SizedKernels::SizedKernels(ClDevice& device, cl_program program, const std::string& base) {
  kernels_[0] = ClKernel(device, program, base + "_1");
  kernels_[1] = ClKernel(device, program, base + "_2");
  kernels_[2] = ClKernel(device, program, base + "_4");
  kernels_[3] = ClKernel(device, program, base + "_8");
}

const ClKernel& SizedKernels::of(size_t element_size) const {
  int slot = size_slot(element_size);
  GRAFT_CHECK(slot >= 0, "no data-movement kernel for elements of ", element_size, " bytes");
  return kernels_[static_cast<size_t>(slot)];
}

std::string check_movable(DType dtype) {
  if (dtype == DType::undefined || dtype == DType::string) return std::string(dtype_name(dtype)) + " elements";
  if (size_slot(dtype_size(dtype)) < 0) return std::string(dtype_name(dtype)) + " elements";
  return {};
}

std::vector<int64_t> strides_of(const Shape& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;) strides[d - 1] = strides[d] * shape[d];
  return strides;
}

int64_t numel_of(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

void CopyPlan::simplify() {
  std::vector<int64_t> s, a, b;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    if (shape[d] == 0) {  // nothing to copy
      shape = {0};
      src_stride = {1};
      dst_stride = {1};
      return;
    }
    if (!s.empty() && a.back() == src_stride[d] * shape[d] && b.back() == dst_stride[d] * shape[d]) {
      s.back() *= shape[d];
      a.back() = src_stride[d];
      b.back() = dst_stride[d];
      continue;
    }
    s.push_back(shape[d]);
    a.push_back(src_stride[d]);
    b.push_back(dst_stride[d]);
  }
  if (s.empty()) {  // a single element
    s = {1};
    a = {1};
    b = {1};
  }
  shape = std::move(s);
  src_stride = std::move(a);
  dst_stride = std::move(b);
}

void enqueue_copy(ClLaunchContext& context, const SizedKernels& strided, cl_mem src, cl_mem dst, size_t element_size,
                  CopyPlan plan) {
  plan.simplify();
  const int64_t total = plan.total();
  if (total == 0) return;
  if (plan.shape.size() == 1 && plan.src_stride[0] == 1 && plan.dst_stride[0] == 1) {
    const size_t es = element_size;
    cl_int status = context.device().cl().copy_buffer(
        context.queue(), src, dst, static_cast<size_t>(plan.src_base) * es, static_cast<size_t>(plan.dst_base) * es,
        static_cast<size_t>(total) * es, 0, nullptr, nullptr);
    if (status != CL_SUCCESS) fail(ErrorKind::internal, "clEnqueueCopyBuffer failed with OpenCL error ", status);
    return;
  }
  GRAFT_CHECK(plan.shape.size() <= static_cast<size_t>(kMaxRank), "a copy of rank ", plan.shape.size(),
              " after simplification");
  CopyGeometry g{};
  g.rank = static_cast<int32_t>(plan.shape.size());
  for (size_t d = 0; d < plan.shape.size(); ++d) {
    g.shape[d] = plan.shape[d];
    g.src_stride[d] = plan.src_stride[d];
    g.dst_stride[d] = plan.dst_stride[d];
  }
  g.src_base = plan.src_base;
  g.dst_base = plan.dst_base;
  g.total = total;
  ClRange range;
  range.dims = 2;
  range.global[0] = static_cast<size_t>(plan.shape.back());
  range.global[1] = static_cast<size_t>(total / plan.shape.back());
  strided.of(element_size).launch(context.queue(), range, src, dst, g);
}

std::optional<std::vector<int64_t>> constant_ints(const KernelRequest& request, size_t input) {
  if (input >= request.constants.size() || !request.constants[input]) return std::nullopt;
  const Tensor& t = *request.constants[input];
  if (t.dtype() != DType::int64 && t.dtype() != DType::int32) return std::nullopt;
  return t.to_int64_vector();
}

std::optional<int64_t> normalized_axis(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank) return std::nullopt;
  return axis < 0 ? axis + rank : axis;
}

void DeviceTable::upload(ClDevice& device, const void* data, size_t bytes) {
  backend::DeviceAPI& api = backend::device_api(DeviceType::opencl);
  std::unique_ptr<backend::DeviceQueue> queue = api.create_queue(device.index());
  buffer_ = api.allocate(Device{DeviceType::opencl, device.index()}, std::max<size_t>(bytes, 1));
  if (bytes) api.copy_to_device(*queue, buffer_, 0, data, bytes);
  api.synchronize(*queue);
}

cl_mem DeviceTable::buffer() const { return static_cast<cl_mem>(buffer_.handle()); }

}  // namespace graft::opencl::data_movement

#endif  // GRAFT_HAVE_OPENCL_HEADERS
