// HannWindow, HammingWindow and BlackmanWindow (ONNX opset 17): 1-D tapering
// windows of `size` points. With periodic (the default) the denominator is
// size, else size - 1; n runs over 0..size-1 and x = 2 * pi * n / denominator:
//   Hann      0.5 - 0.5 cos(x)
//   Hamming   25/46 - (21/46) cos(x)
//   Blackman  0.42 - 0.5 cos(x) + 0.08 cos(2x)
// Values are computed in double and cast to output_datatype (default float).
#include <cmath>
#include <numbers>

#include "graft/ops/infer_util.h"
#include "graft/ops/op_context.h"

namespace graft::ops {
namespace {

enum class WindowKind { hann, hamming, blackman };

// Largest window graft allocates (elements); a size above it is a malformed input.
constexpr int64_t kMaxWindow = int64_t{1} << 28;

DType output_dtype(const ir::Node& node) {
  DType dtype = dtype_from_onnx(static_cast<int32_t>(node.attributes.get_int("output_datatype", 1)));
  if (!dtype_is_storable(dtype) || dtype == DType::boolean)
    graft::fail(ErrorKind::unsupported, node.describe(), ": output_datatype ", dtype_name(dtype), " is not supported");
  return dtype;
}

void window_infer(InferContext& ctx) {
  DType dtype = output_dtype(ctx.node());
  ir::Dim length;
  if (const Tensor* size = ctx.input_constant(0); size && size->numel() == 1) {
    int64_t n = size->value_as_int64(0);
    if (n >= 0) length = ir::Dim::known(n);
  }
  ctx.set_output(0, ir::ValueType{dtype, true, {length}});
}

void window_kernel(KernelContext& ctx, WindowKind kind) {
  const Tensor& size_tensor = ctx.input(0);
  if (!dtype_is_integer(size_tensor.dtype()) || size_tensor.numel() != 1)
    ctx.fail("input size is ", size_tensor.type_string(), ", expected an integer scalar");
  const int64_t size = size_tensor.value_as_int64(0);
  if (size < 0 || size > kMaxWindow) ctx.fail("window size ", size, " is outside [0, ", kMaxWindow, "]");
  const bool periodic = ctx.attrs().get_int("periodic", 1) != 0;
  const DType dtype = output_dtype(ctx.node());
  Tensor& y = ctx.allocate_output(0, dtype, {size});
  const double denominator = static_cast<double>(periodic ? size : size - 1);
  visit_numeric_dtype(dtype, ctx.node().describe(), [&]<typename T>() {
    T* out = y.data<T>();
    for (int64_t n = 0; n < size; ++n) {
      const double x = 2.0 * std::numbers::pi * static_cast<double>(n) / denominator;
      double v = 0;
      switch (kind) {
        case WindowKind::hann:
          v = 0.5 - 0.5 * std::cos(x);
          break;
        case WindowKind::hamming:
          v = 25.0 / 46.0 - (21.0 / 46.0) * std::cos(x);
          break;
        case WindowKind::blackman:
          v = 0.42 - 0.5 * std::cos(x) + 0.08 * std::cos(2 * x);
          break;
      }
      if constexpr (std::is_integral_v<T>) {
        out[n] = std::isfinite(v) ? static_cast<T>(v) : T(0);
      } else {
        out[n] = static_cast<T>(static_cast<compute_t<T>>(v));
      }
    }
  });
}

void hann_kernel(KernelContext& ctx) { window_kernel(ctx, WindowKind::hann); }
void hamming_kernel(KernelContext& ctx) { window_kernel(ctx, WindowKind::hamming); }
void blackman_kernel(KernelContext& ctx) { window_kernel(ctx, WindowKind::blackman); }

}  // namespace

GRAFT_REGISTER_OP("", "HannWindow", window_infer, hann_kernel);
GRAFT_REGISTER_OP("", "HammingWindow", window_infer, hamming_kernel);
GRAFT_REGISTER_OP("", "BlackmanWindow", window_infer, blackman_kernel);

}  // namespace graft::ops
