// ONNX's optimizer ops (domain ai.onnx.preview.training, opset 1): Adagrad,
// Momentum (standard and Nesterov) and Adam. Each updates n tensors at once:
// inputs R (the learning rate, a float scalar), T (the update count, an
// int64 scalar), then the n tensors X, their n gradients G, then each state
// (Momentum: V; Adagrad: H; Adam: V, H), every group in the same order;
// outputs the new X's, then the new states, group by group. Every tensor of
// a group has its X's shape and dtype (float32 or float64); the update is
// computed per element in double, with the formulas (and attribute
// defaults) of the ONNX specification. graft's own training graphs write PyTorch's rules in standard ops
// instead (docs/training.md, "The training graph"); these ops are here to
// run models that use them.
#include <cmath>
#include <string>
#include <vector>

#include "graft/ops/op_context.h"

namespace graft::ops {
namespace {

/// The n of a node with 2 + groups * n inputs and outputs * n outputs.
template <typename Context>
size_t tensor_count(const Context& ctx, size_t groups, size_t outputs) {
  const size_t inputs = ctx.num_inputs();
  if (inputs < 2 + groups || (inputs - 2) % groups != 0)
    ctx.fail("expects R, T, then ", groups, " groups of as many tensors (X, G, states), got ", inputs, " inputs");
  const size_t n = (inputs - 2) / groups;
  if (ctx.num_outputs() != outputs * n)
    ctx.fail("updates ", n, " tensors, so it has ", outputs * n, " outputs, not ", ctx.num_outputs());
  return n;
}

template <size_t Groups, size_t Outputs>
void infer_optimizer(InferContext& ctx) {
  const size_t n = tensor_count(ctx, Groups, Outputs);
  const ir::ValueType& r = ctx.input_type(0);
  const ir::ValueType& t = ctx.input_type(1);
  if (r.dtype != DType::float32 && r.dtype != DType::float64)
    ctx.fail("R must be float32 or float64, got ", r.to_string());
  if (t.dtype != DType::int64) ctx.fail("T must be int64, got ", t.to_string());
  for (size_t i = 0; i < n; ++i) {
    const ir::ValueType& x = ctx.input_type(2 + i);
    if (x.dtype != DType::float32 && x.dtype != DType::float64)
      ctx.fail("X", i + 1, " must be float32 or float64, got ", x.to_string());
    for (size_t g = 1; g < Groups; ++g)
      if (ctx.input_type(2 + g * n + i).dtype != x.dtype)
        ctx.fail("input ", 2 + g * n + i, " must have X", i + 1, "'s dtype ", x.to_string());
    for (size_t o = 0; o < Outputs; ++o) ctx.set_output(o * n + i, x);
  }
}

/// Reads the scalars and checks every tensor of each group against its X.
struct Update {
  size_t n = 0;
  double r = 0;
  int64_t t = 0;
};

Update begin_update(KernelContext& ctx, size_t groups, size_t outputs) {
  Update u;
  u.n = tensor_count(ctx, groups, outputs);
  const Tensor& r = ctx.input(0);
  const Tensor& t = ctx.input(1);
  if (r.numel() != 1 || (r.dtype() != DType::float32 && r.dtype() != DType::float64))
    ctx.fail("R must be a float scalar, got ", r.type_string());
  if (t.numel() != 1 || t.dtype() != DType::int64) ctx.fail("T must be an int64 scalar, got ", t.type_string());
  u.r = r.value_as_double(0);
  u.t = *t.data<int64_t>();
  for (size_t i = 0; i < u.n; ++i) {
    const Tensor& x = ctx.input(2 + i);
    if (x.dtype() != DType::float32 && x.dtype() != DType::float64)
      ctx.fail("X", i + 1, " must be float32 or float64, got ", x.type_string());
    for (size_t g = 1; g < groups; ++g) {
      const Tensor& other = ctx.input(2 + g * u.n + i);
      if (other.dtype() != x.dtype() || other.shape() != x.shape())
        ctx.fail("input ", 2 + g * u.n + i, " is ", other.type_string(), "; X", i + 1, " is ", x.type_string());
    }
  }
  return u;
}

/// Runs `element(in, out)` over every element of each tensor i, in double:
/// in[g] is group g's element (X, G, states), out[o] output o's.
template <typename Element>
void for_each_tensor(KernelContext& ctx, const Update& u, size_t groups, size_t outputs, Element element) {
  for (size_t i = 0; i < u.n; ++i) {
    const Tensor& x = ctx.input(2 + i);
    std::vector<Tensor*> out;
    for (size_t o = 0; o < outputs; ++o) out.push_back(&ctx.allocate_output(o * u.n + i, x.dtype(), x.shape()));
    auto run = [&]<typename T>() {
      std::vector<const T*> from;
      std::vector<T*> to;
      for (size_t g = 0; g < groups; ++g) from.push_back(ctx.input(2 + g * u.n + i).template data<T>());
      for (Tensor* t : out) to.push_back(t->data<T>());
      double in[4] = {}, result[3] = {};
      for (int64_t e = 0; e < x.numel(); ++e) {
        for (size_t g = 0; g < groups; ++g) in[g] = static_cast<double>(from[g][e]);
        element(in, result);
        for (size_t o = 0; o < outputs; ++o) to[o][e] = static_cast<T>(result[o]);
      }
    };
    if (x.dtype() == DType::float32)
      run.template operator()<float>();
    else
      run.template operator()<double>();
  }
}

// Adagrad: r' = r / (1 + t decay); g' = norm x + g; h' = h + g' g';
// x' = x - r' g' / (sqrt(h') + epsilon).
void adagrad_kernel(KernelContext& ctx) {
  const Update u = begin_update(ctx, 3, 2);
  const double decay = ctx.attrs().get_float("decay_factor", 0.0f), epsilon = ctx.attrs().get_float("epsilon", 0.0f),
               norm = ctx.attrs().get_float("norm_coefficient", 0.0f);
  const double rate = u.r / (1 + static_cast<double>(u.t) * decay);
  for_each_tensor(ctx, u, 3, 2, [&](const double* in, double* out) {
    const double g = norm * in[0] + in[1];
    out[1] = in[2] + g * g;
    out[0] = in[0] - rate * g / (std::sqrt(out[1]) + epsilon);
  });
}

// Momentum: g' = norm x + g; v' = alpha v + (t > 0 ? beta : 1) g';
// x' = x - r v' (standard) or x - r (g' + alpha v') (nesterov).
void momentum_kernel(KernelContext& ctx) {
  const Update u = begin_update(ctx, 3, 2);
  const double alpha = ctx.attrs().get_float("alpha"), beta = ctx.attrs().get_float("beta"),
               norm = ctx.attrs().get_float("norm_coefficient");
  const std::string mode = ctx.attrs().get_string("mode");
  if (mode != "standard" && mode != "nesterov") ctx.fail("mode must be 'standard' or 'nesterov', got '", mode, "'");
  const bool nesterov = mode == "nesterov";
  const double beta_now = u.t > 0 ? beta : 1.0;
  for_each_tensor(ctx, u, 3, 2, [&](const double* in, double* out) {
    const double g = norm * in[0] + in[1];
    out[1] = alpha * in[2] + beta_now * g;
    out[0] = in[0] - u.r * (nesterov ? g + alpha * out[1] : out[1]);
  });
}

// Adam: g' = norm x + g; v' = alpha v + (1 - alpha) g'; h' = beta h + (1 - beta) g' g';
// r' = t > 0 ? r sqrt(1 - beta^t) / (1 - alpha^t) : r;
// x' = (1 - norm_post) (x - r' v' / (sqrt(h') + epsilon)).
void adam_kernel(KernelContext& ctx) {
  const Update u = begin_update(ctx, 4, 3);
  const double alpha = ctx.attrs().get_float("alpha", 0.9f), beta = ctx.attrs().get_float("beta", 0.999f),
               epsilon = ctx.attrs().get_float("epsilon", 1e-6f),
               norm = ctx.attrs().get_float("norm_coefficient", 0.0f),
               norm_post = ctx.attrs().get_float("norm_coefficient_post", 0.0f);
  const double t = static_cast<double>(u.t);
  const double rate = u.t > 0 ? u.r * std::sqrt(1 - std::pow(beta, t)) / (1 - std::pow(alpha, t)) : u.r;
  for_each_tensor(ctx, u, 4, 3, [&](const double* in, double* out) {
    const double g = norm * in[0] + in[1];
    out[1] = alpha * in[2] + (1 - alpha) * g;
    out[2] = beta * in[3] + (1 - beta) * g * g;
    out[0] = (1 - norm_post) * (in[0] - rate * out[1] / (std::sqrt(out[2]) + epsilon));
  });
}

}  // namespace

GRAFT_REGISTER_OP("ai.onnx.preview.training", "Adagrad", (infer_optimizer<3, 2>), adagrad_kernel);
GRAFT_REGISTER_OP("ai.onnx.preview.training", "Momentum", (infer_optimizer<3, 2>), momentum_kernel);
GRAFT_REGISTER_OP("ai.onnx.preview.training", "Adam", (infer_optimizer<4, 3>), adam_kernel);

}  // namespace graft::ops
