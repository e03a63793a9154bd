// Int8 convolutions of quantization-aware (QDQ) exports.
//
// Such a model puts a QuantizeLinear -> DequantizeLinear pair on every
// activation a convolution reads and a DequantizeLinear on its int8 weights.
// The default passes leave this in float32: fold-constants evaluates the
// weights' DequantizeLinear (float weights that are int8 values times a
// scale per output channel), and lower-quantize-dequantize writes each pair
// as Mul(Clip(Round(Div(x, s)), lo, hi), s), where lo..hi are the 256
// integers of the quantized type less its zero point. A convolution of such
// an input computes s * s_w[c] * sum(q_x * q_w) + bias: an integer product,
// which oneDNN runs as a u8 x s8 convolution (VNNI's vpdpbusd) four times as
// dense as float32. Only with VNNI: AVX2's vpmaddubsw adds pairs of u8 x s8
// products in 16 bits, which saturate (int8_runs_without_saturation).
//
// Finding them (before the groups are formed): a Conv whose input 0 is that
// pattern with the same scale in Div and Mul, hi - lo = 255 and -lo a uint8
// zero point, whose weights are a constant of which every output channel is
// integers in [-128, 127] times one scale (int8_weight_scales: the scale is
// max |w| / 127, or / 128, and each w / scale must be within 1e-3 of an
// integer; float weights never are), and whose bias is a constant or input.
// When only the pattern's Mul has readers besides the next node (the usual
// case), the pattern is folded: none of its nodes is emitted, and the
// convolutions quantize x itself; float32 readers of the Mul (a residual
// Add) get s * (u - z) from the uint8 form in one reorder, where the four
// ops were up to four passes. Otherwise the pattern runs in float32 as
// before and the convolutions quantize its output s * q, which gives back q
// exactly (q is an integer below 2^8, the product rounded once).
//
// Emitting one: the source becomes uint8 u = q + z in one reorder (output
// scale 1 / s, destination zero point z; rounding half to even, saturating),
// made once per quantized source and shared by the convolutions that read
// it; the convolution reads u with source zero point z (oneDNN subtracts it,
// padding included), s8 weights q_w (converted from the float weights once,
// like any weight), output scales s * s_w[c] and the bias divided by them
// (oneDNN 2.6 adds the bias before scaling), and writes float32 with the
// group's post-ops: the rest of the graph is unchanged. When the result
// feeds only a folded fake quantization (conv -> Relu -> QDQ -> conv, the
// common case), the convolution requantizes instead: output scales
// s * s_w[c] / s', destination zero point z', Clip bounds divided by s'
// (Relu and Clip commute with a positive scale), uint8 written in the
// layout oneDNN picks, which the next convolutions read as their source:
// int8 from one convolution to the next. Where oneDNN has only
// reference code for the int8 convolution, it runs in float32 on the
// dequantized source instead. Dividing by s as a product with 1 / s may put a
// value within a float step of a rounding boundary one quantization step
// from the reference kernels' value, as the float32 lowering already did.
#include "dnnl_int8.h"

#include <algorithm>
#include <cmath>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "dnnl_emitters.h"
#include "graft/core/parallel.h"
#include "graft/ops/quantized_weight.h"

