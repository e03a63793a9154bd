// RNN, GRU and LSTM (ONNX): recurrent layers over a sequence, forward,
// reverse or bidirectional, with optional sequence lengths, initial states,
// LSTM peepholes, configurable activations, clipping and both layouts.
//
// Per direction:
//   1. The input projection of every time step at once: one gemm of the
//      (seq * batch) x input matrix X with W^T, plus the biases that do not
//      depend on the hidden state (all of them except GRU's Rbh when
//      linear_before_reset is set).
//   2. Per step, one gemm of the previous hidden state (batch x hidden) with
//      R^T (transposed once per run), then the elementwise cell update. GRU without linear_before_reset
//      needs (r (.) H) before its third recurrent product, so it does the z/r
//      product first and the h product after.
// With sequence_lens, batch entry b runs steps 0..len_b-1 (the reverse
// direction starts at len_b - 1); Y is zero past len_b and Y_h / Y_c hold the
// state after the entry's last step. Gates are ordered as in ONNX: GRU z, r, h;
// LSTM i, o, f, c; peepholes i, o, f. float16 computes in float32.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "graft/ops/conv_util.h"
#include "graft/ops/gemm.h"
#include "graft/ops/infer_util.h"
#include "graft/ops/op_context.h"
#include "vector_math.h"

