// DepthToSpace and SpaceToDepth: rearranging NCHW blocks between the channel
// and the spatial dimensions. Each is a 6-D transpose of a reshaped view
// (the ONNX definition), run by the shared transpose copy.
#include "data_movement.h"
#include "graft/ops/gradient.h"
#include "graft/ops/infer_util.h"
#include "transpose.h"

namespace graft::ops {
namespace {

template <typename Context>
int64_t read_blocksize(const Context& ctx) {
  if (!ctx.attrs().has("blocksize")) ctx.fail("attribute 'blocksize' is required");
  const int64_t b = ctx.attrs().get_int("blocksize");
  // At most 2^31: blocksize^2 (the channel factor) must fit in int64.
  if (b <= 0 || b > (int64_t{1} << 31)) ctx.fail("blocksize must be in 1..2^31, got ", b);
  return b;
}

// d * factor, refused when it overflows int64: the dims of a declared or an
// empty tensor are not bounded by any memory.
template <typename Context>
int64_t scaled_extent(const Context& ctx, int64_t d, int64_t factor, const char* what) {
  int64_t product;
  if (__builtin_mul_overflow(d, factor, &product)) ctx.fail(what, " ", d, " times ", factor, " overflows int64");
  return product;
}

// DCR (default) or CRD (opset 11+).
template <typename Context>
bool depth_to_space_is_crd(const Context& ctx) {
  const std::string mode = ctx.attrs().get_string("mode", "DCR");
  if (mode != "DCR" && mode != "CRD") ctx.fail("mode '", mode, "' is not DCR or CRD");
  return mode == "CRD";
}

ir::Dim scaled(const InferContext& ctx, const ir::Dim& d, int64_t factor, const char* what) {
  return d.is_known() ? ir::Dim::known(scaled_extent(ctx, d.value, factor, what)) : ir::Dim{};
}

template <typename Context>
ir::Dim divided(const Context& ctx, const ir::Dim& d, int64_t divisor, const char* what) {
  if (!d.is_known()) return ir::Dim{};
  if (d.value % divisor != 0) ctx.fail(what, " ", d.value, " is not divisible by ", divisor);
  return ir::Dim::known(d.value / divisor);
}

void depth_to_space_infer(InferContext& ctx) {
  const ir::ValueType& x = ctx.input_type(0);
  const int64_t b = read_blocksize(ctx);
  depth_to_space_is_crd(ctx);
  if (!x.has_rank) {
    ctx.set_output(0, ranked_type(x.dtype, unknown_dims(4)));
    return;
  }
  if (x.dims.size() != 4) ctx.fail("input must be 4-D (NCHW), got ", x.to_string());
  ctx.set_output(0, ranked_type(x.dtype, {x.dims[0], divided(ctx, x.dims[1], b * b, "channel count"),
                                          scaled(ctx, x.dims[2], b, "height"), scaled(ctx, x.dims[3], b, "width")}));
}

void space_to_depth_infer(InferContext& ctx) {
  const ir::ValueType& x = ctx.input_type(0);
  const int64_t b = read_blocksize(ctx);
  if (!x.has_rank) {
    ctx.set_output(0, ranked_type(x.dtype, unknown_dims(4)));
    return;
  }
  if (x.dims.size() != 4) ctx.fail("input must be 4-D (NCHW), got ", x.to_string());
  ctx.set_output(0, ranked_type(x.dtype, {x.dims[0], scaled(ctx, x.dims[1], b * b, "channel count"), divided(ctx, x.dims[2], b, "height"),
                                          divided(ctx, x.dims[3], b, "width")}));
}

void depth_to_space_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t b = read_blocksize(ctx);
  if (x.rank() != 4) ctx.fail("input must be 4-D (NCHW), got ", x.type_string());
  const int64_t n = x.dim(0), c = x.dim(1), h = x.dim(2), w = x.dim(3);
  if (c % (b * b) != 0) ctx.fail("channel count ", c, " is not divisible by blocksize^2 = ", b * b);
  const int64_t oc = c / (b * b);
  Tensor& y = ctx.allocate_output(0, x.dtype(),
                                  {n, oc, scaled_extent(ctx, h, b, "height"), scaled_extent(ctx, w, b, "width")});
  if (depth_to_space_is_crd(ctx))
    transpose_bytes(x.raw_data(), y.raw_data(), {n, oc, b, b, h, w}, {0, 1, 4, 2, 5, 3}, dtype_size(x.dtype()));
  else
    transpose_bytes(x.raw_data(), y.raw_data(), {n, b, b, oc, h, w}, {0, 3, 4, 1, 5, 2}, dtype_size(x.dtype()));
}

void space_to_depth_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t b = read_blocksize(ctx);
  if (x.rank() != 4) ctx.fail("input must be 4-D (NCHW), got ", x.type_string());
  const int64_t n = x.dim(0), c = x.dim(1), h = x.dim(2), w = x.dim(3);
  if (h % b != 0 || w % b != 0) ctx.fail("spatial size ", h, "x", w, " is not divisible by blocksize ", b);
  Tensor& y = ctx.allocate_output(0, x.dtype(), {n, scaled_extent(ctx, c, b * b, "channel count"), h / b, w / b});
  transpose_bytes(x.raw_data(), y.raw_data(), {n, c, h / b, b, w / b, b}, {0, 3, 5, 1, 2, 4}, dtype_size(x.dtype()));
}

}  // namespace

GRAFT_REGISTER_OP("", "DepthToSpace", depth_to_space_infer, depth_to_space_kernel);
GRAFT_REGISTER_OP("", "SpaceToDepth", space_to_depth_infer, space_to_depth_kernel);

// Gradient builders (graft/ops/gradient.h): each op's inverse permutation.
// DepthToSpace in DCR mode and SpaceToDepth are inverses of each other; CRD
// mode is undone by Reshape [N, C', H, b, W, b], Transpose to [N, C', b, b,
// H, W] and Reshape to the input's shape.
namespace {

void depth_to_space_gradient(GradientContext& g) {
  using enum ir::OpId;
  const int64_t b = g.attrs().get_int("blocksize");
  ir::Value dy = g.output_gradient(0);
  if (g.attrs().get_string("mode", "DCR") == "DCR") {
    g.set_input_gradient(0, g.add(SpaceToDepth, {dy}, {{"blocksize", b}}));
    return;
  }
  std::vector<int64_t> x = g.known_dims(g.input(0));
  if (x.size() != 4) g.unsupported("CRD mode needs a 4-D input");
  ir::Value view = g.add(Reshape, {dy, g.int64s({x[0], x[1] / (b * b), x[2], b, x[3], b})});
  ir::Value moved = g.add(Transpose, {view}, {{"perm", std::vector<int64_t>{0, 1, 3, 5, 2, 4}}});
  g.set_input_gradient(0, g.add(Reshape, {moved, g.shape_of(g.input(0))}));
}

void space_to_depth_gradient(GradientContext& g) {
  g.set_input_gradient(0, g.add(ir::OpId::DepthToSpace, {g.output_gradient(0)},
                                {{"blocksize", g.attrs().get_int("blocksize")}, {"mode", std::string("DCR")}}));
}

}  // namespace

GRAFT_REGISTER_GRADIENT(DepthToSpace, depth_to_space_gradient);
GRAFT_REGISTER_GRADIENT(SpaceToDepth, space_to_depth_gradient);

}  // namespace graft::ops