namespace graft::dnnl_backend {
namespace {

using dnnl::memory;
using ir::Entry;
using ir::OpId;

// std::nearbyint(v) in the default rounding mode (to nearest, ties to
// even) for |v| < 2^22, without a library call: adding 1.5 * 2^23 leaves no
// fraction bits, so the addition rounds v, and the subtraction is exact.
// Larger magnitudes give some other value; callers clamp or range-check
// them.
inline float round_small(float v) {
  constexpr float shift = 12582912.0f;  // 1.5 * 2^23
  return (v + shift) - shift;
}

// q rounded to the nearest int8 value (ties to even), saturating; NaN gives
// 127.
inline int8_t int8_of(float q) {
  q = q < 127.0f ? q : 127.0f;  // NaN compares false: 127
  q = q > -128.0f ? q : -128.0f;
  return static_cast<int8_t>(static_cast<int32_t>(round_small(q)));
}

// out[i] = int8_of(values[i] / scale_at(i)) for n values, 8 at a time with
// SSE2 where the compiler targets it (the same IEEE division, rounding and
// saturation as int8_of: min and max return their second operand for a
// NaN, as int8_of's comparisons do).
template <typename ScaleAt>
void quantize_int8_with(const float* values, int64_t n, int8_t* out, ScaleAt scale_at) {
  int64_t i = 0;
#if defined(__SSE2__)
  const __m128 hi = _mm_set1_ps(127.0f), lo = _mm_set1_ps(-128.0f), shift = _mm_set1_ps(12582912.0f);
  auto rounded = [&](int64_t at) {
    __m128 q = _mm_div_ps(_mm_loadu_ps(values + at), scale_at.vector(at));
    q = _mm_max_ps(_mm_min_ps(q, hi), lo);
    return _mm_cvttps_epi32(_mm_sub_ps(_mm_add_ps(q, shift), shift));
  };
  for (; i + 8 <= n; i += 8) {
    const __m128i words = _mm_packs_epi32(rounded(i), rounded(i + 4));
    _mm_storel_epi64(reinterpret_cast<__m128i*>(out + i), _mm_packs_epi16(words, words));
  }
#endif
  for (; i < n; ++i) out[i] = int8_of(values[i] / scale_at(i));
}

// out[c] = factor * (the sum of column c of the int8 [k, n] matrix
// `values`, stored [n, k] when `transposed`), for n columns. The sums are
// kept in local arrays of a fixed width, which the compiler vectorizes
// (through a pointer to int8, a store to a shared buffer could alias every
// load, and the loops stayed scalar: 11% of a BERT's first inference).
void column_sums_times(const int8_t* values, int64_t k, int64_t n, bool transposed, float factor, float* out) {
  constexpr int64_t kWidth = 64;
  parallel_for((n + kWidth - 1) / kWidth, 1, [&](int64_t first_block, int64_t end_block) {
    for (int64_t block = first_block; block < end_block; ++block) {
      const int64_t begin = block * kWidth, width = std::min(kWidth, n - begin);
      int32_t sums[kWidth] = {};
      if (transposed) {
        for (int64_t c = 0; c < width; ++c) {
          const int8_t* column = values + (begin + c) * k;
          int32_t lanes[kWidth] = {};
          int64_t r = 0;
          for (; r + kWidth <= k; r += kWidth)
            for (int64_t j = 0; j < kWidth; ++j) lanes[j] += column[r + j];
          for (; r < k; ++r) lanes[0] += column[r];
          for (int32_t lane : lanes) sums[c] += lane;
        }
      } else {
        for (int64_t r = 0; r < k; ++r) {
          const int8_t* row = values + r * n + begin;
          if (width == kWidth) {
            for (int64_t j = 0; j < kWidth; ++j) sums[j] += row[j];
          } else {
            for (int64_t j = 0; j < width; ++j) sums[j] += row[j];
          }
        }
      }
      for (int64_t c = 0; c < width; ++c) out[begin + c] = factor * static_cast<float>(sums[c]);
    }
  });
}

// One scale for all n values.
struct SameScale {
  float scale;
  float operator()(int64_t) const { return scale; }
#if defined(__SSE2__)
  __m128 vector(int64_t) const { return _mm_set1_ps(scale); }
#endif
};

// A scale per value: scales[i].
struct ScalePerValue {
  const float* scales;
  float operator()(int64_t i) const { return scales[i]; }
#if defined(__SSE2__)
  __m128 vector(int64_t i) const { return _mm_loadu_ps(scales + i); }
#endif
};

// out[i] = int8_of(values[i] / scale) for n values.
void quantize_int8(const float* values, int64_t n, float scale, int8_t* out) {
  quantize_int8_with(values, n, out, SameScale{scale});
}

// The largest |value| of n values (NaN is skipped, as std::max skips it),
// in blocks of a fixed 16 that the compiler vectorizes at -O2.
float largest_magnitude(const float* values, int64_t n) {
  constexpr int64_t kLanes = 16;
  float lanes[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int64_t j = 0; j < kLanes; ++j) {
      const float a = std::abs(values[i + j]);
      lanes[j] = lanes[j] < a ? a : lanes[j];
    }
  float largest = 0.0f;
  for (float l : lanes) largest = std::max(largest, l);
  for (; i < n; ++i) largest = std::max(largest, std::abs(values[i]));
  return largest;
}

// Whether value / scale is within 1e-3 of an integer in [-128, 127] (the
// test int8_weight_scales applies), as 1 or 0: the three tests combined
// without branches.
inline int int8_value(float value, float scale) {
  const float q = value / scale;
  return static_cast<int>(std::abs(q - round_small(q)) <= 1e-3f) & static_cast<int>(q >= -128.5f) &
         static_cast<int>(q <= 127.5f);
}

// Whether each of the n values divided by `scale` is an int8 value. In
// blocks of a fixed 16, which the compiler vectorizes at -O2.
bool int8_values(const float* values, int64_t n, float scale) {
  constexpr int64_t kLanes = 16;
  int all = 1;
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    int block = 1;
    for (int64_t j = 0; j < kLanes; ++j) block &= int8_value(values[i + j], scale);
    all &= block;
  }
  for (; i < n; ++i) all &= int8_value(values[i], scale);
  return all != 0;
}

// The value of a one-element float32 constant behind `e`.
std::optional<float> scalar_float(const ir::IndexedGraph& g, Entry e) {
  if (!e.present()) return std::nullopt;
  const ir::Node& n = g.node(e.node_id);
  if (!is_scalar_constant(n) || n.constant_value.dtype() != DType::float32) return std::nullopt;
  return n.constant_value.data<float>()[0];
}

// The node producing `e` when it has op `op` and `e` is its output 0.
std::optional<uint32_t> produced_by(const ir::IndexedGraph& g, Entry e, OpId op) {
  if (!e.present() || e.index != 0 || g.node(e.node_id).op() != op) return std::nullopt;
  return e.node_id;
}

struct FakeQuantization {
  uint32_t div = 0, round = 0, clip = 0, mul = 0;
  Entry x;
  float scale = 1;
  int32_t zero_point = 0;
};

// Mul(Clip(Round(Div(x, s)), lo, hi), s) ending at `value`, with lo..hi the
// 256 values of a uint8 less zero point -lo.
std::optional<FakeQuantization> match_fake_quantization(const ir::IndexedGraph& g, Entry value) {
  FakeQuantization f;
  std::optional<uint32_t> mul = produced_by(g, value, OpId::Mul);
  if (!mul) return std::nullopt;
  f.mul = *mul;
  auto mul_in = g.inputs(f.mul);
  if (mul_in.size() != 2) return std::nullopt;
  std::optional<float> out_scale = scalar_float(g, mul_in[1]);
  std::optional<uint32_t> clip = produced_by(g, mul_in[0], OpId::Clip);
  if (!out_scale || !clip) return std::nullopt;
  f.clip = *clip;
  const ir::Node& clip_node = g.node(f.clip);
  auto clip_in = g.inputs(f.clip);
  std::optional<float> lo, hi;
  if (clip_node.opset_version < 11) {
    lo = clip_node.attributes.get_float("min", -INFINITY);
    hi = clip_node.attributes.get_float("max", INFINITY);
  } else if (clip_in.size() == 3) {
    lo = scalar_float(g, clip_in[1]);
    hi = scalar_float(g, clip_in[2]);
  }
  if (!lo || !hi || *lo != std::floor(*lo) || *hi - *lo != 255.0f || *lo > 0 || *lo < -255) return std::nullopt;
  std::optional<uint32_t> round = produced_by(g, clip_in[0], OpId::Round);
  if (!round) return std::nullopt;
  f.round = *round;
  std::optional<uint32_t> div = produced_by(g, g.inputs(f.round)[0], OpId::Div);
  if (!div) return std::nullopt;
  f.div = *div;
  auto div_in = g.inputs(f.div);
  std::optional<float> scale = div_in.size() == 2 ? scalar_float(g, div_in[1]) : std::nullopt;
  if (!scale || *scale != *out_scale || !(*scale > 0) || !std::isfinite(1.0f / *scale)) return std::nullopt;
  f.x = div_in[0];
  if (g.node(f.x.node_id).output_types[f.x.index].dtype != DType::float32) return std::nullopt;
  f.scale = *scale;
  f.zero_point = static_cast<int32_t>(-*lo);
  return f;
}

// Whether node `id` reads `producer`'s outputs exactly once, at input `index`.
bool reads_only_at(const ir::IndexedGraph& g, uint32_t id, uint32_t producer, size_t index) {
  auto in = g.inputs(id);
  for (size_t i = 0; i < in.size(); ++i)
    if (in[i].present() && in[i].node_id == producer && i != index) return false;
  return index < in.size() && in[index].present() && in[index].node_id == producer;
}

// Whether the Div, Round and Clip of `f` each have the next step as their
// only reader, so that the four can go unemitted.
bool chain_foldable(const ir::IndexedGraph& g, const FakeQuantization& f, const std::vector<bool>& is_output) {
  const std::pair<uint32_t, uint32_t> links[] = {{f.div, f.round}, {f.round, f.clip}, {f.clip, f.mul}};
  for (auto [from, to] : links) {
    auto consumers = g.consumers(from);
    if (consumers.size() != 1 || consumers[0] != to || !reads_only_at(g, to, from, 0) || is_output[g.entry_id(from, 0)])
      return false;
  }
  return true;
}

// A leaf of a uint8 node: its input `input` is the fake quantization `fake`.
struct Uint8Leaf {
  Uint8Node* node;
  size_t input;
  FakeQuantization fake;
};

// The uint8 node that node `id` (a MaxPool or Concat whose output only
// `reader` reads, once) makes, computing in `scale` and `zero_point`: every
// input a foldable fake quantization (recorded in `leaves`) or another such
// node (recorded in `inner`); nullptr otherwise.
std::shared_ptr<Uint8Node> find_uint8_node(const ir::IndexedGraph& g, uint32_t id, uint32_t reader, float scale,
                                           int32_t zero_point, const std::vector<bool>& is_output,
                                           std::vector<Uint8Leaf>& leaves,
                                           std::vector<std::pair<uint32_t, std::shared_ptr<Uint8Node>>>& inner) {
  const ir::Node& node = g.node(id);
  const bool add = node.op() == OpId::Add;
  if (node.op() != OpId::MaxPool && node.op() != OpId::Concat && !add) return nullptr;
  if (node.output_types[0].dtype != DType::float32 || node.output_types[0].dims.size() < 2) return nullptr;
  for (uint32_t output = 0; output < node.output_types.size(); ++output)
    if (is_output[g.entry_id(id, output)]) return nullptr;
  auto consumers = g.consumers(id);
  if (consumers.size() != 1 || consumers[0] != reader) return nullptr;
  int reads = 0;
  for (Entry e : g.inputs(reader)) reads += e.present() && e.node_id == id ? 1 : 0;
  if (reads != 1) return nullptr;
  for (Entry e : g.inputs(reader))
    if (e.present() && e.node_id == id && e.index != 0) return nullptr;  // a MaxPool's indices
  auto inputs = g.inputs(id);
  const size_t count = node.op() == OpId::MaxPool ? 1 : inputs.size();
  if (count == 0 || (add && count != 2)) return nullptr;
  auto u = std::make_shared<Uint8Node>();
  u->scale = scale;
  u->zero_point = zero_point;
  u->sources.resize(count);
  u->inner.resize(count);
  for (size_t i = 0; i < count; ++i) {
    if (!inputs[i].present()) return nullptr;
    if (std::optional<FakeQuantization> f = match_fake_quantization(g, inputs[i]);
        f && chain_foldable(g, *f, is_output)) {
      // An Add of two such values of its own extents (no broadcast).
      if (add && g.node(f->mul).output_types[0].dims != node.output_types[0].dims) return nullptr;
      leaves.push_back({u.get(), i, *f});
      continue;
    }
    if (add || inputs[i].index != 0) return nullptr;
    u->inner[i] = find_uint8_node(g, inputs[i].node_id, id, scale, zero_point, is_output, leaves, inner);
    if (!u->inner[i]) return nullptr;
    inner.push_back({inputs[i].node_id, u->inner[i]});
  }
  return u;
}

}  // namespace

