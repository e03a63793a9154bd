// Data movement on the CUDA device, for any dtype of 1, 2, 4 or 8 bytes:
//
//   views       Reshape, Flatten, Squeeze, Unsqueeze: output 0 is the input's
//               memory (no kernel);
//   strided     one kernel copies an iteration space from a strided source
//               to a strided destination (element strides, negative or 0
//               allowed): Transpose (permuted source strides), Slice
//               (stepped source from an offset), Expand (0 strides), Concat
//               (one launch per input into its block of the output), Split
//               (one per output);
//   Gather      rows of the data picked by int32 or int64 indices (negative
//               ones count from the end; out of range reads as 0).
//
// Shapes are arguments (up to rank 8), so each source compiles once.
#include <algorithm>
#include <cstring>

#include "cuda_kernel.h"
#include "graft/core/error.h"
#include "graft/core/shape.h"
#include "graft/ir/op_id.h"

namespace graft::cuda {

namespace {

constexpr int kMaxRank = 8;

const char* const kStridedSource = GRAFT_CUDA_PRELUDE R"(
// Extents outermost first; strides in elements.
struct GraftStrided {
  i64 extent[8];
  i64 src[8];
  i64 dst[8];
};
template <typename T>
__device__ __forceinline__ void graft_strided(T* y, const T* x, i64 n, int rank, i64 src_base, i64 dst_base,
                                              const GraftStrided& s) {
  const i64 i = graft_thread();
  if (i >= n) return;
  i64 rest = i, from = src_base, to = dst_base;
  for (int d = rank - 1; d >= 0; --d) {
    const i64 e = s.extent[d];
    const i64 c = rest % e;
    rest /= e;
    from += c * s.src[d];
    to += c * s.dst[d];
  }
  y[to] = x[from];
}
#define GRAFT_STRIDED(NAME, T)                                                                            \
  extern "C" __global__ void NAME(T* y, const T* x, i64 n, int rank, i64 src_base, i64 dst_base,        \
                                  const GraftStrided s) {                                                \
    graft_strided<T>(y, x, n, rank, src_base, dst_base, s);                                              \
  }
GRAFT_STRIDED(graft_strided_copy_1, unsigned char)
GRAFT_STRIDED(graft_strided_copy_2, unsigned short)
GRAFT_STRIDED(graft_strided_copy_4, unsigned int)
GRAFT_STRIDED(graft_strided_copy_8, unsigned long long)
)";
GRAFT_REGISTER_CUDA_SOURCE(kStridedSource);

const char* const kGatherSource = GRAFT_CUDA_PRELUDE R"(
// y[o, j, k] = x[o, index[j], k] over outer x m x inner items; axis_n: x's
// extent along the axis.
template <typename T, typename I>
__device__ __forceinline__ void graft_gather(T* y, const T* x, const I* index, i64 outer, i64 axis_n, i64 m,
                                             i64 inner) {
  const i64 i = graft_thread();
  if (i >= outer * m * inner) return;
  const i64 k = i % inner;
  const i64 j = (i / inner) % m;
  const i64 o = i / (inner * m);
  i64 at = (i64)index[j];
  if (at < 0) at += axis_n;
  y[i] = (at < 0 || at >= axis_n) ? (T)0 : x[(o * axis_n + at) * inner + k];
}
#define GRAFT_GATHER(NAME, T, I)                                                                          \
  extern "C" __global__ void NAME(T* y, const T* x, const I* index, i64 outer, i64 axis_n, i64 m, i64 inner) { \
    graft_gather<T, I>(y, x, index, outer, axis_n, m, inner);                                            \
  }
GRAFT_GATHER(graft_gather_1_i32, unsigned char, int)
GRAFT_GATHER(graft_gather_2_i32, unsigned short, int)
GRAFT_GATHER(graft_gather_4_i32, unsigned int, int)
GRAFT_GATHER(graft_gather_8_i32, unsigned long long, int)
GRAFT_GATHER(graft_gather_1_i64, unsigned char, long long)
GRAFT_GATHER(graft_gather_2_i64, unsigned short, long long)
GRAFT_GATHER(graft_gather_4_i64, unsigned int, long long)
GRAFT_GATHER(graft_gather_8_i64, unsigned long long, long long)
)";
GRAFT_REGISTER_CUDA_SOURCE(kGatherSource);

