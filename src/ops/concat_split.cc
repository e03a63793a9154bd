// Concat and Split: joining tensors along an axis and cutting one apart.
// Both view the tensors as [outer, axis * inner] row blocks: Concat copies
// each input's block of every outer row next to the others', Split the
// reverse. Split sizes come from the `split` attribute (before opset 13), the
// `split` input (13+), the `num_outputs` attribute (18+, last chunk smaller)
// or an even division among the outputs.
#include <algorithm>
#include <cstring>

#include "data_movement.h"
#include "graft/core/parallel.h"
#include "graft/ops/gradient.h"
#include "graft/ops/infer_util.h"

namespace graft::ops {
namespace {

// Merges two dims that must be equal: a known extent wins, matching symbols stay.
template <typename Context>
ir::Dim merge_equal_dims(const Context& ctx, const ir::Dim& a, const ir::Dim& b, size_t axis) {
  if (a.is_known() && b.is_known()) {
    if (a.value != b.value) ctx.fail("inputs differ in dimension ", axis, " (", a.value, " vs ", b.value, ")");
    return a;
  }
  if (a.is_known()) return a;
  if (b.is_known()) return b;
  return a.symbol == b.symbol ? a : ir::Dim{};
}

// Copies `rows` rows, each `row_bytes` long, from src (row pitch src_pitch)
// to dst (row pitch dst_pitch).
void copy_rows(char* dst, int64_t dst_pitch, const char* src, int64_t src_pitch, int64_t rows, int64_t row_bytes) {
  if (rows == 0 || row_bytes == 0) return;
  if (rows == 1) {
    parallel_copy(dst, src, static_cast<size_t>(row_bytes));
    return;
  }
  parallel_for(rows, std::max<int64_t>(1, 65536 / row_bytes), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r)
      std::memcpy(dst + r * dst_pitch, src + r * src_pitch, static_cast<size_t>(row_bytes));
  });
}

// ---- Concat -----------------------------------------------------------------

// The axis attribute: required from opset 4, 1 by default before.
template <typename Context>
int64_t concat_axis(const Context& ctx) {
  if (ctx.opset() < 4) return ctx.attrs().get_int("axis", 1);
  if (!ctx.attrs().has("axis")) ctx.fail("attribute 'axis' is required");
  return ctx.attrs().get_int("axis");
}

void concat_infer(InferContext& ctx) {
  const int64_t axis_attr = concat_axis(ctx);
  DType dtype = DType::undefined;
  std::optional<std::vector<ir::Dim>> dims;
  bool all_ranked = true;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    if (!ctx.has_input(i)) ctx.fail("input ", i, " is absent");
    const ir::ValueType& t = ctx.input_type(i);
    if (dtype == DType::undefined)
      dtype = t.dtype;
    else if (t.dtype != DType::undefined && t.dtype != dtype)
      ctx.fail("input ", i, " has dtype ", dtype_name(t.dtype), ", expected ", dtype_name(dtype));
    if (!t.has_rank) {
      all_ranked = false;
      continue;
    }
    if (!dims) {
      dims = t.dims;
      continue;
    }
    if (t.dims.size() != dims->size())
      ctx.fail("input ", i, " has rank ", t.dims.size(), ", expected ", dims->size(), " like input 0");
  }
  if (!dims) {
    set_output_dtype_only(ctx, 0, dtype);
    return;
  }
  const int64_t rank = static_cast<int64_t>(dims->size());
  const size_t axis = static_cast<size_t>(checked_axis(ctx, axis_attr, rank));
  std::vector<ir::Dim> out = *dims;
  int64_t axis_sum = 0;
  bool axis_known = all_ranked;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    const ir::ValueType& t = ctx.input_type(i);
    if (!t.has_rank) continue;
    for (size_t d = 0; d < t.dims.size(); ++d)
      if (d != axis) out[d] = merge_equal_dims(ctx, out[d], t.dims[d], d);
    if (!t.dims[axis].is_known())
      axis_known = false;
    else if (__builtin_add_overflow(axis_sum, t.dims[axis].value, &axis_sum))
      ctx.fail("the inputs' extents along axis ", axis, " sum past 2^63");
  }
  out[axis] = axis_known ? ir::Dim::known(axis_sum) : (ctx.num_inputs() == 1 ? out[axis] : ir::Dim{});
  ctx.set_output(0, ranked_type(dtype, std::move(out)));
}

