// Reshape, Flatten, Squeeze and Unsqueeze: ops that only change the shape.
// Their kernels return views sharing the input's storage (no copy); the work
// is in computing the new shape, at run time from the input tensors and at
// inference time from whatever dims and constant inputs are known.
#include <algorithm>

#include "data_movement.h"
#include "graft/ops/gradient.h"
#include "graft/ops/infer_util.h"

namespace graft::ops {
namespace {

// ---- Reshape ----------------------------------------------------------------

// The requested shape: input 1 from opset 5 on, the `shape` attribute before.
std::optional<std::vector<int64_t>> reshape_request(const InferContext& ctx) {
  if (ctx.opset() < 5 && ctx.attrs().has("shape")) return ctx.attrs().get_ints("shape");
  return constant_input_ints(ctx, 1);
}

bool reshape_allows_zero(const ir::Node& node) {
  return node.opset_version >= 14 && node.attributes.get_int("allowzero", 0) != 0;
}

// The extent of the -1 entry at `position` of `out`: the input's element
// count divided by the other output dims. Symbolic dims that appear on both
// sides cancel, so [batch, 3, 4] -> [0, -1] gives 12 and [batch, 12] ->
// [-1, 12] gives batch; otherwise the extent is unknown.
template <typename Context>
ir::Dim inferred_extent(const Context& ctx, const std::vector<ir::Dim>& in, const std::vector<ir::Dim>& out,
                        size_t position) {
  int64_t in_product = 1, out_product = 1;
  std::vector<std::string> in_symbols;
  for (const ir::Dim& d : in) {
    if (d.is_known()) {
      if (__builtin_mul_overflow(in_product, d.value, &in_product)) return ir::Dim{};
    } else if (d.symbol.empty())
      return ir::Dim{};
    else
      in_symbols.push_back(d.symbol);
  }
  for (size_t i = 0; i < out.size(); ++i) {
    if (i == position) continue;
    const ir::Dim& d = out[i];
    if (d.is_known()) {
      if (__builtin_mul_overflow(out_product, d.value, &out_product))
        ctx.fail("the requested shape has more than 2^63 elements");
      continue;
    }
    auto match = std::find(in_symbols.begin(), in_symbols.end(), d.symbol);
    if (d.symbol.empty() || match == in_symbols.end()) return ir::Dim{};
    in_symbols.erase(match);
  }
  if (in_symbols.size() > 1) return ir::Dim{};
  if (out_product == 0 || in_product % out_product != 0) {
    if (in_symbols.empty())
      ctx.fail("cannot reshape ", in_product, " elements into the requested shape (-1 cannot be inferred)");
    return ir::Dim{};
  }
  const int64_t extent = in_product / out_product;
  if (in_symbols.empty()) return ir::Dim::known(extent);
  return extent == 1 ? ir::Dim::symbolic(in_symbols[0]) : ir::Dim{};
}

// Output dims for `request` against input dims `in` (partially known).
template <typename Context>
std::vector<ir::Dim> reshape_dims(const Context& ctx, const std::vector<ir::Dim>& in, bool in_known_rank,
                                  const std::vector<int64_t>& request, bool allow_zero) {
  std::vector<ir::Dim> out(request.size());
  int64_t infer_position = -1;
  for (size_t i = 0; i < request.size(); ++i) {
    int64_t r = request[i];
    if (r == -1) {
      if (infer_position >= 0) ctx.fail("shape has more than one -1 entry");
      infer_position = static_cast<int64_t>(i);
    } else if (r == 0 && !allow_zero) {
      if (!in_known_rank) continue;  // unknown
      if (i >= in.size()) ctx.fail("shape entry ", i, " is 0 (copy) but the input has rank ", in.size());
      out[i] = in[i];
    } else if (r < 0) {
      ctx.fail("shape entry ", i, " is ", r, ", expected >= -1");
    } else {
      out[i] = ir::Dim::known(r);
    }
  }
  if (allow_zero && infer_position >= 0)
    for (int64_t r : request)
      if (r == 0) ctx.fail("shape has both -1 and 0 with allowzero=1");
  if (!in_known_rank) return out;
  ir::Dim total = dims_product(in, 0, in.size());
  if (infer_position >= 0) {
    out[static_cast<size_t>(infer_position)] = inferred_extent(ctx, in, out, static_cast<size_t>(infer_position));
  } else if (total.is_known()) {
    ir::Dim product = dims_product(out, 0, out.size());
    if (!product.is_known() && std::all_of(out.begin(), out.end(), [](const ir::Dim& d) { return d.is_known(); }))
      ctx.fail("cannot reshape ", total.value, " elements into a shape of more than 2^63 elements");
    if (product.is_known() && product.value != total.value)
      ctx.fail("cannot reshape ", total.value, " elements into ", product.value, " elements");
  }
  return out;
}

std::vector<ir::Dim> dims_of(const Shape& shape) {
  std::vector<ir::Dim> dims;
  for (int64_t e : shape) dims.push_back(ir::Dim::known(e));
  return dims;
}

void reshape_infer(InferContext& ctx) {
  const ir::ValueType& x = ctx.input_type(0);
  auto request = reshape_request(ctx);
  if (!request) {
    auto length = ctx.opset() >= 5 ? known_length(ctx, 1) : std::nullopt;
    if (length)
      ctx.set_output(0, ranked_type(x.dtype, unknown_dims(static_cast<size_t>(*length))));
    else
      set_output_dtype_only(ctx, 0, x.dtype);
    return;
  }
  ctx.set_output(
      0, ranked_type(x.dtype, reshape_dims(ctx, x.dims, x.has_rank, *request, reshape_allows_zero(ctx.node()))));
}

void reshape_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  std::vector<int64_t> request;
  if (ctx.opset() < 5 && ctx.attrs().has("shape"))
    request = ctx.attrs().get_ints("shape");
  else
    request = input_ints(ctx, 1, "shape");
  auto dims = reshape_dims(ctx, dims_of(x.shape()), true, request, reshape_allows_zero(ctx.node()));
  Shape shape;
  for (const ir::Dim& d : dims) {
    GRAFT_CHECK(d.is_known(), "reshape dims are known for a concrete input");
    shape.push_back(d.value);
  }
  ctx.set_output(0, x.reshaped(std::move(shape)));
}

// ---- Flatten ----------------------------------------------------------------

template <typename Context>
int64_t flatten_axis(const Context& ctx, int64_t rank) {
  int64_t axis = ctx.attrs().get_int("axis", 1);
  if (axis < -rank || axis > rank)
    ctx.fail("axis ", axis, " is out of range for rank ", rank, " (expected [", -rank, ", ", rank, "])");
  return axis < 0 ? axis + rank : axis;
}

void flatten_infer(InferContext& ctx) {
  const ir::ValueType& x = ctx.input_type(0);
  if (!x.has_rank) {
    ctx.set_output(0, ranked_type(x.dtype, unknown_dims(2)));
    return;
  }
  size_t axis = static_cast<size_t>(flatten_axis(ctx, static_cast<int64_t>(x.dims.size())));
  ctx.set_output(0, ranked_type(x.dtype, {dims_product(x.dims, 0, axis), dims_product(x.dims, axis, x.dims.size())}));
}

void flatten_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  int64_t axis = flatten_axis(ctx, x.rank());
  int64_t outer = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x.dim(d);
  int64_t inner = 1;
  for (int64_t d = axis; d < x.rank(); ++d) inner *= x.dim(d);
  ctx.set_output(0, x.reshaped({outer, inner}));
}