/// The kernel argument block of kStridedSource.
struct Strided {
  int64_t extent[kMaxRank] = {};
  int64_t src[kMaxRank] = {};
  int64_t dst[kMaxRank] = {};
};

/// One strided copy: extents (outermost first), strides, base offsets.
struct Copy {
  Strided s;
  int rank = 0;
  int64_t n = 0;
  int64_t src_base = 0, dst_base = 0;
  size_t input = 0;   ///< the node input it reads
  size_t output = 0;  ///< the node output it writes
};

std::vector<int64_t> dense_strides(const Shape& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;) strides[d - 1] = strides[d] * shape[d];
  return strides;
}

std::string movable(DType dtype) {
  size_t size = dtype_size(dtype);
  if (dtype == DType::undefined || (size != 1 && size != 2 && size != 4 && size != 8))
    return std::string(dtype_name(dtype)) + " elements (1, 2, 4 or 8 bytes only)";
  return {};
}

const char* strided_name(DType dtype) {
  switch (dtype_size(dtype)) {
    case 1: return "graft_strided_copy_1";
    case 2: return "graft_strided_copy_2";
    case 4: return "graft_strided_copy_4";
    default: return "graft_strided_copy_8";
  }
}

class StridedKernel final : public NodeKernel {
 public:
  StridedKernel(std::vector<Copy> copies, DType dtype) : copies_(std::move(copies)), dtype_(dtype) {}
  void compile(int device) override { function_ = CudaFunction(kStridedSource, strided_name(dtype_), device); }
  void enqueue(CudaLaunchContext& context, std::span<const CuTensor> inputs,
               std::span<const CuTensor> outputs) const override {
    for (const Copy& c : copies_) {
      if (c.n == 0) continue;
      function_.launch(context.stream(), blocks_for(c.n, 256), 256, outputs[c.output].address, inputs[c.input].address, c.n,
                       c.rank, c.src_base, c.dst_base, c.s);
    }
  }

 private:
  std::vector<Copy> copies_;
  DType dtype_;
  CudaFunction function_;
};

/// A copy of `extents` reading `src` strides from `src_base`, writing dense.
Copy dense_copy(const Shape& extents, const std::vector<int64_t>& src, int64_t src_base, size_t input) {
  Copy c;
  c.rank = static_cast<int>(extents.size());
  c.n = 1;
  std::vector<int64_t> dst = dense_strides(extents);
  for (size_t d = 0; d < extents.size(); ++d) {
    c.s.extent[d] = extents[d];
    c.s.src[d] = src[d];
    c.s.dst[d] = dst[d];
    c.n *= extents[d];
  }
  c.src_base = src_base;
  c.input = input;
  return c;
}

std::string rank_support(const KernelRequest& request, bool many_outputs = false) {
  if (request.outputs.size() != 1 && !many_outputs) return "not a single output";
  for (const CuType& t : request.outputs)
    if (t.dtype != request.outputs[0].dtype || t.shape.size() > kMaxRank) return "outputs of mixed dtypes or rank above 8";
  std::string why = movable(request.outputs[0].dtype);
  if (!why.empty()) return why;
  if (request.outputs[0].shape.size() > kMaxRank) return "rank above 8";
  for (const CuType& t : request.inputs)
    if (t.shape.size() > kMaxRank) return "rank above 8";
  return {};
}

// ---- views ------------------------------------------------------------------

class ViewKernel final : public NodeKernel {
 public:
  void compile(int) override {}
  void enqueue(CudaLaunchContext&, std::span<const CuTensor>, std::span<const CuTensor>) const override {}
  int aliased_input() const override { return 0; }
};