std::optional<std::vector<float>> int8_weight_scales(const Tensor& weights, size_t axis) {
  if (weights.dtype() != DType::float32 || axis >= weights.shape().size() || weights.numel() == 0) return std::nullopt;
  const int64_t channels = weights.shape()[axis];
  int64_t inner = 1;
  for (size_t d = axis + 1; d < weights.shape().size(); ++d) inner *= weights.shape()[d];
  const int64_t outer = weights.numel() / (channels * inner);
  const float* w = weights.data<float>();
  // The values in memory order are `outer` repetitions of `channels` runs of
  // `inner` (a Conv's channel is one run; a MatMul's column is one value in
  // each of K rows). Every pass below walks them in that order.
  std::vector<float> largest(channels, 0.0f);
  if (outer == 1) {
    parallel_for(channels, 16, [&](int64_t begin, int64_t end) {
      for (int64_t c = begin; c < end; ++c) largest[c] = largest_magnitude(w + c * inner, inner);
    });
  } else {
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t c = 0; c < channels; ++c)
        for (int64_t i = 0; i < inner; ++i)
          largest[c] = std::max(largest[c], std::abs(w[(o * channels + c) * inner + i]));
  }
  float overall = 0;
  for (float l : largest) {
    if (!std::isfinite(l)) return std::nullopt;
    overall = std::max(overall, l);
  }
  // One scale for the whole tensor (a per-tensor quantization), else one
  // per channel; each the largest magnitude over 127 or over 128. Checked
  // a block at a time, stopping at the first block that is not integral.
  constexpr int64_t kBlock = 4096;
  const int64_t n = weights.numel();
  for (float steps : {127.0f, 128.0f}) {
    const float scale = overall > 0 ? overall / steps : 1.0f;
    bool integral = true;
    for (int64_t at = 0; at < n && integral; at += kBlock) integral = int8_values(w + at, std::min(kBlock, n - at), scale);
    if (integral) return std::vector<float>(channels, scale);
  }
  // Per channel: 127 steps where that makes every value of the channel
  // integral, else 128 (one pass over the values each).
  std::vector<float> scales(channels);
  std::vector<char> integral(channels, 0);
  if (outer == 1) {
    parallel_for(channels, 16, [&](int64_t begin, int64_t end) {
      for (int64_t c = begin; c < end; ++c)
        for (float steps : {127.0f, 128.0f}) {
          scales[c] = largest[c] > 0 ? largest[c] / steps : 1.0f;
          if (int8_values(w + c * inner, inner, scales[c])) {
            integral[c] = 1;
            break;
          }
        }
    });
  } else {
    for (float steps : {127.0f, 128.0f}) {
      for (int64_t c = 0; c < channels; ++c)
        if (!integral[c]) scales[c] = largest[c] > 0 ? largest[c] / steps : 1.0f;
      std::vector<char> fits(channels, 1);
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t c = 0; c < channels; ++c)
          if (!integral[c]) fits[c] &= int8_values(w + (o * channels + c) * inner, inner, scales[c]);
      for (int64_t c = 0; c < channels; ++c) integral[c] |= fits[c];
    }
  }
  for (int64_t c = 0; c < channels; ++c)
    if (!integral[c]) return std::nullopt;
  return scales;
}

std::optional<std::vector<float>> stored_int8_weight_scales(const ir::Node& dq, size_t channel_axis, int64_t channels) {
  if (!ops::is_quantized_weight(dq)) return std::nullopt;
  const Tensor& values = dq.inputs[0].node->constant_value;
  const Tensor& scale = dq.inputs[1].node->constant_value;
  if (values.dtype() != DType::int8 || channel_axis >= values.shape().size() ||
      values.shape()[channel_axis] != channels)
    return std::nullopt;
  std::vector<float> scales(static_cast<size_t>(channels));
  if (scale.numel() == 1) {
    scales.assign(scales.size(), scale.data<float>()[0]);
  } else {
    int64_t axis = dq.attributes.get_int("axis", 1);
    if (axis < 0) axis += static_cast<int64_t>(values.shape().size());
    if (scale.rank() != 1 || axis != static_cast<int64_t>(channel_axis) || scale.numel() != channels)
      return std::nullopt;
    std::copy(scale.data<float>(), scale.data<float>() + channels, scales.begin());
  }
  for (float s : scales)
    if (!(s > 0) || !std::isfinite(s)) return std::nullopt;
  return scales;
}

bool int8_runs_without_saturation() {
  const auto isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
  for (dnnl::cpu_isa vnni : {dnnl::cpu_isa::avx512_core_vnni, dnnl::cpu_isa::avx2_vnni}) {
    const auto bits = static_cast<unsigned>(vnni);
    if ((isa & bits) == bits) return true;
  }
  return false;
}

