// ReverseSequence: for each batch entry b, reverses the first
// sequence_lens[b] elements along the time axis and copies the rest.
// The batch and time axes are 0 and 1 in either order.
#include <cstring>

#include "data_movement.h"
#include "graft/core/parallel.h"
#include "graft/ops/infer_util.h"

namespace graft::ops {
namespace {

template <typename Context>
std::pair<int64_t, int64_t> batch_and_time_axes(const Context& ctx) {
  const int64_t batch = ctx.attrs().get_int("batch_axis", 1), time = ctx.attrs().get_int("time_axis", 0);
  if (!((batch == 0 && time == 1) || (batch == 1 && time == 0)))
    ctx.fail("batch_axis and time_axis must be 0 and 1 in some order, got ", batch, " and ", time);
  return {batch, time};
}

void reverse_sequence_infer(InferContext& ctx) {
  batch_and_time_axes(ctx);
  const ir::ValueType& x = ctx.input_type(0);
  if (x.has_rank && x.dims.size() < 2) ctx.fail("input must have rank >= 2, got ", x.to_string());
  infer_same_as_input(ctx);
}

void reverse_sequence_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  auto [batch_axis, time_axis] = batch_and_time_axes(ctx);
  if (x.rank() < 2) ctx.fail("input must have rank >= 2, got ", x.type_string());
  const int64_t batch = x.dim(batch_axis), time = x.dim(time_axis);
  const Tensor& lens_tensor = ctx.input(1);
  if (lens_tensor.rank() != 1 || lens_tensor.numel() != batch)
    ctx.fail("sequence_lens must have shape [", batch, "], got ", lens_tensor.type_string());
  std::vector<int64_t> lens = read_indices(ctx, lens_tensor, "sequence_lens");
  for (int64_t len : lens)
    if (len < 0 || len > time) ctx.fail("sequence length ", len, " is outside [0, ", time, "]");
  Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
  int64_t inner = static_cast<int64_t>(dtype_size(x.dtype()));
  for (int64_t d = 2; d < x.rank(); ++d) inner *= x.dim(d);
  // Byte offset of (b, t) in the first two dims.
  const int64_t b_stride = batch_axis == 0 ? time * inner : inner;
  const int64_t t_stride = time_axis == 0 ? batch * inner : inner;
  const char* src = static_cast<const char*>(x.raw_data());
  char* dst = static_cast<char*>(y.raw_data());
  parallel_for(batch * time, 16, [&](int64_t begin, int64_t end) {
    for (int64_t w = begin; w < end; ++w) {
      const int64_t b = w / time, t = w % time, len = lens[static_cast<size_t>(b)];
      const int64_t source_t = t < len ? len - 1 - t : t;
      std::memcpy(dst + b * b_stride + t * t_stride, src + b * b_stride + source_t * t_stride,
                  static_cast<size_t>(inner));
    }
  });
}

}  // namespace

GRAFT_REGISTER_OP("", "ReverseSequence", reverse_sequence_infer, reverse_sequence_kernel);

}  // namespace graft::ops
