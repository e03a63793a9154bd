// Normalization gradients: graft.BatchNormalizationGrad and
// graft.LayerNormalizationGrad, (d_y, x, scale) -> d_x, d_scale, d_bias, on
// oneDNN's batch_normalization_backward and layer_normalization_backward.
// oneDNN's backward reads the batch (or row) statistics, which the op does
// not pass: where a training-mode BatchNormalization over the same x ran in
// the subgraph (a training step's forward), its mean and variance are read
// (Builder::batch_statistics); otherwise the kernel first runs the forward
// in training mode on x, which writes them (and an output nobody reads,
// written into d_x's buffer when its layout is d_x's, as the backward
// overwrites it next). Both primitives are asked for a shift (the backward then computes
// d_bias) and take the scale in its place: no gradient depends on the shift,
// and the forward's output is discarded. Batch normalization
// reads and writes the layout of x's slot, as the forward does (or d_y's,
// when x is plain and d_y blocked: x came into a training step's backward
// subgraph from the forward's, where subgraph outputs are written plain);
// layer
// normalization reads plain data with the normalized dimensions viewed as
// one. d_scale and d_bias are plain; an output the node does not have is
// written to a buffer nobody reads. Batch normalization's steps run on one
// thread (kBatchStatisticsThreads, dnnl_threads.h says why).
#include "dnnl_emitters.h"
#include "dnnl_threads.h"