Int8Plan find_int8_convolutions(const ir::IndexedGraph& g, const std::vector<bool>& is_output) {
  Int8Plan plan;
  plan.convolution_of.resize(g.num_nodes());
  plan.folded.assign(g.num_nodes(), false);
  plan.folded_source_of.resize(g.num_nodes());
  plan.uint8_node_of.resize(g.num_nodes());
  if (!int8_runs_without_saturation()) return plan;
  std::vector<std::shared_ptr<QuantizedSource>> source_of_mul(g.num_nodes());
  std::vector<FakeQuantization> fake_of_mul(g.num_nodes());
  auto source_for = [&](const FakeQuantization& f) {
    std::shared_ptr<QuantizedSource>& source = source_of_mul[f.mul];
    if (!source) {
      source = std::make_shared<QuantizedSource>();
      source->value = Entry{f.mul, 0};
      source->scale = f.scale;
      source->zero_point = f.zero_point;
      fake_of_mul[f.mul] = f;
    }
    return source;
  };
  for (uint32_t id = 0; id < g.num_nodes(); ++id) {
    const ir::Node& anchor = g.node(id);
    const bool conv = anchor.op() == OpId::Conv, matmul = anchor.op() == OpId::MatMul, gemm = anchor.op() == OpId::Gemm;
    if ((!conv && !matmul && !gemm) || anchor.output_types[0].dtype != DType::float32) continue;
    auto in = g.inputs(id);
    if (in.size() < 2 || !in[1].present()) continue;
    const ir::Node& weight_node = g.node(in[1].node_id);
    const bool stored_int8 = ops::is_quantized_weight(weight_node);
    if (!is_constant(weight_node) && !stored_int8) continue;
    if (in.size() > 2 && in[2].present() && !is_weight_source(g.node(in[2].node_id))) continue;
    const Tensor& weights = stored_int8 ? weight_node.inputs[0].node->constant_value : weight_node.constant_value;
    if ((matmul || gemm) &&
        (weights.shape().size() != 2 || g.node(in[0].node_id).output_types[in[0].index].dims.size() < 2))
      continue;
    // Gemm: A not transposed, alpha 1, C (a row of biases) added once.
    const bool trans_b = gemm && anchor.attributes.get_int("transB", 0) != 0;
    if (gemm && (anchor.attributes.get_int("transA", 0) != 0 || anchor.attributes.get_float("alpha", 1.0f) != 1.0f ||
                 anchor.attributes.get_float("beta", 1.0f) != 1.0f))
      continue;
    std::optional<FakeQuantization> f = match_fake_quantization(g, in[0]);
    if (!f) continue;
    // Per output channel: a Conv's dimension 0, a MatMul's columns (a
    // Gemm's rows of B when transB).
    const size_t channel_axis = conv || trans_b ? 0 : 1;
    std::optional<std::vector<float>> scales =
        stored_int8 ? stored_int8_weight_scales(weight_node, channel_axis, weights.shape()[channel_axis])
                    : int8_weight_scales(weights, channel_axis);
    if (!scales) continue;
    auto int8 = std::make_shared<Int8Convolution>();
    int8->source = source_for(*f);
    int8->weight_scales = std::move(*scales);
    if (stored_int8) int8->stored_int8 = g.inputs(in[1].node_id)[0];
    plan.convolution_of[id] = std::move(int8);
  }
  // MaxPools and Concats whose result a foldable fake quantization reads,
  // of foldable fake quantizations (or of other such nodes): uint8 nodes.
  for (uint32_t mul = 0; mul < g.num_nodes(); ++mul) {
    if (g.node(mul).op() != OpId::Mul) continue;
    std::optional<FakeQuantization> f = match_fake_quantization(g, Entry{mul, 0});
    if (!f || f->x.index != 0 || !chain_foldable(g, *f, is_output)) continue;
    std::vector<Uint8Leaf> leaves;
    std::vector<std::pair<uint32_t, std::shared_ptr<Uint8Node>>> inner;
    std::shared_ptr<Uint8Node> node =
        find_uint8_node(g, f->x.node_id, f->div, f->scale, f->zero_point, is_output, leaves, inner);
    if (!node) continue;
    node->result = source_for(*f);
    for (const Uint8Leaf& leaf : leaves) leaf.node->sources[leaf.input] = source_for(leaf.fake);
    plan.uint8_node_of[f->x.node_id] = std::move(node);
    for (auto& [id, u] : inner) plan.uint8_node_of[id] = std::move(u);
  }
  plan.dequantized_at.resize(g.num_nodes());
  // Fold each fake quantization an int8 product reads whose Div, Round and
  // Clip only the next one reads; other readers of its Mul get it dequantized.
  for (uint32_t mul = 0; mul < g.num_nodes(); ++mul) {
    if (!source_of_mul[mul]) continue;
    const FakeQuantization& f = fake_of_mul[mul];
    if (!chain_foldable(g, f, is_output)) continue;
    bool float_readers = is_output[g.entry_id(mul, 0)];
    for (uint32_t c : g.consumers(mul)) {
      bool reads_uint8 =
          plan.convolution_of[c] && plan.convolution_of[c]->source == source_of_mul[mul] && reads_only_at(g, c, mul, 0);
      if (const std::shared_ptr<Uint8Node>& u = plan.uint8_node_of[c]) {
        reads_uint8 = true;
        auto in = g.inputs(c);
        for (size_t i = 0; i < in.size(); ++i)
          if (in[i].present() && in[i].node_id == mul &&
              (i >= u->sources.size() || u->sources[i] != source_of_mul[mul]))
            reads_uint8 = false;
      }
      float_readers = float_readers || !reads_uint8;
    }
    QuantizedSource& source = *source_of_mul[mul];
    source.value = f.x;
    source.folded_nodes = {f.div, f.round, f.clip, f.mul};
    source.float_readers = float_readers;
    for (uint32_t n : source.folded_nodes) plan.folded[n] = true;
    if (f.x.index == 0) plan.folded_source_of[f.x.node_id] = source_of_mul[mul];
    if (float_readers) plan.dequantized_at[mul] = source_of_mul[mul];
  }
  return plan;
}

void fold_standalone_fake_quantizations(const ir::IndexedGraph& g, const std::vector<bool>& is_output,
                                        const std::vector<int>& group_of, Int8Plan& plan) {
  if (!int8_runs_without_saturation()) return;
  for (uint32_t mul = 0; mul < g.num_nodes(); ++mul) {
    if (g.node(mul).op() != OpId::Mul || plan.folded[mul]) continue;
    std::optional<FakeQuantization> f = match_fake_quantization(g, Entry{mul, 0});
    if (!f || !chain_foldable(g, *f, is_output)) continue;
    bool standalone = true;
    for (uint32_t n : {f->div, f->round, f->clip, f->mul})
      standalone = standalone && group_of[n] < 0 && !plan.folded[n];
    if (!standalone) continue;
    auto source = std::make_shared<QuantizedSource>();
    source->value = f->x;
    source->scale = f->scale;
    source->zero_point = f->zero_point;
    source->folded_nodes = {f->div, f->round, f->clip, f->mul};
    source->float_readers = true;
    // x moved by Reshape, Transpose, ... from the same fake quantization's Mul?
    Entry moved = f->x;
    while (true) {
      const ir::Node& n = g.node(moved.node_id);
      const ir::OpId op = n.op();
      if (op != OpId::Reshape && op != OpId::Transpose && op != OpId::Flatten && op != OpId::Squeeze &&
          op != OpId::Unsqueeze && op != OpId::Identity)
        break;
      moved = g.inputs(moved.node_id)[0];
    }
    if (moved != f->x) {
      std::optional<FakeQuantization> before = match_fake_quantization(g, moved);
      source->identity = before && before->scale == f->scale && before->zero_point == f->zero_point;
    }
    for (uint32_t n : source->folded_nodes) plan.folded[n] = true;
    if (f->x.index == 0) plan.folded_source_of[f->x.node_id] = source;
    plan.dequantized_at[mul] = std::move(source);
  }
}

