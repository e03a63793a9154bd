// Dropout. In inference mode (always before opset 12; from 12 unless the
// training_mode input is true) the output is the input itself (a view, no
// copy) and the optional mask is all true. In training mode each element is
// kept with probability 1 - ratio and scaled by 1 / (1 - ratio); the mask
// records which were kept. With a `seed` attribute the draws repeat, and are
// the ones numpy's legacy generator makes (np.random.seed(seed), then
// uniform(0, 1) per element, kept when >= ratio), as in the ONNX reference:
// MT19937 seeded the same way, each uniform built from two 32-bit outputs.
#include <random>

#include "data_movement.h"
#include "graft/ops/gradient.h"
#include "graft/ops/infer_util.h"

namespace graft::ops {
namespace {

void dropout_infer(InferContext& ctx) {
  const ir::ValueType& x = ctx.input_type(0);
  if (!dtype_is_float(x.dtype) && x.dtype != DType::undefined)
    ctx.fail("input must be a float tensor, got ", x.to_string());
  ctx.set_output(0, x);
  if (ctx.num_outputs() > 1) {
    // The mask is bool from opset 10; before that it has the input's dtype.
    ctx.set_output(1, ir::ValueType{ctx.opset() >= 10 ? DType::boolean : x.dtype, x.has_rank, x.dims});
  }
}

// Training-mode ratio, or nullopt in inference mode.
std::optional<double> training_ratio(const KernelContext& ctx) {
  if (ctx.opset() < 12) return std::nullopt;
  if (!ctx.has_input(2)) return std::nullopt;
  const Tensor& mode = ctx.input(2);
  if (mode.numel() != 1) ctx.fail("training_mode must be a scalar, got ", mode.type_string());
  if (mode.value_as_int64(0) == 0) return std::nullopt;
  double ratio = 0.5;
  if (ctx.has_input(1)) {
    const Tensor& r = ctx.input(1);
    if (r.numel() != 1) ctx.fail("ratio must be a scalar, got ", r.type_string());
    ratio = r.value_as_double(0);
  }
  if (!(ratio >= 0 && ratio < 1)) ctx.fail("ratio must be in [0, 1), got ", ratio);
  return ratio;
}

void dropout_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const std::optional<double> ratio = training_ratio(ctx);
  const DType mask_dtype = ctx.opset() >= 10 ? DType::boolean : x.dtype();
  const bool want_mask = ctx.num_outputs() > 1;
  if (!ratio || *ratio == 0) {
    ctx.set_output(0, x);
    if (want_mask) {
      Tensor& mask = ctx.allocate_output(1, mask_dtype, x.shape());
      visit_dtype(mask_dtype, "Dropout", [&]<typename T>() {
        std::fill_n(mask.data<T>(), mask.numel(), static_cast<T>(static_cast<compute_t<T>>(1)));
      });
    }
    return;
  }
  std::mt19937 rng(ctx.attrs().has("seed") ? static_cast<uint32_t>(ctx.attrs().get_int("seed"))
                                           : std::random_device{}());
  auto keep = [&rng, ratio = *ratio]() {
    const uint32_t high = static_cast<uint32_t>(rng()) >> 5, low = static_cast<uint32_t>(rng()) >> 6;
    const double uniform = (static_cast<double>(high) * 67108864.0 + static_cast<double>(low)) / 9007199254740992.0;
    return uniform >= ratio;
  };
  const double scale = 1.0 / (1.0 - *ratio);
  Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
  Tensor mask = want_mask ? ctx.allocate_output(1, mask_dtype, x.shape()) : Tensor();
  visit_float_dtype(x.dtype(), "Dropout", [&]<typename T>() {
    const T* in = x.data<T>();
    T* out = y.data<T>();
    for (int64_t i = 0; i < x.numel(); ++i) {
      const bool kept = keep();
      using C = compute_t<T>;
      out[i] = static_cast<T>(kept ? static_cast<C>(static_cast<C>(in[i]) * static_cast<C>(scale)) : C(0));
      if (want_mask) mask.data<bool>()[i] = kept;
    }
  });
}

}  // namespace

GRAFT_REGISTER_OP("", "Dropout", dropout_infer, dropout_kernel);

// Gradient builder (graft/ops/gradient.h): in inference mode, and in
// training mode with a ratio of 0, the identity; in training mode dy times
// the mask output, scaled by 1 / (1 - ratio).
namespace {

void dropout_gradient(GradientContext& g) {
  using enum ir::OpId;
  bool training = false;
  if (g.node().opset_version >= 12 && g.has_input(2)) {
    const ir::Node* mode = g.input(2).node;
    if (mode->op() != Constant) g.unsupported("training_mode must be a constant");
    training = mode->constant_value.numel() == 1 && mode->constant_value.data<bool>()[0];
  }
  if (!training) {
    g.set_input_gradient(0, g.output_gradient(0));
    return;
  }
  if (g.num_outputs() < 2) g.unsupported("training mode needs the mask output");
  double ratio = 0.5;
  if (g.has_input(1)) {
    const ir::Node* r = g.input(1).node;
    if (r->op() != Constant) g.unsupported("ratio must be a constant");
    ratio = r->constant_value.dtype() == DType::float64 ? r->constant_value.data<double>()[0]
                                                        : r->constant_value.data<float>()[0];
  }
  if (ratio == 0) {  // every element kept, scaled by 1: the mask is all true
    g.set_input_gradient(0, g.output_gradient(0));
    return;
  }
  const DType dtype = g.output_type(0).dtype;
  ir::Value mask = g.add(Cast, {g.output(1)}, {{"to", static_cast<int64_t>(dtype)}});
  g.set_input_gradient(0, g.add(Mul, {g.add(Mul, {g.output_gradient(0), mask}), g.scalar(1.0 / (1.0 - ratio), dtype)}));
}

}  // namespace

GRAFT_REGISTER_GRADIENT(Dropout, dropout_gradient);

}  // namespace graft::ops
