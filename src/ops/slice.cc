// Slice: takes start:end:step along chosen axes. Before opset 10 starts, ends
// and axes are attributes (step 1); from 10 on they are inputs, with steps.
// Each range is normalized the ONNX way: negative starts/ends count from the
// end, then they are clamped to [0, dim] for positive steps and to
// [0, dim-1] / [-1, dim-1] for negative steps. The kernel is a strided copy
// over output rows, a memcpy per row when the innermost step is 1.
#include <algorithm>
#include <cstring>
#include <limits>

#include "data_movement.h"
#include "graft/core/parallel.h"
#include "graft/ops/gradient.h"
#include "graft/ops/infer_util.h"

namespace graft::ops {
namespace {

struct SliceRange {
  int64_t start = 0, step = 1, count = 0;
};

// Normalizes one start/end/step against `extent`.
SliceRange normalize_range(int64_t start, int64_t end, int64_t step, int64_t extent) {
  SliceRange r;
  r.step = step;
  if (extent == 0) return r;
  if (start < 0) start = start < -extent ? -1 : start + extent;  // keeps clamping below correct without overflow
  if (end < 0) end = end < -extent ? -1 : end + extent;
  if (step > 0) {
    start = std::clamp<int64_t>(start, 0, extent);
    end = std::clamp<int64_t>(end, 0, extent);
    r.count = end > start ? (end - start + step - 1) / step : 0;
  } else {
    start = std::clamp<int64_t>(start, 0, extent - 1);
    end = std::clamp<int64_t>(end, -1, extent - 1);
    r.count = start > end ? (start - end + (-step) - 1) / (-step) : 0;
  }
  r.start = start;
  return r;
}

// The slice parameters as given: starts, ends, axes, steps (axes and steps
// filled with defaults when absent).
struct SliceSpec {
  std::vector<int64_t> starts, ends, axes, steps;
};

// Validates lengths and normalizes axes against `rank`.
template <typename Context>
void check_spec(const Context& ctx, SliceSpec& spec, int64_t rank) {
  const size_t n = spec.starts.size();
  if (spec.ends.size() != n) ctx.fail("starts has ", n, " entries but ends has ", spec.ends.size());
  if (spec.axes.empty() && n > 0)
    for (size_t i = 0; i < n; ++i) spec.axes.push_back(static_cast<int64_t>(i));
  if (spec.steps.empty()) spec.steps.assign(n, 1);
  if (spec.axes.size() != n) ctx.fail("axes has ", spec.axes.size(), " entries, expected ", n);
  if (spec.steps.size() != n) ctx.fail("steps has ", spec.steps.size(), " entries, expected ", n);
  spec.axes = checked_axes(ctx, spec.axes, rank);
  for (int64_t s : spec.steps)
    if (s == 0) ctx.fail("steps must not be 0");
}

void slice_infer(InferContext& ctx) {
  const ir::ValueType& x = ctx.input_type(0);
  if (!x.has_rank) {
    set_output_dtype_only(ctx, 0, x.dtype);
    return;
  }
  const int64_t rank = static_cast<int64_t>(x.dims.size());
  SliceSpec spec;
  bool known = true;
  std::optional<std::vector<int64_t>> axes;
  if (ctx.opset() < 10) {
    spec.starts = ctx.attrs().get_ints("starts", {});
    spec.ends = ctx.attrs().get_ints("ends", {});
    spec.axes = ctx.attrs().get_ints("axes", {});
  } else {
    auto starts = constant_input_ints(ctx, 1), ends = constant_input_ints(ctx, 2);
    axes = ctx.has_input(3) ? constant_input_ints(ctx, 3) : std::optional<std::vector<int64_t>>(std::vector<int64_t>{});
    auto steps =
        ctx.has_input(4) ? constant_input_ints(ctx, 4) : std::optional<std::vector<int64_t>>(std::vector<int64_t>{});
    if (!starts || !ends || !axes || !steps) {
      known = false;
    } else {
      spec = SliceSpec{*starts, *ends, *axes, *steps};
    }
  }
  std::vector<ir::Dim> dims = x.dims;
  if (!known) {
    // Without the ranges, every sliced axis is unknown; all are when the
    // axes are not known either.
    if (axes && !axes->empty()) {
      for (int64_t a : checked_axes(ctx, *axes, rank)) dims[static_cast<size_t>(a)] = ir::Dim{};
    } else if (axes && ctx.has_input(1)) {
      auto count = known_length(ctx, 1);
      size_t n = count ? static_cast<size_t>(*count) : x.dims.size();
      for (size_t d = 0; d < n && d < dims.size(); ++d) dims[d] = ir::Dim{};
    } else {
      dims = unknown_dims(x.dims.size());
    }
    ctx.set_output(0, ranked_type(x.dtype, std::move(dims)));
    return;
  }
  check_spec(ctx, spec, rank);
  for (size_t i = 0; i < spec.axes.size(); ++i) {
    ir::Dim& d = dims[static_cast<size_t>(spec.axes[i])];
    if (d.is_known()) {
      d = ir::Dim::known(normalize_range(spec.starts[i], spec.ends[i], spec.steps[i], d.value).count);
    } else if (!(spec.steps[i] == 1 && spec.starts[i] == 0 && spec.ends[i] >= std::numeric_limits<int32_t>::max())) {
      d = ir::Dim{};  // a whole-axis slice keeps a symbolic dim
    }
  }
  ctx.set_output(0, ranked_type(x.dtype, std::move(dims)));
}

template <typename U>
void strided_copy(const U* in, U* out, const Shape& in_shape, const Shape& out_shape,
                  const std::vector<SliceRange>& ranges) {
  const size_t rank = out_shape.size();
  const std::vector<int64_t> in_strides = shape_strides(in_shape);
  int64_t base = 0;
  for (size_t d = 0; d < rank; ++d) base += ranges[d].start * in_strides[d];
  const int64_t total = shape_numel(out_shape);
  if (total == 0) return;
  if (rank == 0) {
    out[0] = in[0];
    return;
  }
  const int64_t row = out_shape[rank - 1];
  const int64_t rows = total / row;
  const int64_t inner_step = ranges[rank - 1].step;
  parallel_for(rows, std::max<int64_t>(1, 8192 / row), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      int64_t rem = r, src = base;
      for (size_t d = rank - 1; d-- > 0;) {
        src += (rem % out_shape[d]) * ranges[d].step * in_strides[d];
        rem /= out_shape[d];
      }
      U* o = out + r * row;
      if (inner_step == 1) {
        std::memcpy(o, in + src, static_cast<size_t>(row) * sizeof(U));
      } else {
        for (int64_t c = 0; c < row; ++c) o[c] = in[src + c * inner_step];
      }
    }
  });
}

