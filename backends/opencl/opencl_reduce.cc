// Reductions on the OpenCL device, float32: the Reduce* family (ReduceSum,
// ReduceMean, ReduceMax, ReduceMin, ReduceProd, ReduceL1, ReduceL2,
// ReduceSumSquare, ReduceLogSum, ReduceLogSumExp) and ArgMax / ArgMin.
//
// What: any set of axes, keepdims, noop_with_empty_axes; axes from the
// attribute (ReduceSum before opset 13, the others before 18) or from the
// optional second input when it is a constant of the graph. ArgMax / ArgMin
// along one axis with keepdims and select_last_index, int64 output.
// Why: pooling heads (ReduceMean over H, W), norms built from primitives
// (ReduceMean / ReduceSumSquare in exported LayerNorms and RMSNorms) and
// classifier outputs (ArgMax) keep their tensors on the device.
// How: as the reference kernels (ops/reduce.cc, arg_reduce.cc) the axes are
// read and normalized on the host; the input's dimensions are merged into
// runs (extents of 1 dropped, neighbours of the same kind joined), the kept
// runs and the reduced runs each with their input strides, and passed as a
// struct argument. One work-item per output element finds its base offset
// from its index over the kept runs, then walks the reduced runs with an
// odometer (the reduced axes as if permuted innermost, by index arithmetic,
// no transpose). Long reductions run one work-group of 64 per output instead
// (where opencl_row_launch.h's group_per_row says so for the device), each
// work-item folding every 64th element, the partial results combined in
// local memory (LogSumExp's running maximum and sum as pairs). When there are
// few outputs (under 64) of 16384 elements or more, each output's reduction
// is split over up to 256 work-groups (8192 elements or more each) whose
// partial results a second kernel combines, through launch scratch memory.
// Accumulation is in float with the reference's rules: Max and Min let NaN
// through, LogSumExp keeps a running maximum, an empty reduction gives the
// op's identity (Mean of nothing: NaN). ArgMax / ArgMin view the input as
// [outer, n, inner]; ties go to the first index or, with select_last_index
// (opset 12), the last; NaN wins against numbers; long contiguous lanes
// (inner 1) may run one work-group each, candidates combined by the same
// rules. One program holds every kernel; shapes are arguments.
// Refused: dtypes other than float32, axes from a non-constant input, more
// than 8 runs of kept or of reduced dimensions, an empty ArgMax axis.
#include "opencl_kernel.h"
#include "opencl_row_launch.h"

#ifdef GRAFT_HAVE_OPENCL_HEADERS

#include <algorithm>

#include "graft/core/error.h"
#include "graft/core/tensor.h"