std::string view_support(const KernelRequest& request) {
  if (request.inputs.empty() || request.outputs.size() != 1) return "not a single-output view";
  if (request.inputs[0].dtype != request.outputs[0].dtype) return "the output dtype differs from the input's";
  if (request.inputs[0].numel() != request.outputs[0].numel()) return "another element count than the input";
  return {};
}

std::unique_ptr<NodeKernel> make_view_kernel(const KernelRequest&) { return std::make_unique<ViewKernel>(); }

// ---- Transpose --------------------------------------------------------------

std::vector<int64_t> transpose_perm(const KernelRequest& request) {
  const size_t rank = request.inputs[0].shape.size();
  std::vector<int64_t> perm = request.node.attributes.get_ints("perm", {});
  if (perm.empty())
    for (size_t d = rank; d-- > 0;) perm.push_back(static_cast<int64_t>(d));
  return perm;
}

std::string transpose_support(const KernelRequest& request) {
  std::string why = rank_support(request);
  if (!why.empty()) return why;
  std::vector<int64_t> perm = transpose_perm(request);
  if (perm.size() != request.inputs[0].shape.size()) return "perm of another rank than the input";
  return {};
}

std::unique_ptr<NodeKernel> make_transpose_kernel(const KernelRequest& request) {
  std::vector<int64_t> perm = transpose_perm(request);
  std::vector<int64_t> in = dense_strides(request.inputs[0].shape);
  std::vector<int64_t> src;
  for (int64_t p : perm) src.push_back(in[static_cast<size_t>(p)]);
  return std::make_unique<StridedKernel>(std::vector<Copy>{dense_copy(request.outputs[0].shape, src, 0, 0)},
                                         request.outputs[0].dtype);
}

// ---- Expand -----------------------------------------------------------------

std::unique_ptr<NodeKernel> make_expand_kernel(const KernelRequest& request) {
  const Shape& in = request.inputs[0].shape;
  const Shape& out = request.outputs[0].shape;
  std::vector<int64_t> in_strides = dense_strides(in), src(out.size(), 0);
  for (size_t d = 0; d < in.size(); ++d) {
    size_t od = out.size() - in.size() + d;
    src[od] = in[d] == 1 ? 0 : in_strides[d];
  }
  return std::make_unique<StridedKernel>(std::vector<Copy>{dense_copy(out, src, 0, 0)}, request.outputs[0].dtype);
}

std::string expand_support(const KernelRequest& request) {
  std::string why = rank_support(request);
  if (!why.empty()) return why;
  if (request.inputs[0].shape.size() > request.outputs[0].shape.size()) return "an input of higher rank than the output";
  return {};
}

// ---- Slice ------------------------------------------------------------------

/// The values of constant input `i` as int64 (empty when absent), or false when not constant.
bool constant_ints(const KernelRequest& request, size_t i, std::vector<int64_t>& values) {
  values.clear();
  if (i >= request.inputs.size() || request.inputs[i].dtype == DType::undefined) return true;
  const Tensor* t = request.constants[i];
  if (!t) return false;
  for (int64_t k = 0; k < t->numel(); ++k)
    values.push_back(t->dtype() == DType::int32 ? t->data<int32_t>()[k] : t->data<int64_t>()[k]);
  return true;
}

