// OneHot: for indices of shape S and depth D, an output of shape S with a
// new dimension of D inserted at `axis`, holding values[1] where the position
// along that dimension equals the index and values[0] elsewhere. Negative
// indices count from the end (index + depth); indices still outside
// [0, depth) produce a row of values[0] (the ONNX definition; no error).
#include <algorithm>
#include <cmath>
#include <cstring>

#include "data_movement.h"
#include "graft/ops/infer_util.h"

namespace graft::ops {
namespace {

void onehot_infer(InferContext& ctx) {
  const ir::ValueType& indices = ctx.input_type(0);
  const ir::ValueType& values = ctx.input_type(2);
  if (!indices.has_rank) {
    set_output_dtype_only(ctx, 0, values.dtype);
    return;
  }
  const int64_t out_rank = static_cast<int64_t>(indices.dims.size()) + 1;
  const size_t axis = static_cast<size_t>(checked_axis(ctx, ctx.attrs().get_int("axis", -1), out_rank));
  ir::Dim depth_dim;
  if (auto depth = constant_input_doubles(ctx, 1); depth && depth->size() == 1)
    depth_dim = ir::Dim::known(static_cast<int64_t>((*depth)[0]));
  std::vector<ir::Dim> dims = indices.dims;
  dims.insert(dims.begin() + static_cast<std::ptrdiff_t>(axis), depth_dim);
  ctx.set_output(0, ranked_type(values.dtype, std::move(dims)));
}

void onehot_kernel(KernelContext& ctx) {
  const Tensor& indices = ctx.input(0);
  const Tensor& depth_tensor = ctx.input(1);
  const Tensor& values = ctx.input(2);
  if (depth_tensor.numel() != 1) ctx.fail("depth must be a scalar, got ", depth_tensor.type_string());
  if (values.numel() != 2) ctx.fail("values must hold [off_value, on_value], got ", values.type_string());
  const double depth_value = depth_tensor.value_as_double(0);
  if (!(depth_value >= 1)) ctx.fail("depth must be a positive number, got ", depth_value);
  if (depth_value > static_cast<double>(int64_t{1} << 40))
    fail(ErrorKind::resource_exhausted, ctx.node().describe(), ": depth ", depth_value,
         " is past graft's limit of 2^40 classes");
  const int64_t depth = static_cast<int64_t>(depth_value);
  const int64_t out_rank = indices.rank() + 1;
  const int64_t axis = checked_axis(ctx, ctx.attrs().get_int("axis", -1), out_rank);
  Shape out_shape = indices.shape();
  out_shape.insert(out_shape.begin() + axis, depth);
  shape_numel(out_shape, ctx.node().describe());
  if (!dtype_is_integer(indices.dtype()) && !dtype_is_float(indices.dtype()))
    ctx.fail("indices must be numeric, got ", indices.type_string());
  std::vector<int64_t> index(static_cast<size_t>(indices.numel()));
  for (int64_t i = 0; i < indices.numel(); ++i) {
    int64_t v = static_cast<int64_t>(std::trunc(indices.value_as_double(i)));
    index[static_cast<size_t>(i)] = v < 0 ? v + depth : v;
  }
  Tensor& y = ctx.allocate_output(0, values.dtype(), out_shape);
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= out_shape[static_cast<size_t>(d)];
  for (int64_t d = axis + 1; d < out_rank; ++d) inner *= out_shape[static_cast<size_t>(d)];
  visit_element_type(values.dtype(), "OneHot", [&]<typename U>() {
    const U off = static_cast<const U*>(values.raw_data())[0], on = static_cast<const U*>(values.raw_data())[1];
    U* out = static_cast<U*>(y.raw_data());
    std::fill_n(out, y.numel(), off);
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        const int64_t v = index[static_cast<size_t>(o * inner + i)];
        if (v >= 0 && v < depth) out[(o * depth + v) * inner + i] = on;
      }
  });
}

}  // namespace

GRAFT_REGISTER_OP("", "OneHot", onehot_infer, onehot_kernel);

}  // namespace graft::ops