namespace graft::opencl {

namespace {

const char* kReduceSource = R"CLC(
typedef struct {
  long kept_size[8];
  long kept_stride[8];
  long reduced_size[8];
  long reduced_stride[8];
  long kept_rank;
  long reduced_rank;
  long kept_count;
  long reduced_count;
} ReduceGeometry;

/* DECLARE: the accumulators; ADD: folds float v in; FINISH: the result from the accumulators and count. */
#define REDUCE_KERNEL(NAME, DECLARE, ADD, FINISH)                                      \
  __kernel void NAME(__global const float* x, __global float* y, ReduceGeometry g) {   \
    const long o = get_global_id(0);                                                   \
    if (o >= g.kept_count) return;                                                     \
    long offset = 0, rest = o;                                                         \
    for (int d = (int)g.kept_rank - 1; d >= 0; --d) {                                  \
      offset += (rest % g.kept_size[d]) * g.kept_stride[d];                            \
      rest /= g.kept_size[d];                                                          \
    }                                                                                  \
    long index[8] = {0, 0, 0, 0, 0, 0, 0, 0};                                          \
    DECLARE;                                                                           \
    for (long r = 0; r < g.reduced_count; ++r) {                                       \
      const float v = x[offset];                                                       \
      ADD;                                                                             \
      for (int d = (int)g.reduced_rank - 1; d >= 0; --d) {                             \
        offset += g.reduced_stride[d];                                                 \
        if (++index[d] < g.reduced_size[d]) break;                                     \
        offset -= index[d] * g.reduced_stride[d];                                      \
        index[d] = 0;                                                                  \
      }                                                                                \
    }                                                                                  \
    const long count = g.reduced_count;                                                \
    y[o] = FINISH;                                                                     \
  }

REDUCE_KERNEL(reduce_sum, float acc = 0.0f, acc += v, acc)
REDUCE_KERNEL(reduce_mean, float acc = 0.0f, acc += v, acc / (float)count)
REDUCE_KERNEL(reduce_sum_square, float acc = 0.0f, acc += v * v, acc)
REDUCE_KERNEL(reduce_l1, float acc = 0.0f, acc += fabs(v), acc)
REDUCE_KERNEL(reduce_l2, float acc = 0.0f, acc += v * v, sqrt(acc))
REDUCE_KERNEL(reduce_log_sum, float acc = 0.0f, acc += v, log(acc))
REDUCE_KERNEL(reduce_prod, float acc = 1.0f, acc *= v, acc)
REDUCE_KERNEL(reduce_max, float acc = -INFINITY, if (v > acc || isnan(v)) acc = v, acc)
REDUCE_KERNEL(reduce_min, float acc = INFINITY, if (v < acc || isnan(v)) acc = v, acc)
REDUCE_KERNEL(reduce_log_sum_exp, float m = -INFINITY; float s = 0.0f,
              if (v != -INFINITY) { if (v > m) { s = s * exp(m - v) + 1.0f; m = v; } else { s += exp(v - m); } },
              s == 0.0f ? -INFINITY : m + log(s))

/* ArgMax / ArgMin of [outer, n, inner] along n (n >= 1); NaN wins, ties by select_last. */
#define ARG_KERNEL(NAME, BETTER)                                                                          \
  __kernel void NAME(__global const float* x, __global long* y, long outer, long n, long inner,           \
                     int select_last) {                                                                   \
    const long w = get_global_id(0);                                                                      \
    if (w >= outer * inner) return;                                                                       \
    __global const float* lane = x + (w / inner) * n * inner + w % inner;                                 \
    float best = lane[0];                                                                                 \
    long best_index = 0;                                                                                  \
    for (long j = 1; j < n; ++j) {                                                                        \
      const float v = lane[j * inner];                                                                    \
      int take;                                                                                           \
      if (isnan(best))                                                                                    \
        take = select_last && isnan(v);                                                                   \
      else if (isnan(v))                                                                                  \
        take = 1;                                                                                         \
      else                                                                                                \
        take = (BETTER) || (select_last && v == best);                                                    \
      if (take) {                                                                                         \
        best = v;                                                                                         \
        best_index = j;                                                                                   \
      }                                                                                                   \
    }                                                                                                     \
    y[w] = best_index;                                                                                    \
  }

ARG_KERNEL(arg_max, v > best)
ARG_KERNEL(arg_min, v < best)

/* Long contiguous lanes (inner 1, an LM head's ArgMax over its vocabulary): one
   work-group of 64 per lane. Item l finds the best of positions l, l + 64, ...
   by the sequential rule; the 64 (value, index) candidates then combine by the
   same rule made symmetric: NaN beats a number, the better value wins, and
   between equals (or two NaNs) the lower index, or the higher with
   select_last. */
#define GROUP_ARG_KERNEL(NAME, BETTER)                                                                    \
  __kernel __attribute__((reqd_work_group_size(64, 1, 1)))                                                \
  void NAME(__global const float* x, __global long* y, long outer, long n, long inner, int select_last) { \
    __local float values[64];                                                                             \
    __local long indices[64];                                                                             \
    const long w = get_group_id(0);                                                                       \
    const int l = (int)get_local_id(0);                                                                   \
    __global const float* lane = x + w * n;                                                               \
    float best = NAN;                                                                                     \
    long best_index = -1;                                                                                 \
    for (long j = l; j < n; j += 64) {                                                                    \
      const float v = lane[j];                                                                            \
      int take;                                                                                           \
      if (best_index < 0)                                                                                 \
        take = 1;                                                                                         \
      else if (isnan(best))                                                                               \
        take = select_last && isnan(v);                                                                   \
      else if (isnan(v))                                                                                  \
        take = 1;                                                                                         \
      else                                                                                                \
        take = (BETTER) || (select_last && v == best);                                                    \
      if (take) {                                                                                         \
        best = v;                                                                                         \
        best_index = j;                                                                                   \
      }                                                                                                   \
    }                                                                                                     \
    values[l] = best;                                                                                     \
    indices[l] = best_index;                                                                              \
    barrier(CLK_LOCAL_MEM_FENCE);                                                                         \
    for (int step = 32; step > 0; step >>= 1) {                                                           \
      if (l < step && indices[l + step] >= 0) {                                                           \
        const float a = values[l], v = values[l + step];                                                  \
        const long ia = indices[l], iv = indices[l + step];                                               \
        int take;                                                                                         \
        if (ia < 0)                                                                                       \
          take = 1;                                                                                       \
        else if (isnan(a) || isnan(v))                                                                    \
          take = isnan(a) && isnan(v) ? (select_last ? iv > ia : iv < ia) : isnan(v);                    \
        else {                                                                                            \
          const float best = a;                                                                           \
          take = (BETTER) || (v == a && (select_last ? iv > ia : iv < ia));                               \
        }                                                                                                 \
        if (take) {                                                                                       \
          values[l] = v;                                                                                  \
          indices[l] = iv;                                                                                \
        }                                                                                                 \
      }                                                                                                   \
      barrier(CLK_LOCAL_MEM_FENCE);                                                                       \
    }                                                                                                     \
    if (l == 0) y[w] = indices[0];                                                                        \
  }

GROUP_ARG_KERNEL(group_arg_max, v > best)
GROUP_ARG_KERNEL(group_arg_min, v < best)

/* Long reductions: work-groups of 64 per output element, `slices` of them
   (group id = output * slices + slice), slice k covering the reduced positions
   [k * chunk, (k + 1) * chunk). Work-item l folds positions l, l + 64, ... of
   its slice (each decomposed over the reduced runs), then the 64 partial
   results combine in local memory (COMBINE(a, b)). With one slice the group
   writes the result; with several each writes its partial result, and
   final_reduce_* (one work-item per output) combines the slices'. */
#define REDUCE_OP(SUFFIX, INIT, ADD, COMBINE, FINISH)                                   \
  __kernel __attribute__((reqd_work_group_size(64, 1, 1)))                             \
  void group_reduce_##SUFFIX(__global const float* x, __global float* y,               \
                             __global float* partials, ReduceGeometry g, long slices,   \
                             long chunk) {                                              \
    __local float partial[64];                                                         \
    const long o = get_group_id(0) / slices, slice = get_group_id(0) % slices;         \
    const int l = (int)get_local_id(0);                                                \
    long base = 0, rest = o;                                                           \
    for (int d = (int)g.kept_rank - 1; d >= 0; --d) {                                  \
      base += (rest % g.kept_size[d]) * g.kept_stride[d];                              \
      rest /= g.kept_size[d];                                                          \
    }                                                                                  \
    const long end = min(g.reduced_count, (slice + 1) * chunk);                        \
    float acc = INIT;                                                                  \
    for (long r = slice * chunk + l; r < end; r += 64) {                               \
      long offset = base, left = r;                                                    \
      for (int d = (int)g.reduced_rank - 1; d >= 0; --d) {                             \
        offset += (left % g.reduced_size[d]) * g.reduced_stride[d];                    \
        left /= g.reduced_size[d];                                                     \
      }                                                                                \
      const float v = x[offset];                                                       \
      ADD;                                                                             \
    }                                                                                  \
    partial[l] = acc;                                                                  \
    barrier(CLK_LOCAL_MEM_FENCE);                                                      \
    for (int step = 32; step > 0; step >>= 1) {                                        \
      if (l < step) {                                                                  \
        const float a = partial[l], b = partial[l + step];                             \
        partial[l] = COMBINE;                                                          \
      }                                                                                \
      barrier(CLK_LOCAL_MEM_FENCE);                                                    \
    }                                                                                  \
    if (l == 0) {                                                                      \
      acc = partial[0];                                                                \
      const long count = g.reduced_count;                                              \
      if (slices > 1)                                                                  \
        partials[o * slices + slice] = acc;                                            \
      else                                                                             \
        y[o] = FINISH;                                                                 \
    }                                                                                  \
  }                                                                                    \
  __kernel void final_reduce_##SUFFIX(__global const float* partials, __global float* y, \
                                      long outputs, long slices, long count) {         \
    const long o = get_global_id(0);                                                   \
    if (o >= outputs) return;                                                          \
    float acc = INIT;                                                                  \
    for (long k = 0; k < slices; ++k) {                                                \
      const float a = acc, b = partials[o * slices + k];                               \
      acc = COMBINE;                                                                   \
    }                                                                                  \
    y[o] = FINISH;                                                                     \
  }