std::shared_ptr<QuantizedSource> requantized_output(const ir::IndexedGraph& g, const Int8Plan& plan,
                                                    const Group& group) {
  const std::shared_ptr<QuantizedSource>& next = plan.folded_source_of[group.last];
  const OpId anchor = g.node(group.anchor).op();
  if (!next || (anchor != OpId::Conv && anchor != OpId::MatMul && anchor != OpId::Gemm)) return nullptr;
  auto consumers = g.consumers(group.last);
  if (consumers.size() != 1 || consumers[0] != next->folded_nodes[0]) return nullptr;  // its Div only
  // A product multiplies by the next scale's inverse and adds its zero
  // point after all its post-ops (emit_int8_matmul): any chain.
  if (anchor != OpId::Conv) return next;
  // relu(k x) = k relu(x) and clip(k x, lo, hi) = k clip(x, lo / k, hi / k)
  // for k > 0. Where oneDNN adds the destination zero point relative to
  // the post-ops is left open: with post-ops, only zero point 0.
  for (const PostOp& p : group.post_ops) {
    const bool homogeneous = p.kind == PostOp::Kind::eltwise &&
                             (p.alg == dnnl::algorithm::eltwise_relu || p.alg == dnnl::algorithm::eltwise_clip ||
                              p.alg == dnnl::algorithm::eltwise_clip_v2);
    if (!homogeneous || next->zero_point != 0) return nullptr;
  }
  return next;
}

namespace {

// The uint8 form of `source` in layout `want` (made once, then converted).
int quantized_source(Builder& b, QuantizedSource& source, const memory::desc& want, const std::string& label) {
  if (source.slot >= 0) return b.as_desc(source.slot, want, label);
  const int from = b.slot_of(source.value);
  dnnl::primitive_attr attr = Builder::new_attr();
  attr.set_output_scales(0, {1.0f / source.scale});
  if (source.zero_point != 0) attr.set_zero_points(DNNL_ARG_DST, 0, {source.zero_point});
  dnnl::reorder::primitive_desc pd(b.engine(), b.desc(from), b.engine(), want, attr);
  const int to = b.add_slot(want);
  b.add_step(dnnl::reorder(pd), pd, {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}}, "quantize for " + label);
  // The folded nodes have now read x: a later in-place write may take its buffer.
  for (uint32_t n : source.folded_nodes) b.mark_emitted(n);
  source.slot = to;
  return to;
}

}  // namespace

namespace {

// `desc` (a dense layout of elements of `element_bytes`) with elements of
// type `type` in the same layout; a plain layout for anything else (a view).
memory::desc with_data_type(const memory::desc& desc, size_t element_bytes, memory::data_type type) {
  const Dims dims = desc.dims();
  const size_t elements = static_cast<size_t>(product(dims, 0, dims.size()));
  if (desc.data.format_kind != dnnl_blocked || desc.data.offset0 != 0 || desc.data.extra.flags != 0 ||
      desc.get_size() != elements * element_bytes)
    return memory::desc(dims, type, row_major_strides(dims));
  memory::desc same = desc;
  same.data.data_type = static_cast<dnnl_data_type_t>(type);
  return same;
}

}  // namespace

int dequantized_source(Builder& b, QuantizedSource& source, const std::string& label) {
  if (source.identity) return b.slot_of(source.value);
  int u = source.slot;
  if (u < 0) {
    const memory::desc x = b.desc(b.slot_of(source.value));
    u = quantized_source(b, source, with_data_type(x, 4, memory::data_type::u8), label);
  }
  const memory::desc u_desc = b.desc(u);
  const memory::desc to_desc = with_data_type(u_desc, 1, memory::data_type::f32);
  dnnl::primitive_attr attr = Builder::new_attr();
  attr.set_output_scales(0, {source.scale});
  if (source.zero_point != 0) attr.set_zero_points(DNNL_ARG_SRC, 0, {source.zero_point});
  dnnl::reorder::primitive_desc pd(b.engine(), u_desc, b.engine(), to_desc, attr);
  const int to = b.add_slot(to_desc);
  b.add_step(dnnl::reorder(pd), pd, {{DNNL_ARG_FROM, u}, {DNNL_ARG_TO, to}}, "dequantize " + label);
  return to;
}

namespace {

// uint8 with the channels (dimension 1) innermost: the layout of oneDNN's
// int8 convolutions, which its int8 pooling reads.
memory::desc channels_last_u8(const Dims& dims) {
  Dims strides(dims.size());
  int64_t stride = 1;
  strides[1] = stride;
  stride *= dims[1];
  for (size_t d = dims.size(); d-- > 2;) {
    strides[d] = stride;
    stride *= dims[d];
  }
  strides[0] = stride;
  return memory::desc(dims, memory::data_type::u8, strides);
}

// The uint8 form `from` (of scale `from_scale`, zero point `from_zero`)
// requantized to `to_scale` and `to_zero`: saturate(round((u - z) * s / s') + z').
int requantized(Builder& b, int from, float from_scale, int32_t from_zero, float to_scale, int32_t to_zero,
                const std::string& label) {
  const memory::desc d = b.desc(from);
  dnnl::primitive_attr attr = Builder::new_attr();
  attr.set_output_scales(0, {from_scale / to_scale});
  if (from_zero != 0) attr.set_zero_points(DNNL_ARG_SRC, 0, {from_zero});
  if (to_zero != 0) attr.set_zero_points(DNNL_ARG_DST, 0, {to_zero});
  dnnl::reorder::primitive_desc pd(b.engine(), d, b.engine(), d, attr);
  const int to = b.add_slot(d);
  b.add_step(dnnl::reorder(pd), pd, {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}}, "requantize for " + label);
  return to;
}

}  // namespace