// ---- Squeeze / Unsqueeze ----------------------------------------------------

// Axes from the attribute (before opset 13) or input 1. nullopt when given
// by a non-constant input; an empty list when not given at all.
std::optional<std::vector<int64_t>> infer_axes(const InferContext& ctx, bool* given) {
  *given = true;
  if (ctx.opset() < 13) {
    if (ctx.attrs().has("axes")) return ctx.attrs().get_ints("axes");
    *given = false;
    return std::vector<int64_t>{};
  }
  if (!ctx.has_input(1)) {
    *given = false;
    return std::vector<int64_t>{};
  }
  return constant_input_ints(ctx, 1);
}

std::vector<int64_t> kernel_axes(const KernelContext& ctx, bool* given) {
  *given = true;
  if (ctx.opset() < 13) {
    if (ctx.attrs().has("axes")) return ctx.attrs().get_ints("axes");
    *given = false;
    return {};
  }
  if (!ctx.has_input(1)) {
    *given = false;
    return {};
  }
  return input_ints(ctx, 1, "axes");
}

void squeeze_infer(InferContext& ctx) {
  const ir::ValueType& x = ctx.input_type(0);
  bool given = false;
  auto axes = infer_axes(ctx, &given);
  if (!x.has_rank) {
    set_output_dtype_only(ctx, 0, x.dtype);
    return;
  }
  const int64_t rank = static_cast<int64_t>(x.dims.size());
  if (!axes) {
    auto length = known_length(ctx, 1);
    if (length && *length <= rank)
      ctx.set_output(0, ranked_type(x.dtype, unknown_dims(static_cast<size_t>(rank - *length))));
    else
      set_output_dtype_only(ctx, 0, x.dtype);
    return;
  }
  std::vector<bool> drop(x.dims.size(), false);
  if (given) {
    for (int64_t a : checked_axes(ctx, *axes, rank)) {
      const ir::Dim& d = x.dims[static_cast<size_t>(a)];
      if (d.is_known() && d.value != 1) ctx.fail("cannot squeeze axis ", a, " of size ", d.value);
      drop[static_cast<size_t>(a)] = true;
    }
  } else {
    for (size_t d = 0; d < x.dims.size(); ++d) {
      if (!x.dims[d].is_known()) {  // might be 1: the rank is unknown
        set_output_dtype_only(ctx, 0, x.dtype);
        return;
      }
      drop[d] = x.dims[d].value == 1;
    }
  }
  std::vector<ir::Dim> out;
  for (size_t d = 0; d < x.dims.size(); ++d)
    if (!drop[d]) out.push_back(x.dims[d]);
  ctx.set_output(0, ranked_type(x.dtype, std::move(out)));
}