REDUCE_OP(sum, 0.0f, acc += v, a + b, acc)
REDUCE_OP(mean, 0.0f, acc += v, a + b, acc / (float)count)
REDUCE_OP(sum_square, 0.0f, acc += v * v, a + b, acc)
REDUCE_OP(l1, 0.0f, acc += fabs(v), a + b, acc)
REDUCE_OP(l2, 0.0f, acc += v * v, a + b, sqrt(acc))
REDUCE_OP(log_sum, 0.0f, acc += v, a + b, log(acc))
REDUCE_OP(prod, 1.0f, acc *= v, a * b, acc)
REDUCE_OP(max, -INFINITY, if (v > acc || isnan(v)) acc = v, (b > a || isnan(b)) ? b : a, acc)
REDUCE_OP(min, INFINITY, if (v < acc || isnan(v)) acc = v, (b < a || isnan(b)) ? b : a, acc)

/* LogSumExp's running (maximum m, sum s of exp(x - m)) pairs combine as
   m = max(m1, m2), s = s1 * exp(m1 - m) + s2 * exp(m2 - m); an empty pair (s 0)
   is the identity. Partial results are pairs: partials[2 * i] = m, [2 * i + 1] = s. */
void combine_log_sum_exp(float* m1, float* s1, float m2, float s2) {
  if (*s1 == 0.0f) {
    *m1 = m2;
    *s1 = s2;
  } else if (s2 != 0.0f) {
    if (m2 > *m1) {
      *s1 = *s1 * exp(*m1 - m2) + s2;
      *m1 = m2;
    } else {
      *s1 = *s1 + s2 * exp(m2 - *m1);
    }
  }
}