namespace {

// A residual Add of two uint8 forms (a, scale s_a, zero point z_a; b, s_b,
// z_b) into the uint8 form of scale s and zero point z: one binary
// primitive, saturate(round(a * s_a / s + b * s_b / s + c)) with
// c = z - z_a * s_a / s - z_b * s_b / s (an eltwise post-op; oneDNN 2.6's
// binary takes scales, not zero points).
int uint8_add(Builder& b, const ir::Node& node, const Uint8Node& u) {
  int slots[2];
  float scales[2];
  float offset = static_cast<float>(u.zero_point);
  for (size_t i = 0; i < 2; ++i) {
    QuantizedSource& source = *u.sources[i];
    slots[i] =
        source.slot >= 0
            ? source.slot
            : quantized_source(b, source, with_data_type(b.desc(b.slot_of(source.value)), 4, memory::data_type::u8),
                               node.name);
    scales[i] = source.scale / u.scale;
    offset -= static_cast<float>(source.zero_point) * scales[i];
  }
  const memory::desc layout = b.desc(slots[0]);
  const int other = b.as_desc(slots[1], layout, node.name);
  dnnl::primitive_attr attr = Builder::new_attr();
  attr.set_scales(DNNL_ARG_SRC_0, 0, {scales[0]});
  attr.set_scales(DNNL_ARG_SRC_1, 0, {scales[1]});
  if (offset != 0.0f) {
    dnnl::post_ops ops;
    ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_linear, 1.0f, offset);
    attr.set_post_ops(ops);
  }
  dnnl::binary::primitive_desc pd(dnnl::binary::desc(dnnl::algorithm::binary_add, layout, b.desc(other), layout), attr,
                                  b.engine());
  const int dst = b.add_slot(pd.dst_desc());
  b.add_step(dnnl::binary(pd), pd, {{DNNL_ARG_SRC_0, slots[0]}, {DNNL_ARG_SRC_1, other}, {DNNL_ARG_DST, dst}},
             node.name);
  return dst;
}

}  // namespace

int emit_uint8_node(Builder& b, uint32_t id, Uint8Node& u) {
  const ir::Node& node = b.graph().node(id);
  if (node.op() == OpId::Add) {
    u.slot = uint8_add(b, node, u);
    if (u.result) {
      u.result->slot = u.slot;
      for (uint32_t n : u.result->folded_nodes) b.mark_emitted(n);
    }
    return u.slot;
  }
  std::vector<int> srcs;
  for (size_t i = 0; i < u.sources.size(); ++i) {
    int slot;
    if (u.inner[i]) {
      slot = u.inner[i]->slot;  // in u's scale and zero point already
    } else {
      QuantizedSource& source = *u.sources[i];
      slot = source.slot >= 0 ? source.slot
                              : quantized_source(b, source, channels_last_u8(b.dims(source.value)), node.name);
      if (source.scale != u.scale || source.zero_point != u.zero_point)
        slot = requantized(b, slot, source.scale, source.zero_point, u.scale, u.zero_point, node.name);
    }
    srcs.push_back(b.as_desc(slot, channels_last_u8(b.desc(slot).dims()), node.name));
  }
  const Dims out = dims_of(node.output_types[0]);
  int dst;
  if (node.op() == OpId::MaxPool) {
    const PoolWindow w = pool_window(node, b.desc(srcs[0]).dims());
    dnnl::pooling_v2_forward::primitive_desc pd(
        dnnl::pooling_v2_forward::desc(dnnl::prop_kind::forward_inference, w.alg, b.desc(srcs[0]),
                                       memory::desc(out, memory::data_type::u8, memory::format_tag::any), w.strides,
                                       w.kernel, w.dilation, w.pad_l, w.pad_r),
        Builder::new_attr(), b.engine());
    dst = b.add_slot(pd.dst_desc());
    b.add_step(dnnl::pooling_v2_forward(pd), pd, {{DNNL_ARG_SRC, srcs[0]}, {DNNL_ARG_DST, dst}}, node.name);
  } else {
    int64_t axis = node.attributes.get_int("axis");
    if (axis < 0) axis += static_cast<int64_t>(out.size());
    std::vector<memory::desc> descs;
    for (int s : srcs) descs.push_back(b.desc(s));
    dnnl::concat::primitive_desc pd(static_cast<int>(axis), descs, b.engine(), Builder::new_attr());
    dst = b.add_slot(pd.dst_desc());
    std::vector<std::pair<int, int>> args = {{DNNL_ARG_DST, dst}};
    for (size_t i = 0; i < srcs.size(); ++i) args.push_back({DNNL_ARG_MULTIPLE_SRC + static_cast<int>(i), srcs[i]});
    b.add_step(dnnl::concat(pd), pd, std::move(args), node.name);
  }
  u.slot = dst;
  if (u.result) {
    u.result->slot = dst;
    for (uint32_t n : u.result->folded_nodes) b.mark_emitted(n);
  }
  return dst;
}