/// Per input dimension: start and step of the slice, or a reason.
bool plan_slice(const KernelRequest& request, std::vector<int64_t>& start, std::vector<int64_t>& step, std::string& why) {
  const Shape& in = request.inputs[0].shape;
  const Shape& out = request.outputs[0].shape;
  std::vector<int64_t> starts, ends, axes, steps;
  if (request.node.opset_version < 10) {
    starts = request.node.attributes.get_ints("starts", {});
    ends = request.node.attributes.get_ints("ends", {});
    axes = request.node.attributes.get_ints("axes", {});
  } else if (!constant_ints(request, 1, starts) || !constant_ints(request, 2, ends) ||
             !constant_ints(request, 3, axes) || !constant_ints(request, 4, steps)) {
    why = "starts, ends, axes or steps not constant";
    return false;
  }
  if (axes.empty())
    for (size_t d = 0; d < starts.size(); ++d) axes.push_back(static_cast<int64_t>(d));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (axes.size() != starts.size() || steps.size() != starts.size()) {
    why = "starts, axes and steps of different lengths";
    return false;
  }
  start.assign(in.size(), 0);
  step.assign(in.size(), 1);
  for (size_t k = 0; k < axes.size(); ++k) {
    int64_t axis = axes[k] < 0 ? axes[k] + static_cast<int64_t>(in.size()) : axes[k];
    if (axis < 0 || axis >= static_cast<int64_t>(in.size()) || steps[k] == 0) {
      why = "a bad axis or a zero step";
      return false;
    }
    const int64_t dim = in[static_cast<size_t>(axis)];
    int64_t s = starts[k] < 0 ? starts[k] + dim : starts[k];
    s = steps[k] > 0 ? std::clamp<int64_t>(s, 0, dim) : std::clamp<int64_t>(s, 0, dim - 1);
    start[static_cast<size_t>(axis)] = s;
    step[static_cast<size_t>(axis)] = steps[k];
  }
  if (out.size() != in.size()) {
    why = "an output of another rank";
    return false;
  }
  return true;
}

std::string slice_support(const KernelRequest& request) {
  std::string why = rank_support(request);
  if (!why.empty()) return why;
  std::vector<int64_t> start, step;
  plan_slice(request, start, step, why);
  return why;
}

std::unique_ptr<NodeKernel> make_slice_kernel(const KernelRequest& request) {
  std::vector<int64_t> start, step;
  std::string why;
  GRAFT_CHECK(plan_slice(request, start, step, why), why);
  std::vector<int64_t> in = dense_strides(request.inputs[0].shape), src(in.size());
  int64_t base = 0;
  for (size_t d = 0; d < in.size(); ++d) {
    base += start[d] * in[d];
    src[d] = step[d] * in[d];
  }
  return std::make_unique<StridedKernel>(std::vector<Copy>{dense_copy(request.outputs[0].shape, src, base, 0)},
                                         request.outputs[0].dtype);
}

// ---- Concat -----------------------------------------------------------------

std::string concat_support(const KernelRequest& request) {
  std::string why = rank_support(request);
  if (!why.empty()) return why;
  for (const CuType& t : request.inputs)
    if (t.dtype != request.outputs[0].dtype) return "inputs of different dtypes";
  return {};
}

std::unique_ptr<NodeKernel> make_concat_kernel(const KernelRequest& request) {
  const Shape& out = request.outputs[0].shape;
  const int64_t axis = normalize_axis(request.node.attributes.get_int("axis"), static_cast<int64_t>(out.size()),
                                      request.node.describe());
  std::vector<int64_t> out_strides = dense_strides(out);
  std::vector<Copy> copies;
  int64_t offset = 0;
  for (size_t i = 0; i < request.inputs.size(); ++i) {
    const Shape& in = request.inputs[i].shape;
    Copy c = dense_copy(in, dense_strides(in), 0, i);
    for (size_t d = 0; d < out.size(); ++d) c.s.dst[d] = out_strides[d];
    c.dst_base = offset * out_strides[static_cast<size_t>(axis)];
    offset += in[static_cast<size_t>(axis)];
    copies.push_back(c);
  }
  return std::make_unique<StridedKernel>(std::move(copies), request.outputs[0].dtype);
}

// ---- Split ------------------------------------------------------------------

std::string split_support(const KernelRequest& request) {
  std::string why = rank_support(request, true);
  if (!why.empty()) return why;
  if (request.outputs.empty()) return "no outputs";
  return {};
}