void concat_kernel(KernelContext& ctx) {
  const int64_t axis_attr = concat_axis(ctx);
  const Tensor& first = ctx.input(0);
  const int64_t rank = first.rank();
  if (rank == 0) ctx.fail("cannot concatenate scalars");
  const int64_t axis = checked_axis(ctx, axis_attr, rank);
  Shape out_shape = first.shape();
  out_shape[static_cast<size_t>(axis)] = 0;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    const Tensor& t = ctx.input(i);
    if (t.dtype() != first.dtype() || t.rank() != rank)
      ctx.fail("input ", i, " is ", t.type_string(), ", expected ", dtype_name(first.dtype()), " of rank ", rank);
    for (int64_t d = 0; d < rank; ++d)
      if (d != axis && t.dim(d) != first.dim(d))
        ctx.fail("input ", i, " is ", t.type_string(), " and input 0 is ", first.type_string(),
                 ": they differ outside axis ", axis);
    out_shape[static_cast<size_t>(axis)] += t.dim(axis);
  }
  Tensor& y = ctx.allocate_output(0, first.dtype(), out_shape);
  const int64_t element = static_cast<int64_t>(dtype_size(first.dtype()));
  int64_t outer = 1, inner = element;
  for (int64_t d = 0; d < axis; ++d) outer *= out_shape[static_cast<size_t>(d)];
  for (int64_t d = axis + 1; d < rank; ++d) inner *= out_shape[static_cast<size_t>(d)];
  const int64_t out_pitch = out_shape[static_cast<size_t>(axis)] * inner;
  char* dst = static_cast<char*>(y.raw_data());
  int64_t offset = 0;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    const Tensor& t = ctx.input(i);
    const int64_t block = t.dim(axis) * inner;
    copy_rows(dst + offset, out_pitch, static_cast<const char*>(t.raw_data()), block, outer, block);
    offset += block;
  }
}

// ---- Split ------------------------------------------------------------------

// Split sizes along an axis of `extent`, for `outputs` outputs; `given` is
// the explicit split list when there is one.
template <typename Context>
std::vector<int64_t> split_sizes(const Context& ctx, int64_t extent, const std::optional<std::vector<int64_t>>& given,
                                 size_t outputs) {
  if (given) {
    if (given->size() != outputs) ctx.fail("split has ", given->size(), " entries for ", outputs, " outputs");
    int64_t sum = 0;
    for (int64_t s : *given) {
      if (s < 0) ctx.fail("split has a negative entry ", s);
      sum += s;
    }
    if (sum != extent) ctx.fail("split entries sum to ", sum, ", expected the axis extent ", extent);
    return *given;
  }
  const int64_t n = static_cast<int64_t>(outputs);
  if (ctx.opset() >= 18 && ctx.attrs().has("num_outputs")) {
    if (ctx.attrs().get_int("num_outputs") != n)
      ctx.fail("num_outputs is ", ctx.attrs().get_int("num_outputs"), " but the node has ", n, " outputs");
    const int64_t chunk = (extent + n - 1) / n;
    std::vector<int64_t> sizes(outputs, chunk);
    sizes.back() = extent - chunk * (n - 1);
    if (sizes.back() < 0) ctx.fail("cannot split an axis of ", extent, " into ", n, " chunks of ", chunk);
    return sizes;
  }
  if (extent % n != 0) ctx.fail("cannot split an axis of ", extent, " evenly into ", n, " outputs");
  return std::vector<int64_t>(outputs, extent / n);
}

// Before opset 13 the split sizes are an attribute (opset 1 also took them as
// an optional input); from 13 on, an input.
bool split_given_by_attribute(int opset) { return opset < 13; }

void split_infer(InferContext& ctx) {
  const ir::ValueType& x = ctx.input_type(0);
  const size_t outputs = ctx.num_outputs();
  if (!x.has_rank) {
    for (size_t i = 0; i < outputs; ++i) set_output_dtype_only(ctx, i, x.dtype);
    return;
  }
  const size_t axis =
      static_cast<size_t>(checked_axis(ctx, ctx.attrs().get_int("axis", 0), static_cast<int64_t>(x.dims.size())));
  std::optional<std::vector<int64_t>> given;
  bool given_unknown = false;
  if (split_given_by_attribute(ctx.opset()) && !(ctx.opset() < 2 && ctx.has_input(1))) {
    if (ctx.attrs().has("split")) given = ctx.attrs().get_ints("split");
  } else if (ctx.has_input(1)) {
    given = constant_input_ints(ctx, 1);
    given_unknown = !given;
  }
  std::vector<ir::Dim> axis_dims(outputs);
  if (given && !x.dims[axis].is_known()) {
    for (size_t i = 0; i < outputs && i < given->size(); ++i) axis_dims[i] = ir::Dim::known((*given)[i]);
  } else if (!given_unknown && x.dims[axis].is_known()) {
    std::vector<int64_t> sizes = split_sizes(ctx, x.dims[axis].value, given, outputs);
    for (size_t i = 0; i < outputs; ++i) axis_dims[i] = ir::Dim::known(sizes[i]);
  } else if (!given_unknown && outputs == 1) {
    axis_dims[0] = x.dims[axis];
  }
  for (size_t i = 0; i < outputs; ++i) {
    std::vector<ir::Dim> dims = x.dims;
    dims[axis] = axis_dims[i];
    ctx.set_output(i, ranked_type(x.dtype, std::move(dims)));
  }
}