__kernel __attribute__((reqd_work_group_size(64, 1, 1)))
void group_reduce_log_sum_exp(__global const float* x, __global float* y, __global float* partials,
                              ReduceGeometry g, long slices, long chunk) {
  __local float partial_m[64];
  __local float partial_s[64];
  const long o = get_group_id(0) / slices, slice = get_group_id(0) % slices;
  const int l = (int)get_local_id(0);
  long base = 0, rest = o;
  for (int d = (int)g.kept_rank - 1; d >= 0; --d) {
    base += (rest % g.kept_size[d]) * g.kept_stride[d];
    rest /= g.kept_size[d];
  }
  const long end = min(g.reduced_count, (slice + 1) * chunk);
  float m = -INFINITY, s = 0.0f;
  for (long r = slice * chunk + l; r < end; r += 64) {
    long offset = base, left = r;
    for (int d = (int)g.reduced_rank - 1; d >= 0; --d) {
      offset += (left % g.reduced_size[d]) * g.reduced_stride[d];
      left /= g.reduced_size[d];
    }
    const float v = x[offset];
    if (v != -INFINITY) {
      if (v > m) {
        s = s * exp(m - v) + 1.0f;
        m = v;
      } else {
        s += exp(v - m);
      }
    }
  }
  partial_m[l] = m;
  partial_s[l] = s;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int step = 32; step > 0; step >>= 1) {
    if (l < step) {
      float m1 = partial_m[l], s1 = partial_s[l];
      combine_log_sum_exp(&m1, &s1, partial_m[l + step], partial_s[l + step]);
      partial_m[l] = m1;
      partial_s[l] = s1;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (l == 0) {
    if (slices > 1) {
      partials[2 * (o * slices + slice)] = partial_m[0];
      partials[2 * (o * slices + slice) + 1] = partial_s[0];
    } else {
      y[o] = partial_s[0] == 0.0f ? -INFINITY : partial_m[0] + log(partial_s[0]);
    }
  }
}

__kernel void final_reduce_log_sum_exp(__global const float* partials, __global float* y, long outputs, long slices,
                                       long count) {
  const long o = get_global_id(0);
  if (o >= outputs) return;
  float m = -INFINITY, s = 0.0f;
  for (long k = 0; k < slices; ++k)
    combine_log_sum_exp(&m, &s, partials[2 * (o * slices + k)], partials[2 * (o * slices + k) + 1]);
  y[o] = s == 0.0f ? -INFINITY : m + log(s);
}
)CLC";

constexpr int kMaxRuns = 8;

/// The kernel's ReduceGeometry (all longs: one layout on host and device).
struct ReduceGeometry {
  int64_t kept_size[kMaxRuns];
  int64_t kept_stride[kMaxRuns];
  int64_t reduced_size[kMaxRuns];
  int64_t reduced_stride[kMaxRuns];
  int64_t kept_rank;
  int64_t reduced_rank;
  int64_t kept_count;
  int64_t reduced_count;
};
static_assert(sizeof(ReduceGeometry) == (4 * kMaxRuns + 4) * sizeof(int64_t));