void squeeze_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  bool given = false;
  auto axes = kernel_axes(ctx, &given);
  std::vector<bool> drop(static_cast<size_t>(x.rank()), false);
  if (given) {
    for (int64_t a : checked_axes(ctx, axes, x.rank())) {
      if (x.dim(a) != 1) ctx.fail("cannot squeeze axis ", a, " of size ", x.dim(a), " (input ", x.type_string(), ")");
      drop[static_cast<size_t>(a)] = true;
    }
  } else {
    for (int64_t d = 0; d < x.rank(); ++d) drop[static_cast<size_t>(d)] = x.dim(d) == 1;
  }
  Shape shape;
  for (int64_t d = 0; d < x.rank(); ++d)
    if (!drop[static_cast<size_t>(d)]) shape.push_back(x.dim(d));
  ctx.set_output(0, x.reshaped(std::move(shape)));
}

// Positions of the inserted axes in the output, as a mask of the output rank.
template <typename Context>
std::vector<bool> unsqueeze_mask(const Context& ctx, const std::vector<int64_t>& axes, int64_t out_rank) {
  std::vector<bool> inserted(static_cast<size_t>(out_rank), false);
  for (int64_t a : checked_axes(ctx, axes, out_rank)) inserted[static_cast<size_t>(a)] = true;
  return inserted;
}

void unsqueeze_infer(InferContext& ctx) {
  const ir::ValueType& x = ctx.input_type(0);
  bool given = false;
  auto axes = infer_axes(ctx, &given);
  if (axes && !given) ctx.fail("axes are required");
  if (!x.has_rank) {
    set_output_dtype_only(ctx, 0, x.dtype);
    return;
  }
  if (!axes) {
    auto length = known_length(ctx, 1);
    if (length)
      ctx.set_output(0, ranked_type(x.dtype, unknown_dims(x.dims.size() + static_cast<size_t>(*length))));
    else
      set_output_dtype_only(ctx, 0, x.dtype);
    return;
  }
  const int64_t out_rank = static_cast<int64_t>(x.dims.size() + axes->size());
  std::vector<bool> inserted = unsqueeze_mask(ctx, *axes, out_rank);
  std::vector<ir::Dim> out;
  size_t next = 0;
  for (bool ins : inserted) out.push_back(ins ? ir::Dim::known(1) : x.dims[next++]);
  ctx.set_output(0, ranked_type(x.dtype, std::move(out)));
}

void unsqueeze_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  bool given = false;
  auto axes = kernel_axes(ctx, &given);
  if (!given) ctx.fail("axes are required");
  const int64_t out_rank = x.rank() + static_cast<int64_t>(axes.size());
  std::vector<bool> inserted = unsqueeze_mask(ctx, axes, out_rank);
  Shape shape;
  int64_t next = 0;
  for (bool ins : inserted) shape.push_back(ins ? 1 : x.dim(next++));
  ctx.set_output(0, x.reshaped(std::move(shape)));
}

}  // namespace

GRAFT_REGISTER_OP("", "Reshape", reshape_infer, reshape_kernel);
GRAFT_REGISTER_OP("", "Flatten", flatten_infer, flatten_kernel);
GRAFT_REGISTER_OP("", "Squeeze", squeeze_infer, squeeze_kernel);
GRAFT_REGISTER_OP("", "Unsqueeze", unsqueeze_infer, unsqueeze_kernel);

// Gradient builder (graft/ops/gradient.h), shared by Reshape, Flatten,
// Squeeze and Unsqueeze: dy reshaped to the input's shape.
namespace {

void reshape_gradient(GradientContext& g) {
  const ir::ValueType& x = g.input_type(0);
  ir::Value shape = x.is_concrete() ? g.shape_of(g.input(0)) : g.add(ir::OpId::Shape, {g.input(0)});
  g.set_input_gradient(0, g.add(ir::OpId::Reshape, {g.output_gradient(0), shape}));
}

}  // namespace

GRAFT_REGISTER_GRADIENT(Reshape, reshape_gradient);
GRAFT_REGISTER_GRADIENT(Flatten, reshape_gradient);
GRAFT_REGISTER_GRADIENT(Squeeze, reshape_gradient);
GRAFT_REGISTER_GRADIENT(Unsqueeze, reshape_gradient);

}  // namespace graft::ops