void split_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.rank() == 0) ctx.fail("cannot split a scalar");
  const int64_t axis = checked_axis(ctx, ctx.attrs().get_int("axis", 0), x.rank());
  std::optional<std::vector<int64_t>> given;
  if (split_given_by_attribute(ctx.opset()) && !(ctx.opset() < 2 && ctx.has_input(1))) {
    if (ctx.attrs().has("split")) given = ctx.attrs().get_ints("split");
  } else if (ctx.has_input(1)) {
    given = input_ints(ctx, 1, "split");
  }
  std::vector<int64_t> sizes = split_sizes(ctx, x.dim(axis), given, ctx.num_outputs());
  const int64_t element = static_cast<int64_t>(dtype_size(x.dtype()));
  int64_t outer = 1, inner = element;
  for (int64_t d = 0; d < axis; ++d) outer *= x.dim(d);
  for (int64_t d = axis + 1; d < x.rank(); ++d) inner *= x.dim(d);
  const int64_t in_pitch = x.dim(axis) * inner;
  const char* src = static_cast<const char*>(x.raw_data());
  int64_t offset = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    Shape shape = x.shape();
    shape[static_cast<size_t>(axis)] = sizes[i];
    Tensor& y = ctx.allocate_output(i, x.dtype(), shape);
    const int64_t block = sizes[i] * inner;
    copy_rows(static_cast<char*>(y.raw_data()), block, src + offset, in_pitch, outer, block);
    offset += block;
  }
}

}  // namespace

GRAFT_REGISTER_OP("", "Concat", concat_infer, concat_kernel);
GRAFT_REGISTER_OP("", "Split", split_infer, split_kernel);

// Gradient builders (graft/ops/gradient.h). Concat: each input's slice of
// dy. Split: the outputs' gradients concatenated (zeros for outputs without
// one).
namespace {

void concat_gradient(GradientContext& g) {
  using enum ir::OpId;
  const ir::ValueType& y = g.output_type(0);
  if (!y.has_rank) g.unsupported("the output's rank is not known");
  const int64_t axis =
      normalize_axis(g.attrs().get_int("axis"), static_cast<int64_t>(y.dims.size()), g.node().describe());
  int64_t offset = 0;
  for (size_t i = 0; i < g.num_inputs(); ++i) {
    const int64_t extent = g.known_dims(g.input(i))[static_cast<size_t>(axis)];
    if (g.needs_input_gradient(i))
      g.set_input_gradient(
          i, g.add(Slice, {g.output_gradient(0), g.int64s({offset}), g.int64s({offset + extent}), g.int64s({axis})}));
    offset += extent;
  }
}

void split_gradient(GradientContext& g) {
  using enum ir::OpId;
  const ir::ValueType& x = g.input_type(0);
  if (!x.has_rank) g.unsupported("the input's rank is not known");
  const int64_t axis =
      normalize_axis(g.attrs().get_int("axis", 0), static_cast<int64_t>(x.dims.size()), g.node().describe());
  std::vector<ir::Value> parts;
  for (size_t k = 0; k < g.num_outputs(); ++k) {
    ir::Value d = g.output_gradient(k);
    if (!d) {
      std::optional<graft::Shape> shape = g.output_type(k).concrete_shape();
      if (!shape) g.unsupported("the shape of output ", k, " is not known");
      d = g.constant(Tensor(g.output_type(k).dtype, *shape));
    }
    parts.push_back(d);
  }
  g.set_input_gradient(0, g.add(Concat, parts, {{"axis", axis}}));
}

}  // namespace

GRAFT_REGISTER_GRADIENT(Concat, concat_gradient);
GRAFT_REGISTER_GRADIENT(Split, split_gradient);

}  // namespace graft::ops