void slice_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  SliceSpec spec;
  if (ctx.opset() < 10) {
    spec.starts = ctx.attrs().get_ints("starts", {});
    spec.ends = ctx.attrs().get_ints("ends", {});
    spec.axes = ctx.attrs().get_ints("axes", {});
  } else {
    spec.starts = input_ints(ctx, 1, "starts");
    spec.ends = input_ints(ctx, 2, "ends");
    if (ctx.has_input(3)) spec.axes = input_ints(ctx, 3, "axes");
    if (ctx.has_input(4)) spec.steps = input_ints(ctx, 4, "steps");
    if (ctx.has_input(3) && spec.axes.empty() && !spec.starts.empty()) ctx.fail("axes is empty");
  }
  check_spec(ctx, spec, x.rank());
  std::vector<SliceRange> ranges(static_cast<size_t>(x.rank()));
  for (int64_t d = 0; d < x.rank(); ++d) ranges[static_cast<size_t>(d)].count = x.dim(d);
  for (size_t i = 0; i < spec.axes.size(); ++i) {
    size_t a = static_cast<size_t>(spec.axes[i]);
    ranges[a] = normalize_range(spec.starts[i], spec.ends[i], spec.steps[i], x.shape()[a]);
  }
  Shape out_shape;
  for (const SliceRange& r : ranges) out_shape.push_back(r.count);
  Tensor& y = ctx.allocate_output(0, x.dtype(), out_shape);
  visit_element_type(x.dtype(), "Slice", [&]<typename U>() {
    strided_copy(static_cast<const U*>(x.raw_data()), static_cast<U*>(y.raw_data()), x.shape(), out_shape, ranges);
  });
}

}  // namespace

GRAFT_REGISTER_OP("", "Slice", slice_infer, slice_kernel);

