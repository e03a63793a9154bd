/// \file
/// The emitters: each lowers the nodes of one op family to oneDNN steps
/// through the Builder and returns the slot of the node's output 0 (other
/// outputs are recorded with Builder::set_slot). Group emitters lower an
/// anchor with the post-ops of its group. The driver (dnnl_program.cc)
/// dispatches on the node's OpId; dnnl_support.cc says which nodes each may
/// be handed. Internal to backends/dnnl.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dnnl_builder.h"
#include "dnnl_post_ops.h"

namespace graft::dnnl_backend {

// dnnl_conv.cc: Conv and ConvTranspose anchors.
int emit_conv(Builder& b, const Group& g, const std::string& label);
int emit_conv_transpose(Builder& b, const Group& g, const std::string& label);

// dnnl_matmul.cc: MatMul and Gemm anchors.
int emit_matmul(Builder& b, const Group& g, const std::string& label);

// dnnl_pool.cc: pools and resampling. pool_window: a MaxPool's or
// AveragePool's (or their gradients') window in oneDNN's terms for input
// extents `x` (ONNX's ceil_mode as extra end padding).
struct PoolWindow {
  dnnl::algorithm alg;
  Dims strides, kernel, dilation, pad_l, pad_r;
};
PoolWindow pool_window(const ir::Node& node, const Dims& x);
int emit_pool(Builder& b, const ir::Node& node);
int emit_global_pool(Builder& b, const ir::Node& node);
int emit_resize(Builder& b, const ir::Node& node);
// Expand of spatial extents of 1 (GlobalAveragePool's gradient) as nearest resampling.
int emit_expand(Builder& b, const ir::Node& node);

// dnnl_norm.cc: normalizations and softmax. `fuse_relu`: a BatchNormalization
// grouped with the Relu after it.
int emit_batch_norm(Builder& b, const ir::Node& node, bool fuse_relu = false);
// A 1-D parameter of `n` values (a norm's scale, a statistic; constant or
// activation) as a plain slot.
int vector_slot(Builder& b, ir::Entry e, int64_t n, const std::string& label);
int emit_lrn(Builder& b, const ir::Node& node);
int emit_softmax(Builder& b, const ir::Node& node);
int emit_layer_norm(Builder& b, const ir::Node& node);

// dnnl_eltwise.cc: pointwise ops. emit_eltwise runs `ops` one after the
// other on `src` (the node's input 0 when -1).
int emit_eltwise(Builder& b, const ir::Node& node, const std::vector<PostOp>& ops, int src = -1);
int emit_binary(Builder& b, const ir::Node& node);
// A Relu's gradient: its mask Greater(x, 0) writes nothing (-1); the
// Where(mask, d_y, 0) that reads it is oneDNN's relu backward on x and d_y.
int emit_relu_mask(Builder& b, uint32_t id);
int emit_relu_gradient(Builder& b, const ir::Node& node);
// GELU's gradient (the final product of `gradient`): oneDNN's eltwise backward, gelu_erf.
int emit_gelu_gradient(Builder& b, const GeluGradient& gradient);
// Sum of two values of one shape: a binary add.
int emit_sum(Builder& b, const ir::Node& node);

// dnnl_data_movement.cc: views where the layout allows, else copies.
int emit_concat(Builder& b, const ir::Node& node);
int emit_reshape(Builder& b, const ir::Node& node);
int emit_transpose(Builder& b, const ir::Node& node);
int emit_slice(Builder& b, const ir::Node& node);
int emit_split(Builder& b, uint32_t id);
int emit_gather(Builder& b, const ir::Node& node);

// dnnl_reduce.cc: ReduceSum.
int emit_reduce_sum(Builder& b, const ir::Node& node);

// dnnl_conv_backward.cc: graft.ConvInputGrad and graft.ConvWeightGrad.
int emit_conv_input_grad(Builder& b, const ir::Node& node);
int emit_conv_weight_grad(Builder& b, const ir::Node& node);

// dnnl_pool_backward.cc: graft.MaxPoolGrad and graft.AveragePoolGrad.
int emit_pool_grad(Builder& b, const ir::Node& node);

// dnnl_norm_backward.cc: graft.BatchNormalizationGrad and
// graft.LayerNormalizationGrad (outputs 1 and 2 through Builder::set_slot).
int emit_batch_norm_grad(Builder& b, uint32_t id);
// `x` (a forward activation the backward reads) in d_y's layout when x is
// plain and d_y blocked (x crossed a subgraph boundary, written plain; d_y
// came from a backward primitive in the subgraph): one conversion of x
// rather than of every gradient that meets it. Otherwise `x` as it is.
int in_blocked_layout_of(Builder& b, int x, int dy, const std::string& label);
int emit_layer_norm_grad(Builder& b, uint32_t id);

// dnnl_reference_step.cc: a node without a oneDNN primitive (a training
// step's loss, its gradient) on graft's reference kernel, its float32
// inputs plain; every output in a plain slot (outputs past 0 through
// Builder::set_slot).
int emit_on_reference_kernel(Builder& b, uint32_t id);

// dnnl_recurrent.cc: LSTM and GRU.
int emit_recurrent(Builder& b, uint32_t id);

// dnnl_weights.cc: a convolution's weights and bias (a BatchNormalization of
// the group folded in) as weights in the layouts `w_desc` and `b_desc` the
// primitive picked; b_slot is -1 without bias.
void conv_weights(Builder& b, const Group& g, const ir::Node& conv, const Dims& w_dims,
                  const dnnl::memory::desc& w_desc, const dnnl::memory::desc& b_desc, int& w_slot, int& b_slot);

}  // namespace graft::dnnl_backend
