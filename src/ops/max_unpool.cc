// MaxUnpool (ONNX): the partial inverse of MaxPool. The unpooled shape has,
// per spatial dimension, (in - 1) * stride + kernel - pad_begin - pad_end;
// it is zero except at the positions named by the indices (MaxPool's Indices
// output: offsets into the flattened unpooled tensor), which receive the
// input values. A larger output_shape input holds the unpooled tensor in its
// leading corner, zero elsewhere (as the ONNX reference does).
#include <algorithm>
#include <cstring>

#include "graft/ops/conv_util.h"
#include "graft/ops/infer_util.h"
#include "graft/ops/op_context.h"

namespace graft::ops {
namespace {

// Reads kernel_shape, strides and pads for `spatial` dimensions.
conv::WindowAttributes unpool_attributes(const ir::Node& node, size_t spatial) {
  if (!node.attributes.has("kernel_shape"))
    graft::fail(ErrorKind::invalid_model, node.describe(), ": attribute 'kernel_shape' is required");
  return conv::read_window_attributes(node, spatial, {}, false);
}

int64_t default_extent(const conv::WindowAttributes& attrs, size_t d, int64_t input) {
  const size_t rank = attrs.kernel.size();
  return (input - 1) * attrs.strides[d] + attrs.kernel[d] - attrs.pads[d] - attrs.pads[d + rank];
}

void max_unpool_infer(InferContext& ctx) {
  const ir::ValueType& x = ctx.input_type(0);
  if (!x.has_rank) {
    set_output_dtype_only(ctx, 0, x.dtype);
    return;
  }
  if (x.dims.size() < 3) ctx.fail("input X has rank ", x.dims.size(), ", expected at least 3 (N, C, spatial...)");
  const size_t spatial = x.dims.size() - 2;
  conv::WindowAttributes attrs = unpool_attributes(ctx.node(), spatial);
  std::vector<ir::Dim> dims;
  if (ctx.has_input(2)) {
    if (const Tensor* shape = ctx.input_constant(2)) {
      for (int64_t e : shape->to_int64_vector()) dims.push_back(ir::Dim::known(e));
    } else {
      dims.assign(x.dims.size(), ir::Dim{});
    }
  } else {
    dims = {x.dims[0], x.dims[1]};
    for (size_t d = 0; d < spatial; ++d) {
      const ir::Dim& in = x.dims[d + 2];
      dims.push_back(in.is_known() ? ir::Dim::known(default_extent(attrs, d, in.value)) : ir::Dim{});
    }
  }
  ctx.set_output(0, ir::ValueType{x.dtype, true, std::move(dims)});
}

void max_unpool_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& indices = ctx.input(1);
  if (x.rank() < 3) ctx.fail("input X has rank ", x.rank(), ", expected at least 3 (N, C, spatial...)");
  if (indices.dtype() != DType::int64 || indices.shape() != x.shape())
    ctx.fail("indices I is ", indices.type_string(), ", expected int64", shape_to_string(x.shape()), " like X");
  const size_t spatial = static_cast<size_t>(x.rank() - 2);
  conv::WindowAttributes attrs = unpool_attributes(ctx.node(), spatial);
  Shape inferred = {x.dim(0), x.dim(1)};
  for (size_t d = 0; d < spatial; ++d) inferred.push_back(default_extent(attrs, d, x.dim(static_cast<int64_t>(d) + 2)));
  for (int64_t e : inferred)
    if (e < 0) ctx.fail("unpooled shape ", shape_to_string(inferred), " has a negative extent");
  Shape out_shape = inferred;
  if (ctx.has_input(2)) {
    out_shape = ctx.input(2).to_int64_vector();
    if (out_shape.size() != inferred.size())
      ctx.fail("output_shape has ", out_shape.size(), " values, expected ", x.rank());
    for (size_t d = 0; d < inferred.size(); ++d)
      if (out_shape[d] < inferred[d])
        ctx.fail("output_shape ", shape_to_string(out_shape), " is smaller than the unpooled shape ",
                 shape_to_string(inferred));
  }
  Tensor& y = ctx.allocate_output(0, x.dtype(), out_shape);
  const size_t element = dtype_size(x.dtype());
  if (element == 0) ctx.unsupported("dtype ", dtype_name(x.dtype()), " is not supported");
  std::memset(y.raw_data(), 0, y.nbytes());
  const int64_t* index = indices.data<int64_t>();
  const auto* source = static_cast<const unsigned char*>(x.raw_data());
  auto* target = static_cast<unsigned char*>(y.raw_data());
  const int64_t limit = shape_numel(inferred);
  const bool same_shape = out_shape == inferred;
  for (int64_t i = 0; i < x.numel(); ++i) {
    if (index[i] < 0 || index[i] >= limit)
      ctx.fail("index ", index[i], " at position ", i, " is outside the unpooled tensor of ", limit, " elements");
    // Indices address the unpooled shape; a larger output_shape keeps it in its leading corner.
    int64_t offset = index[i];
    if (!same_shape) {
      offset = 0;
      int64_t rest = index[i], scale = 1;
      for (size_t d = inferred.size(); d-- > 0;) {
        offset += (rest % inferred[d]) * scale;
        rest /= inferred[d];
        scale *= out_shape[d];
      }
    }
    std::memcpy(target + static_cast<size_t>(offset) * element, source + static_cast<size_t>(i) * element, element);
  }
}

}  // namespace

GRAFT_REGISTER_OP("", "MaxUnpool", max_unpool_infer, max_unpool_kernel);

}  // namespace graft::ops