namespace graft::ops {
namespace {

enum class CellKind { rnn, gru, lstm };

int gates_of(CellKind kind) { return kind == CellKind::rnn ? 1 : kind == CellKind::gru ? 3 : 4; }
int activations_of(CellKind kind) { return kind == CellKind::rnn ? 1 : kind == CellKind::gru ? 2 : 3; }

enum class ActivationKind {
  relu,
  tanh,
  sigmoid,
  affine,
  leaky_relu,
  thresholded_relu,
  scaled_tanh,
  hard_sigmoid,
  elu,
  softsign,
  softplus
};

struct Activation {
  ActivationKind kind = ActivationKind::tanh;
  float alpha = 0, beta = 0;
};

template <typename T>
inline T activate(const Activation& a, T x) {
  switch (a.kind) {
    case ActivationKind::relu:
      return std::max(x, T(0));
    case ActivationKind::tanh:
      return std::tanh(x);
    case ActivationKind::sigmoid:
      return T(1) / (T(1) + std::exp(-x));
    case ActivationKind::affine:
      return T(a.alpha) * x + T(a.beta);
    case ActivationKind::leaky_relu:
      return x >= T(0) ? x : T(a.alpha) * x;
    case ActivationKind::thresholded_relu:
      return x > T(a.alpha) ? x : T(0);
    case ActivationKind::scaled_tanh:
      return T(a.alpha) * std::tanh(T(a.beta) * x);
    case ActivationKind::hard_sigmoid:
      return std::clamp(T(a.alpha) * x + T(a.beta), T(0), T(1));
    case ActivationKind::elu:
      return x >= T(0) ? x : T(a.alpha) * (std::exp(x) - T(1));
    case ActivationKind::softsign:
      return x / (T(1) + std::abs(x));
    case ActivationKind::softplus:
      return std::log1p(std::exp(-std::abs(x))) + std::max(x, T(0));
  }
  return x;
}

// Parses the activations attribute (case-insensitive names) with alpha/beta
// consumed in order by the functions that take them; defaults per the ONNX ops.
std::vector<Activation> read_activations(const ir::Node& node, CellKind kind, int directions) {
  const int per_direction = activations_of(kind);
  std::vector<std::string> names;
  if (node.attributes.has("activations")) {
    names = node.attributes.get_strings("activations");
  } else if (kind == CellKind::rnn) {
    names = {"Tanh"};
  } else if (kind == CellKind::gru) {
    names = {"Sigmoid", "Tanh"};
  } else {
    names = {"Sigmoid", "Tanh", "Tanh"};
  }
  const size_t expected = static_cast<size_t>(per_direction * directions);
  if (names.size() == static_cast<size_t>(per_direction) && directions == 2) {
    std::vector<std::string> twice = names;
    twice.insert(twice.end(), names.begin(), names.end());
    names = std::move(twice);
  }
  if (names.size() != expected)
    graft::fail(ErrorKind::invalid_model, node.describe(), ": attribute 'activations' has ", names.size(),
                " names, expected ", expected);
  std::vector<float> alphas = node.attributes.get_floats("activation_alpha", {});
  std::vector<float> betas = node.attributes.get_floats("activation_beta", {});
  size_t next_alpha = 0, next_beta = 0;
  std::vector<Activation> result;
  for (const std::string& name : names) {
    std::string lower = name;
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    Activation a;
    float default_alpha = 0, default_beta = 0;
    bool uses_alpha = true, uses_beta = false;
    if (lower == "relu") {
      a.kind = ActivationKind::relu, uses_alpha = false;
    } else if (lower == "tanh") {
      a.kind = ActivationKind::tanh, uses_alpha = false;
    } else if (lower == "sigmoid") {
      a.kind = ActivationKind::sigmoid, uses_alpha = false;
    } else if (lower == "affine") {
      a.kind = ActivationKind::affine, default_alpha = 1, uses_beta = true;
    } else if (lower == "leakyrelu") {
      a.kind = ActivationKind::leaky_relu, default_alpha = 0.01f;
    } else if (lower == "thresholdedrelu") {
      a.kind = ActivationKind::thresholded_relu, default_alpha = 1;
    } else if (lower == "scaledtanh") {
      a.kind = ActivationKind::scaled_tanh, default_alpha = 1, default_beta = 1, uses_beta = true;
    } else if (lower == "hardsigmoid") {
      a.kind = ActivationKind::hard_sigmoid, default_alpha = 0.2f, default_beta = 0.5f, uses_beta = true;
    } else if (lower == "elu") {
      a.kind = ActivationKind::elu, default_alpha = 1;
    } else if (lower == "softsign") {
      a.kind = ActivationKind::softsign, uses_alpha = false;
    } else if (lower == "softplus") {
      a.kind = ActivationKind::softplus, uses_alpha = false;
    } else {
      graft::fail(ErrorKind::unsupported, node.describe(), ": activation '", name, "' is not supported");
    }
    a.alpha = uses_alpha && next_alpha < alphas.size() ? alphas[next_alpha++] : default_alpha;
    a.beta = uses_beta && next_beta < betas.size() ? betas[next_beta++] : default_beta;
    result.push_back(a);
  }
  return result;
}

int read_directions(const ir::Node& node, bool& reverse_only) {
  std::string direction = node.attributes.get_string("direction", "forward");
  reverse_only = direction == "reverse";
  if (direction == "forward" || direction == "reverse") return 1;
  if (direction == "bidirectional") return 2;
  graft::fail(ErrorKind::invalid_model, node.describe(), ": attribute 'direction' is '", direction,
              "', expected forward, reverse or bidirectional");
}

void rnn_infer(InferContext& ctx, CellKind kind) {
  const ir::ValueType& x = ctx.input_type(0);
  bool reverse_only = false;
  const int directions = read_directions(ctx.node(), reverse_only);
  const bool batch_major = ctx.attrs().get_int("layout", 0) != 0;
  ir::Dim hidden;
  if (ctx.attrs().has("hidden_size")) {
    hidden = ir::Dim::known(ctx.attrs().get_int("hidden_size"));
  } else if (ctx.has_input(2) && ctx.input_type(2).has_rank && ctx.input_type(2).dims.size() == 3) {
    hidden = ctx.input_type(2).dims[2];
  }
  ir::Dim seq, batch;
  const bool known_rank = x.has_rank;
  if (known_rank) {
    if (x.dims.size() != 3) ctx.fail("input X has rank ", x.dims.size(), ", expected 3");
    seq = x.dims[batch_major ? 1 : 0];
    batch = x.dims[batch_major ? 0 : 1];
  }
  const ir::Dim dirs = ir::Dim::known(directions);
  for (size_t i = 0; i < ctx.num_outputs(); ++i) {
    if (i >= 3 || (i == 2 && kind != CellKind::lstm)) ctx.fail("too many outputs");
    std::vector<ir::Dim> dims;
    if (i == 0) {
      dims =
          batch_major ? std::vector<ir::Dim>{batch, seq, dirs, hidden} : std::vector<ir::Dim>{seq, dirs, batch, hidden};
    } else {
      dims = batch_major ? std::vector<ir::Dim>{batch, dirs, hidden} : std::vector<ir::Dim>{dirs, batch, hidden};
    }
    ctx.set_output(i, known_rank ? ir::ValueType{x.dtype, true, std::move(dims)} : ir::ValueType::of_dtype(x.dtype));
  }
}

template <typename T>
void gemm_t(bool trans_b, int64_t M, int64_t N, int64_t K, const T* A, int64_t lda, const T* B, int64_t ldb, T* C,
            int64_t ldc) {
  if constexpr (std::is_same_v<T, float>) {
    gemm_f32(false, trans_b, M, N, K, 1.0f, A, lda, B, ldb, 0.0f, C, ldc);
  } else {
    gemm_f64(false, trans_b, M, N, K, 1.0, A, lda, B, ldb, 0.0, C, ldc);
  }
}

// Everything one run needs, resolved and validated, with inputs in the compute type.
struct RnnProblem {
  CellKind kind = CellKind::rnn;
  int64_t seq = 0, batch = 0, input_size = 0, hidden = 0;
  int directions = 1;
  bool reverse_only = false;
  bool batch_major = false;
  bool linear_before_reset = false;
  bool input_forget = false;
  bool has_clip = false;
  float clip = 0;
  std::vector<int64_t> lengths;
  std::vector<Activation> activations;
};

// Tensor in the compute type (float16/bfloat16 become float32).
Tensor in_compute_type(const Tensor& t) { return conv::to_float32(t); }

template <typename T>
T clip_value(const RnnProblem& p, T x) {
  return p.has_clip ? std::clamp(x, T(-p.clip), T(p.clip)) : x;
}

/// One batch row of an LSTM step with the default activations (sigmoid,
/// tanh, tanh), the float32 case: pre-activations gathered per gate, then
/// vector_math's sigmoid and tanh over each gate's H values at once.
/// `scratch` holds 5 * H floats. Updates c and h in place.
template <typename T>
void lstm_gates_vectorized(const RnnProblem& p, const T* in, const T* rec, const T* pi, const T* po, const T* pf, T* c,
                           T* h, T* scratch) {
  if constexpr (std::is_same_v<T, float>) {
    const int64_t H = p.hidden;
    float *gi = scratch, *go = scratch + H, *gf = scratch + 2 * H, *gc = scratch + 3 * H, *tc = scratch + 4 * H;
    for (int64_t j = 0; j < H; ++j) {
      gi[j] = clip_value(p, in[j] + rec[j] + (pi ? pi[j] * c[j] : 0.0f));
      gf[j] = clip_value(p, in[2 * H + j] + rec[2 * H + j] + (pf ? pf[j] * c[j] : 0.0f));
      gc[j] = clip_value(p, in[3 * H + j] + rec[3 * H + j]);
    }
    vector_math::sigmoid(gi, gi, H);
    if (!p.input_forget) vector_math::sigmoid(gf, gf, H);
    vector_math::tanh(gc, gc, H);
    for (int64_t j = 0; j < H; ++j) {
      const float f = p.input_forget ? 1.0f - gi[j] : gf[j];
      c[j] = f * c[j] + gi[j] * gc[j];
      go[j] = clip_value(p, in[H + j] + rec[H + j] + (po ? po[j] * c[j] : 0.0f));
    }
    vector_math::sigmoid(go, go, H);
    vector_math::tanh(c, tc, H);
    for (int64_t j = 0; j < H; ++j) h[j] = go[j] * tc[j];
  }
}

/// One batch row of a GRU step with the default activations (sigmoid, tanh),
/// the float32 case, as lstm_gates_vectorized. `rb` is the recurrent bias
/// (Rbh is added inside the reset product with linear_before_reset; without
/// it, the reset was applied before the third product). Updates h in place.
template <typename T>
void gru_gates_vectorized(const RnnProblem& p, const T* in, const T* rec, const T* rb, T* h, T* scratch) {
  if constexpr (std::is_same_v<T, float>) {
    const int64_t H = p.hidden;
    float *gz = scratch, *gr = scratch + H, *gc = scratch + 2 * H;
    for (int64_t j = 0; j < H; ++j) {
      gz[j] = clip_value(p, in[j] + rec[j]);
      if (p.linear_before_reset) gr[j] = clip_value(p, in[H + j] + rec[H + j]);
    }
    vector_math::sigmoid(gz, gz, H);
    if (p.linear_before_reset) {
      vector_math::sigmoid(gr, gr, H);
      for (int64_t j = 0; j < H; ++j)
        gc[j] = clip_value(p, in[2 * H + j] + gr[j] * (rec[2 * H + j] + (rb ? rb[2 * H + j] : 0.0f)));
    } else {
      for (int64_t j = 0; j < H; ++j) gc[j] = clip_value(p, in[2 * H + j] + rec[2 * H + j]);
    }
    vector_math::tanh(gc, gc, H);
    for (int64_t j = 0; j < H; ++j) h[j] = (1.0f - gz[j]) * gc[j] + gz[j] * h[j];
  }
}

template <typename T>
void run_direction(const RnnProblem& p, int dir, bool reverse, const T* x, const T* w, const T* r, const T* bias,
                   const T* initial_h, const T* initial_c, const T* peephole, T* y, T* y_h, T* y_c) {
  const int64_t H = p.hidden, G = gates_of(p.kind), GH = G * H, rows = p.seq * p.batch;
  const T* wd = w + dir * GH * p.input_size;
  const T* rd = r + dir * GH * H;
  const T* wb = bias ? bias + dir * 2 * GH : nullptr;
  const T* rb = bias ? wb + GH : nullptr;
  const Activation* act = p.activations.data() + dir * activations_of(p.kind);
  // 1. Input projection of all steps, rows in X's own order.
  std::vector<T> projected(static_cast<size_t>(rows * GH));
  if (rows > 0) gemm_t<T>(true, rows, GH, p.input_size, x, p.input_size, wd, p.input_size, projected.data(), GH);
  const bool gru_keeps_rbh = p.kind == CellKind::gru && p.linear_before_reset;
  if (bias) {
    for (int64_t row = 0; row < rows; ++row) {
      T* out = projected.data() + row * GH;
      for (int64_t j = 0; j < GH; ++j) {
        const bool add_recurrent = !(gru_keeps_rbh && j >= 2 * H);
        out[j] += wb[j] + (add_recurrent ? rb[j] : T(0));
      }
    }
  }
  auto row_of = [&](int64_t t, int64_t b) { return p.batch_major ? b * p.seq + t : t * p.batch + b; };
  // 2. The recurrence.
  std::vector<T> h(static_cast<size_t>(p.batch * H), T(0)), c;
  if (initial_h)
    for (int64_t b = 0; b < p.batch; ++b)
      for (int64_t j = 0; j < H; ++j)
        h[b * H + j] = initial_h[(p.batch_major ? b * p.directions + dir : dir * p.batch + b) * H + j];
  if (p.kind == CellKind::lstm) {
    c.assign(static_cast<size_t>(p.batch * H), T(0));
    if (initial_c)
      for (int64_t b = 0; b < p.batch; ++b)
        for (int64_t j = 0; j < H; ++j)
          c[b * H + j] = initial_c[(p.batch_major ? b * p.directions + dir : dir * p.batch + b) * H + j];
  }
  const T* pi = peephole ? peephole + dir * 3 * H : nullptr;
  const T* po = pi ? pi + H : nullptr;
  const T* pf = pi ? pi + 2 * H : nullptr;
  const bool gru_split = p.kind == CellKind::gru && !p.linear_before_reset;
  const int64_t first_product = gru_split ? 2 * H : GH;
  // R transposed once ([H, G*H]): each step's product with a few batch rows
  // then reads it row by row, unpacked (gemm's small-M path), instead of
  // packing all of R again every step.
  std::vector<T> rt(static_cast<size_t>(H * GH));
  constexpr int64_t kTile = 16;  // tiles keep both sides' lines in the cache
  for (int64_t n0 = 0; n0 < GH; n0 += kTile)
    for (int64_t k0 = 0; k0 < H; k0 += kTile)
      for (int64_t n = n0; n < std::min(GH, n0 + kTile); ++n)
        for (int64_t k = k0; k < std::min(H, k0 + kTile); ++k) rt[static_cast<size_t>(k * GH + n)] = rd[n * H + k];
  std::vector<T> recurrent(static_cast<size_t>(p.batch * GH));
  // float32 LSTM and GRU gates with the default activations: vectorized sigmoid and tanh.
  const bool vector_gates = std::is_same_v<T, float> && (p.kind == CellKind::gru || p.kind == CellKind::lstm) &&
                            act[0].kind == ActivationKind::sigmoid && act[1].kind == ActivationKind::tanh &&
                            (p.kind == CellKind::gru || act[2].kind == ActivationKind::tanh);
  std::vector<T> gates(vector_gates ? static_cast<size_t>(5 * H) : 0);
  std::vector<T> reset_hidden(gru_split ? static_cast<size_t>(p.batch * H) : 0);
  for (int64_t step = 0; step < p.seq; ++step) {
    if (p.batch > 0 && H > 0)
      gemm_t<T>(false, p.batch, first_product, H, h.data(), H, rt.data(), GH, recurrent.data(), GH);
    if (gru_split) {
      // r (.) H_prev, then its product with Rh.
      for (int64_t b = 0; b < p.batch; ++b) {
        const bool active = step < p.lengths[b];
        const int64_t t = reverse ? p.lengths[b] - 1 - step : step;
        for (int64_t j = 0; j < H; ++j) {
          T reset = T(0);
          if (active) {
            const T pre = projected[row_of(t, b) * GH + H + j] + recurrent[b * GH + H + j];
            reset = activate(act[0], clip_value(p, pre));
          }
          reset_hidden[b * H + j] = reset * h[b * H + j];
        }
      }
      if (p.batch > 0 && H > 0)
        gemm_t<T>(false, p.batch, H, H, reset_hidden.data(), H, rt.data() + 2 * H, GH, recurrent.data() + 2 * H, GH);
    }
    for (int64_t b = 0; b < p.batch; ++b) {
      if (step >= p.lengths[b]) continue;
      const int64_t t = reverse ? p.lengths[b] - 1 - step : step;
      const T* in = projected.data() + row_of(t, b) * GH;
      const T* rec = recurrent.data() + b * GH;
      T* hb = h.data() + b * H;
      if (p.kind == CellKind::rnn) {
        for (int64_t j = 0; j < H; ++j) hb[j] = activate(act[0], clip_value(p, in[j] + rec[j]));
      } else if (p.kind == CellKind::gru && vector_gates) {
        gru_gates_vectorized(p, in, rec, rb, hb, gates.data());
      } else if (p.kind == CellKind::gru) {
        for (int64_t j = 0; j < H; ++j) {
          const T z = activate(act[0], clip_value(p, in[j] + rec[j]));
          T candidate;
          if (p.linear_before_reset) {
            const T reset = activate(act[0], clip_value(p, in[H + j] + rec[H + j]));
            const T rbh = rb ? rb[2 * H + j] : T(0);
            candidate = activate(act[1], clip_value(p, in[2 * H + j] + reset * (rec[2 * H + j] + rbh)));
          } else {
            candidate = activate(act[1], clip_value(p, in[2 * H + j] + rec[2 * H + j]));
          }
          hb[j] = (T(1) - z) * candidate + z * hb[j];
        }
      } else if (vector_gates) {
        lstm_gates_vectorized(p, in, rec, pi, po, pf, c.data() + b * H, hb, gates.data());
      } else {
        T* cb = c.data() + b * H;
        for (int64_t j = 0; j < H; ++j) {
          const T c_prev = cb[j];
          const T i_gate = activate(act[0], clip_value(p, in[j] + rec[j] + (pi ? pi[j] * c_prev : T(0))));
          const T f_gate =
              p.input_forget
                  ? T(1) - i_gate
                  : activate(act[0], clip_value(p, in[2 * H + j] + rec[2 * H + j] + (pf ? pf[j] * c_prev : T(0))));
          const T candidate = activate(act[1], clip_value(p, in[3 * H + j] + rec[3 * H + j]));
          const T c_new = f_gate * c_prev + i_gate * candidate;
          const T o_gate = activate(act[0], clip_value(p, in[H + j] + rec[H + j] + (po ? po[j] * c_new : T(0))));
          cb[j] = c_new;
          hb[j] = o_gate * activate(act[2], c_new);
        }
      }
      if (y) {
        T* out =
            y + (p.batch_major ? (b * p.seq + t) * p.directions + dir : (t * p.directions + dir) * p.batch + b) * H;
        std::copy(hb, hb + H, out);
      }
    }
  }
  for (int64_t b = 0; b < p.batch; ++b) {
    const int64_t at = (p.batch_major ? b * p.directions + dir : dir * p.batch + b) * H;
    if (y_h) std::copy(h.begin() + b * H, h.begin() + (b + 1) * H, y_h + at);
    if (y_c) std::copy(c.begin() + b * H, c.begin() + (b + 1) * H, y_c + at);
  }
}

void check_input(const KernelContext& ctx, size_t index, const char* name, DType dtype, const Shape& shape) {
  const Tensor& t = ctx.input(index);
  if (t.dtype() != dtype || t.shape() != shape)
    ctx.fail("input ", name, " is ", t.type_string(), ", expected ", dtype_name(dtype), shape_to_string(shape));
}

void rnn_kernel(KernelContext& ctx, CellKind kind) {
  const Tensor& x_in = ctx.input(0);
  if (!dtype_is_float(x_in.dtype()))
    ctx.unsupported("input X is ", dtype_name(x_in.dtype()), ", expected a float type");
  if (x_in.rank() != 3) ctx.fail("input X has rank ", x_in.rank(), ", expected 3");
  RnnProblem p;
  p.kind = kind;
  p.directions = read_directions(ctx.node(), p.reverse_only);
  p.batch_major = ctx.attrs().get_int("layout", 0) != 0;
  p.seq = x_in.dim(p.batch_major ? 1 : 0);
  p.batch = x_in.dim(p.batch_major ? 0 : 1);
  p.input_size = x_in.dim(2);
  const Tensor& r_in = ctx.input(2);
  if (r_in.rank() != 3) ctx.fail("input R has rank ", r_in.rank(), ", expected 3");
  p.hidden = r_in.dim(2);
  if (ctx.attrs().get_int("hidden_size", p.hidden) != p.hidden)
    ctx.fail("attribute 'hidden_size' is ", ctx.attrs().get_int("hidden_size"), ", R has hidden size ", p.hidden);
  p.linear_before_reset = ctx.attrs().get_int("linear_before_reset", 0) != 0;
  p.input_forget = ctx.attrs().get_int("input_forget", 0) != 0;
  p.has_clip = ctx.attrs().has("clip");
  if (p.has_clip) p.clip = ctx.attrs().get_float("clip");
  p.activations = read_activations(ctx.node(), kind, p.directions);
  const int64_t D = p.directions, H = p.hidden, GH = gates_of(kind) * H;
  const DType dtype = x_in.dtype();
  check_input(ctx, 1, "W", dtype, {D, GH, p.input_size});
  check_input(ctx, 2, "R", dtype, {D, GH, H});
  if (ctx.has_input(3)) check_input(ctx, 3, "B", dtype, {D, 2 * GH});
  const Shape state_shape = p.batch_major ? Shape{p.batch, D, H} : Shape{D, p.batch, H};
  if (ctx.has_input(5)) check_input(ctx, 5, "initial_h", dtype, state_shape);
  if (kind == CellKind::lstm && ctx.has_input(6)) check_input(ctx, 6, "initial_c", dtype, state_shape);
  if (kind == CellKind::lstm && ctx.has_input(7)) check_input(ctx, 7, "P", dtype, {D, 3 * H});
  p.lengths.assign(static_cast<size_t>(p.batch), p.seq);
  if (ctx.has_input(4)) {
    const Tensor& lengths = ctx.input(4);
    if (!dtype_is_integer(lengths.dtype()) || lengths.shape() != Shape{p.batch})
      ctx.fail("input sequence_lens is ", lengths.type_string(), ", expected int32[", p.batch, "]");
    p.lengths = lengths.to_int64_vector();
    for (int64_t len : p.lengths)
      if (len < 0 || len > p.seq) ctx.fail("sequence length ", len, " is outside [0, ", p.seq, "]");
  }
  const Shape y_shape = p.batch_major ? Shape{p.batch, p.seq, D, H} : Shape{p.seq, D, p.batch, H};
  const size_t max_outputs = kind == CellKind::lstm ? 3 : 2;
  if (ctx.num_outputs() > max_outputs) ctx.fail("has ", ctx.num_outputs(), " outputs, expected at most ", max_outputs);
  const bool want[3] = {ctx.num_outputs() > 0, ctx.num_outputs() > 1, ctx.num_outputs() > 2};
  // Inputs and outputs in the compute type.
  auto optional_input = [&](size_t i) { return ctx.has_input(i) ? in_compute_type(ctx.input(i)) : Tensor(); };
  Tensor x = in_compute_type(x_in), w = in_compute_type(ctx.input(1)), r = in_compute_type(r_in);
  Tensor bias = optional_input(3), initial_h = optional_input(5);
  Tensor initial_c = kind == CellKind::lstm ? optional_input(6) : Tensor();
  Tensor peephole = kind == CellKind::lstm ? optional_input(7) : Tensor();
  const DType compute = x.dtype();
  Tensor outputs[3];
  const Shape shapes[3] = {y_shape, state_shape, state_shape};
  for (int i = 0; i < 3; ++i)
    if (want[i]) {
      outputs[i] =
          compute == dtype ? ctx.allocate_output(static_cast<size_t>(i), dtype, shapes[i]) : Tensor(compute, shapes[i]);
      std::memset(outputs[i].raw_data(), 0, outputs[i].nbytes());
    }
  auto run = [&]<typename T>() {
    auto ptr = [](const Tensor& t) { return t.is_defined() ? t.data<T>() : nullptr; };
    auto out = [](Tensor& t) { return t.is_defined() ? t.data<T>() : nullptr; };
    for (int dir = 0; dir < p.directions; ++dir) {
      const bool reverse = p.directions == 2 ? dir == 1 : p.reverse_only;
      run_direction<T>(p, dir, reverse, x.data<T>(), w.data<T>(), r.data<T>(), ptr(bias), ptr(initial_h),
                       ptr(initial_c), ptr(peephole), out(outputs[0]), out(outputs[1]), out(outputs[2]));
    }
  };
  if (compute == DType::float64)
    run.operator()<double>();
  else
    run.operator()<float>();
  if (compute != dtype)
    for (int i = 0; i < 3; ++i)
      if (want[i]) conv::from_float32(outputs[i], ctx.allocate_output(static_cast<size_t>(i), dtype, shapes[i]));
}

void rnn_infer_plain(InferContext& ctx) { rnn_infer(ctx, CellKind::rnn); }
void gru_infer(InferContext& ctx) { rnn_infer(ctx, CellKind::gru); }
void lstm_infer(InferContext& ctx) { rnn_infer(ctx, CellKind::lstm); }
void rnn_kernel_plain(KernelContext& ctx) { rnn_kernel(ctx, CellKind::rnn); }
void gru_kernel(KernelContext& ctx) { rnn_kernel(ctx, CellKind::gru); }
void lstm_kernel(KernelContext& ctx) { rnn_kernel(ctx, CellKind::lstm); }

}  // namespace

GRAFT_REGISTER_OP("", "RNN", rnn_infer_plain, rnn_kernel_plain);
GRAFT_REGISTER_OP("", "GRU", gru_infer, gru_kernel);
GRAFT_REGISTER_OP("", "LSTM", lstm_infer, lstm_kernel);

}  // namespace graft::ops