std::unique_ptr<NodeKernel> make_split_kernel(const KernelRequest& request) {
  const Shape& in = request.inputs[0].shape;
  const int64_t axis = normalize_axis(request.node.attributes.get_int("axis", 0), static_cast<int64_t>(in.size()),
                                      request.node.describe());
  std::vector<int64_t> in_strides = dense_strides(in);
  std::vector<Copy> copies;
  int64_t offset = 0;
  for (size_t o = 0; o < request.outputs.size(); ++o) {
    const Shape& out = request.outputs[o].shape;
    Copy c = dense_copy(out, in_strides, offset * in_strides[static_cast<size_t>(axis)], 0);
    c.output = o;
    offset += out[static_cast<size_t>(axis)];
    copies.push_back(c);
  }
  return std::make_unique<StridedKernel>(std::move(copies), request.outputs[0].dtype);
}

// ---- Gather -----------------------------------------------------------------

class GatherKernel final : public NodeKernel {
 public:
  GatherKernel(std::string name, int64_t outer, int64_t axis_n, int64_t m, int64_t inner)
      : name_(std::move(name)), outer_(outer), axis_n_(axis_n), m_(m), inner_(inner) {}
  void compile(int device) override { function_ = CudaFunction(kGatherSource, name_, device); }
  void enqueue(CudaLaunchContext& context, std::span<const CuTensor> inputs,
               std::span<const CuTensor> outputs) const override {
    const int64_t n = outer_ * m_ * inner_;
    if (n == 0) return;
    function_.launch(context.stream(), blocks_for(n, 256), 256, outputs[0].address, inputs[0].address,
                     inputs[1].address, outer_, axis_n_, m_, inner_);
  }

 private:
  std::string name_;
  int64_t outer_, axis_n_, m_, inner_;
  CudaFunction function_;
};

std::string gather_support(const KernelRequest& request) {
  std::string why = rank_support(request);
  if (!why.empty()) return why;
  if (request.inputs.size() != 2) return "Gather without two inputs";
  DType index = request.inputs[1].dtype;
  if (index != DType::int32 && index != DType::int64) return "indices neither int32 nor int64";
  if (request.inputs[0].shape.empty()) return "a 0-D data input";
  return {};
}

std::unique_ptr<NodeKernel> make_gather_kernel(const KernelRequest& request) {
  const Shape& data = request.inputs[0].shape;
  const int64_t axis = normalize_axis(request.node.attributes.get_int("axis", 0), static_cast<int64_t>(data.size()),
                                      request.node.describe());
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= data[static_cast<size_t>(d)];
  for (size_t d = static_cast<size_t>(axis) + 1; d < data.size(); ++d) inner *= data[d];
  std::string name = "graft_gather_" + std::to_string(dtype_size(request.outputs[0].dtype)) +
                     (request.inputs[1].dtype == DType::int32 ? "_i32" : "_i64");
  return std::make_unique<GatherKernel>(name, outer, data[static_cast<size_t>(axis)], request.inputs[1].numel(), inner);
}

}  // namespace

GRAFT_REGISTER_CUDA_KERNEL(Reshape, view_support, make_view_kernel);
GRAFT_REGISTER_CUDA_KERNEL(Flatten, view_support, make_view_kernel);
GRAFT_REGISTER_CUDA_KERNEL(Squeeze, view_support, make_view_kernel);
GRAFT_REGISTER_CUDA_KERNEL(Unsqueeze, view_support, make_view_kernel);
GRAFT_REGISTER_CUDA_KERNEL(Transpose, transpose_support, make_transpose_kernel);
GRAFT_REGISTER_CUDA_KERNEL(Expand, expand_support, make_expand_kernel);
GRAFT_REGISTER_CUDA_KERNEL(Slice, slice_support, make_slice_kernel);
GRAFT_REGISTER_CUDA_KERNEL(Concat, concat_support, make_concat_kernel);
GRAFT_REGISTER_CUDA_KERNEL(Split, split_support, make_split_kernel);
GRAFT_REGISTER_CUDA_KERNEL(Gather, gather_support, make_gather_kernel);

}  // namespace graft::cuda
