// Normalizations and softmax: BatchNormalization (inference, optionally
// with the Relu after it as one primitive; training mode on the batch
// statistics), LRN, LayerNormalization and Softmax. BatchNormalization and
// LRN take their input's layout (a convolution's blocked one: a training
// step's activations stay blocked through the normalization); layer
// normalization reads plain data with the normalized dimensions viewed as
// one, softmax plain data (coerced to 2-D at the axis before opset 13).
#include "dnnl_emitters.h"
#include "dnnl_support.h"
#include "dnnl_threads.h"

namespace graft::dnnl_backend {
namespace {

using dnnl::algorithm;
using dnnl::prop_kind;
using ir::Entry;

}  // namespace

int vector_slot(Builder& b, Entry e, int64_t n, const std::string& label) {
  return b.view(b.as_plain(b.slot_of(e), label), plain_desc({n}));
}

namespace {

// running = previous * momentum + batch * (1 - momentum), one binary step
// over the C values with the two factors as oneDNN's source scales.
int running_statistic(Builder& b, Entry previous, int batch, float momentum, const std::string& label) {
  const int64_t channels = b.desc(batch).dims()[0];
  const int prev = vector_slot(b, previous, channels, label);
  dnnl::primitive_attr attr = Builder::new_attr();
  attr.set_scales(DNNL_ARG_SRC_0, 0, {momentum});
  attr.set_scales(DNNL_ARG_SRC_1, 0, {1 - momentum});
  dnnl::binary::primitive_desc pd(
      dnnl::binary::desc(algorithm::binary_add, b.desc(prev), b.desc(batch), plain_desc({channels})), attr, b.engine());
  const int dst = b.add_slot(pd.dst_desc());
  b.add_step(dnnl::binary(pd), pd, {{DNNL_ARG_SRC_0, prev}, {DNNL_ARG_SRC_1, batch}, {DNNL_ARG_DST, dst}},
             label + " (running statistics)");
  return dst;
}

// Whether the value `e` is a subgraph output or an input of a node of the subgraph.
bool is_read(const Builder& b, Entry e) {
  if (b.is_output(e)) return true;
  for (uint32_t consumer : b.graph().consumers(e.node_id))
    for (Entry input : b.graph().inputs(consumer))
      if (input.node_id == e.node_id && input.index == e.index) return true;
  return false;
}

// Training mode: normalizes with the batch's mean and (biased) variance,
// which stay in slots for the gradient over the same input
// (Builder::batch_statistics); outputs 1 and 2, where the node has them and
// something reads them, are the running statistics.
// The primitive runs on one thread (kBatchStatisticsThreads).
int emit_batch_norm_training(Builder& b, const ir::Node& node) {
  const Entry x = b.input(node, 0);
  const int src = b.dense(b.slot_of(x), node.name);
  const int64_t channels = b.desc(src).dims()[1];
  const auto flags = dnnl::normalization_flags::use_scale | dnnl::normalization_flags::use_shift;
  ScopedOmpThreads threads(kBatchStatisticsThreads);
  dnnl::batch_normalization_forward::primitive_desc pd(
      dnnl::batch_normalization_forward::desc(prop_kind::forward_training, b.desc(src),
                                              node.attributes.get_float("epsilon", 1e-5f), flags),
      Builder::new_attr(), b.engine());
  const int dst = b.add_slot(pd.dst_desc());
  const int mean = b.add_slot(pd.mean_desc());
  const int variance = b.add_slot(pd.variance_desc());
  b.add_step(dnnl::batch_normalization_forward(pd), pd,
             {{DNNL_ARG_SRC, src},
              {DNNL_ARG_DST, dst},
              {DNNL_ARG_SCALE, vector_slot(b, b.input(node, 1), channels, node.name)},
              {DNNL_ARG_SHIFT, vector_slot(b, b.input(node, 2), channels, node.name)},
              {DNNL_ARG_MEAN, mean},
              {DNNL_ARG_VARIANCE, variance}},
             node.name);
  b.program().steps.back().threads = kBatchStatisticsThreads;
  b.set_batch_statistics(x, mean, variance);
  const float momentum = node.attributes.get_float("momentum", 0.9f);
  const uint32_t id = b.graph().id_of(node);
  for (int k = 1; k < node.num_outputs() && k <= 2; ++k) {
    if (!is_read(b, Entry{id, static_cast<uint32_t>(k)})) continue;
    const Entry previous = b.input(node, k == 1 ? 3 : 4);
    const int running = running_statistic(b, previous, k == 1 ? mean : variance, momentum, node.name);
    b.set_slot(id, static_cast<uint32_t>(k), b.view(running, plain_desc(b.dims(previous))));
  }
  return dst;
}

}  // namespace

int emit_batch_norm(Builder& b, const ir::Node& node, bool fuse_relu) {
  if (is_training_batch_norm(node)) return emit_batch_norm_training(b, node);
  int src = b.dense(b.slot_of(b.input(node, 0)), node.name);
  int64_t channels = b.dims(b.input(node, 0))[1];
  auto flags = dnnl::normalization_flags::use_global_stats | dnnl::normalization_flags::use_scale |
               dnnl::normalization_flags::use_shift;
  if (fuse_relu) flags = flags | dnnl::normalization_flags::fuse_norm_relu;
  dnnl::batch_normalization_forward::primitive_desc pd(
      dnnl::batch_normalization_forward::desc(prop_kind::forward_inference, b.desc(src),
                                              node.attributes.get_float("epsilon", 1e-5f), flags),
      Builder::new_attr(), b.engine());
  int dst = b.add_slot(pd.dst_desc());
  b.add_step(dnnl::batch_normalization_forward(pd), pd,
             {{DNNL_ARG_SRC, src},
              {DNNL_ARG_DST, dst},
              {DNNL_ARG_SCALE, vector_slot(b, b.input(node, 1), channels, node.name)},
              {DNNL_ARG_SHIFT, vector_slot(b, b.input(node, 2), channels, node.name)},
              {DNNL_ARG_MEAN, vector_slot(b, b.input(node, 3), channels, node.name)},
              {DNNL_ARG_VARIANCE, vector_slot(b, b.input(node, 4), channels, node.name)}},
             node.name);
  return dst;
}

int emit_lrn(Builder& b, const ir::Node& node) {
  int src = b.dense(b.slot_of(b.input(node, 0)), node.name);
  const ir::Attributes& a = node.attributes;
  dnnl::lrn_forward::primitive_desc pd(
      dnnl::lrn_forward::desc(prop_kind::forward_inference, algorithm::lrn_across_channels, b.desc(src),
                              a.get_int("size"), a.get_float("alpha", 1e-4f), a.get_float("beta", 0.75f),
                              a.get_float("bias", 1.0f)),
      Builder::new_attr(), b.engine());
  int dst = b.add_slot(pd.dst_desc());
  b.add_step(dnnl::lrn_forward(pd), pd, {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}}, node.name);
  return dst;
}