int emit_int8_conv(Builder& b, const Group& g, const std::string& label, const ConvShape& shape) {
  const Int8Convolution& int8 = *g.int8;
  QuantizedSource& source = *int8.source;
  const ir::Node& conv = b.graph().node(g.anchor);
  const int64_t out_channels = shape.dst[1];
  if (static_cast<int64_t>(int8.weight_scales.size()) != out_channels) return -1;
  // Requantizing: the result divided by the next source's scale, its zero
  // point added, saturated to uint8; Clip bounds scale with it.
  QuantizedSource* requantize = g.requantize_to.get();
  const float dst_scale = requantize ? requantize->scale : 1.0f;
  Group scaled = g;
  for (PostOp& p : scaled.post_ops)
    if (p.alg == dnnl::algorithm::eltwise_clip || p.alg == dnnl::algorithm::eltwise_clip_v2) {
      p.alpha /= dst_scale;
      p.beta /= dst_scale;
    }
  std::vector<float> output_scales(out_channels), accumulator_scales(out_channels);
  for (int64_t c = 0; c < out_channels; ++c) {
    accumulator_scales[c] = source.scale * int8.weight_scales[c];
    output_scales[c] = accumulator_scales[c] / dst_scale;
  }
  auto configure = [&](dnnl::primitive_attr& attr) {
    attr.set_output_scales(1 << 1, output_scales);  // per channel of the destination
    if (source.zero_point != 0) attr.set_zero_points(DNNL_ARG_SRC, 0, {source.zero_point});
    if (requantize && requantize->zero_point != 0) attr.set_zero_points(DNNL_ARG_DST, 0, {requantize->zero_point});
  };
  const memory::desc w_any(shape.weights, memory::data_type::s8, memory::format_tag::any);
  const memory::desc b_any = any_desc({out_channels});
  auto make = [&](const memory::desc& src, const memory::desc& float_dst) {
    const memory::desc src_u8(src.dims(), memory::data_type::u8, memory::format_tag::any);
    const memory::desc dst =
        requantize ? memory::desc(float_dst.dims(), memory::data_type::u8, memory::format_tag::any) : float_dst;
    if (shape.bias)
      return dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
                                             src_u8, w_any, b_any, dst, shape.strides, shape.dilates, shape.pad_l,
                                             shape.pad_r);
    return dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
                                           src_u8, w_any, dst, shape.strides, shape.dilates, shape.pad_l, shape.pad_r);
  };
  try {
    dnnl::primitive_attr attr = Builder::new_attr();
    configure(attr);
    dnnl::convolution_forward::primitive_desc probe(make(any_desc(shape.src), any_desc(shape.dst)), attr, b.engine());
    if (on_reference_code(probe)) return -1;
  } catch (const dnnl::error&) {
    return -1;
  }
  // The slot that stands for the source in finish_anchor's bookkeeping (its
  // extents; never written in place): the uint8 form once made (x may be
  // gone by then), else the float32 value quantized.
  const int src_slot = source.slot >= 0 ? source.slot : b.slot_of(source.value);
  AnchorQuantization quantization{configure,
                                  [&](const memory::desc& want) { return quantized_source(b, source, want, label); }};
  dnnl::convolution_forward::primitive_desc pd;
  size_t fused = 0;
  const int dst = finish_anchor<dnnl::convolution_forward>(b, scaled, label, shape.dst, src_slot, make, pd, fused, {},
                                                           &quantization);
  // Weights: q_w = w / s_w[c] (integers, exact), converted to s8; the bias in
  // the accumulator's units, b / (s * s_w[c]).
  const Dims w_dims = b.dims(b.input(conv, 1));
  const int64_t per_channel = product(w_dims, 1, w_dims.size());
  std::vector<float> weight_scales = int8.weight_scales;
  Weight w;
  w.plain = memory::desc(shape.weights, memory::data_type::s8, row_major_strides(shape.weights));
  w.desc = pd.weights_desc();
  w.label = conv.name + ".int8";
  if (int8.stored_int8.present()) {
    // The stored int8 values are the plain s8 weights: reordered as they are.
    w.sources = {b.source_of(int8.stored_int8)};
  } else {
    // float32 weights (folded): quantized by the fill.
    w.sources = {b.source_of(b.input(conv, 1))};
    w.builder_reads_sources = true;
    w.fill = [weight_scales, per_channel](const std::vector<Tensor>& s, void* plain_out) {
      int8_t* out = static_cast<int8_t*>(plain_out);
      const float* src = s[0].data<float>();
      parallel_for(static_cast<int64_t>(weight_scales.size()), 16, [&](int64_t begin, int64_t end) {
        for (int64_t c = begin; c < end; ++c)
          quantize_int8(src + c * per_channel, per_channel, weight_scales[static_cast<size_t>(c)],
                        out + c * per_channel);
      });
    };
  }
  const size_t conv_step = b.program().steps.size() - 1;  // finish_anchor's last
  const int w_slot = b.add_weight(std::move(w));
  b.program().steps[conv_step].args.push_back({DNNL_ARG_WEIGHTS, w_slot});
  if (shape.bias) {
    Weight bias;
    bias.sources = {b.source_of(b.input(conv, 2))};
    bias.plain = plain_desc({out_channels});
    bias.desc = pd.bias_desc();
    bias.label = conv.name + ".int8.bias";
    bias.fill = [accumulator_scales](const std::vector<Tensor>& s, void* plain_out) {
      float* out = static_cast<float*>(plain_out);
      const float* values = s[0].data<float>();
      for (size_t c = 0; c < accumulator_scales.size(); ++c) out[c] = values[c] / accumulator_scales[c];
    };
    const int b_slot = b.add_weight(std::move(bias));
    b.program().steps[conv_step].args.push_back({DNNL_ARG_BIAS, b_slot});
  }
  if (requantize) {
    // Eltwise post-ops only: finish_anchor took them all.
    requantize->slot = dst;
    for (uint32_t n : requantize->folded_nodes) b.mark_emitted(n);
    return dst;
  }
  return apply_post_ops(b, g, fused, dst, label);
}

namespace {

// A [1, 1] float32 operand holding `value`: a binary post-op's scalar.
int scalar_operand(Builder& b, float value, const std::string& label) {
  Tensor t(DType::float32, Shape{1, 1});
  t.data<float>()[0] = value;
  Weight w;
  WeightSource source;
  source.constant = std::move(t);
  w.sources = {std::move(source)};
  w.plain = w.desc = plain_desc({1, 1});
  w.identity = true;
  w.label = label;
  return b.add_weight(std::move(w));
}

}  // namespace