/// The kernel name of a Reduce op, or null.
const char* reduce_kernel_name(ir::OpId op) {
  switch (op) {
    case ir::OpId::ReduceSum:
      return "reduce_sum";
    case ir::OpId::ReduceMean:
      return "reduce_mean";
    case ir::OpId::ReduceSumSquare:
      return "reduce_sum_square";
    case ir::OpId::ReduceL1:
      return "reduce_l1";
    case ir::OpId::ReduceL2:
      return "reduce_l2";
    case ir::OpId::ReduceLogSum:
      return "reduce_log_sum";
    case ir::OpId::ReduceProd:
      return "reduce_prod";
    case ir::OpId::ReduceMax:
      return "reduce_max";
    case ir::OpId::ReduceMin:
      return "reduce_min";
    case ir::OpId::ReduceLogSumExp:
      return "reduce_log_sum_exp";
    default:
      return nullptr;
  }
}

/// The reduction geometry of a Reduce node, or a reason in `why`.
ReduceGeometry reduce_geometry(const KernelRequest& request, std::string& why) {
  const ir::Node& node = request.node;
  ReduceGeometry g{};
  const int axes_input_opset = node.op() == ir::OpId::ReduceSum ? 13 : 18;
  const bool keepdims = node.attributes.get_int("keepdims", 1) != 0;
  const bool noop = node.opset_version >= axes_input_opset && node.attributes.get_int("noop_with_empty_axes", 0) != 0;
  std::vector<int64_t> axes = node.attributes.get_ints("axes", {});
  if (request.inputs.size() > 1 && request.inputs[1].dtype != DType::undefined) {
    const Tensor* constant = request.constants[1];
    if (!constant) {
      why = "axes from a non-constant input";
      return g;
    }
    if (!dtype_is_integer(constant->dtype()) || constant->rank() > 1) {
      why = "axes are not a 1-D integer tensor";
      return g;
    }
    axes = constant->to_int64_vector();
  }
  const Shape& x = request.inputs[0].shape;
  const int64_t rank = static_cast<int64_t>(x.size());
  if (axes.empty() && !noop)
    for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
  for (int64_t& a : axes) {
    if (a < -rank || a >= rank) {
      why = "axis " + std::to_string(a) + " out of range for rank " + std::to_string(rank);
      return g;
    }
    if (a < 0) a += rank;
  }
  std::sort(axes.begin(), axes.end());
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end()) {
    why = "axes contain a duplicate";
    return g;
  }
  // Runs of kept / reduced dimensions (extents of 1 dropped, neighbours of one kind merged).
  struct Run {
    int64_t extent;
    bool reduced;
  };
  std::vector<Run> runs;
  Shape out_shape;
  g.kept_count = 1;
  g.reduced_count = 1;
  for (int64_t d = 0; d < rank; ++d) {
    const int64_t e = x[static_cast<size_t>(d)];
    const bool reduced = std::binary_search(axes.begin(), axes.end(), d);
    (reduced ? g.reduced_count : g.kept_count) *= e;
    if (!reduced)
      out_shape.push_back(e);
    else if (keepdims)
      out_shape.push_back(1);
    if (e == 1) continue;
    if (!runs.empty() && runs.back().reduced == reduced)
      runs.back().extent *= e;
    else
      runs.push_back({e, reduced});
  }
  if (request.outputs.empty() || request.outputs[0].shape != out_shape) {
    why = "output shape is not " + shape_to_string(out_shape);
    return g;
  }
  int64_t stride = 1;
  std::vector<std::pair<int64_t, int64_t>> kept, reduced;  // (extent, stride), innermost first
  for (auto it = runs.rbegin(); it != runs.rend(); ++it) {
    (it->reduced ? reduced : kept).push_back({it->extent, stride});
    stride *= it->extent;
  }
  if (kept.size() > kMaxRuns || reduced.size() > kMaxRuns) {
    why = "more than 8 runs of kept or reduced dimensions";
    return g;
  }
  g.kept_rank = static_cast<int64_t>(kept.size());
  g.reduced_rank = static_cast<int64_t>(reduced.size());
  for (size_t i = 0; i < kept.size(); ++i) {
    const size_t d = kept.size() - 1 - i;  // outermost first
    g.kept_size[d] = kept[i].first;
    g.kept_stride[d] = kept[i].second;
  }
  for (size_t i = 0; i < reduced.size(); ++i) {
    const size_t d = reduced.size() - 1 - i;
    g.reduced_size[d] = reduced[i].first;
    g.reduced_stride[d] = reduced[i].second;
  }
  return g;
}