int emit_layer_norm(Builder& b, const ir::Node& node) {
  Dims x = b.dims(b.input(node, 0));
  int64_t rank = static_cast<int64_t>(x.size());
  int64_t axis = node.attributes.get_int("axis", -1);
  if (axis < 0) axis += rank;
  Dims shape(x.begin(), x.begin() + axis);
  int64_t inner = product(x, axis, x.size());
  shape.push_back(inner);
  if (shape.size() == 1) shape.insert(shape.begin(), 1);
  int src = b.view(b.as_plain(b.slot_of(b.input(node, 0)), node.name), plain_desc(shape));
  bool shift = b.has_input(node, 2);
  auto flags = dnnl::normalization_flags::use_scale;
  if (shift) flags = flags | dnnl::normalization_flags::use_shift;
  dnnl::layer_normalization_forward::primitive_desc pd(
      dnnl::layer_normalization_forward::desc(prop_kind::forward_inference, b.desc(src),
                                              node.attributes.get_float("epsilon", 1e-5f), flags),
      Builder::new_attr(), b.engine());
  int dst = b.add_slot(pd.dst_desc());
  std::vector<std::pair<int, int>> args = {
      {DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}, {DNNL_ARG_SCALE, vector_slot(b, b.input(node, 1), inner, node.name)}};
  if (shift) args.push_back({DNNL_ARG_SHIFT, vector_slot(b, b.input(node, 2), inner, node.name)});
  b.add_step(dnnl::layer_normalization_forward(pd), pd, std::move(args), node.name);
  return b.view(dst, plain_desc(x));
}

int emit_softmax(Builder& b, const ir::Node& node) {
  Dims x = b.dims(b.input(node, 0));
  int64_t rank = static_cast<int64_t>(x.size());
  int64_t axis = node.attributes.get_int("axis", node.opset_version >= 13 ? -1 : 1);
  if (axis < 0) axis += rank;
  Dims shape = x;
  if (node.opset_version < 13) {  // coerced to 2-D at `axis`
    shape = {product(x, 0, axis), product(x, axis, x.size())};
    axis = 1;
  }
  int src = b.view(b.as_plain(b.slot_of(b.input(node, 0)), node.name), plain_desc(shape));
  dnnl::softmax_forward::primitive_desc pd(
      dnnl::softmax_forward::desc(prop_kind::forward_inference, b.desc(src), static_cast<int>(axis)),
      Builder::new_attr(), b.engine());
  int dst = b.add_slot(pd.dst_desc());
  b.add_step(dnnl::softmax_forward(pd), pd, {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}}, node.name);
  return b.view(dst, plain_desc(x));
}

}  // namespace graft::dnnl_backend
