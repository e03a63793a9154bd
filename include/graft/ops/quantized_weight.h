/// \file
/// Quantized weights: a DequantizeLinear of int8 constants that a
/// convolution or matrix product reads as its weights, the way QDQ exports
/// (ONNX Runtime's quantize_static, PyTorch's quantized models) store every
/// int8 initializer. fold-constants keeps such a node unevaluated when a
/// backend in the pipeline takes the int8 values and their scales directly
/// (passes::PassContext::keep_quantized_weights, Backend::takes_quantized_weights):
/// no float32 copy of the weights is made. This header is the one place that
/// says which nodes those are.
#pragma once

#include <cstddef>

#include "graft/ir/graph.h"

namespace graft::ops {

/// Whether `node` is a DequantizeLinear of constants with int8 x, float32
/// scales (one, or one per slice along its axis), zero points absent or all
/// zero (symmetric, as quantize_static stores weights) and a float32
/// result: weights stored quantized, which an int8 product reads as they are.
/// Other forms (uint8 weights with a zero point) are folded as any constant.
bool is_quantized_weight(const ir::Node& node);

/// Whether input `input` of `reader` is the weight operand of an int8
/// product: a Conv's, MatMul's or Gemm's input 1.
bool reads_as_weight(const ir::Node& reader, size_t input);

}  // namespace graft::ops
