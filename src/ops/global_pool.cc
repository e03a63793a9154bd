// GlobalAveragePool, GlobalMaxPool and GlobalLpPool (ONNX): one reduction
// over all spatial positions of each (image, channel) plane; the output keeps
// the rank with every spatial extent 1. Planes run in parallel.
#include <cmath>
#include <limits>

#include "graft/core/parallel.h"
#include "graft/ops/conv_util.h"
#include "graft/ops/gradient.h"
#include "graft/ops/infer_util.h"
#include "graft/ops/op_context.h"

namespace graft::ops {
namespace {

enum class GlobalKind { average, max, lp };

void global_pool_infer(InferContext& ctx) {
  const ir::ValueType& x = ctx.input_type(0);
  if (!x.has_rank) {
    set_output_dtype_only(ctx, 0, x.dtype);
    return;
  }
  if (x.dims.size() < 2) ctx.fail("input X has rank ", x.dims.size(), ", expected at least 2 (N, C, spatial...)");
  std::vector<ir::Dim> dims(x.dims.size(), ir::Dim::known(1));
  dims[0] = x.dims[0];
  dims[1] = x.dims[1];
  ctx.set_output(0, ir::ValueType{x.dtype, true, std::move(dims)});
}

template <typename T>
void global_pool(GlobalKind kind, int64_t p, int64_t planes, int64_t size, const T* x, T* y) {
  using C = compute_t<T>;
  parallel_for(planes, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, size)), [&](int64_t begin, int64_t end) {
    for (int64_t plane = begin; plane < end; ++plane) {
      const T* source = x + plane * size;
      C result = 0;
      if (kind == GlobalKind::max) {
        result = std::numeric_limits<C>::has_infinity ? -std::numeric_limits<C>::infinity()
                                                      : std::numeric_limits<C>::lowest();
        for (int64_t i = 0; i < size; ++i) result = std::max(result, static_cast<C>(source[i]));
      } else if (kind == GlobalKind::average) {
        for (int64_t i = 0; i < size; ++i) result += static_cast<C>(source[i]);
        result = size > 0 ? result / static_cast<C>(size) : std::numeric_limits<C>::quiet_NaN();
      } else {
        for (int64_t i = 0; i < size; ++i) {
          const C v = std::abs(static_cast<C>(source[i]));
          result += p == 1 ? v : p == 2 ? v * v : std::pow(v, static_cast<C>(p));
        }
        result = p == 1 ? result : p == 2 ? std::sqrt(result) : std::pow(result, C(1) / static_cast<C>(p));
      }
      y[plane] = static_cast<T>(result);
    }
  });
}

void global_pool_kernel(KernelContext& ctx, GlobalKind kind) {
  const Tensor& x = ctx.input(0);
  if (x.rank() < 2) ctx.fail("input X has rank ", x.rank(), ", expected at least 2 (N, C, spatial...)");
  Shape out_shape(static_cast<size_t>(x.rank()), 1);
  out_shape[0] = x.dim(0);
  out_shape[1] = x.dim(1);
  const int64_t planes = x.dim(0) * x.dim(1);
  const int64_t size = planes == 0 ? 0 : x.numel() / planes;
  const int64_t p = kind == GlobalKind::lp ? conv::read_lp_order(ctx.node()) : 2;
  Tensor& y = ctx.allocate_output(0, x.dtype(), out_shape);
  visit_float_dtype(x.dtype(), ctx.node().describe(),
                    [&]<typename T>() { global_pool<T>(kind, p, planes, size, x.data<T>(), y.data<T>()); });
}

void global_average_pool_kernel(KernelContext& ctx) { global_pool_kernel(ctx, GlobalKind::average); }
void global_max_pool_kernel(KernelContext& ctx) { global_pool_kernel(ctx, GlobalKind::max); }
void global_lp_pool_kernel(KernelContext& ctx) { global_pool_kernel(ctx, GlobalKind::lp); }

}  // namespace

GRAFT_REGISTER_OP("", "GlobalAveragePool", global_pool_infer, global_average_pool_kernel);
GRAFT_REGISTER_OP("", "GlobalMaxPool", global_pool_infer, global_max_pool_kernel);
GRAFT_REGISTER_OP("", "GlobalLpPool", global_pool_infer, global_lp_pool_kernel);

// Gradient builders (graft/ops/gradient.h). GlobalAveragePool: dy spread
// evenly over each plane; GlobalMaxPool: dy to the plane's maxima.
namespace {

void global_average_pool_gradient(GradientContext& g) {
  using enum ir::OpId;
  std::vector<int64_t> dims = g.known_dims(g.input(0));
  double size = 1;
  for (size_t d = 2; d < dims.size(); ++d) size *= static_cast<double>(dims[d]);
  ir::Value scaled = g.add(Div, {g.output_gradient(0), g.scalar(size, g.output_type(0).dtype)});
  g.set_input_gradient(0, g.add(Expand, {scaled, g.shape_of(g.input(0))}));
}

void global_max_pool_gradient(GradientContext& g) {
  using enum ir::OpId;
  ir::Value mask = g.add(Equal, {g.input(0), g.output(0)});
  ir::Value spread = g.add(Expand, {g.output_gradient(0), g.shape_of(g.input(0))});
  g.set_input_gradient(0, g.add(Where, {mask, spread, g.scalar(0, g.output_type(0).dtype)}));
}

}  // namespace

GRAFT_REGISTER_GRADIENT(GlobalAveragePool, global_average_pool_gradient);
GRAFT_REGISTER_GRADIENT(GlobalMaxPool, global_max_pool_gradient);

}  // namespace graft::ops
