/// \file
/// Groups: a convolution or matmul (the anchor) and the chain of nodes after
/// it that oneDNN attaches to its primitive as post-ops (eltwise, binary,
/// sum) or folds into its weights (BatchNormalization). dnnl_grouping.cc
/// forms the groups, dnnl_eltwise.cc says what pointwise node becomes which
/// oneDNN algorithm, dnnl_post_ops.cc attaches a group's post-ops to the
/// anchor's primitive. Internal to backends/dnnl.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <vector>

#include "dnnl_builder.h"
#include "dnnl_gelu_gradient.h"

namespace graft::dnnl_backend {

struct Int8Convolution;  // dnnl_int8.h
struct QuantizedSource;  // dnnl_int8.h
struct Uint8Node;        // dnnl_int8.h

/// One node absorbed into an anchor.
struct PostOp {
  enum class Kind { fold_batch_norm, eltwise, binary, sum };
  Kind kind = Kind::eltwise;
  const ir::Node* node = nullptr;
  dnnl::algorithm alg = dnnl::algorithm::undef;
  float alpha = 0, beta = 0;
  ir::Entry other;  ///< the second operand of binary / sum
  bool expand =
      false;  ///< binary of a batched matmul: a constant broadcast to the full shape first (broadcast_constant)
};

/// An anchor and the nodes it absorbs, emitted as one primitive (or a few).
struct Group {
  uint32_t anchor = 0;
  std::vector<PostOp> post_ops;
  std::vector<uint32_t> members;  ///< anchor first
  uint32_t last = 0;              ///< node whose output the group computes
  /// A Conv anchor that runs in int8 (dnnl_int8.h): its quantized source and
  /// weight scales; nullptr for a float32 anchor.
  std::shared_ptr<const Int8Convolution> int8;
  /// An int8 group whose result only int8 convolutions read, through a
  /// folded fake quantization: it writes that source's uint8 form itself.
  std::shared_ptr<QuantizedSource> requantize_to;
};

/// The groups of a subgraph.
struct Grouping {
  std::vector<Group> groups;
  std::vector<int> group_of;  ///< per node: index into groups, or -1
  /// Per node: a fake quantization that int8 convolutions fold (not emitted).
  std::vector<bool> folded_into_int8;
  /// Per node: the folded fake quantization whose Mul it is, when float32
  /// ops read that Mul too (dequantized there), else nullptr.
  std::vector<std::shared_ptr<QuantizedSource>> dequantized_at;
  /// Per node: the MaxPool, Concat or Add that runs on uint8 values (dnnl_int8.h), or nullptr.
  std::vector<std::shared_ptr<Uint8Node>> uint8_nodes;
  /// Per node: the GELU gradient whose final product it is (one eltwise
  /// backward, dnnl_gelu_gradient.h), or nullptr.
  std::vector<std::shared_ptr<const GeluGradient>> gelu_gradients;
  /// Per node: a step of a GELU gradient's derivative (not emitted: the
  /// eltwise backward at its product computes it).
  std::vector<bool> gelu_gradient_steps;
};

/// Groups the nodes of `graph` (dnnl_grouping.cc): every Conv,
/// ConvTranspose, MatMul and Gemm anchors a group and absorbs the chain of
/// single-consumer nodes after it that oneDNN can attach; a standalone
/// BatchNormalization followed by Relu is a group too (fuse_norm_relu). A
/// Conv of fake-quantized input and int8 weights gets its Int8Convolution
/// (dnnl_int8.h) and takes no BatchNormalization.
/// `is_output` tells, per entry id, the subgraph's outputs (they end a chain).
Grouping form_groups(const ir::IndexedGraph& graph, const std::vector<bool>& is_output);

/// The BatchNormalization folded into the group's convolution, or nullptr.
const ir::Node* folded_batch_norm(const Group& g);

/// The eltwise post-ops of a pointwise node (HardSigmoid needs two); empty
/// when oneDNN has no eltwise algorithm for it (dnnl_eltwise.cc).
std::vector<PostOp> eltwise_post_ops(const ir::Node& node);
/// oneDNN's binary algorithm of Add, Mul, Sub and Div; undef for other ops.
dnnl::algorithm binary_algorithm(ir::OpId op);
/// A binary op with a one-element constant `c` at `constant_position` as
/// alpha * x + beta (eltwise_linear); false when not expressible so.
bool scalar_as_linear(ir::OpId op, int constant_position, float c, float& alpha, float& beta);

/// What an int8 anchor changes in finish_anchor: `configure` sets the
/// attributes every primitive descriptor of the anchor gets (output scales,
/// zero points), and `source` makes the primitive's source in the layout it
/// picked (quantized, where finish_anchor would reorder the source slot).
struct AnchorQuantization {
  std::function<void(dnnl::primitive_attr&)> configure;
  std::function<int(const dnnl::memory::desc& src)> source;
};

/// Makes an anchor's operation descriptor for given source and destination descriptors.
template <typename Primitive>
using MakeDesc = std::function<typename Primitive::desc(const dnnl::memory::desc& src, const dnnl::memory::desc& dst)>;

/// Finishes an anchor (dnnl_post_ops.cc): post-ops, input conversion,
/// destination; returns the destination slot. The anchor's step is the last;
/// its first `fused` post-ops are in it, and the caller runs the rest
/// (apply_post_ops) once it has added the step's weights. `fall_back`, when
/// given, is called once if oneDNN has no implementation for what `make_desc`
/// asks (say, a Winograd convolution with these post-ops): it switches
/// make_desc to a choice that always exists. `quantization`, when given,
/// makes the anchor an int8 one. Instantiated for dnnl::convolution_forward
/// and dnnl::deconvolution_forward.
template <typename Primitive>
int finish_anchor(Builder& b, const Group& g, const std::string& label, const Dims& dst_dims, int src_slot,
                  const MakeDesc<Primitive>& make_desc, typename Primitive::primitive_desc& pd, size_t& fused,
                  const std::function<bool()>& fall_back = {}, const AnchorQuantization* quantization = nullptr);

/// Runs the group's post-ops from `first` on as separate primitives on `src`
/// (what finish_anchor left out of the anchor); returns the slot of the result.
int apply_post_ops(Builder& b, const Group& g, size_t first, int src, const std::string& label);

}  // namespace graft::dnnl_backend