class ReduceKernel final : public NodeKernel {
 public:
  ReduceKernel(const char* name, ReduceGeometry geometry) : name_(name), geometry_(geometry) {}

  void compile(ClDevice& device) override {
    const int64_t kept = geometry_.kept_count, count = geometry_.reduced_count;
    grouped_ = group_per_row(device, kept, count);
    if (grouped_ && kept < kFewOutputs) slices_ = std::clamp<int64_t>(count / kSliceElements, 1, kMaxSlices);
    cl_program program = device.program(kReduceSource);
    if (!grouped_) {
      kernel_ = ClKernel(device, program, name_);
      return;
    }
    // name_ is "reduce_<op>": the work-group kernels are group_reduce_<op> and final_reduce_<op>.
    kernel_ = ClKernel(device, program, "group_" + name_);
    if (slices_ > 1) final_ = ClKernel(device, program, "final_" + name_);
  }

  void enqueue(ClLaunchContext& context, std::span<const ClTensor> inputs,
               std::span<const ClTensor> outputs) const override {
    const int64_t kept = geometry_.kept_count, count = geometry_.reduced_count;
    if (!grouped_) {
      kernel_.launch(context.queue(), items(kept), inputs[0], outputs[0], geometry_);
    } else if (slices_ == 1) {
      // The partials argument is unused with one slice: the output stands in.
      kernel_.launch(context.queue(), groups(kept), inputs[0], outputs[0], outputs[0], geometry_, int64_t{1}, count);
    } else {
      // Two floats per partial result (LogSumExp's pairs; the others use the first half).
      cl_mem partials = context.scratch(static_cast<size_t>(kept * slices_) * 2 * sizeof(float));
      const int64_t chunk = (count + slices_ - 1) / slices_;
      kernel_.launch(context.queue(), groups(kept * slices_), inputs[0], outputs[0], partials, geometry_, slices_,
                     chunk);
      final_.launch(context.queue(), items(kept), partials, outputs[0], kept, slices_, count);
    }
  }

 private:
  /// Fewer work-group outputs than this, each of 2 * kSliceElements elements or more, split their
  /// reductions over count / kSliceElements work-groups (at most kMaxSlices).
  static constexpr int64_t kFewOutputs = 64;
  static constexpr int64_t kSliceElements = 8192;
  static constexpr int64_t kMaxSlices = 256;

  std::string name_;
  ReduceGeometry geometry_;
  bool grouped_ = false;  ///< work-groups per output (group_per_row), else one work-item
  int64_t slices_ = 1;    ///< work-groups per output, their partial results combined by final_
  ClKernel final_;
  ClKernel kernel_;
};

std::string float32_input(const KernelRequest& request) {
  if (request.inputs.empty() || request.inputs[0].dtype != DType::float32)
    return std::string(request.inputs.empty() ? "no input" : dtype_name(request.inputs[0].dtype)) +
           " input (the OpenCL reductions are float32 only)";
  return {};
}

std::string reduce_support(const KernelRequest& request) {
  if (!reduce_kernel_name(request.node.op())) return "not a Reduce op";
  std::string why = float32_input(request);
  if (!why.empty()) return why;
  reduce_geometry(request, why);
  return why;
}

std::unique_ptr<NodeKernel> make_reduce_kernel(const KernelRequest& request) {
  std::string why;
  ReduceGeometry g = reduce_geometry(request, why);
  if (!why.empty()) fail(ErrorKind::unsupported, request.node.describe(), ": ", why);
  return std::make_unique<ReduceKernel>(reduce_kernel_name(request.node.op()), g);
}

// ---- ArgMax / ArgMin ---------------------------------------------------------

struct ArgPlan {
  int64_t outer = 1, n = 1, inner = 1;
  int32_t select_last = 0;
};