// Gradient builder (graft/ops/gradient.h): dy spread back over the input's
// extents with zeros between and around its elements; constant starts, ends,
// axes and steps only. Along an axis of step s, output element j came from
// input element start + j*s: a negative step is first reversed (Slice with
// step -1), then zeros are interleaved (Unsqueeze, Pad by |s|-1 along the new
// axis, Reshape) and the tail trimmed (Slice); one Pad puts every axis at
// its offset in the input at the end.
namespace {

// dy with |step|-1 zeros after each of its `count` elements along `axis`
// (`dims` its extents), trimmed to (count-1)*|step|+1 elements.
ir::Value interleave_zeros(GradientContext& g, ir::Value dy, std::vector<int64_t> dims, int64_t axis, int64_t step) {
  using enum ir::OpId;
  const int64_t rank = static_cast<int64_t>(dims.size());
  const int64_t count = dims[static_cast<size_t>(axis)];
  ir::Value lifted = g.add(Unsqueeze, {dy, g.int64s({axis + 1})});
  std::vector<int64_t> pads(static_cast<size_t>(2 * (rank + 1)), 0);
  pads[static_cast<size_t>(axis + 1 + rank + 1)] = step - 1;
  ir::Value spread = g.add(Pad, {lifted, g.int64s(pads)});
  dims[static_cast<size_t>(axis)] = count * step;
  ir::Value flat = g.add(Reshape, {spread, g.int64s(dims)});
  return g.add(Slice, {flat, g.int64s({0}), g.int64s({(count - 1) * step + 1}), g.int64s({axis})});
}

void slice_gradient(GradientContext& g) {
  using enum ir::OpId;
  std::vector<int64_t> dims = g.known_dims(g.input(0));
  const int64_t rank = static_cast<int64_t>(dims.size());
  SliceSpec spec;
  if (g.node().opset_version > 0 && g.node().opset_version < 10) {
    spec.starts = g.attrs().get_ints("starts", {});
    spec.ends = g.attrs().get_ints("ends", {});
    spec.axes = g.attrs().get_ints("axes", {});
  } else {
    auto starts = g.constant_ints(1), ends = g.constant_ints(2);
    auto axes = g.has_input(3) ? g.constant_ints(3) : std::optional<std::vector<int64_t>>(std::vector<int64_t>{});
    auto steps = g.has_input(4) ? g.constant_ints(4) : std::optional<std::vector<int64_t>>(std::vector<int64_t>{});
    if (!starts || !ends || !axes || !steps) g.unsupported("starts, ends, axes and steps must be constants");
    spec = SliceSpec{*starts, *ends, *axes, *steps};
  }
  if (spec.axes.empty())
    for (size_t i = 0; i < spec.starts.size(); ++i) spec.axes.push_back(static_cast<int64_t>(i));
  if (spec.steps.empty()) spec.steps.assign(spec.starts.size(), 1);
  ir::Value dy = g.output_gradient(0);
  std::vector<int64_t> dy_dims = g.known_dims(g.output(0));
  std::vector<int64_t> pads(static_cast<size_t>(2 * rank), 0);
  for (size_t i = 0; i < spec.starts.size() && i < spec.axes.size() && i < spec.steps.size(); ++i) {
    const int64_t axis = normalize_axis(spec.axes[i], rank, g.node().describe());
    const int64_t extent = dims[static_cast<size_t>(axis)];
    const int64_t step = spec.steps[i];
    if (step == 0) g.unsupported("a step of 0");
    SliceRange r = normalize_range(spec.starts[i], spec.ends[i], step, extent);
    int64_t low = r.start, span = r.count;
    if (r.count > 0 && step != 1) {
      if (step < 0) {  // the lowest input element first
        dy = g.add(Slice, {dy, g.int64s({-1}), g.int64s({std::numeric_limits<int64_t>::min()}), g.int64s({axis}),
                           g.int64s({-1})});
        low = r.start + (r.count - 1) * step;
      }
      const int64_t stride = step < 0 ? -step : step;
      if (stride > 1 && r.count > 1) dy = interleave_zeros(g, dy, dy_dims, axis, stride);
      span = (r.count - 1) * stride + 1;
      dy_dims[static_cast<size_t>(axis)] = span;
    }
    if (r.count == 0) low = 0;
    pads[static_cast<size_t>(axis)] = low;
    pads[static_cast<size_t>(axis + rank)] = extent - low - span;
  }
  g.set_input_gradient(0, g.add(Pad, {dy, g.int64s(pads)}));
}

}  // namespace

GRAFT_REGISTER_GRADIENT(Slice, slice_gradient);

}  // namespace graft::ops