namespace graft::dnnl_backend {
namespace {

using dnnl::normalization_flags;
using dnnl::prop_kind;

const normalization_flags kScaleShift = normalization_flags::use_scale | normalization_flags::use_shift;

// Runs `Forward` in training mode on `src` for its statistics (unless
// `statistics` holds the slots of the mean and variance already computed),
// then `Backward` on `dy` (of src's extents); records outputs 1 and 2 of
// node `id` and returns d_x's slot. `params` is the number of scale values
// (channels, or the row's width).
template <typename Forward, typename Backward>
int emit_norm_grad(Builder& b, uint32_t id, int src, int dy, int64_t params, const Dims& param_dims,
                   std::pair<int, int> statistics = {-1, -1}, int threads = 0) {
  const ir::Node& node = b.graph().node(id);
  ScopedOmpThreads scoped_threads(threads);  // the normalization's own steps run on `threads` (0: the run's)
  const float epsilon = node.attributes.get_float("epsilon", 1e-5f);
  const dnnl::memory::desc data = b.desc(src);
  typename Forward::primitive_desc forward(
      typename Forward::desc(prop_kind::forward_training, data, epsilon, kScaleShift), Builder::new_attr(), b.engine());
  typename Backward::primitive_desc pd(typename Backward::desc(prop_kind::backward, data, data, epsilon, kScaleShift),
                                       Builder::new_attr(), b.engine(), forward);
  const int scale = vector_slot(b, b.input(node, 2), params, node.name);
  const bool computed = statistics.first >= 0 && b.desc(statistics.first) == forward.mean_desc() &&
                        b.desc(statistics.second) == forward.variance_desc();
  const int mean = computed ? statistics.first : b.add_slot(forward.mean_desc());
  const int variance = computed ? statistics.second : b.add_slot(forward.variance_desc());
  const int dx = b.add_slot(pd.diff_src_desc());
  if (!computed) {
    const int discarded = forward.dst_desc() == pd.diff_src_desc() ? dx : b.add_slot(forward.dst_desc());
    b.add_step(Forward(forward), forward,
               {{DNNL_ARG_SRC, src},
                {DNNL_ARG_SCALE, scale},
                {DNNL_ARG_SHIFT, scale},
                {DNNL_ARG_DST, discarded},
                {DNNL_ARG_MEAN, mean},
                {DNNL_ARG_VARIANCE, variance}},
               node.name + " (forward for the statistics)");
    if (threads > 0) b.program().steps.back().threads = threads;
  }
  dy = b.as_desc(dy, pd.diff_dst_desc(), node.name);
  const int d_scale = b.add_slot(plain_desc({params}));
  const int d_bias = b.add_slot(plain_desc({params}));
  b.add_step(Backward(pd), pd,
             {{DNNL_ARG_SRC, src},
              {DNNL_ARG_MEAN, mean},
              {DNNL_ARG_VARIANCE, variance},
              {DNNL_ARG_DIFF_DST, dy},
              {DNNL_ARG_SCALE, scale},
              {DNNL_ARG_SHIFT, scale},
              {DNNL_ARG_DIFF_SRC, dx},
              {DNNL_ARG_DIFF_SCALE, d_scale},
              {DNNL_ARG_DIFF_SHIFT, d_bias}},
             node.name);
  if (threads > 0) b.program().steps.back().threads = threads;
  if (node.num_outputs() > 1) b.set_slot(id, 1, b.view(d_scale, plain_desc(param_dims)));
  if (node.num_outputs() > 2) b.set_slot(id, 2, b.view(d_bias, plain_desc(param_dims)));
  return dx;
}

}  // namespace

int in_blocked_layout_of(Builder& b, int x, int dy, const std::string& label) {
  const dnnl::memory::desc blocked = b.desc(dy);
  if (!is_unblocked(b.desc(x)) || is_unblocked(blocked)) return x;
  return b.as_desc(x, blocked, label);
}

int emit_batch_norm_grad(Builder& b, uint32_t id) {
  const ir::Node& node = b.graph().node(id);
  int src = b.dense(b.slot_of(b.input(node, 1)), node.name);
  const int dy = b.dense(b.slot_of(b.input(node, 0)), node.name);
  src = in_blocked_layout_of(b, src, dy, node.name);
  const int64_t channels = b.desc(src).dims()[1];
  // Both plain (x crossed from the forward's subgraph, d_y from another
  // backend): oneDNN's plain-layout code (ncsp) took 30 ms where the blocked
  // one takes 1-2 ms on [16,512,7,7]; x is converted, and d_y with it.
  const Dims extents = b.desc(src).dims();
  if (is_unblocked(b.desc(src)) && is_unblocked(b.desc(dy)) && extents.size() >= 3 && extents.size() <= 5 &&
      channels % 16 == 0) {
    using tag = dnnl::memory::format_tag;
    const tag blocked = extents.size() == 3 ? tag::aBc16b : extents.size() == 4 ? tag::aBcd16b : tag::aBcde16b;
    src = b.as_desc(src, dnnl::memory::desc(extents, dnnl::memory::data_type::f32, blocked), node.name);
  }
  return emit_norm_grad<dnnl::batch_normalization_forward, dnnl::batch_normalization_backward>(
      b, id, src, dy, channels, b.dims(b.input(node, 2)), b.batch_statistics(b.input(node, 1)),
      kBatchStatisticsThreads);
}

int emit_layer_norm_grad(Builder& b, uint32_t id) {
  const ir::Node& node = b.graph().node(id);
  const Dims x = b.dims(b.input(node, 1));
  const int64_t rank = static_cast<int64_t>(x.size());
  int64_t axis = node.attributes.get_int("axis", -1);
  if (axis < 0) axis += rank;
  Dims rows(x.begin(), x.begin() + axis);
  const int64_t width = product(x, static_cast<size_t>(axis), x.size());
  rows.push_back(width);
  if (rows.size() == 1) rows.insert(rows.begin(), 1);
  const int src = b.view(b.as_plain(b.slot_of(b.input(node, 1)), node.name), plain_desc(rows));
  const int dy = b.view(b.as_plain(b.slot_of(b.input(node, 0)), node.name), plain_desc(rows));
  const int dx = emit_norm_grad<dnnl::layer_normalization_forward, dnnl::layer_normalization_backward>(
      b, id, src, dy, width, b.dims(b.input(node, 2)));
  return b.view(dx, plain_desc(x));
}

}  // namespace graft::dnnl_backend