int emit_int8_matmul(Builder& b, const Group& g, const std::string& label) {
  const Int8Convolution& int8 = *g.int8;
  QuantizedSource& source = *int8.source;
  const ir::Node& node = b.graph().node(g.anchor);
  const bool gemm = node.op() == OpId::Gemm;
  const bool trans_b = gemm && node.attributes.get_int("transB", 0) != 0;
  const Dims a_dims = b.dims(b.input(node, 0)), w_dims = b.dims(b.input(node, 1));
  const Dims dst_dims = dims_of(node.output_types[0]);
  const size_t rank = dst_dims.size();
  if (w_dims.size() != 2 || a_dims.size() != rank || rank < 2) return -1;
  // The rows flattened to 2-D: [rows, K] x [K, N] (a Gemm's B [N, K] when
  // transB). Post-ops: a Gemm's C (a row of biases) first, then eltwise, or
  // binary with a row vector or the full result.
  const int64_t rows = product(dst_dims, 0, rank - 1), k = w_dims[trans_b ? 1 : 0], n = w_dims[trans_b ? 0 : 1];
  if (a_dims[rank - 1] != k || dst_dims[rank - 1] != n) return -1;
  dnnl::post_ops ops;
  std::vector<std::pair<int, int>> binary_operands;  // (post-op index, slot) made once the primitive exists
  std::vector<memory::desc> binary_descs;
  const bool has_c = gemm && b.has_input(node, 2);
  if (has_c) {
    const Dims c_dims = b.dims(b.input(node, 2));
    if (product(c_dims, 0, c_dims.size()) != n || c_dims.empty() || c_dims.back() != n) return -1;
    ops.append_binary(dnnl::algorithm::binary_add, plain_desc({1, n}));
  }
  for (const PostOp& p : g.post_ops) {
    if (p.kind == PostOp::Kind::eltwise) {
      ops.append_eltwise(1.0f, p.alg, p.alpha, p.beta);
      continue;
    }
    if (p.expand) return -1;
    const Dims od = expand_rank(b.dims(p.other), rank);
    if (od.size() != rank) return -1;
    const bool row = product(od, 0, rank - 1) == 1 && od[rank - 1] == n;
    if (!row && od != dst_dims) return -1;
    const memory::desc operand = plain_desc({row ? 1 : rows, n});
    ops.append_binary(p.alg, operand);
    binary_descs.push_back(operand);
  }
  // Requantizing (the result's only reader is the fake quantization of the
  // next int8 product's source): multiplied by 1 / s' and its zero point z'
  // added after the post-ops, then rounded and saturated to uint8 as the
  // destination is written: saturate(round(y / s' + z')), which is
  // saturate(round(y / s') + z') but where y / s' lies within an ulp of a
  // half; the quantize reorder it replaces computes the same. Binary
  // post-ops with scalar operands: oneDNN 2.6 computes every eltwise post-op
  // of one algorithm with the first one's parameters, and the chain may
  // hold a linear one already (a fake quantization before the bias).
  QuantizedSource* requantize = g.requantize_to.get();
  const bool requantize_zero_point = requantize && requantize->zero_point != 0;
  if (requantize) {
    ops.append_binary(dnnl::algorithm::binary_mul, plain_desc({1, 1}));
    if (requantize_zero_point) ops.append_binary(dnnl::algorithm::binary_add, plain_desc({1, 1}));
  }
  std::vector<float> output_scales(n);
  for (int64_t c = 0; c < n; ++c) output_scales[c] = source.scale * int8.weight_scales[c];
  dnnl::primitive_attr attr = Builder::new_attr();
  attr.set_post_ops(ops);
  attr.set_output_scales(1 << 1, output_scales);  // per column
  // The source's zero point z is not given to oneDNN: its weights would
  // then carry z's compensation, which only oneDNN 2.6's reference reorder
  // computes (tens of ms per BERT weight, most of a first inference).
  // Instead a bias of -z * (the column's sum of int8 weights) does it:
  // oneDNN 2.6 adds the bias to the int32 sums before the output scales, as
  // it subtracts the compensation, so the results are the same (exactly,
  // while the sums stay below 2^24 in magnitude).
  const bool zero_point_bias = source.zero_point != 0;
  const memory::desc src_md({rows, k}, memory::data_type::u8, memory::format_tag::ab);
  const memory::desc w_any({k, n}, memory::data_type::s8, memory::format_tag::any);
  const memory::data_type dst_type = requantize ? memory::data_type::u8 : memory::data_type::f32;
  const memory::desc dst_md({rows, n}, dst_type, memory::format_tag::ab);
  const memory::desc bias_md = plain_desc({1, n});
  dnnl::matmul::primitive_desc pd;
  try {
    dnnl::matmul::desc desc = zero_point_bias ? dnnl::matmul::desc(src_md, w_any, bias_md, dst_md)
                                              : dnnl::matmul::desc(src_md, w_any, dst_md);
    pd = dnnl::matmul::primitive_desc(desc, attr, b.engine());
  } catch (const dnnl::error&) {
    return -1;
  }
  if (on_reference_code(pd)) return -1;
  const Dims plain_dims = b.dims(source.value);
  const int quantized = quantized_source(
      b, source, memory::desc(plain_dims, memory::data_type::u8, row_major_strides(plain_dims)), label);
  const int src = b.view(quantized, src_md);
  std::vector<std::pair<int, int>> args;
  size_t binary = 0;
  int index = 0;
  if (has_c) {
    const int c = b.view(b.as_plain(b.slot_of(b.input(node, 2)), label), plain_desc({1, n}));
    args.push_back({DNNL_ARG_ATTR_MULTIPLE_POST_OP(index++) | DNNL_ARG_SRC_1, c});
  }
  for (const PostOp& p : g.post_ops) {
    if (p.kind != PostOp::Kind::eltwise) {
      const int other = b.view(b.as_plain(b.slot_of(p.other), label), binary_descs[binary++]);
      args.push_back({DNNL_ARG_ATTR_MULTIPLE_POST_OP(index) | DNNL_ARG_SRC_1, other});
    }
    ++index;
  }
  if (requantize) {
    args.push_back({DNNL_ARG_ATTR_MULTIPLE_POST_OP(index++) | DNNL_ARG_SRC_1,
                    scalar_operand(b, 1.0f / requantize->scale, label + ".requantize.scale")});
    if (requantize_zero_point)
      args.push_back({DNNL_ARG_ATTR_MULTIPLE_POST_OP(index++) | DNNL_ARG_SRC_1,
                      scalar_operand(b, static_cast<float>(requantize->zero_point), label + ".requantize.zero_point")});
  }
  const std::vector<float> weight_scales = int8.weight_scales;
  const bool stored = int8.stored_int8.present();
  Weight w;
  w.sources = {b.source_of(stored ? int8.stored_int8 : b.input(node, 1))};
  // Stored int8 values are the s8 weights as they are ([N, K] read
  // transposed when transB); float32 ones are quantized by the fill.
  w.plain =
      memory::desc({k, n}, memory::data_type::s8, stored && trans_b ? memory::format_tag::ba : memory::format_tag::ab);
  w.desc = pd.weights_desc();
  w.label = node.name + ".int8";
  w.builder_reads_sources = !stored;
  if (!stored)
    w.fill = [weight_scales, k, n, trans_b](const std::vector<Tensor>& s, void* plain_out) {
      int8_t* out = static_cast<int8_t*>(plain_out);
      const float* values = s[0].data<float>();
      parallel_for(k, 16, [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r) {
          if (!trans_b) {
            quantize_int8_with(values + r * n, n, out + r * n, ScalePerValue{weight_scales.data()});
            continue;
          }
          for (int64_t c = 0; c < n; ++c)
            out[r * n + c] = int8_of(values[c * k + r] / weight_scales[static_cast<size_t>(c)]);
        }
      });
    };
  const int w_slot = b.add_weight(std::move(w));
  if (zero_point_bias) {
    Weight bias;
    bias.sources = {b.source_of(stored ? int8.stored_int8 : b.input(node, 1))};
    bias.plain = bias.desc = bias_md;
    bias.label = node.name + ".int8.zero_point";
    const float zero_point = static_cast<float>(source.zero_point);
    if (stored)
      bias.fill = [k, n, trans_b, zero_point](const std::vector<Tensor>& s, void* plain_out) {
        column_sums_times(s[0].data<int8_t>(), k, n, trans_b, -zero_point, static_cast<float*>(plain_out));
      };
    else
      bias.fill = [weight_scales, k, n, trans_b, zero_point](const std::vector<Tensor>& s, void* plain_out) {
        float* out = static_cast<float*>(plain_out);
        const float* values = s[0].data<float>();
        parallel_for(n, 64, [&](int64_t begin, int64_t end) {
          std::vector<int64_t> sums(static_cast<size_t>(end - begin), 0);
          std::vector<int8_t> row(static_cast<size_t>(end - begin));
          for (int64_t r = 0; r < k; ++r) {
            if (!trans_b) {
              quantize_int8_with(values + r * n + begin, end - begin, row.data(),
                                 ScalePerValue{weight_scales.data() + begin});
              for (int64_t c = begin; c < end; ++c)
                sums[static_cast<size_t>(c - begin)] += row[static_cast<size_t>(c - begin)];
              continue;
            }
            for (int64_t c = begin; c < end; ++c)
              sums[static_cast<size_t>(c - begin)] +=
                  int8_of(values[c * k + r] / weight_scales[static_cast<size_t>(c)]);
          }
          for (int64_t c = begin; c < end; ++c)
            out[c] = -zero_point * static_cast<float>(sums[static_cast<size_t>(c - begin)]);
        });
      };
    args.push_back({DNNL_ARG_BIAS, b.add_weight(std::move(bias))});
  }
  const int dst_root = b.add_slot(memory::desc(dst_dims, dst_type, row_major_strides(dst_dims)));
  const int dst = b.view(dst_root, dst_md);
  args.push_back({DNNL_ARG_SRC, src});
  args.push_back({DNNL_ARG_WEIGHTS, w_slot});
  args.push_back({DNNL_ARG_DST, dst});
  b.add_step(dnnl::matmul(pd), pd, std::move(args), label);
  if (requantize) {
    requantize->slot = dst_root;
    for (uint32_t folded : requantize->folded_nodes) b.mark_emitted(folded);
  }
  return dst_root;
}

}  // namespace graft::dnnl_backend
