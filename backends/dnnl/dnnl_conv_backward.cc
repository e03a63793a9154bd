// Convolution gradients: graft.ConvInputGrad(d_y, w, x) -> d_x on oneDNN's
// convolution_backward_data and graft.ConvWeightGrad(d_y, x, w) -> d_w on
// convolution_backward_weights. oneDNN builds a backward primitive from a
// forward one (the "hint"), which is created here as the forward Conv would
// be, every tensor format_tag::any: the backward primitive then picks the
// blocked layouts the forward convolution uses, so d_y, x and d_x stay in
// them and the conversions of x are the ones the forward Conv already made
// (Builder::as_desc caches each (slot, layout)). Weights read from a constant
// or a module input are converted once and again on a version change, as the
// forward's are; d_w is written in the primitive's layout and converted to
// ONNX's [M, C/group, k...] plain layout once (it is small).
#include "dnnl_emitters.h"
#include "graft/ops/conv_util.h"

namespace graft::dnnl_backend {
namespace {

using dnnl::algorithm;
using dnnl::memory;
using dnnl::prop_kind;

// The convolution a gradient node differentiates: its tensors' extents and
// its window in oneDNN's terms (dilation counted from 0).
struct ConvShape {
  Dims x, w, y;    // ONNX extents of the forward's input, weight and output
  Dims grouped_w;  // [group, M/group, C/group, k...] when grouped, else w
  Dims strides, dilates, pad_l, pad_r;
};

ConvShape conv_shape(const Builder& b, const ir::Node& node, const Dims& x, const Dims& w) {
  ConvShape s;
  s.x = x;
  s.w = w;
  s.y = b.dims(b.input(node, 0));
  const size_t spatial = x.size() - 2;
  std::vector<int64_t> kernel(w.begin() + 2, w.end());
  ops::conv::WindowAttributes attrs = ops::conv::read_window_attributes(node, spatial, kernel, false);
  for (size_t d = 0; d < spatial; ++d) {
    ops::conv::ResolvedDim r = ops::conv::resolve_dim(node, attrs, d, x[2 + d]);
    s.strides.push_back(attrs.strides[d]);
    s.dilates.push_back(attrs.dilations[d] - 1);
    s.pad_l.push_back(r.pad_begin);
    s.pad_r.push_back(r.pad_end);
  }
  const int64_t group = node.attributes.get_int("group", 1);
  s.grouped_w = w;
  if (group > 1) {
    s.grouped_w = {group, w[0] / group};
    s.grouped_w.insert(s.grouped_w.end(), w.begin() + 1, w.end());
  }
  return s;
}

// The forward convolution the backward primitives take as their hint.
dnnl::convolution_forward::primitive_desc forward_hint(const Builder& b, const ConvShape& s) {
  return dnnl::convolution_forward::primitive_desc(
      dnnl::convolution_forward::desc(prop_kind::forward_training, algorithm::convolution_direct, any_desc(s.x),
                                      any_desc(s.grouped_w), any_desc(s.y), s.strides, s.dilates, s.pad_l, s.pad_r),
      Builder::new_attr(), b.engine());
}

// The weight `e` in the layout `desc`: a prepared weight when it is a constant
// or a module input, else the activation converted.
int weight_in(Builder& b, ir::Entry e, const Dims& grouped, const memory::desc& desc, const std::string& label) {
  if (!b.is_source(e)) return b.as_desc(b.view(b.as_plain(b.slot_of(e), label), plain_desc(grouped)), desc, label);
  Weight w;
  w.sources = {b.source_of(e)};
  w.plain = plain_desc(grouped);
  w.desc = desc;
  w.identity = w.plain == w.desc;
  w.label = label;
  return b.add_weight(std::move(w));
}

}  // namespace

int emit_conv_input_grad(Builder& b, const ir::Node& node) {
  const ConvShape s = conv_shape(b, node, b.dims(b.input(node, 2)), b.dims(b.input(node, 1)));
  const auto hint = forward_hint(b, s);
  dnnl::convolution_backward_data::primitive_desc pd(
      dnnl::convolution_backward_data::desc(algorithm::convolution_direct, any_desc(s.x), any_desc(s.grouped_w),
                                            any_desc(s.y), s.strides, s.dilates, s.pad_l, s.pad_r),
      Builder::new_attr(), b.engine(), hint);
  int dy = b.as_desc(b.dense(b.slot_of(b.input(node, 0)), node.name), pd.diff_dst_desc(), node.name);
  int w = weight_in(b, b.input(node, 1), s.grouped_w, pd.weights_desc(), node.name);
  int dx = b.add_slot(pd.diff_src_desc());
  b.add_step(dnnl::convolution_backward_data(pd), pd,
             {{DNNL_ARG_DIFF_DST, dy}, {DNNL_ARG_WEIGHTS, w}, {DNNL_ARG_DIFF_SRC, dx}}, node.name);
  return dx;
}

int emit_conv_weight_grad(Builder& b, const ir::Node& node) {
  const ConvShape s = conv_shape(b, node, b.dims(b.input(node, 1)), b.dims(b.input(node, 2)));
  const auto hint = forward_hint(b, s);
  dnnl::convolution_backward_weights::primitive_desc pd(
      dnnl::convolution_backward_weights::desc(algorithm::convolution_direct, any_desc(s.x), any_desc(s.grouped_w),
                                               any_desc(s.y), s.strides, s.dilates, s.pad_l, s.pad_r),
      Builder::new_attr(), b.engine(), hint);
  int dy = b.as_desc(b.dense(b.slot_of(b.input(node, 0)), node.name), pd.diff_dst_desc(), node.name);
  int x = b.as_desc(b.dense(b.slot_of(b.input(node, 1)), node.name), pd.src_desc(), node.name);
  int dw = b.add_slot(pd.diff_weights_desc());
  b.add_step(dnnl::convolution_backward_weights(pd), pd,
             {{DNNL_ARG_DIFF_DST, dy}, {DNNL_ARG_SRC, x}, {DNNL_ARG_DIFF_WEIGHTS, dw}}, node.name);
  return b.view(b.as_plain(dw, node.name), plain_desc(s.w));
}

}  // namespace graft::dnnl_backend
