// Folds an inference-mode BatchNormalization into the Conv that feeds it:
//   y = gamma * (conv(x, W) + b - mean) / sqrt(var + eps) + beta
//     = conv(x, W * k) + (b - mean) * k + beta,   k = gamma / sqrt(var + eps)
// per output channel. Applies when the Conv's weight (and bias, if any) and all
// four BN parameters are float32 constants, the Conv output is read only by
// the BN, and the BN has a single output. The folded weights are new
// constants; the originals stay for anyone else who reads them.
#include <cmath>

#include "graft/ir/graph_rebuilder.h"
#include "graft/passes/pass.h"
#include "pattern_util.h"

namespace graft::passes {
namespace {

// The Conv feeding BatchNormalization `id` when the pair can be folded.
std::optional<uint32_t> foldable_conv(const ir::IndexedGraph& g, uint32_t id) {
  if (!pattern::is_op(g, id, ir::OpId::BatchNormalization)) return std::nullopt;
  const ir::Node& bn = g.node(id);
  if (bn.num_outputs() != 1 || bn.attributes.get_int("training_mode", 0) != 0) return std::nullopt;
  auto inputs = g.inputs(id);
  if (inputs.size() != 5 || !pattern::produced_by(g, inputs[0], ir::OpId::Conv)) return std::nullopt;
  uint32_t conv = inputs[0].node_id;
  if (!pattern::single_use(g, conv)) return std::nullopt;
  auto conv_inputs = g.inputs(conv);
  const Tensor* w = conv_inputs.size() > 1 ? pattern::constant_of(g, conv_inputs[1]) : nullptr;
  if (!w || w->dtype() != DType::float32 || w->rank() < 3) return std::nullopt;
  int64_t channels = w->dim(0);
  if (conv_inputs.size() > 2 && conv_inputs[2].present()) {
    const Tensor* b = pattern::constant_of(g, conv_inputs[2]);
    if (!b || b->dtype() != DType::float32 || b->numel() != channels) return std::nullopt;
  }
  for (size_t i = 1; i < 5; ++i) {
    const Tensor* p = pattern::constant_of(g, inputs[i]);
    if (!p || p->dtype() != DType::float32 || p->numel() != channels) return std::nullopt;
  }
  return conv;
}

}  // namespace

bool fold_batch_norm(std::unique_ptr<ir::Graph>& graph, PassContext&) {
  ir::IndexedGraph g(*graph);
  std::vector<int64_t> folded_into(g.num_nodes(), -1);  // per Conv: the BN folded into it
  bool any = false;
  for (uint32_t id = 0; id < g.num_nodes(); ++id)
    if (std::optional<uint32_t> conv = foldable_conv(g, id)) {
      folded_into[*conv] = id;
      any = true;
    }
  if (!any) return false;
  ir::GraphRebuilder rebuilder(g);
  for (uint32_t id = 0; id < g.num_nodes(); ++id) {
    if (folded_into[id] < 0) {
      bool is_folded_bn = pattern::is_op(g, id, ir::OpId::BatchNormalization) && foldable_conv(g, id).has_value();
      if (!is_folded_bn) rebuilder.copy(id);
      continue;
    }
    uint32_t bn_id = static_cast<uint32_t>(folded_into[id]);
    const ir::Node& conv = g.node(id);
    const ir::Node& bn = g.node(bn_id);
    auto conv_inputs = g.inputs(id);
    auto bn_inputs = g.inputs(bn_id);
    const Tensor& w = *pattern::constant_of(g, conv_inputs[1]);
    const Tensor* b = conv_inputs.size() > 2 && conv_inputs[2].present() ? pattern::constant_of(g, conv_inputs[2]) : nullptr;
    const float* gamma = pattern::constant_of(g, bn_inputs[1])->data<float>();
    const float* beta = pattern::constant_of(g, bn_inputs[2])->data<float>();
    const float* mean = pattern::constant_of(g, bn_inputs[3])->data<float>();
    const float* var = pattern::constant_of(g, bn_inputs[4])->data<float>();
    float epsilon = bn.attributes.get_float("epsilon", 1e-5f);
    int64_t channels = w.dim(0), per_channel = w.numel() / channels;
    Tensor new_w(DType::float32, w.shape()), new_b(DType::float32, {channels});
    const float* src = w.data<float>();
    for (int64_t o = 0; o < channels; ++o) {
      float k = gamma[o] / std::sqrt(var[o] + epsilon);
      for (int64_t i = 0; i < per_channel; ++i) new_w.data<float>()[o * per_channel + i] = src[o * per_channel + i] * k;
      new_b.data<float>()[o] = ((b ? b->data<float>()[o] : 0.0f) - mean[o]) * k + beta[o];
    }
    ir::Graph& target = rebuilder.target();
    ir::Node* w_node = target.add_constant(conv.name + ".folded_weight", new_w);
    ir::Node* b_node = target.add_constant(conv.name + ".folded_bias", new_b);
    ir::Node* copy = target.copy_node(conv, {rebuilder.map(conv_inputs[0]), w_node->output(0), b_node->output(0)});
    copy->output_types = bn.output_types;
    rebuilder.alias(bn_id, 0, copy->output(0));
  }
  graph = rebuilder.finish();
  return true;
}

}  // namespace graft::passes