ArgPlan arg_plan(const KernelRequest& request, std::string& why) {
  const ir::Node& node = request.node;
  ArgPlan plan;
  const Shape& x = request.inputs[0].shape;
  const int64_t rank = static_cast<int64_t>(x.size());
  if (rank == 0) {
    why = "a scalar input";
    return plan;
  }
  int64_t axis = node.attributes.get_int("axis", 0);
  if (axis < -rank || axis >= rank) {
    why = "axis " + std::to_string(axis) + " out of range for rank " + std::to_string(rank);
    return plan;
  }
  if (axis < 0) axis += rank;
  plan.n = x[static_cast<size_t>(axis)];
  if (plan.n == 0) {
    why = "an empty axis";
    return plan;
  }
  for (int64_t d = 0; d < axis; ++d) plan.outer *= x[static_cast<size_t>(d)];
  for (int64_t d = axis + 1; d < rank; ++d) plan.inner *= x[static_cast<size_t>(d)];
  plan.select_last = node.opset_version >= 12 && node.attributes.get_int("select_last_index", 0) != 0;
  if (request.outputs.empty() || request.outputs[0].dtype != DType::int64 ||
      request.outputs[0].numel() != plan.outer * plan.inner)
    why = "output is not int64 of one index per lane";
  return plan;
}

class ArgKernel final : public NodeKernel {
 public:
  ArgKernel(const char* name, ArgPlan plan) : name_(name), plan_(plan) {}

  void compile(ClDevice& device) override {
    grouped_ = plan_.inner == 1 && group_per_row(device, plan_.outer, plan_.n);
    kernel_ = ClKernel(device, device.program(kReduceSource), grouped_ ? std::string("group_") + name_ : name_);
  }

  void enqueue(ClLaunchContext& context, std::span<const ClTensor> inputs,
               std::span<const ClTensor> outputs) const override {
    const ClRange range = grouped_ ? groups(plan_.outer) : items(plan_.outer * plan_.inner);
    kernel_.launch(context.queue(), range, inputs[0], outputs[0], plan_.outer, plan_.n, plan_.inner, plan_.select_last);
  }

 private:
  std::string name_;
  ArgPlan plan_;
  bool grouped_ = false;  ///< one work-group per contiguous lane (group_per_row), else one work-item per lane
  ClKernel kernel_;
};

std::string arg_support(const KernelRequest& request) {
  std::string why = float32_input(request);
  if (!why.empty()) return why;
  arg_plan(request, why);
  return why;
}

std::unique_ptr<NodeKernel> make_arg_kernel(const KernelRequest& request) {
  std::string why;
  ArgPlan plan = arg_plan(request, why);
  if (!why.empty()) fail(ErrorKind::unsupported, request.node.describe(), ": ", why);
  return std::make_unique<ArgKernel>(request.node.op() == ir::OpId::ArgMax ? "arg_max" : "arg_min", plan);
}

}  // namespace

GRAFT_REGISTER_OPENCL_KERNEL(ReduceSum, guarded<reduce_support>, make_reduce_kernel);
GRAFT_REGISTER_OPENCL_KERNEL(ReduceMean, guarded<reduce_support>, make_reduce_kernel);
GRAFT_REGISTER_OPENCL_KERNEL(ReduceSumSquare, guarded<reduce_support>, make_reduce_kernel);
GRAFT_REGISTER_OPENCL_KERNEL(ReduceL1, guarded<reduce_support>, make_reduce_kernel);
GRAFT_REGISTER_OPENCL_KERNEL(ReduceL2, guarded<reduce_support>, make_reduce_kernel);
GRAFT_REGISTER_OPENCL_KERNEL(ReduceLogSum, guarded<reduce_support>, make_reduce_kernel);
GRAFT_REGISTER_OPENCL_KERNEL(ReduceProd, guarded<reduce_support>, make_reduce_kernel);
GRAFT_REGISTER_OPENCL_KERNEL(ReduceMax, guarded<reduce_support>, make_reduce_kernel);
GRAFT_REGISTER_OPENCL_KERNEL(ReduceMin, guarded<reduce_support>, make_reduce_kernel);
GRAFT_REGISTER_OPENCL_KERNEL(ReduceLogSumExp, guarded<reduce_support>, make_reduce_kernel);
GRAFT_REGISTER_OPENCL_KERNEL(ArgMax, guarded<arg_support>, make_arg_kernel);
GRAFT_REGISTER_OPENCL_KERNEL(ArgMin, guarded<arg_support>, make_arg_kernel);

}  // namespace graft::opencl

#endif  // GRAFT_HAVE_OPENCL_HEADERS
