/// \file
/// Int8 convolutions: a Conv whose input is fake-quantized (the QDQ pair of
/// a quantization-aware export, which lower-quantize-dequantize wrote as
/// Mul(Clip(Round(Div(x, s)), lo, hi), s)) and whose constant weights are
/// int8 values times a scale per output channel (a DequantizeLinear of int8
/// weights that fold-constants evaluated) runs as a u8 x s8 oneDNN
/// convolution with output scales, instead of a float32 convolution on the
/// dequantized values. dnnl_int8.cc finds such convolutions (before the
/// groups are formed) and emits them. Internal to backends/dnnl.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "dnnl_post_ops.h"

namespace graft::dnnl_backend {

/// A float32 value that int8 convolutions read quantized to uint8:
/// u = saturate(round(value / scale) + zero_point). One per fake
/// quantization; the convolutions that share it share its uint8 form.
struct QuantizedSource {
  ir::Entry value;         ///< the float32 value quantized
  float scale = 1;         ///< the quantization step
  int32_t zero_point = 0;  ///< of the uint8 form, 0..255
  /// The fake-quantization nodes (Div, Round, Clip, Mul) when they form a
  /// chain that only its Mul's readers read: they are not emitted, and
  /// `value` is the Div's input. Empty when they run (their Mul is then
  /// `value`: a Cast between, another reader, a subgraph output inside).
  std::vector<uint32_t> folded_nodes;
  /// A folded Mul that float32 ops read too (or a subgraph output): at its
  /// place, the uint8 form is dequantized for them, s * (u - z), in one
  /// reorder (dequantized_source).
  bool float_readers = false;
  /// A folded fake quantization of a value that already is one with the
  /// same scale and zero point, moved by Reshape or Transpose (BERT's
  /// projections then residual adds): it changes nothing, and its readers
  /// read `value` itself.
  bool identity = false;
  int slot = -1;  ///< the uint8 form once emitted (during one compile)
};

/// A convolution that runs in int8: its quantized source and the scale of
/// each output channel's int8 weights.
struct Int8Convolution {
  std::shared_ptr<QuantizedSource> source;
  std::vector<float> weight_scales;
  /// The int8 constant of weights stored quantized (a DequantizeLinear that
  /// fold-constants kept, ops::is_quantized_weight), read as they are: no
  /// float32 copy, no scale search, no second quantization. Absent when
  /// the weights are a float32 constant (then int8 values times
  /// weight_scales, found by int8_weight_scales).
  ir::Entry stored_int8;
};

/// A MaxPool, Concat or Add that runs on uint8 values: between fake
/// quantizations (squeezenet's pools and fire-module concats, ResNet's
/// residual adds in a QDQ export) it computes the uint8 form of the one it
/// feeds. MaxPool and Concat commute with a fake quantization q (a monotone
/// map applied to each element), so q(maxpool(concat(a, b))) =
/// maxpool(concat(q(a), q(b))) exactly, and each input's q(a) = the uint8
/// form of a requantized to q's scale and zero point (the identity when a
/// was quantized the same way). An Add of two fake-quantized values of its
/// extents is q(s_a (u_a - z_a) + s_b (u_b - z_b)): one binary primitive on
/// the two uint8 forms with scales s_a / s and s_b / s.
struct Uint8Node {
  float scale = 1;         ///< of the fake quantization the result feeds
  int32_t zero_point = 0;  ///< of the fake quantization the result feeds
  /// The folded source whose uint8 form it makes, or nullptr when another
  /// uint8 node reads the result (a Concat that only a MaxPool reads).
  std::shared_ptr<QuantizedSource> result;
  /// Per input: the folded source it reads, or nullptr where it reads `inner`'s.
  std::vector<std::shared_ptr<QuantizedSource>> sources;
  /// Per input: the uint8 node whose result it reads, or nullptr.
  std::vector<std::shared_ptr<Uint8Node>> inner;
  int slot = -1;  ///< the uint8 result once emitted (during one compile)
};

/// The int8 convolutions of a subgraph, per node id (nullptr for other
/// nodes), and the fake-quantization nodes they fold (not emitted).
struct Int8Plan {
  std::vector<std::shared_ptr<const Int8Convolution>> convolution_of;
  /// Per node: the MaxPool, Concat or Add that runs on uint8 values, or nullptr.
  std::vector<std::shared_ptr<Uint8Node>> uint8_node_of;
  std::vector<bool> folded;
  /// Per node: the folded source that quantizes its output 0, or nullptr.
  std::vector<std::shared_ptr<QuantizedSource>> folded_source_of;
  /// Per node: the folded source whose Mul it is, when float32 ops read that.
  std::vector<std::shared_ptr<QuantizedSource>> dequantized_at;
};

/// Whether oneDNN runs int8 products with VNNI (AVX-512 VNNI, AVX-VNNI,
/// AMX): their 32-bit sums of u8 x s8 products cannot saturate. Without it
/// (AVX2, AVX-512 before VNNI) oneDNN's vpmaddubsw adds pairs of products
/// in 16 bits, which int8 weights and uint8 values with a zero point far
/// from 0 overflow (answers 10 quantization steps off, measured), so
/// convolutions and matmuls then stay float32. Follows ONEDNN_MAX_CPU_ISA.
bool int8_runs_without_saturation();

/// Finds the int8 convolutions of `graph` (dnnl_int8.cc); none where
/// int8_runs_without_saturation() is false. `is_output`: per entry id,
/// whether it is a subgraph output (those are never folded).
Int8Plan find_int8_convolutions(const ir::IndexedGraph& graph, const std::vector<bool>& is_output);

/// Folds the fake quantizations that no int8 product or uint8 node reads
/// and no group took as post-ops (`group_of`: per node, its group or -1):
/// one that repeats the fake quantization of the value it moves (an
/// identity) is not emitted at all; any other becomes a quantize reorder
/// and a dequantize reorder (two passes where its four ops took four).
/// Updates `plan` (folded, dequantized_at).
void fold_standalone_fake_quantizations(const ir::IndexedGraph& graph, const std::vector<bool>& is_output,
                                        const std::vector<int>& group_of, Int8Plan& plan);

/// The folded source that int8 group `g` may write as uint8 (requantizing
/// its result): the one that quantizes g's result when no one else reads
/// that, and, for a convolution, g's post-ops commute with a positive scale
/// (Relu, Clip; a MatMul or Gemm applies it after any post-ops); nullptr
/// otherwise.
std::shared_ptr<QuantizedSource> requantized_output(const ir::IndexedGraph& graph, const Int8Plan& plan,
                                                    const Group& g);

/// The scale of each output channel (dimension `axis`) when every value of
/// the float32 tensor `weights` is an integer in [-128, 127] times it (to
/// 1e-3 of a step), as a symmetric quantization per tensor or per channel
/// (max |w| / 127, or / 128) makes them; nullopt otherwise.
std::optional<std::vector<float>> int8_weight_scales(const Tensor& weights, size_t axis = 0);

/// The scale of each of `channels` output channels of quantized weight `dq`
/// (ops::is_quantized_weight: int8 values, zero points absent or all zero)
/// when its product can read the int8 values as they are: finite positive
/// scales, one for the tensor or one per slice along `channel_axis` (the
/// node's axis); nullopt otherwise.
std::optional<std::vector<float>> stored_int8_weight_scales(const ir::Node& dq, size_t channel_axis, int64_t channels);

/// A convolution's geometry in oneDNN's terms (dnnl_conv.cc computes it).
struct ConvShape {
  Dims src, weights, dst;  ///< weights grouped: [G, OC/G, IC/G, k...] when groups > 1
  Dims strides, dilates, pad_l, pad_r;
  bool bias = false;
};

/// Emits group `g` (its anchor a Conv with g.int8 set) as an int8
/// convolution: the source quantized to uint8 once, s8 weights, output
/// scales per channel, a float32 result with the group's post-ops, or the
/// uint8 form of g.requantize_to (then the result's slot holds that). Returns
/// the result's slot, or -1 (nothing emitted) when oneDNN has only its
/// reference code for it.
int emit_int8_conv(Builder& b, const Group& g, const std::string& label, const ConvShape& shape);

/// Emits group `g` (its anchor a MatMul by a constant [K, N] with g.int8
/// set) as an int8 matmul of the rows flattened to 2-D: u8 source, s8
/// weights, output scales per column, float32 result with eltwise post-ops
/// and binary ones of a row vector or the full result. Returns the result's
/// slot, or -1 (nothing emitted) for anything else or where oneDNN has only
/// reference code.
int emit_int8_matmul(Builder& b, const Group& g, const std::string& label);

/// Emits node `id` (a MaxPool, Concat or Add with a Uint8Node) on uint8
/// values: its inputs' uint8 forms in (a pool's and a concat's each
/// requantized to the node's scale and zero point where they differ first),
/// the uint8 result out (u.slot, and the slot of u.result). Returns the
/// result's slot.
int emit_uint8_node(Builder& b, uint32_t id, Uint8Node& u);

/// The float32 value a folded quantized source stands for, s * (u - z),
/// from its uint8 form (made first if need be), in the same layout: for the
/// float32 readers of its Mul, or a convolution that had to run in float32
/// after all.
int dequantized_source(Builder& b, QuantizedSource& source, const std::string& label);

}  // namespace graft::dnnl_backend
